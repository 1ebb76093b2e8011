#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Records the memory images that tests/unit/agent/unwind/test_unwind_replay.c
# replays: for CPython 3.13, 3.14 and 3.15, a few targets from tests/targets
# are started in the test rootfs and build/tests/support/pyprofd-capture
# records every read of one clean sample, plus the golden text of that
# sample. Run as root after `make build`; review and commit
# tests/fixtures/unwind/. Never edit the golden files by hand.
#
# usage: scripts/capture-unwind-fixtures.sh [VERSION...]
# VERSION: 3.13, 3.14, 3.15 (the default: all three), or a debug (3.Xd) or
# free-threaded (3.Xt) build; only those versions' cases are recorded again.
set -euo pipefail
cd "$(dirname "$0")/.."

capture=build/tests/support/pyprofd-capture
[ -x "$capture" ] || { echo "capture-unwind-fixtures: run 'make build' first" >&2; exit 1; }

# case name, target, unwind flags (1 all threads, 2 native, 4 no GC)
cases=(
    "threads named_threads 3"
    "callback callback 2"
    "generators generators 2"
)
out=tests/fixtures/unwind
versions=("$@")
((${#versions[@]})) || versions=(3.13 3.14 3.15)
mkdir -p "$out"
for v in "${versions[@]}"; do
    for c in "${cases[@]}"; do
        read -r name target flags <<<"$c"
        dir="$out/$v-$name"
        rm -rf "$dir"
        mkdir -p "$dir"
        pid=$(scripts/run-target.sh start --python "$v" "$target")
        sleep 0.3 # let the threads reach their leaves
        if ! "$capture" "$pid" "$dir" "$flags"; then
            scripts/run-target.sh stop "$pid"
            exit 1
        fi
        scripts/run-target.sh stop "$pid"
        grep -qx -- "$v-$name" "$out/CASES" 2>/dev/null || printf '%s\n' "$v-$name" >>"$out/CASES"
        echo "$dir: $(stat -c %s "$dir/memory.bin") bytes, $(grep -c '^thread' "$dir/expected.txt") threads"
    done
done
