#!/usr/bin/env bash
# default_runs.sh BUILD_DIR PRESET [RUNS | FIRST-LAST] [--logs DIR] [--warm] [-- FLAGS...]
#
# The default `dlca train` as a user meets it, measured over RUNS runs (default 16; FIRST-LAST
# runs only those of the numbers k below, so that machines of several GPUs can share the runs
# out, each with its `-- --device N`): run k trains
# `dlca train --preset PRESET --seed 16k+1 FLAGS`, the lizard's 32k+1 (the default on a GPU tries
# seeds S to S+15, the lizard's S to S+31, so the runs share no seed), then `dlca eval` checks what
# it wrote. Prints a line a run (its base seed, exit status, wall seconds, the populations it
# tried, the seed it wrote and whether that is verified exact or repaired, eval's verdict) and then
# the summary:
#   PRESET: N of RUNS runs wrote a circuit that passes every dlca eval check; wall s median M,
#   per passing circuit W
# The runs' files go in a temporary folder, removed at the end; with --logs DIR each run's
# `dlca train` stderr is written to DIR/run<k>.err as it runs (kept, also for a run cut short) and
# eval's report to DIR/eval<k>.txt. --warm first trains seed 999999 the same way, not counted, so
# that every counted run finds the pipeline cache as a user's runs after their first do (a run
# that compiles the kernels takes seconds more and can move the median). Exit 0 when every run ran (passing
# or not), 1 when a dlca command failed other than by an inexact result, 2 on bad usage.
# SIGTERM, SIGINT or SIGHUP (a deadline's `timeout -s TERM`, Ctrl-C) stops the dlca train under way
# and waits for it, so nothing is left writing into the removed temporary folder; that run is not
# counted, and the summary covers the runs that finished (exit as above).
# Example: tools/default_runs.sh build checkerboard 16
set -uo pipefail
die() { echo "default_runs: $*" >&2; exit 2; }
usage="usage: tools/default_runs.sh BUILD_DIR PRESET [RUNS | FIRST-LAST] [--logs DIR] [--warm] [-- FLAGS...]"
[ $# -ge 2 ] || die "$usage"
build=$1 preset=$2 spec=16 logs= warm=0
shift 2
if [ $# -gt 0 ] && [ "$1" != "--" ] && [ "$1" != "--logs" ] && [ "$1" != "--warm" ]; then spec=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--logs" ]; then
    [ $# -ge 2 ] || die "--logs: no folder given"
    logs=$2
    shift 2
    mkdir -p "$logs" && [ -w "$logs" ] || die "--logs: '$logs' is not a writable folder"
fi
if [ $# -gt 0 ] && [ "$1" = "--warm" ]; then warm=1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
if [[ $spec =~ ^[1-9][0-9]*$ ]]; then
    first=0 last=$((spec - 1))
elif [[ $spec =~ ^([0-9]+)-([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ]; then
    first=$((10#${BASH_REMATCH[1]})) last=$((10#${BASH_REMATCH[2]}))
else
    die "RUNS: '$spec' is neither a positive whole number nor FIRST-LAST (run numbers from 0, FIRST <= LAST)"
fi
dlca=$build/dlca
[ -x "$dlca" ] || die "$dlca: no dlca program there (build first)"
work=$(mktemp -d) || die "no temporary folder"
trap 'rm -rf "$work"' EXIT
keep=${logs:-$work} # where each run's stderr and eval report go

# the seeds a default run may try (cmd_population_default_run: 8 populations of 2, the lizard 16)
stride=16
[ "$preset" = lizard ] && stride=32
failed=0 passed=0 stop= child=
walls=()
on_signal() { stop=1; [ -n "$child" ] && kill -TERM "$child" 2> /dev/null; }
trap on_signal TERM INT HUP
# train SEED OUT NAME FLAGS...: dlca train of SEED into OUT, its stderr in $keep/NAME.err; sets rc
# and wall (seconds). In the background, so that a signal reaches the trap while it trains.
train() {
    local seed=$1 out=$2 name=$3 t0 t1
    shift 3
    t0=$(date +%s.%N)
    "$dlca" train --preset "$preset" --seed "$seed" --out "$out" "$@" > "$work/$name.out" 2> "$keep/$name.err" &
    child=$!
    [ -z "$stop" ] || kill -TERM "$child" 2> /dev/null # a signal before child was set
    wait "$child"
    rc=$?
    while kill -0 "$child" 2> /dev/null; do # the wait a signal cut short
        wait "$child"
        rc=$?
    done
    child=
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
}
if [ "$warm" = 1 ]; then
    train 999999 "$work/warm.dlca" warm "$@"
    echo "warm: --seed 999999  exit $rc  ${wall} s  (not counted: the pipeline cache filled)"
    if [ $rc -ne 0 ] && [ $rc -ne 1 ] && [ -z "$stop" ]; then
        failed=1
        echo "warm (--seed 999999): dlca train exit $rc: $(tail -n 1 "$keep/warm.err")" >&2
    fi
fi
for ((k = first; k <= last; k++)); do
    seed=$((stride * k + 1))
    out=$work/run$k.dlca
    train "$seed" "$out" "run$k" "$@"
    if [ -n "$stop" ]; then
        echo "run $k: --seed $seed  interrupted after $wall s, not counted"
        break
    fi
    walls+=("$wall")
    wrote=$(grep -m1 '^wrote ' "$keep/run$k.err" | sed -n 's/^wrote [^ ]* (\([^)]*\)).*/\1/p')
    tries=$(grep -o 'try [0-9]*/[0-9]*' "$keep/run$k.err" | tail -n 1)
    # a try whose training a repair of the try before stopped is not one the run used
    if [ -n "$tries" ] && grep -q '^stopped training seeds' "$keep/run$k.err"; then
        n=${tries#try } n=${n%/*}
        tries="try $((n - 1))/${tries#*/}"
    fi
    repaired=$(grep -c 'verified exact by changing' "$keep/run$k.err")
    verdict="not written"
    if [ -f "$out" ]; then
        "$dlca" eval "$out" --device cpu > "$keep/eval$k.txt" 2>&1
        erc=$?
        verdict=$(grep -E '^[0-9]+ of [0-9]+ checks? passed' "$keep/eval$k.txt" | tail -n 1)
        [ -n "$verdict" ] || verdict="eval exit $erc"
        if [ $erc -eq 0 ]; then
            passed=$((passed + 1))
        fi
    fi
    # exit 1 is an inexact result; anything else is a failure of the command
    if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
        failed=1
        echo "run $k (--seed $seed): dlca train exit $rc: $(tail -n 1 "$keep/run$k.err")" >&2
    fi
    echo "run $k: --seed $seed  exit $rc  ${wall} s  ${tries:-try 1/1}  wrote ${wrote:-its run}  repaired $repaired  eval: $verdict"
    [ -z "$stop" ] || break # a signal during eval: this run counts, the next does not start
done
runs=${#walls[@]}
median=- total=0.0
if [ "$runs" -gt 0 ]; then
    median=$(printf '%s\n' "${walls[@]}" | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    total=$(printf '%s\n' "${walls[@]}" | awk '{ s += $1 } END { printf "%.1f", s }')
fi
per_all=$(awk -v w="$total" -v n="$passed" 'BEGIN { if (n) printf "%.2f", w / n; else print "inf" }')
echo "$preset: $passed of $runs runs wrote a circuit that passes every dlca eval check; wall s median $median," \
     "all runs $total, per passing circuit $per_all"
exit $failed
