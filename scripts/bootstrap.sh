#!/usr/bin/env bash
# Installs what sluice needs to build and test, from Debian's packages.
# Idempotent: asks apt only for what is missing, and does nothing when
# everything is there. Runs as root, or through sudo when that exists.
#
#   scripts/bootstrap.sh            Debian packages: build, demo, unit tests
#   scripts/bootstrap.sh --interop  also build/venv with the real clients the
#                                   interop tests need (TensorFlow, TensorBoard,
#                                   JAX, DALI; pinned, from PyPI): make test
#   scripts/bootstrap.sh --peers    also what bench/compare.sh runs the peers
#                                   with (PyTorch's DataLoader, tf.data, DALI,
#                                   SPDL)
#   scripts/bootstrap.sh --fuzz     also clang and its libFuzzer runtime: make fuzz
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:-}"
case "$mode" in
  ""|--interop|--peers|--fuzz) ;;
  *) echo "usage: scripts/bootstrap.sh [--interop|--peers|--fuzz]" >&2; exit 2 ;;
esac

# libtorch-dev + libgloo-dev: the trainer (sluice train/extract) with
# c10d's Gloo process group. libopenblas0-openmp replaces Debian's reference
# BLAS, which LibTorch's dense layers otherwise run on, about 10x slower.
# liblapack3: the reference LAPACK that OpenCV's core needs in a GPU bundle
# (bench/gpu/bundle.sh), 7 MB instead of OpenBLAS's 44.
packages=(
  build-essential cmake ninja-build pkg-config ccache git
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev libopencv-imgproc-dev libhwy-dev
  libisal-dev zlib1g-dev libprotobuf-dev protobuf-compiler libcurl4-openssl-dev ca-certificates
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev python3-venv python3-setuptools pybind11-dev libdlpack-dev
  python3-numpy python3-pytest python3-torch
  libtorch-dev libgloo-dev libopenblas0-openmp liblapack3
  tmux chromium
)
# The peers' own needs: torchvision and Pillow for the DataLoader peer, and
# FFmpeg 5's libraries (libavdevice59 brings the rest) for SPDL's decoders.
if [ "$mode" = --peers ]; then
  packages+=(python3-torchvision python3-pil libavdevice59)
fi
# libFuzzer comes with clang; its runtime is only a Recommends of clang's.
if [ "$mode" = --fuzz ]; then
  packages+=(clang libclang-rt-14-dev)
fi

# The Python environment after the packages (it needs python3-venv). Without
# PyPI it cannot be made: say so and go on, so the build and the other tests
# still run and the interop tests fail with the reason instead of skipping.
python_env() {
  case "$mode" in
    --interop) reqs=("$root/tests/interop/requirements.txt") ;;
    --peers) reqs=("$root/tests/interop/requirements.txt" "$root/bench/peers/requirements.txt") ;;
    *) return 0 ;;
  esac
  if ! "$root/scripts/python_env.sh" "${reqs[@]}"; then
    echo "bootstrap: WARNING: the Python environment (build/venv) could not be made;" \
      "the interop tests will fail until scripts/python_env.sh succeeds" >&2
  fi
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  python_env
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
python_env
