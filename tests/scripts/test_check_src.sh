#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unit test (ctest check_src): scripts/check-src.sh passes on the tree, and
# fails on a copy of it with one planted violation, naming the file and the
# line: a file over 1,000 lines (in agent/unwind/ as anywhere else; 1,000
# lines pass), and a module's NAME_internal.h included by another module's
# file.
set -euo pipefail
src=${PYPROFD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
check=$src/scripts/check-src.sh
fail=0
pass=0
ok() {
	pass=$((pass + 1))
}
bad() {
	echo "FAIL: $*" >&2
	fail=$((fail + 1))
}

if out=$("$check" 2>&1); then ok; else bad "the tree itself: $out"; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy() {
	rm -rf "$tmp/tree"
	mkdir -p "$tmp/tree"
	(cd "$src" && find agent exporters cli tests bench -name '*.[ch]' -exec cp --parents -t "$tmp/tree" {} +)
}
# a well-formed source file of $2 lines at $1
plant() {
	{
		echo '/* SPDX-License-Identifier: MIT */'
		echo '#include "base/compat.h"'
		for ((i = 3; i <= $2; i++)); do echo '/* filler */'; done
	} >"$tmp/tree/$1"
}

# the copy as it is passes (outside a git tree, the files are found by find)
copy
if out=$("$check" "$tmp/tree" 2>&1); then ok; else bad "the copy: $out"; fi

for dir in agent/unwind agent/base exporters cli; do
	copy
	plant "$dir/planted.c" 1001
	if out=$("$check" "$tmp/tree" 2>&1); then
		bad "a 1,001-line file in $dir passed"
	elif [[ $out != *"$dir/planted.c:1001: over 1,000 lines: split it by job"* ]]; then
		bad "a 1,001-line file in $dir, wrong message: $out"
	else
		ok
	fi
done

copy
plant agent/unwind/planted.c 1000
if out=$("$check" "$tmp/tree" 2>&1); then ok; else bad "a 1,000-line file failed: $out"; fi

# the unwinder's and the asyncio walker's shared state is theirs alone
for planted in agent/sampler/planted.c agent/unwind/asyncio_planted.c; do
	copy
	printf '/* SPDX-License-Identifier: MIT */\n#include "base/compat.h"\n#include "unwind/unwind_internal.h"\n' \
		>"$tmp/tree/$planted"
	if out=$("$check" "$tmp/tree" 2>&1); then
		bad "unwind_internal.h included by $planted passed"
	elif [[ $out != *"$planted:3: unwind/unwind_internal.h is unwind's own: use its public header"* ]]; then
		bad "unwind_internal.h included by $planted, wrong message: $out"
	else
		ok
	fi
done
copy
printf '/* SPDX-License-Identifier: MIT */\n#include "base/compat.h"\n#include "unwind/asyncio_internal.h"\n' \
	>"$tmp/tree/agent/unwind/unwind_planted.c"
if out=$("$check" "$tmp/tree" 2>&1); then
	bad "asyncio_internal.h included by an unwind file passed"
elif [[ $out != *"agent/unwind/unwind_planted.c:3: unwind/asyncio_internal.h is asyncio's own"* ]]; then
	bad "asyncio_internal.h included by an unwind file, wrong message: $out"
else
	ok
fi

echo "$pass passed, $fail failed"
((fail == 0))
