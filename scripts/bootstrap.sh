#!/usr/bin/env bash
# Installs what sluice needs to build and test, from Debian's packages only.
# Idempotent: asks apt only for what is missing, and does nothing when
# everything is there. Runs as root, or through sudo when that exists.
set -euo pipefail

# libtorch-dev + libgloo-dev: the trainer (sluice train/extract) with
# c10d's Gloo process group. libopenblas0-openmp replaces Debian's reference
# BLAS, which LibTorch's dense layers otherwise run on, about 10x slower.
# liblapack3: the reference LAPACK that OpenCV's core needs in a GPU bundle
# (bench/gpu/bundle.sh), 7 MB instead of OpenBLAS's 44.
packages=(
  build-essential cmake ninja-build pkg-config ccache git
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev libopencv-imgproc-dev
  libisal-dev zlib1g-dev libprotobuf-dev protobuf-compiler
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev pybind11-dev libdlpack-dev
  python3-numpy python3-pytest python3-torch
  libtorch-dev libgloo-dev libopenblas0-openmp liblapack3
  tmux chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "bootstrap: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "bootstrap: done"
