#!/usr/bin/env bash
# gpu-tests.sh: the whole test suite on a real GPU, with one summary line.
#
#   tools/gpu-tests.sh --pack [BUILD_DIR]   here: a Release build in BUILD_DIR (default build-gpu)
#                                           and BUILD_DIR.tar.xz of what the tests run (binaries and
#                                           ctest files, ~2 MB: one xz thread, whose single stream
#                                           finds the kernels every binary embeds; several threads
#                                           compress apart, ~29 MB), for a machine without a compiler's
#                                           Vulkan headers or glslang, or without a network
#   tools/gpu-tests.sh [BUILD_DIR|TARBALL]  there: unpacks TARBALL if given, builds BUILD_DIR if it
#                                           holds no build, then runs every test on the GPU
#
# The run: every ctest test with DLCA_REQUIRE_VULKAN=1 (a missing device fails), the GPU engine's
# tests again with the persistent kernels forced on (--persistent on: on a GPU that cannot hold
# their workgroups they give up and the tests check the fallback), and all the GPU tests once
# more under the Vulkan validation layers where they are installed. Then one line:
#   gpu-tests: DEVICE (DRIVER), commit C: P passed, F failed (which), S skipped (why) in N s; ...
# A skip is listed with the reason its test printed, and a program that cannot load a shared
# library (its tests fail) with the libraries. Exit status 0 when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

pack=0 allow_cpu=0
if [ "${1:-}" = "--pack" ]; then pack=1; shift; fi
# --allow-cpu: run on a CPU driver too (lavapipe), to try the script on a machine without a GPU.
if [ "${1:-}" = "--allow-cpu" ]; then allow_cpu=1; shift; fi
target=${1:-build-gpu}

build() { # build DIR: a Release build with every test
    cmake -S "$root" -B "$1" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$1" -j"$(nproc)" >/dev/null
}

if [ "$pack" = 1 ]; then
    build "$target" || { echo "gpu-tests: the build failed" >&2; exit 1; }
    git -C "$root" describe --always --dirty > "$target/COMMIT" 2>/dev/null || echo unknown > "$target/COMMIT"
    (cd "$target" && find . -name CTestTestfile.cmake -o -name modules.txt -o -name CMakeCache.txt |
        tar cf - -T - COMMIT dlca dlca_inject_nan fashion_mnist test_* viewer/dlca-view) | xz -9 -T1 > "$target.tar.xz"
    echo "gpu-tests: $target.tar.xz ($(du -h "$target.tar.xz" | cut -f1)); carry it and run tools/gpu-tests.sh $target.tar.xz"
    exit 0
fi

case "$target" in
*.tar.xz)
    dir=${target%.tar.xz}
    mkdir -p "$dir" && xz -dc "$target" | tar xf - -C "$dir" || { echo "gpu-tests: cannot unpack $target" >&2; exit 1; }
    target=$dir
    ;;
esac
if [ ! -f "$target/CTestTestfile.cmake" ]; then
    build "$target" || { echo "gpu-tests: no build in $target, and building one failed" >&2; exit 1; }
fi
build_dir=$(cd "$target" && pwd)

