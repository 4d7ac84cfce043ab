#!/usr/bin/env bash
# One prepared run for a machine with a CUDA GPU (and PyTorch for the
# trainer): builds the CUDA variant, runs the GPU tests (which must not skip
# there), then times training (bench/gpu/train_resnet50.sh, same build).
# Figures land in OUT_DIR (default build/gpu-check): tests.log, summary.txt.
#
# What it checks today: the fused sample kernel on the device, bit for bit
# against the same arithmetic on the CPU (tests/cuda), which the CPU suite
# checks against write_sample_precise. The nvJPEG tiers, the pinned ring
# and `sluice bench --device cuda` are still to come.
# Env: STEPS (training steps, default 50), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-${OUT:-build/gpu-check}}"
mkdir -p "$out"
python="${PYTHON:-python3}"
prefix="$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)"
build=build/gpu

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_CUDA=ON \
  -DSLUICE_TORCH="$([ -n "$prefix" ] && echo ON || echo OFF)" -DSLUICE_BUILD_PYTHON=OFF \
  -DSLUICE_BUILD_BENCH=OFF ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} >"$out/configure.log" 2>&1 \
  || { tail -50 "$out/configure.log"; exit 1; }
targets=(cuda_fused_kernel_test image_sample_kernel_test sluice)
[ -n "$prefix" ] && targets+=(sluice-train)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$out/build.log" 2>&1 \
  || { tail -50 "$out/build.log"; exit 1; }

# The GPU tests must run here, not skip.
ctest --test-dir "$build" -R 'FusedKernel|SampleKernel' --no-tests=error --output-on-failure \
  | tee "$out/tests.log"
if grep -q 'Skipped' "$out/tests.log"; then
  echo "check.sh: a GPU test skipped: no CUDA device visible to the tests" >&2
  exit 1
fi

if [ -n "$prefix" ]; then
  BUILD_DIR="$build" STEPS="${STEPS:-50}" bench/gpu/train_resnet50.sh "$out/train"
fi
