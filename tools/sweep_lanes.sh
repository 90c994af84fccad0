#!/usr/bin/env bash
# sweep_lanes.sh BUILD_DIR LIST OUT_DIR [--devices D,D,...] [--seeds A-B] [--seconds S]
#
# Runs the rows of LIST, one `dlca sweep` each, on several devices at once: row i goes to lane
# i mod (number of devices), and each lane runs its rows one after another on its own device
# (`--device D`: a Vulkan device index, or cpu). On a host of four GPUs four sweeps run side by side
# at the speed of one each, where several sweeps on one GPU each ran about as many times slower.
#
# LIST: one row a line, `name | preset | flags` (flags: any of dlca sweep's, may be empty); blank
# lines and lines starting with # are skipped; a name is letters, digits, '.', '_' or '-' and names
# the row's files in OUT_DIR (name.txt, name.err, name.json, name.csv).
# --devices  the lanes' devices (default 0)
# --seeds    every row's seeds (default 1-16); a row whose flags give --seeds runs those instead
#            (its flags come after, and dlca sweep takes the last), e.g. fresh seeds for a row
#            that confirms another
# --seconds  a deadline S seconds from the start: a row still running then is stopped (dlca sweep
#            writes what it has, the preset marked interrupted; killed if still there 60 s later)
#            and a row not started is skipped
#
# Prints, in the list's order, the README's Markdown rows (| preset | method | exact/S | median
# steps to exact | wall s per exact | device | commit |, the commit the build's (BUILD_DIR/COMMIT,
# tools/commit_label.sh) or this checkout's, "+" when it has changes), then each row's exact seeds (r: made exact by --repair), then the rows skipped.
# Exit 0 when every row that ran exited 0, 1 when one did not, 2 on bad usage or a bad LIST line.
# Example: tools/sweep_lanes.sh build-gpu scan.txt scan --devices 0,1,2,3 --seeds 1-32 --seconds 380
set -uo pipefail
usage="usage: tools/sweep_lanes.sh BUILD_DIR LIST OUT_DIR [--devices D,D,...] [--seeds A-B] [--seconds S]"
die() { echo "sweep_lanes: $*" >&2; exit 2; }
[ $# -ge 3 ] || die "$usage"
build=$1 list=$2 out=$3
shift 3
devices=0 seeds=1-16 seconds=0
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || die "$1 needs a value ($usage)"
    case $1 in
    --devices) devices=$2 ;;
    --seeds) seeds=$2 ;;
    --seconds) seconds=$2 ;;
    *) die "unknown option $1 ($usage)" ;;
    esac
    shift 2
done
[ -x "$build/dlca" ] || die "$build/dlca is not an executable (BUILD_DIR must hold a built dlca)"
[ -r "$list" ] || die "$list: cannot read the list"
[[ $devices =~ ^[A-Za-z0-9]+(,[A-Za-z0-9]+)*$ ]] || die "--devices '$devices': a comma-separated list of devices (0,1 or cpu)"
[[ $seconds =~ ^[0-9]+$ ]] || die "--seconds '$seconds': a whole number of seconds (0: no deadline)"
IFS=, read -r -a lanes <<< "$devices"

names=() presets=() flags=()
line_no=0
while IFS= read -r line || [ -n "$line" ]; do
    line_no=$((line_no + 1))
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    [[ $line =~ ^[[:space:]]*([A-Za-z0-9._-]+)[[:space:]]*\|[[:space:]]*([A-Za-z0-9-]+)[[:space:]]*\|(.*)$ ]] ||
        die "$list:$line_no: not 'name | preset | flags': $line"
    name=${BASH_REMATCH[1]}
    for seen in "${names[@]+"${names[@]}"}"; do [ "$seen" != "$name" ] || die "$list:$line_no: the name '$name' comes twice"; done
    names+=("$name") presets+=("${BASH_REMATCH[2]}") flags+=("$(echo "${BASH_REMATCH[3]}" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')")
done < "$list"
[ ${#names[@]} -gt 0 ] || die "$list: no rows"
mkdir -p "$out" || die "$out: cannot make the folder"

commit=$(sh "$(dirname "$0")/commit_label.sh" "$build")
start=$(date +%s)

# Lane k runs rows k, k + lanes, k + 2 lanes, ...; a row's status goes to name.status
run_lane() {
    local k=$1 device=${lanes[$1]} i
    for ((i = k; i < ${#names[@]}; i += ${#lanes[@]})); do
        local n=${names[$i]} left=0
        if [ "$seconds" -gt 0 ]; then
            left=$((start + seconds - $(date +%s)))
            if [ "$left" -lt 5 ]; then echo skipped > "$out/$n.status"; continue; fi
        fi
        # the flags split into words on purpose: they are a row of dlca sweep flags
        # shellcheck disable=SC2086
        timeout --preserve-status -k 60 "$left" "$build/dlca" sweep --device "$device" --preset "${presets[$i]}" --seeds "$seeds" ${flags[$i]} \
            --every 1000 --markdown --commit "$commit" --json "$out/$n.json" --csv "$out/$n.csv" > "$out/$n.txt" 2> "$out/$n.err"
        echo $? > "$out/$n.status"
    done
}
for ((k = 0; k < ${#lanes[@]}; k++)); do run_lane "$k" & done
wait

status=0 header=0
for n in "${names[@]}"; do
    s=$(cat "$out/$n.status" 2> /dev/null || echo lost)
    [ "$s" = skipped ] && continue
    if [ "$s" != 0 ]; then
        echo "sweep_lanes: row $n exited $s: $(tail -1 "$out/$n.err")" >&2
        status=1
        continue
    fi
    if [ "$header" = 0 ]; then grep -m 2 '^|' "$out/$n.txt"; header=1; fi
    grep '^|' "$out/$n.txt" | tail -n +3
done
echo
for n in "${names[@]}"; do
    [ "$(cat "$out/$n.status" 2> /dev/null)" = 0 ] || continue
    # csv: preset,seed,exact_step,...,repaired; a seed is exact where its exact_step is not empty,
    # or repaired (marked r) where the last column is 1
    echo "$n: exact seeds $(awk -F, 'NR > 1 && ($3 != "" || $7 == 1) { printf "%s%s%s", sep, $2, $7 == 1 ? "r" : ""; sep = " " } END { if (sep == "") print "-" }' "$out/$n.csv")"
done
for n in "${names[@]}"; do
    [ "$(cat "$out/$n.status" 2> /dev/null)" = skipped ] && echo "$n: skipped (the deadline came first)"
done
exit "$status"
