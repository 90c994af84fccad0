#!/bin/sh
# bench_compare.sh OLD_DLCA NEW_DLCA [ROUNDS]: two builds of dlca timed on the same machine in one
# run, as a Markdown table: for each row, `dlca bench` of each binary in turn, ROUNDS times
# (default 3), alternating so that clock and temperature drift fall on both; the cell is the
# median over the rounds of each run's GPU-time median per training step, and the last column
# the ratio new / old. Rows: checkerboard at batch 2 and 256, lizard, image (the presets' T).
# Both read the targets of this tree's assets/ (DLCA_ASSETS), wherever they were built.
# Environment: BENCH_DEVICE (default 0), BENCH_STEPS (default 50), BENCH_ROWS (default
# "checkerboard:2 checkerboard:256 lizard:1 image:1", preset:batch pairs).
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: tools/bench_compare.sh OLD_DLCA NEW_DLCA [ROUNDS]" >&2
    exit 2
fi
old=$1 new=$2 rounds=${3:-3}
device=${BENCH_DEVICE:-0} steps=${BENCH_STEPS:-50}
for b in "$old" "$new"; do [ -x "$b" ] || { echo "bench_compare: no executable $b" >&2; exit 1; }; done
export DLCA_ASSETS="${DLCA_ASSETS:-$(cd "$(dirname "$0")/.." && pwd)/assets}"
work=$(mktemp -d "${TMPDIR:-/tmp}/dlca_bench_compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

# gpu_ms JSON: the GPU-time median of a bench's JSON (flat, one key a line).
gpu_ms() { sed -n 's/^  "gpu_ms_median": \([0-9.eE+-]*\).*/\1/p' "$1"; }
# median: the middle of the numbers on stdin (the mean of the two middle ones for an even count).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "| row | old ms | new ms | new / old |"
echo "|---|---|---|---|"
rows=${BENCH_ROWS:-"checkerboard:2 checkerboard:256 lizard:1 image:1"}
for row in $rows; do
    row=$(echo "$row" | tr : " ")
    set -- $row
    preset=$1 batch=$2
    : > "$work/old.txt"
    : > "$work/new.txt"
    r=0
    while [ "$r" -lt "$rounds" ]; do
        for which in old new; do
            eval binary=\$$which
            "$binary" bench --preset "$preset" --batch "$batch" --steps "$steps" --device "$device" \
                --json "$work/run.json" > "$work/run.txt" 2>&1 || { echo "bench_compare: $which $row failed:" >&2; tail -n 3 "$work/run.txt" >&2; exit 1; }
            gpu_ms "$work/run.json" >> "$work/$which.txt"
        done
        r=$((r + 1))
    done
    o=$(median < "$work/old.txt") n=$(median < "$work/new.txt")
    echo "| $preset batch $batch | $o | $n | $(awk -v o="$o" -v n="$n" 'BEGIN { printf "%.3f", n / o }') |"
done
