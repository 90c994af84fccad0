#!/bin/sh
# commit_label.sh: this checkout's short commit for a table's commit column, "+" after it when
# tracked files have changes, "-" outside a git checkout. Used by sweep_table.sh and sweep_lanes.sh.
here=$(dirname "$0")
commit=$(git -C "$here" rev-parse --short HEAD 2> /dev/null || echo -)
if [ "$commit" != - ] && [ -n "$(git -C "$here" status --porcelain --untracked-files=no 2> /dev/null)" ]; then
    commit="$commit+"
fi
echo "$commit"
