#!/usr/bin/env bash
# default_runs_summary.sh FILE [OTHER]
#
# Sums up the `run k:` lines that tools/default_runs.sh printed into FILE (one invocation's, or
# several appended, as when runs go one at a time or lanes share them out; other lines are
# skipped). Prints the default-run table's cells, as the README's table has them:
#   FILE: P of N runs pass every dlca eval check; wall s median M (slowest S), mean A, per passing
#   circuit W; populations 1 / 2 / 3 / 4+: a / b / c / d; ending on a repaired member: R
# With OTHER (the same runs another way, e.g. `--population 2 --tries 8` against the default),
# the same for OTHER, then the runs both files have, paired by run number:
#   FILE faster in F of B runs both have
# Exit 0, 1 when a file has no run line, 2 on bad usage or an unreadable file.
# Example: tools/default_runs_summary.sh p2.txt p4.txt
set -uo pipefail
usage="usage: tools/default_runs_summary.sh FILE [OTHER]"
die() { echo "default_runs_summary: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "$usage"
for f in "$@"; do [ -f "$f" ] && [ -r "$f" ] || die "$f: not a readable file"; done

# One line a run: its number, wall seconds, the try that wrote it, 1 when repaired, 1 when passing.
runs() {
    awk '/^run [0-9]+: --seed / {
        k = $2; sub(":", "", k)
        wall = ""; try = 1; rep = 0; pass = 0
        for (i = 3; i < NF; i++) {
            if ($(i + 1) == "s" && wall == "") wall = $i
            if ($i == "try") { split($(i + 1), t, "/"); try = t[1] }
            if ($i == "repaired" && $(i + 1) ~ /^[0-9]+$/) rep = ($(i + 1) > 0)
        }
        if (match($0, /eval: [0-9]+ of [0-9]+ checks? passed$/)) {
            split(substr($0, RSTART + 6), v, " ")
            pass = (v[1] == v[3])
        }
        if (wall != "") print k, wall, try, rep, pass
    }' "$1"
}

summary() {
    local rows
    rows=$(runs "$1")
    if [ -z "$rows" ]; then
        echo "$1: no run lines (tools/default_runs.sh's 'run k: ...')"
        return 1
    fi
    printf '%s\n' "$rows" | sort -k2,2g | awk -v name="$1" '
        { w[NR] = $2; s += $2; p += $5; r += $4; t = ($3 > 4) ? 4 : $3; pop[t]++ }
        END {
            m = (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2
            per = p ? sprintf("%.2f", s / p) : "inf"
            printf "%s: %d of %d runs pass every dlca eval check; wall s median %.2f (slowest %.2f), " \
                   "mean %.2f, per passing circuit %s; populations 1 / 2 / 3 / 4+: %d / %d / %d / %d; " \
                   "ending on a repaired member: %d\n", name, p, NR, m, w[NR], s / NR, per,
                   pop[1], pop[2], pop[3], pop[4], r
        }'
}

status=0
summary "$1" || status=1
if [ $# -eq 2 ]; then
    summary "$2" || status=1
    join <(runs "$1" | awk '{ print $1, $2 }' | sort -k1,1) <(runs "$2" | awk '{ print $1, $2 }' | sort -k1,1) |
        awk -v a="$1" '{ n++; if ($2 < $3) f++ } END { printf "%s faster in %d of %d runs both have\n", a, f, n }'
fi
exit $status
