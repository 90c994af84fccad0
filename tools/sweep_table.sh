#!/bin/sh
# sweep_table.sh BUILD_DIR [dlca sweep flags...]: runs `dlca sweep` with the flags given and prints
# the README's Markdown rows for it (| preset | method | exact/S | median steps to exact | wall s per
# exact | device | commit |), the commit being the build's (BUILD_DIR/COMMIT, tools/commit_label.sh)
# or this checkout's (with "+" when it has changes).
# Example: tools/sweep_table.sh build --preset checkerboard,gol --seeds 1-16 --device 0
set -eu
if [ $# -lt 1 ] || [ ! -x "$1/dlca" ]; then
    echo "usage: tools/sweep_table.sh BUILD_DIR [dlca sweep flags...] (BUILD_DIR/dlca must exist)" >&2
    exit 2
fi
build=$1
shift
commit=$(sh "$(dirname "$0")/commit_label.sh" "$build")
"$build/dlca" sweep "$@" --markdown --commit "$commit" | grep '^|'
