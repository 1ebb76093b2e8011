#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unit test (ctest test_help_versions): every help the binaries print states
# the same supported range of CPython versions, the one agent/python/
# pyversion.h defines (PYVERSION_MIN_MINOR, PYVERSION_MAX_MINOR: "3.9 to
# 3.15"), and none states another ("3.13, 3.14 and 3.15", "3.11+ process",
# "3.9-3.15"). A feature's own cut-off ("(CPython 3.14+)") is not a range.
#   test_help_versions.sh PYPROFD PYPROFD_LITE
set -euo pipefail
src=${PYPROFD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=$1
lite=$2
fail=0
pass=0
bad() {
	echo "FAIL: $*" >&2
	fail=$((fail + 1))
}

h=$src/agent/python/pyversion.h
min=$(awk '$1 == "#define" && $2 == "PYVERSION_MIN_MINOR" {print $3}' "$h")
max=$(awk '$1 == "#define" && $2 == "PYVERSION_MAX_MINOR" {print $3}' "$h")
[[ $min =~ ^[0-9]+$ && $max =~ ^[0-9]+$ ]] || {
	echo "FAIL: no PYVERSION_MIN_MINOR/PYVERSION_MAX_MINOR in $h" >&2
	exit 1
}
range="3.$min to 3.$max"

check() { # what, then the command
	local what=$1 out others
	shift
	if ! out=$("$@" 2>&1); then
		bad "$what: exit status $?"
		return
	fi
	if [[ $out != *"CPython $range"* ]]; then
		bad "$what does not say 'CPython $range'"
		return
	fi
	# every other way of writing a range, with the expected one taken out
	others=$(printf '%s\n' "${out//"CPython $range"/}" |
		grep -E -o '3\.[0-9]+ *(-|–|to) *3\.[0-9]+|3\.[0-9]+, 3\.[0-9]+ and 3\.[0-9]+|CPython 3\.[0-9]+\+ (process|interpreter)' ||
		true)
	if [[ -n $others ]]; then
		bad "$what also says: $others"
		return
	fi
	pass=$((pass + 1))
}

check "pyprofd --help" "$bin" --help
check "pyprofd-lite --help" "$lite" --help
for cmd in agent record dump top probe; do
	check "pyprofd $cmd --help" "$bin" "$cmd" --help
done
for cmd in record dump probe; do
	check "pyprofd-lite $cmd --help" "$lite" "$cmd" --help
done

echo "$pass passed, $fail failed (the range: $range)"
((fail == 0))
