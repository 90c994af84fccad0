#!/usr/bin/env bash
# Trains the five paper presets, evaluates each and renders a rollout strip:
#   tools/train_presets.sh BUILD_DIR OUT_DIR [DEVICE] [extra dlca train flags...]
# writes OUT_DIR/<preset>.dlca, .csv, -loss.png, -eval.txt, -run.png and OUT_DIR/summary.md
# (preset, final hard loss, active gates, wall time, device). DEVICE defaults to auto; on a GPU
# each preset trains dlca train's default (populations of 2 in turn, up to 16 seeds, the lizard's
# 32, until one member is verified exact; add --population 1 for single runs). image-persist, the
# image trained to keep its picture, is not among them: `dlca train --preset image-persist`.
# dlca train does not replace existing models: add --force to retrain into an OUT_DIR that has
# them. A model that fails a check is listed as such (dlca eval exits 1; the script goes on).
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; device=${3:-auto}; shift $(( $# < 3 ? $# : 3 ))
dlca="$build/dlca"
mkdir -p "$out"
summary="$out/summary.md"
echo "| preset | steps | final soft loss | final hard loss | active gates | checks passed | wall time | device |" > "$summary"
echo "|---|---|---|---|---|---|---|---|" >> "$summary"
for preset in gol checkerboard checkerboard-async lizard image; do
    start=$(date +%s%N)
    "$dlca" train --preset "$preset" --device "$device" --every 50 --out "$out/$preset.dlca" "$@" 2>&1 | tr '\r' '\n' | tail -n 3
    seconds=$(( ($(date +%s%N) - start) / 1000000000 ))
    "$dlca" eval "$out/$preset.dlca" --device "$device" | tee "$out/$preset-eval.txt" || true
    view=grey; [ "$preset" = image ] && view=rgb
    "$dlca" run "$out/$preset.dlca" --device "$device" --view $view --scale 6 --out "$out/$preset-run.png" > /dev/null
    last=$(tail -n 1 "$out/$preset.csv")
    active=$(sed -n 's/.*active \([0-9]*\).*/\1/p' "$out/$preset-eval.txt")
    checks=$(sed -n 's/^\([0-9]* of [0-9]*\) checks passed/\1/p' "$out/$preset-eval.txt")
    name=$(sed -n 's/.* on \(.*\)$/\1/p' "$out/$preset-eval.txt" | head -n 1)
    printf '| %s | %s | %s | %s | %s | %s | %d s | %s |\n' "$preset" "$(cut -d, -f1 <<<"$last")" \
        "$(cut -d, -f2 <<<"$last")" "$(cut -d, -f3 <<<"$last")" "$active" "$checks" "$seconds" "$name" >> "$summary"
done
cat "$summary"