# ctest's files name the source and build folders where they were configured: where this copy
# lives elsewhere, those paths are made to lead here.
recorded=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build_dir/CMakeCache.txt")
recorded_build=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build_dir/CMakeCache.txt")
for pair in "$recorded:$root" "$recorded_build:$build_dir"; do
    from=${pair%%:*} to=${pair#*:}
    if [ -n "$from" ] && [ "$from" != "$to" ] && [ ! -e "$from" ]; then
        mkdir -p "$(dirname "$from")" && ln -s "$to" "$from" ||
            { echo "gpu-tests: cannot link $from to $to (the build's recorded paths)" >&2; exit 1; }
    fi
done

device=$("$build_dir/dlca" devices 2>/dev/null | { if [ "$allow_cpu" = 1 ]; then cat; else grep -v ' cpu '; fi; } | head -n 1)
if [ -z "$device" ]; then
    echo "gpu-tests: no GPU: 'dlca devices' lists none but CPU drivers ($("$build_dir/dlca" devices 2>&1 | head -n 1))"
    exit 1
fi
index=${device%% *}
device_name=$(echo "$device" | sed -E 's/^[0-9]+ +//; s/ {2,}.*//')
driver=$(echo "$device" | sed -E 's/.*Vulkan [0-9.]+ +//')
# The commit the build was made from (--pack records it), else this tree's.
commit=$(cat "$build_dir/COMMIT" 2>/dev/null || git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
log=$(mktemp -d /tmp/gpu-tests.XXXXXX)
start=$(date +%s)
# A program that cannot load a shared library fails every test that runs it, whatever the GPU does:
# the summary names the libraries (a machine unpacked without SDL2, say), so such failures are not
# read as the GPU's.
unloadable=""
for program in dlca viewer/dlca-view; do
    [ -x "$build_dir/$program" ] || continue
    missing=$(ldd "$build_dir/$program" 2>/dev/null |
        sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | paste -sd' ')
    [ -z "$missing" ] || unloadable="$unloadable; $(basename "$program") cannot load $missing"
done
export DLCA_REQUIRE_VULKAN=1 DLCA_DEVICE="$index"

passed=0 failed=0 skipped=0 failures="" skips=""
# tally NAME STATUS LOGFILE: one result; a skip keeps its name and the last line its test printed
# (the reason, or a hint after it), less the name where the line starts with it.
tally() {
    case "$2" in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1))
        skips="$skips; $1: $(sed -n 's/^[0-9]*: //p' "$3" |
            grep -v -E '^(Test command|Working Directory|Environment variables| +[A-Z_]+=|Test timeout)' |
            tail -n 1 | sed "s/^$1: //" | cut -c1-120)" ;;
    *) failed=$((failed + 1)) failures="$failures $1" ;;
    esac
}

# Every ctest test, with its properties and environment, all cores busy; then the skipped ones once
# more alone, for the reason they print.
ctest --test-dir "$build_dir" -j"$(nproc)" --output-on-failure > "$log/ctest.txt" 2>&1
for name in $(ctest --test-dir "$build_dir" -N | sed -n 's/^ *Test *#[0-9]*: //p'); do
    line=$(grep -E "Test +#[0-9]+: ${name} \.+" "$log/ctest.txt" | tail -n 1)
    case "$line" in
    *Passed*) tally "$name" 0 /dev/null ;;
    *Skipped*)
        ctest --test-dir "$build_dir" -R "^${name}\$" -V > "$log/$name.txt" 2>&1
        tally "$name" 77 "$log/$name.txt" ;;
    *)  sed -n "/${name}/,/^ *Start /p" "$log/ctest.txt" > "$log/$name.txt"
        tally "$name" 1 "$log/$name.txt" ;;
    esac
done

# The GPU engine's tests with the persistent kernels forced on.
for name in test_ca_gpu test_ca_gpu_shapes; do
    (cd "$build_dir" && DLCA_TIMEOUT=480 timeout 600 "./$name" --persistent on) > "$log/${name}_persistent_on.txt" 2>&1
    tally "${name}_persistent_on" $? "$log/${name}_persistent_on.txt"
done

# Under the validation layers, as CI does on lavapipe, where they are installed.
validation="no validation layers installed"
# (compgen, not ls | grep: under pipefail a missing one of the two folders fails the pipeline.)
if compgen -G "/usr/share/vulkan/explicit_layer.d/*validation*" > /dev/null ||
    compgen -G "/etc/vulkan/explicit_layer.d/*validation*" > /dev/null; then
    gpu_tests=$(grep -l -E 'vk_context_init|test_no_vulkan|--device %d' "$root"/tests/test_*.c | xargs -n1 basename |
        sed 's/\.c$//' | paste -sd'|')
    DLCA_VALIDATE=1 ctest --test-dir "$build_dir" -R "^(${gpu_tests})\$" --output-on-failure > "$log/validation.txt" 2>&1
    status=$?
    validation="validation layers: $(grep -E 'tests passed|tests failed' "$log/validation.txt" | tail -n 1)"
    [ "$status" = 0 ] || failed=$((failed + 1)) failures="$failures validation"
fi

seconds=$(( $(date +%s) - start ))
for name in $failures; do
    echo "---- $name ----"
    tail -n 40 "$log/$name.txt" 2>/dev/null
done
summary="$passed passed, $failed failed${failures:+ (${failures# })}, $skipped skipped${skips:+ (${skips#; })}"
summary="$summary in $seconds s; $validation${unloadable:+; ${unloadable#; }}"
echo "gpu-tests: $device_name ($driver), commit $commit: $summary"
echo "gpu-tests: logs in $log"
[ "$failed" = 0 ]
