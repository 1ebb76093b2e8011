#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unit test (ctest test_pipefail): no shell script of the tree that sets
# pipefail has a pipeline stage that may stop reading before its input ends:
# head, grep -q/-m/-l (or grep into /dev/null, which GNU grep treats as -q),
# sed's q, awk's exit outside END. Such a stage leaves the writer before it
# a SIGPIPE (exit 141) whenever the writer is not done yet - a large sort, a
# slow pyprofd - and pipefail turns that into the pipeline's failure: `make
# demo` failed so, now and then (issue 37). Read the whole input instead
# (awk 'NR <= N', grep -c, a variable). Also checks that the checker finds
# each such stage in a planted script, and lets the sound forms pass, and
# that the top-N form the demo uses survives a large input.
set -euo pipefail
src=${PYPROFD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
pass=0
ok() {
	pass=$((pass + 1))
}
bad() {
	echo "FAIL: $*" >&2
	fail=$((fail + 1))
}

# Prints FILE:LINE: STAGE for each early-leaving stage after a pipe. A
# pipeline may go on over lines ending in | or \. Comment lines are skipped.
early_stages() {
	awk '
        function check(text, first,    n, i, stage, parts) {
            gsub(/\|\|/, "\001", text)
            gsub(/\|&/, "|", text)
            n = split(text, parts, "|")
            for (i = 2; i <= n; i++) {
                stage = parts[i]
                sub(/^[[:space:]]+/, "", stage)
                if (stage ~ /^head([[:space:]]|$)/ ||
                    stage ~ /^grep[[:space:]]([^;&]*[[:space:]])?-[a-zA-Z]*[qmlL]/ ||
                    stage ~ /^grep[[:space:]].*--(quiet|silent|max-count|files-with)/ ||
                    stage ~ /^grep[[:space:]][^;&]*>[[:space:]]*\/dev\/null/ ||
                    stage ~ /^sed[[:space:]][^;&]*[0-9\/$;{}][[:space:]]*q([[:space:]'"'"'";}0-9]|$)/ ||
                    (stage ~ /^awk[[:space:]]/ && stage ~ /(^|[^A-Za-z_])exit([^A-Za-z_]|$)/ &&
                     stage !~ /END[[:space:]]*\{[^}]*exit/))
                    print FILENAME ":" first ": " stage
            }
        }
        FNR == 1 { buf = "" }
        /^[[:space:]]*#/ { next }
        {
            if (buf == "") first = FNR
            buf = buf " " $0
            if ($0 ~ /(\||\\)[[:space:]]*$/) next
            check(buf, first)
            buf = ""
        }
    ' "$@"
}

# the tree: every tracked shell script that sets pipefail
mapfile -t scripts < <(cd "$src" && git ls-files -- '*.sh' .ci/run 2>/dev/null || find . -name '*.sh')
piped=()
for f in "${scripts[@]}"; do
	[[ $f == tests/scripts/test_pipefail.sh ]] && continue # its planted stages below
	[[ -f $src/$f ]] && grep -q 'pipefail' "$src/$f" && piped+=("$f")
done
if ((${#piped[@]} < 10)); then
	bad "found only ${#piped[@]} scripts with pipefail under $src"
elif out=$(cd "$src" && early_stages "${piped[@]}") && [[ -z $out ]]; then
	ok
else
	bad "stages that leave early under pipefail:"$'\n'"$out"
fi

# the checker against planted stages, each on line N of its own script
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
planted=(
	'pyprofd dump 1 | head -n 4'
	'awk "{print}" f | sort -nr | head -n 2 | cut -f2-'
	'curl -s x | grep -q "^up 1" && break'
	'x=$(find . -name a | sort | head -1)'
	'cmd | grep -m1 foo'
	'cmd | grep -E -q foo'
	'cmd | grep --quiet foo'
	'cmd | grep foo >/dev/null'
	'cmd | sed 3q'
	'cmd | sed -n "/x/{p;q}"'
	"cmd | awk '/x/ {print; exit}'"
	'cmd 2>&1 |& head'
	$'sort big |\n    head -n 2'
)
for p in "${planted[@]}"; do
	printf '#!/bin/bash\nset -o pipefail\n%s\n' "$p" >"$tmp/planted.sh"
	out=$(cd "$tmp" && early_stages planted.sh)
	[[ $out == "planted.sh:3: "* ]] && ok || bad "not caught: '$p' (got '$out')"
done
sound=(
	'cmd | awk "NR <= 3" | cut -f2-'
	'cmd | grep -v foo | sed "s/^/   /"'
	'cmd | grep -c foo'
	'cmd | tail -n 1'
	'cmd || head -n 1 file'
	"cmd | awk '/x/ {f = 1} END {exit !f}'"
	'awk "/x/ {print; exit}" <<<"$record"'
	'grep -q listening log && break'
	'# a comment: cmd | head -n 1'
	'cmd | sed -e "s/q/x/" -e "s/^/   /"'
)
for p in "${sound[@]}"; do
	printf '#!/bin/bash\nset -o pipefail\n%s\n' "$p" >"$tmp/sound.sh"
	out=$(cd "$tmp" && early_stages sound.sh)
	[[ -z $out ]] && ok || bad "a sound stage flagged: '$p' (got '$out')"
done

# what the demo does for its top stacks, against an input large enough that
# sort is still writing when a head would have left (sort | head -n 2 fails
# here with 141 nearly every time)
seq 1 300000 | awk '{print $1 "\tstack" $1}' >"$tmp/big.txt"
if top=$(awk '{print $1 "\t" $0}' "$tmp/big.txt" | sort -nr | awk 'NR <= 2' | cut -f2-) &&
	[[ $top == $'300000\tstack300000\n299999\tstack299999' ]]; then
	ok
else
	bad "the top-2 pipeline: status $?, '$top'"
fi

echo "$pass passed, $fail failed"
((fail == 0))
