#!/usr/bin/env bash
# Regenerates every picture of the README from the shipped models in assets/models/: the
# rollouts in assets/readme/ (strips and a GIF), the learned Game of Life circuit, and the
# viewer's picture assets/viewer.png. Deterministic: the same commands and seeds (dlca run's
# default seed 1; every run is the hard circuit, the same bits on any device) give the same
# files, so a diff after running it means a rendering change. The commands are the ones the
# README's captions give (plus --device cpu: no GPU is needed to draw).
#   tools/make_readme_assets.sh [BUILD_DIR [ASSETS_DIR]]   (defaults: build, assets)
# ASSETS_DIR elsewhere writes ASSETS_DIR/readme/* and ASSETS_DIR/viewer.png there instead, as
# tests/check_tools.sh does to compare them with the committed ones.
# Needs dlca; Graphviz's dot for the circuit and dlca-view for the viewer's picture (each skipped,
# with a note, when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dlca="$build/dlca"
view="$build/viewer/dlca-view"
models=assets/models
assets_out=${2:-assets}
out=$assets_out/readme
mkdir -p "$out"
if [ ! -x "$dlca" ]; then
    echo "make_readme_assets: no $dlca: build first (cmake --build $build)" >&2
    exit 1
fi

run() {
    echo "dlca run $*"
    "$dlca" run "$@" --device cpu > /dev/null
}

run "$models/gol.dlca" --grid 24x24 --steps 24 --every 4 --scale 4 --out "$out/gol.png"
run "$models/checkerboard.dlca" --every 4 --scale 4 --out "$out/checkerboard.png"
run "$models/checkerboard.dlca" --grid 64x64 --steps 160 --every 20 --scale 2 --damage 22,22,20,20@80 \
    --out "$out/checkerboard64.png"
run "$models/checkerboard-async.dlca" --every 10 --scale 4 --out "$out/checkerboard-async.png"
run "$models/lizard.dlca" --every 2 --scale 4 --out "$out/lizard.png"
run "$models/image.dlca" --every 3 --scale 4 --out "$out/image.png"
run "$models/image.dlca" --out "$out/image.gif"
run "$models/image-persist.dlca" --steps 150 --every 15 --scale 4 --out "$out/image-persist.png"
run "$models/image-persist.dlca" --steps 60 --every 5 --scale 4 --damage 0,0,8,8@30 --out "$out/image-regrow.png"
run "$models/image-persist.dlca" --steps 90 --damage 0,0,8,8@45 --out "$out/image-persist.gif"

if command -v dot > /dev/null 2>&1; then
    dot_file=$(mktemp /tmp/dlca_gol_circuit.XXXXXX.dot)
    trap 'rm -f "$dot_file"' EXIT
    echo "dlca export $models/gol.dlca --format dot; tools/render_circuit.sh (-Gsize=6,7.5)"
    "$dlca" export "$models/gol.dlca" --format dot --out "$dot_file" > /dev/null
    DOT_FLAGS="-Gsize=6,7.5" tools/render_circuit.sh "$dot_file" "$out/gol_circuit.png" > /dev/null
else
    echo "make_readme_assets: no Graphviz 'dot': $out/gol_circuit.png left as it is" >&2
fi

if [ -x "$view" ]; then
    echo "dlca-view $models/image.dlca --headless --scale 40 --keys 'step 15; key space; capture $assets_out/viewer.png'"
    "$view" "$models/image.dlca" --headless --device cpu --scale 40 \
        --keys "step 15; key space; capture $assets_out/viewer.png" > /dev/null
else
    echo "make_readme_assets: no $view: $assets_out/viewer.png left as it is" >&2
fi
echo "make_readme_assets: done; 'git status $assets_out' shows what changed"
