#!/usr/bin/env bash
# One prepared run for a machine with a CUDA GPU (and PyTorch for the
# trainer): builds the CUDA variant, runs the GPU tests (which must not skip
# there), then times training (bench/gpu/train_resnet50.sh, same build).
# Figures land in OUT_DIR (default build/gpu-check): tests.log, summary.txt.
#
# It checks, on the device (tests/cuda, which must not skip here):
#   - the fused sample kernel, bit for bit against the same arithmetic on
#     the CPU (which the CPU suite checks against write_sample_precise);
#   - the pipeline on the device against the host (copy mode byte-equal,
#     kernel mode within the resize bound);
#   - nvJPEG's tiers H and G against libjpeg-turbo, printing the measured
#     difference per file (tests.log).
# Then it times the pipeline alone on ~1,000 generated JPEGs, CPU path
# against the GPU path by tier (bench-*.json, bench.txt), and training
# (bench/gpu/train_resnet50.sh, same build) when PyTorch is there.
# Env: STEPS (training steps, default 50), LADDER_STEPS (per rung, 60), PYTHON.
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
targets=(cuda_fused_kernel_test cuda_gpu_path_test image_sample_kernel_test sluice)
[ -n "$prefix" ] && targets+=(sluice-train)
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >"$out/build.log" 2>&1 \
  || { tail -50 "$out/build.log"; exit 1; }

# The GPU tests must run here, not skip.
ctest --test-dir "$build" -R 'FusedKernel|SampleKernel|GpuPath' --no-tests=error -V \
  | tee "$out/tests.log"
if grep -q 'Skipped' "$out/tests.log"; then
  echo "check.sh: a GPU test skipped: no CUDA device visible to the tests" >&2
  exit 1
fi

"$build/src/cli/sluice" doctor | tee "$out/doctor.txt"

# The pipeline alone: the CPU path, then the GPU path by stage.
data="$out/data"
if [ ! -f "$data/shards/dataset.json" ]; then
  "$build/src/cli/sluice" synth "$data/images" --classes 10 --per-class 100 --val-per-class 0 \
    --size 320 --png-fraction 0 >/dev/null
  "$build/src/cli/sluice" convert "$data/images/train" -o "$data/shards" --shards 16 -q
fi
bench=("$build/src/cli/sluice" bench "$data/shards" --batch 256 --size 224 --dtype bfloat16 --epochs 5)
: >"$out/bench.txt"
for run in "cpu|--device cpu" "copy|--device cuda --gpu-augment off" \
           "kernel|--device cuda --gpu-decode off" "gpu-decode|--device cuda --gpu-decode on"; do
  name="${run%%|*}"
  # shellcheck disable=SC2086
  { echo "== $name: ${run#*|}"; "${bench[@]}" ${run#*|} --json "$out/bench-$name.json" 2>&1 || true; } \
    | tee -a "$out/bench.txt"
done

if [ -n "$prefix" ]; then
  BUILD_DIR="$build" STEPS="${STEPS:-50}" bench/gpu/train_resnet50.sh "$out/train"
  # The original team's ladder, one command (rung 1 reads the generated
  # image folder that dataset.json names).
  "$build/src/cli/sluice" train "$data/shards" --ablation --model resnet50 --batch 256 \
    --size 224 --max-steps "${LADDER_STEPS:-60}" --device cuda --report "$out/ladder.html" \
    --json "$out/ladder.json" 2>&1 | tee "$out/ladder.txt" || true
fi
