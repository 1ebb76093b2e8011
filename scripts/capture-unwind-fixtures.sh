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
# 3.11 is the host's own Debian 12 interpreter and 3.9 Debian 11's
# (scripts/run-target.sh); 3.10 and 3.12, which no Debian on these machines
# packages, are $PYPROFD_PYTHON_3_10 and $PYPROFD_PYTHON_3_12 (default: the
# newest ~/.pyenv/versions/3.1X.*/bin/python3.1X), started here directly.
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
        if [[ $v == 3.12 || $v == 3.10 ]]; then
            var=PYPROFD_PYTHON_${v/./_}
            py=${!var:-$(ls -d "$HOME"/.pyenv/versions/$v.*/bin/python$v 2>/dev/null | sort -V | tail -1)}
            [[ -x $py ]] || { echo "capture-unwind-fixtures: no python$v (set $var)" >&2; exit 1; }
            fifo=$(mktemp -u) && mkfifo "$fifo"
            "$py" -u "tests/targets/$target.py" >"$fifo" 2>/dev/null &
            pid=$!
            grep -m1 -q 'pyprofd-target: ready' "$fifo" && rm -f "$fifo"
            stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }
        else
            pid=$(scripts/run-target.sh start --python "$v" "$target")
            stop() { scripts/run-target.sh stop "$pid"; }
        fi
        sleep 0.3 # let the threads reach their leaves
        if ! "$capture" "$pid" "$dir" "$flags"; then
            stop
            exit 1
        fi
        stop
        grep -qx -- "$v-$name" "$out/CASES" 2>/dev/null || printf '%s\n' "$v-$name" >>"$out/CASES"
        echo "$dir: $(stat -c %s "$dir/memory.bin") bytes, $(grep -c '^thread' "$dir/expected.txt") threads"
    done
done
