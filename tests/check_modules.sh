#!/usr/bin/env bash
# check_modules.sh SRC_DIR MODULES_FILE: the module rule of src/CMakeLists.txt, as a test.
#   1. the modules' declared dependencies form no cycle;
#   2. every #include "x.h" of src/<m>/ names a header of <m> or of a module <m> depends on
#      (directly or through others), and every header name is unique across src/;
#   3. no two headers include each other in a circle.
# Prints each violation on a line of its own and exits 1 when there is any.
set -u
src=${1:?usage: check_modules.sh SRC_DIR MODULES_FILE}
modules=${2:?usage: check_modules.sh SRC_DIR MODULES_FILE}
failed=0
fail() {
    echo "check_modules: $*"
    failed=1
}

declare -A deps home closure
while IFS=: read -r name list; do
    [ -n "$name" ] && deps[$name]=$list
done < "$modules"
[ ${#deps[@]} -gt 0 ] || { echo "check_modules: $modules lists no module"; exit 1; }

# 1. The transitive closure of each module's dependencies, failing on a cycle.
declare -A state
visit() { # visit MODULE: fills closure[MODULE]; state: 1 on the stack, 2 done
    local m=$1 d all=""
    [ "${state[$m]:-0}" = 2 ] && return 0
    if [ "${state[$m]:-0}" = 1 ]; then
        fail "module cycle through '$m'"
        return 1
    fi
    [ -n "${deps[$m]+set}" ] || { fail "module '$m' is used but not declared in $modules"; return 1; }
    state[$m]=1
    for d in ${deps[$m]}; do
        visit "$d" || return 1
        all="$all $d ${closure[$d]}"
    done
    state[$m]=2
    closure[$m]=$all
}
for m in "${!deps[@]}"; do visit "$m"; done

# 2. Where each header lives, then each include against the including module's closure.
for dir in "$src"/*/; do
    m=$(basename "$dir")
    [ -n "${deps[$m]+set}" ] || fail "src/$m is not a module of $modules"
    for h in "$dir"*.h; do
        [ -e "$h" ] || continue
        b=$(basename "$h")
        [ -n "${home[$b]:-}" ] && fail "$b is in both src/${home[$b]} and src/$m"
        home[$b]=$m
    done
done
declare -A edges
for dir in "$src"/*/; do
    m=$(basename "$dir")
    for f in "$dir"*.c "$dir"*.h; do
        [ -e "$f" ] || continue
        while read -r inc; do
            at=${home[$inc]:-}
            [ -n "$at" ] || continue # a generated header (the embedded SPIR-V) or a system one
            if [ "$at" != "$m" ] && [[ " ${closure[$m]:-} " != *" $at "* ]]; then
                fail "src/$m/$(basename "$f") includes $inc of module '$at', which '$m' does not depend on"
            fi
            case "$f" in *.h) edges[$(basename "$f")]+=" $inc" ;; esac
        done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
    done
done

# 3. Header include cycles, by depth-first search.
declare -A hstate
hvisit() {
    local h=$1 next
    [ "${hstate[$h]:-0}" = 2 ] && return 0
    if [ "${hstate[$h]:-0}" = 1 ]; then
        fail "include cycle through $h"
        return 1
    fi
    hstate[$h]=1
    for next in ${edges[$h]:-}; do hvisit "$next" || return 1; done
    hstate[$h]=2
}
for h in "${!home[@]}"; do hvisit "$h"; done

[ "$failed" = 0 ] && echo "check_modules: ${#deps[@]} modules, ${#home[@]} headers: every include follows the declared dependencies"
exit "$failed"
