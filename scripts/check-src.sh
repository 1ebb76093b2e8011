#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-src.sh: house rules a compiler cannot enforce, over pyprofd's own C
# sources (agent/, exporters/, tests/, bench/):
#   - no raw malloc/calloc/realloc/free/strdup outside agent/base/alloc.c
#     (the fake programs in tests/support are standalone and exempt);
#   - every .c/.h starts with an SPDX line;
#   - compat.h is the first include of every .c under agent/ and exporters/.
# Prints each violation as file:line: message; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
report() {
    echo "$1: $2"
    status=1
}

mapfile -t files < <(git ls-files -co --exclude-standard -- 'agent/*.[ch]' 'exporters/*.[ch]' \
    'tests/*.[ch]' 'bench/*.[ch]' 2>/dev/null || find agent exporters tests bench -name '*.[ch]')

for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    head -n 2 "$f" | grep -q 'SPDX-License-Identifier' || report "$f:1" "missing SPDX line"
    case "$f" in
    agent/base/alloc.c | tests/support/fake_*.c) ;;
    *)
        grep -nE '(^|[^_a-zA-Z0-9.>])(malloc|calloc|realloc|free|strdup|strndup)[[:space:]]*\(' "$f" |
            grep -vE '^\s*[0-9]+:\s*(/?\*|//)' |
            while IFS= read -r hit; do
                echo "$f:${hit%%:*}: raw allocator call; use alloc_*() from base/alloc.h"
            done | grep . && status=1
        ;;
    esac
    case "$f" in
    agent/*.c | exporters/*.c)
        first=$(grep -m1 -n '^#include' "$f" || true)
        [[ "$first" == *'"base/compat.h"'* ]] || report "$f:${first%%:*}" "first include must be \"base/compat.h\""
        ;;
    esac
done
if [ "$status" -eq 0 ]; then
    echo "check-src: ${#files[@]} files ok"
fi
exit "$status"
