#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-src.sh: house rules a compiler cannot enforce, over pyprofd's own C
# sources (agent/, exporters/, cli/, tests/, bench/):
#   - no raw malloc/calloc/realloc/free/strdup outside agent/base/alloc.c
#     (the fake programs in tests/support and the libraries targets load,
#     tests/targets/*.c, are standalone and exempt);
#   - every .c/.h starts with an SPDX line;
#   - compat.h is the first include of every .c under agent/, exporters/ and cli/;
#   - a module's NAME_internal.h (the fields of an opaque type) is included
#     only by that module's own files (DIR/NAME*.c) and its unit tests
#     (tests/unit/DIR/test_NAME*.c);
#   - no source file under agent/, exporters/ or cli/ is over 1,000 lines
#     (a longer one holds more than one job: split it by job, its shared
#     state in a NAME_internal.h).
# Usage: check-src.sh [DIR] (default: the tree it is in). Prints each
# violation as file:line: message; exits 1 if there is any.
# Runs a fixed number of processes whatever the number of files: process
# creation is slow on some CI machines.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

mapfile -t files < <(git ls-files -co --exclude-standard -- 'agent/*.[ch]' 'exporters/*.[ch]' \
    'cli/*.[ch]' 'tests/*.[ch]' 'bench/*.[ch]' 2>/dev/null || find agent exporters cli tests bench -name '*.[ch]')
existing=()
for f in "${files[@]}"; do
    [ -f "$f" ] && existing+=("$f")
done
[ ${#existing[@]} -gt 0 ] || { echo "check-src: no sources found" >&2; exit 1; }

violations=$(
    awk '
        function check_spdx() { if (file != "" && !spdx) print file ":1: missing SPDX line" }
        FNR == 1 { check_spdx(); file = FILENAME; spdx = 0; inc = 0 }
        FNR <= 2 && /SPDX-License-Identifier/ { spdx = 1 }
        /^#include/ && !inc {
            inc = 1
            if (FILENAME ~ /^(agent|exporters|cli)\/.*\.c$/ && $0 !~ /"base\/compat\.h"/)
                print FILENAME ":" FNR ": first include must be \"base/compat.h\""
        }
        /^#include "[a-z_\/]*_internal\.h"/ {
            hdr = $2; gsub(/"/, "", hdr)
            dir = hdr; sub(/\/[^\/]*$/, "", dir)
            name = hdr; sub(/^.*\//, "", name); sub(/_internal\.h$/, "", name)
            own = "^agent/" dir "/" name "[a-z_]*\\.[ch]$"
            test = "^tests/unit/agent/" dir "/test_" name "[a-z_]*\\.c$"
            if (FILENAME !~ own && FILENAME !~ test)
                print FILENAME ":" FNR ": " hdr " is " name "'"'"'s own: use its public header"
        }
        FILENAME !~ /^(agent\/base\/alloc\.c|tests\/support\/fake_.*\.c|tests\/targets\/.*\.c)$/ &&
        /(^|[^_a-zA-Z0-9.>])(malloc|calloc|realloc|free|strdup|strndup)[[:space:]]*\(/ &&
        $0 !~ /^[[:space:]]*(\/?\*|\/\/)/ {
            print FILENAME ":" FNR ": raw allocator call; use alloc_*() from base/alloc.h"
        }
        FNR == 1001 && FILENAME ~ /^(agent|exporters|cli)\// {
            print FILENAME ":1001: over 1,000 lines: split it by job"
        }
        END { check_spdx() }
    ' "${existing[@]}"
)
if [ -n "$violations" ]; then
    echo "$violations"
    exit 1
fi
echo "check-src: ${#existing[@]} files ok"
