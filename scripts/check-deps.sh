#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# check-deps.sh [ROOT]: every #include "..." of pyprofd's own sources (agent/,
# exporters/, web/, cli/ under ROOT, default the source tree) points back along the
# stage order of docs/architecture.md, never forward: a stage includes only
# itself and the stages it is allowed to use. Prints each violation as
# file:line: message and exits 1 if there is any. One awk process.
#
# The order (a stage may use those listed after its name); the pipeline's
# stages are numbered as in docs/architecture.md, the rest are beside them:
#   base         -
#   pipeline     base                      (agent/pipeline.h: hand-off types)
#   memread      base
#   python       base
#   config       base pipeline
#   perf         base
#   discovery 1  base memread python
#   unwind    2  base pipeline memread python discovery perf
#   sampler   3  base pipeline memread python perf unwind
#                                          (one target: nothing downstream,
#                                          no config, no discovery, no daemon)
#   aggregate 4  base pipeline
#   daemon    5  base pipeline memread python config discovery perf unwind
#                sampler aggregate         (the agent's fleet over the sampler)
#   pprof     6  base pipeline aggregate   (the encoders)
#   web          base                      (web/: the browser pages, embedded)
#   exporters 7  every agent stage and web (not cli)
#   cli          everything
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

mapfile -t files < <(find agent exporters web cli -name '*.[ch]' 2>/dev/null | sort)
[ ${#files[@]} -gt 0 ] || { echo "check-deps: no sources under $root" >&2; exit 1; }

violations=$(
    awk '
        BEGIN {
            allow["base"] = ""
            allow["pipeline"] = "base"
            allow["memread"] = "base"
            allow["python"] = "base"
            allow["config"] = "base pipeline"
            allow["discovery"] = "base memread python"
            allow["perf"] = "base"
            allow["unwind"] = "base pipeline memread python discovery perf"
            allow["sampler"] = "base pipeline memread python perf unwind"
            allow["aggregate"] = "base pipeline"
            allow["daemon"] = "base pipeline memread python config discovery perf unwind sampler aggregate"
            allow["pprof"] = "base pipeline aggregate"
            allow["web"] = "base"
            allow["exporters"] = "base pipeline memread python config discovery perf unwind sampler aggregate daemon pprof web"
            allow["cli"] = "base pipeline memread python config discovery perf unwind sampler aggregate daemon pprof web exporters"
        }
        function stage_of_file(f,   p) {
            if (f == "agent/pipeline.h" || f == "agent/pipeline.c") return "pipeline"
            split(f, p, "/")
            if (p[1] == "agent") return (p[2] in allow) ? p[2] : "?" p[2]
            return p[1]
        }
        function stage_of_include(inc,   p) {
            if (inc == "pipeline.h") return "pipeline"
            if (index(inc, "/") == 0) return ""   # same directory
            split(inc, p, "/")
            if (p[1] in allow) return p[1]
            return ""   # generated (proto/...) or a test helper
        }
        FNR == 1 { me = stage_of_file(FILENAME) }
        /^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
            inc = $0
            sub(/^[^"]*"/, "", inc)
            sub(/".*$/, "", inc)
            to = stage_of_include(inc)
            if (to == "" || to == me) next
            if (substr(me, 1, 1) == "?") {
                print FILENAME ":" FNR ": directory " substr(me, 2) " is in no stage (add it to check-deps.sh and docs/architecture.md)"
                next
            }
            n = split(allow[me], ok, " ")
            found = 0
            for (i = 1; i <= n; i++) if (ok[i] == to) found = 1
            if (!found)
                print FILENAME ":" FNR ": stage " me " may not include " to " (\"" inc "\"); see docs/architecture.md"
        }
    ' "${files[@]}"
)
if [ -n "$violations" ]; then
    echo "$violations"
    exit 1
fi
echo "check-deps: ${#files[@]} files follow the stage order"
