#!/bin/sh
# bench_table.sh BUILD_DIR [DEVICE]: the standard speed table of `dlca bench` as Markdown on
# stdout: every preset at its default batch; checkerboard at batch 2, 16, 64 and 256; checkpoint
# against full cache at T=50 for checkerboard (per-layer kernels), and the fused kernels there;
# one CPU-engine row; the hard engine. DEVICE is
# what --device takes (default auto). Progress and failures go to stderr; a row that fails
# (out of device memory, say) is printed as failed and the table goes on.
#
# Environment: BENCH_STEPS / BENCH_WARMUP override the measured and warm-up steps of the GPU
# rows; BENCH_MAX_BATCH skips checkerboard rows above that batch (for slow devices such as
# lavapipe); BENCH_CPU=0 drops the CPU-engine row; BENCH_COMMIT names the commit the binary was
# built from, for a copy of the tree whose git is not that commit (a build carried to another
# machine); without it the table says what `git describe` says here.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: tools/bench_table.sh BUILD_DIR [DEVICE]" >&2
    exit 2
fi
dlca="$1/dlca"
device="${2:-auto}"
args="$*"
[ -x "$dlca" ] || { echo "bench_table: no executable $dlca (build first)" >&2; exit 1; }
max_batch="${BENCH_MAX_BATCH:-1000000}"
work=$(mktemp -d "${TMPDIR:-/tmp}/dlca_bench_table.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
: > "$work/rows.md"

# field FILE KEY: the value of one key of bench's flat JSON (one "key": value per line), with
# quotes stripped; "-" when null or missing.
field() {
    value=$(sed -n "s/^  \"$2\": \(.*\)$/\1/p" "$1" | sed 's/,$//; s/^"//; s/"$//')
    if [ -z "$value" ] || [ "$value" = null ]; then echo "-"; else echo "$value"; fi
}

# num FILE KEY FORMAT SCALE: a number printed with FORMAT after dividing by SCALE, or "-".
num() {
    value=$(field "$1" "$2")
    if [ "$value" = "-" ]; then echo "-"; else awk -v v="$value" -v s="$4" "BEGIN { printf \"$3\", v / s }"; fi
}

# ms FILE KEY: milliseconds, 4 significant digits but never in exponent form.
ms() {
    value=$(field "$1" "$2")
    if [ "$value" = "-" ]; then echo "-"; else awk -v v="$value" 'BEGIN { printf(v >= 1000 ? "%.0f" : "%.4g", v) }'; fi
}

# spread FILE NAME: "median (p10-p90)" of NAME_ms.
spread() {
    median=$(ms "$1" "$2_ms_median")
    [ "$median" = "-" ] && { echo "-"; return; }
    echo "$median ($(ms "$1" "$2_ms_p10")-$(ms "$1" "$2_ms_p90"))"
}

# header JSON: the title, the machine and the table head, from the first run that succeeded.
header() {
    commit=${BENCH_COMMIT:-$(git -C "$(dirname "$0")/.." describe --always --dirty 2>/dev/null || echo unknown)}
    echo "# dlca bench table"
    echo
    echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- machine: $(field "$1" host), CPU $(field "$1" cpu)"
    echo "- device: $(field "$1" device) ($(field "$1" device_type)), driver $(field "$1" driver), Vulkan $(field "$1" vulkan_api)"
    echo "- dlca $(field "$1" dlca_version), commit $commit, \`tools/bench_table.sh $args\`"
    echo
    echo "Times in ms per training step: median (p10-p90). GPU = timestamps from the coefficients to AdamW;"
    echo "forward = coefficients + T steps; backward = BPTT. Gate evals/s count forward and backward once"
    echo "each, by GPU time where there is one, else by wall clock. Memory: peak device-local MiB."
    echo
    echo "| preset | batch | T | cache | engine | wall ms | GPU ms | forward ms | backward ms | gate evals/s | dispatches/step | submits/step | peak MiB |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
}

# row PRESET DEVICE [bench flags...]: one bench run; appends its table row to rows.md.
row() {
    preset="$1" dev="$2"
    shift 2
    json="$work/row.json"
    rm -f "$json"
    echo "bench_table: $preset --device $dev $*" >&2
    if ! "$dlca" bench --preset "$preset" --device "$dev" --json "$json" "$@" > "$work/out.txt" 2> "$work/err.txt"; then
        cat "$work/err.txt" >&2
        echo "| $preset | $* | | | | failed: $(head -n 1 "$work/err.txt" | tr '|' '/') | | | | | | | |" >> "$work/rows.md"
        return 0
    fi
    [ -f "$work/first.json" ] || cp "$json" "$work/first.json"
    rate=$(num "$json" gate_evals_per_s_gpu %.3g 1)
    [ "$rate" = "-" ] && rate=$(num "$json" gate_evals_per_s_wall %.3g 1)
    echo "| $preset | $(field "$json" batch) | $(field "$json" T) | $(field "$json" cache) | $(field "$json" engine)" \
         "| $(spread "$json" wall) | $(spread "$json" gpu) | $(spread "$json" forward) | $(spread "$json" backward)" \
         "| $rate | $(num "$json" dispatches_per_step %.0f 1) | $(num "$json" submissions_per_step %.3g 1)" \
         "| $(num "$json" peak_device_bytes %.1f 1048576) |" >> "$work/rows.md"
}

gpu_flags=""
[ -n "${BENCH_STEPS:-}" ] && gpu_flags="$gpu_flags --steps $BENCH_STEPS"
[ -n "${BENCH_WARMUP:-}" ] && gpu_flags="$gpu_flags --warmup $BENCH_WARMUP"

# A discarded run first, a few seconds of checkerboard batch 16: on an H100 just started, gol's
# small steps (the first row) still ran at the idle clock after dlca bench's 1 s warm-up. At most
# 30 s (the CPU engine, or lavapipe, would take minutes).
if [ "$device" != cpu ]; then
    echo "bench_table: warming the device up" >&2
    timeout 30 "$dlca" bench --preset checkerboard --batch 16 --device "$device" --steps 1 --warmup 400 \
        >/dev/null 2>&1 || true
fi

# shellcheck disable=SC2086 # gpu_flags is a list of words
{
    for preset in gol checkerboard checkerboard-async lizard image; do
        row "$preset" "$device" $gpu_flags
    done
    for batch in 16 64 256; do
        if [ "$batch" -le "$max_batch" ]; then row checkerboard "$device" --batch "$batch" $gpu_flags; fi
    done
    # The cache modes matter to the per-layer kernels only: the fused ones keep no activations.
    export DLCA_FUSED=0
    row checkerboard "$device" --T 50 --cache full $gpu_flags
    row checkerboard "$device" --T 50 --cache checkpoint $gpu_flags
    unset DLCA_FUSED
    row checkerboard "$device" --T 50 $gpu_flags
    if [ "${BENCH_CPU:-1}" != 0 ] && [ "$device" != cpu ]; then row checkerboard cpu; fi
}

if [ -f "$work/first.json" ]; then
    header "$work/first.json"
else
    echo "# dlca bench table"
    echo
    echo "Every run failed (see stderr)."
    echo
fi
cat "$work/rows.md"

# The hard engine: its own line, not a training row.
if "$dlca" bench --hard --json "$work/hard.json" > "$work/out.txt" 2> "$work/err.txt"; then
    echo
    echo "Hard engine (bit-packed, 1 CPU thread, thread CPU time): $(field "$work/hard.json" model)," \
         "$(field "$work/hard.json" pruned_gates) gates after pruning, 512x512:" \
         "$(num "$work/hard.json" cell_updates_per_s %.3g 1) cell updates/s (median of $(field "$work/hard.json" runs) runs)."
else
    echo
    echo "Hard engine: failed: $(head -n 1 "$work/err.txt")"
fi
