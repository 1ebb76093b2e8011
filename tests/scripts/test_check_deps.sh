#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unit test (ctest test_check_deps): scripts/check-deps.sh passes on the tree
# and fails on a copy of it with one planted include against the stage order
# (and on a directory that is in no stage), naming the file and the line.
set -euo pipefail
src=${PYPROFD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
check=$src/scripts/check-deps.sh
fail=0
pass=0
ok() {
	pass=$((pass + 1))
}
bad() {
	echo "FAIL: $*" >&2
	fail=$((fail + 1))
}

if out=$("$check" "$src" 2>&1); then ok; else bad "the tree itself: $out"; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy() {
	rm -rf "$tmp/tree"
	mkdir -p "$tmp/tree"
	(cd "$src" && find agent exporters cli -name '*.[ch]' -exec cp --parents -t "$tmp/tree" {} +)
}

# discovery (stage 1) reaching up to the daemon (stage 5)
copy
printf '#include "base/compat.h"\n\n#include "daemon/loop.h"\n' >"$tmp/tree/agent/discovery/planted.c"
if out=$("$check" "$tmp/tree" 2>&1); then
	bad "a backward include passed"
elif [[ $out != *"agent/discovery/planted.c:3: stage discovery may not include daemon"* ]]; then
	bad "a backward include, wrong message: $out"
else
	ok
fi

# the per-target sampler (stage 3) reaching up to the fleet (the daemon, stage
# 5), to the aggregation it feeds through a sink (4), or to the configuration
for up in daemon/fleet.h aggregate/agg.h config/config.h discovery/proc_scan.h; do
	copy
	printf '#include "base/compat.h"\n\n#include "%s"\n' "$up" >"$tmp/tree/agent/sampler/planted.c"
	if out=$("$check" "$tmp/tree" 2>&1); then
		bad "the sampler including $up passed"
	elif [[ $out != *"agent/sampler/planted.c:3: stage sampler may not include ${up%%/*}"* ]]; then
		bad "the sampler including $up, wrong message: $out"
	else
		ok
	fi
done

# an exporter header pulled into the aggregation stage
copy
sed -i '0,/#include "base\/compat.h"/s//#include "base\/compat.h"\n#include "exporters\/exporter.h"/' \
	"$tmp/tree/agent/aggregate/agg.h"
if out=$("$check" "$tmp/tree" 2>&1); then
	bad "an exporter include in aggregate passed"
elif [[ $out != *"agent/aggregate/agg.h:"*"may not include exporters"* ]]; then
	bad "an exporter include, wrong message: $out"
else
	ok
fi

# a new directory nobody placed in the order
copy
mkdir -p "$tmp/tree/agent/newstage"
printf '#include "base/compat.h"\n#include "unwind/unwind.h"\n' >"$tmp/tree/agent/newstage/x.c"
if out=$("$check" "$tmp/tree" 2>&1); then
	bad "an unplaced directory passed"
elif [[ $out != *"directory newstage is in no stage"* ]]; then
	bad "an unplaced directory, wrong message: $out"
else
	ok
fi

echo "$pass passed, $fail failed"
((fail == 0))
