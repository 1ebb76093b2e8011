#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# test_pprof_consumer.sh: a real consumer reads what the pprof encoder writes.
# pprof-sample-writer (tests/support) encodes the fixed test window of
# tests/support/pprof_test.c; `go tool pprof` must parse it without a warning
# (nothing to symbolize, no network) and show the expected functions, values
# and labels.
#
# usage: test_pprof_consumer.sh PATH/TO/pprof-sample-writer
# Exits 77 (ctest: skipped) when go is not installed (scripts/bootstrap.sh
# installs golang-go).
set -euo pipefail

prog=test_pprof_consumer
die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

(($# == 1)) || die "usage: $0 PATH/TO/pprof-sample-writer"
writer=$1
[[ -x $writer ]] || die "not executable: '$writer'"
if ! command -v go >/dev/null; then
	printf '%s: go not installed; skipped\n' "$prog" >&2
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A private home and build cache (CI may have neither), and nothing from the
# network: the profile is a local file and needs no symbolization.
export HOME=$tmp GOCACHE=$tmp/gocache GOPATH=$tmp/gopath PPROF_TMPDIR=$tmp/pprof
export GOPROXY=off GOTOOLCHAIN=local GOFLAGS='' GO111MODULE=off
unset PPROF_BINARY_PATH PPROF_TOOLS

profile=$tmp/profile.pb.gz
"$writer" "$profile" || die "pprof-sample-writer failed"

# Runs go tool pprof with "$@"; its stdout in $out; any stderr is a failure.
pprof() {
	if ! out=$(go tool pprof "$@" "$profile" 2>"$tmp/stderr" </dev/null); then
		cat "$tmp/stderr" >&2
		die "go tool pprof $* failed"
	fi
	if [[ -s $tmp/stderr ]]; then
		cat "$tmp/stderr" >&2
		die "go tool pprof $* printed warnings"
	fi
}

failures=0
expect() { # expect DESCRIPTION COMMAND...
	local what=$1
	shift
	if ! "$@" <<<"$out"; then
		printf '%s: FAIL: %s\n' "$prog" "$what" >&2
		failures=$((failures + 1))
	fi
}
# row FLAT CUM NAME: a -top line with these flat and cum values
row() {
	awk -v f="$1" -v c="$2" -v n="$3" '$1 == f && $4 == c && $6 == n { ok = 1 } END { exit !ok }'
}

pprof -top -sample_index=1
printf '%s\n' "$out"
expect "type cpu" grep -qx 'Type: cpu'
expect "total 120ms" grep -q 'Total samples = 120ms'
expect "compute 50ms flat, 60ms cum" row 50ms 60ms compute
expect "fetch 30ms" row 30ms 30ms fetch
expect "Reader.read 20ms" row 20ms 20ms Reader.read
expect "<GC> 10ms" row 10ms 10ms '<GC>'
expect "main 10ms flat, 60ms cum" row 10ms 60ms main
expect "<module> keeps its name, 50ms cum" row 0 50ms '<module>'
expect "<native> 20ms cum" row 0 20ms '<native>'
expect "Server.handle 80ms cum" row 0 80ms Server.handle

pprof -top -sample_index=0
expect "samples: total 12" grep -q 'Total samples = 12 *$'
expect "samples: compute 5 flat" row 5 6 compute

pprof -raw
printf '%s\n' "$out"
expect "period" grep -qx 'Period: 10000000'
expect "period type" grep -qx 'PeriodType: cpu nanoseconds'
expect "sample types" grep -qx 'samples/count cpu/nanoseconds'
expect "summed sample, leaf first" grep -Eq '^ +4 +40000000: 1 2 3 4 $'
expect "numeric thread_id" grep -Eq '^ +thread_id:\[101\]$'
expect "task label" grep -q 'task_name:\[fetch-1\] thread_name:\[asyncio_0\]'
expect "unnamed thread" grep -q 'thread_name:\[unknown\]'
expect "location 1" grep -Eq '^ +1: 0x0 M=1 compute /srv/lib/calc.py:5 s=1'
expect "mapping says symbolized" grep -q '\[FN\]\[FL\]\[LN\]'

if ((failures)); then
	die "$failures check(s) failed"
fi
printf '%s: ok\n' "$prog"
