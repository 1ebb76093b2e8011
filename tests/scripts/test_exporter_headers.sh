#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unit test (ctest test_exporter_headers): no source under exporters/ reaches
# a CPython ABI header (agent/python/, the per-version table layouts) or the
# unwinder's (agent/unwind/), directly or through the headers it includes:
# what an exporter needs of a sample comes through agent/pipeline.h and
# sampler/report.h (docs/architecture.md, "The hand-off types"). The
# preprocessor's own dependency list (gcc -MM; -MG lets generated headers be
# missing) is the judge, so an indirect include counts. Then the same check
# on a copy of the tree with one planted indirect include must fail.
set -euo pipefail
src=${PYPROFD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}

# check ROOT: prints "file: header ..." for each offender; exit 1 if any
check() {
	local root=$1 bad=0 f deps
	while IFS= read -r f; do
		deps=$(cd "$root" && gcc -MM -MG -Iagent -I. "$f" | tr ' \\' '\n\n' |
			grep -E '^agent/(python|unwind)/' | sort -u | tr '\n' ' ' || true)
		if [[ -n $deps ]]; then
			echo "$f: $deps"
			bad=1
		fi
	done < <(cd "$root" && find exporters -name '*.c' | sort)
	return $bad
}

fail=0
if ! out=$(check "$src"); then
	echo "FAIL: exporters reach CPython ABI or unwinder headers:" >&2
	echo "$out" >&2
	fail=1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$src" && find agent exporters \( -name '*.[ch]' -o -name '*.def' \) -exec cp --parents -t "$tmp" {} +)
# plant: the light header the views use pulls in the unwinder
sed -i 's|#include "base/status.h"|#include "base/status.h"\n#include "unwind/unwind.h"|' \
	"$tmp/agent/sampler/report.h"
if out=$(check "$tmp"); then
	echo "FAIL: a planted indirect include passed" >&2
	fail=1
elif [[ $out != *"exporters/pull/views.c: "*"agent/unwind/unwind.h"* ]]; then
	echo "FAIL: the planted include was reported wrongly: $out" >&2
	fail=1
fi
[[ $fail == 0 ]] && echo "test_exporter_headers: no exporter reaches an ABI or unwinder header"
exit $fail
