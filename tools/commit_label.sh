#!/bin/sh
# commit_label.sh [BUILD_DIR]: the commit for a table's commit column. The build's own where
# BUILD_DIR/COMMIT says it (tools/gpu-tests.sh --pack writes it: on a GPU machine the checkout
# beside a carried build need not be the commit it was built from); else this checkout's short
# commit, "+" after it when tracked files have changes, "-" outside a git checkout. Used by
# sweep_table.sh and sweep_lanes.sh.
if [ -n "${1:-}" ] && [ -s "$1/COMMIT" ]; then
    head -n 1 "$1/COMMIT"
    exit 0
fi
here=$(dirname "$0")
commit=$(git -C "$here" rev-parse --short HEAD 2> /dev/null || echo -)
if [ "$commit" != - ] && [ -n "$(git -C "$here" status --porcelain --untracked-files=no 2> /dev/null)" ]; then
    commit="$commit+"
fi
echo "$commit"
