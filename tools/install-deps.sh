#!/bin/sh
# Installs what dlca needs to build, test and run on Debian or Ubuntu. Safe to run again.
# Run as root, or as a user with sudo. DLCA_APT_UPDATE=0 skips 'apt-get update'.
# Tests only: mesa-vulkan-drivers (lavapipe), vulkan-validationlayers, dataset-fashion-mnist,
# iverilog (the Verilog export) and graphviz (circuit pictures).
set -eu

packages="build-essential cmake pkg-config libvulkan-dev glslang-tools libpng-dev libgif-dev libsdl2-dev \
mesa-vulkan-drivers vulkan-tools vulkan-validationlayers dataset-fashion-mnist iverilog graphviz"

if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1; then
    as_root="sudo"
else
    echo "install-deps: run as root or install sudo" >&2
    exit 1
fi

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: everything is installed"
    exit 0
fi
echo "install-deps: installing$missing"
if [ "${DLCA_APT_UPDATE:-1}" != 0 ]; then $as_root apt-get update -qq; fi
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends $missing
