#!/usr/bin/env bash
# One prepared run for a machine with a CUDA GPU (and PyTorch for the
# trainer): builds the CUDA variant, runs the GPU tests (which must not skip
# there), then times training (bench/gpu/train_resnet50.sh). Figures land in
# OUT_DIR (default build/gpu-check): tests.log, summary.txt.
#
# What it checks today: the fused sample kernel on the device against the
# same arithmetic on the CPU (tests/cuda), which the CPU suite checks against
# write_sample_precise. The nvJPEG tiers, the pinned ring and
# `sluice bench --device cuda` are still to come (issue: the GPU data path).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-${OUT:-build/gpu-check}}"
mkdir -p "$out"
python="${PYTHON:-python3}"
prefix="$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_CUDA=ON \
  -DSLUICE_TORCH="$([ -n "$prefix" ] && echo ON || echo OFF)" -DSLUICE_BUILD_PYTHON=OFF \
  ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} >"$out/configure.log"
cmake --build build/gpu-check -j"$(nproc)" >"$out/build.log"

# The GPU tests must run here, not skip.
ctest --test-dir build/gpu-check -R 'FusedKernel|SampleKernel' --output-on-failure | tee "$out/tests.log"
if grep -q 'Skipped' "$out/tests.log"; then
  echo "check.sh: a GPU test skipped: no CUDA device visible to the tests" >&2
  exit 1
fi

if [ -n "$prefix" ]; then
  OUT="$out/train" bench/gpu/train_resnet50.sh "$out/train"
fi
