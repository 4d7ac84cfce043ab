#!/usr/bin/env bash
# ResNet-50 training on one CUDA machine, end to end, in one run:
#   1. builds sluice and sluice-train against the installed PyTorch's LibTorch
#      (the CUDA build: CMake prefix from torch.utils.cmake_prefix_path);
#   2. renders ~1,000 JPEGs with sluice's own generator (no network, no
#      outside images) and converts them into shards;
#   3. trains resnet50 --amp bf16 for a fixed number of steps on those shards
#      (real decode, augmentation and copies) and prints images/s, GPU busy
#      and the share of step time spent waiting for data: once with the CPU
#      doing everything (batches copied from the pinned ring), once with the
#      GPU path (nvJPEG tiers and the fused kernel);
#   4. the same with --synthetic (one random batch made on the GPU): the
#      compute-only ceiling the pipeline is measured against.
# Usage: bench/gpu/train_resnet50.sh [OUT_DIR]   (env: STEPS, BATCH, GPUS, PYTHON, BUILD_DIR)
# Figures land in OUT_DIR/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-${OUT:-build/gpu-bench}}"
steps="${STEPS:-200}"
batch="${BATCH:-256}"
gpus="${GPUS:-1}"
python="${PYTHON:-python3}"
mkdir -p "$out"

prefix="$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
"$python" -c 'import torch; assert torch.cuda.is_available(), "no CUDA GPU visible to PyTorch"; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))' | tee "$out/summary.txt"

build="${BUILD_DIR:-build/gpu}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_TORCH=ON \
    -DSLUICE_BUILD_TESTS=OFF -DSLUICE_BUILD_BENCH=OFF -DSLUICE_BUILD_PYTHON=OFF \
    -DCMAKE_PREFIX_PATH="$prefix" >"$out/configure.log" 2>&1 || { tail -50 "$out/configure.log"; exit 1; }
fi
cmake --build "$build" -j"$(nproc)" --target sluice sluice-train >"$out/build.log" 2>&1 \
  || { tail -50 "$out/build.log"; exit 1; }
sluice="$build/src/cli/sluice"

if [ ! -f "$out/shards/dataset.json" ]; then
  "$sluice" synth "$out/images" --classes 10 --per-class 100 --val-per-class 0 --size 320 \
    --png-fraction 0 >/dev/null
  "$sluice" convert "$out/images/train" -o "$out/shards" --shards 16 -q
fi

common=(--model resnet50 --amp bf16 --device cuda --gpus "$gpus" --batch "$batch" --size 224
        --epochs 1000 --max-steps "$steps" --log-every 20 --lr 0.1 --warmup 0)

echo "== real shards: decode + augment on the CPU, batches copied to the GPU" | tee -a "$out/summary.txt"
"$sluice" train "$out/shards" "${common[@]}" --pad --gpu-augment off --gpu-decode off 2>&1 | tee "$out/real-cpu.log" | grep -E 'epoch|stopped' | tee -a "$out/summary.txt"
echo "== real shards: nvJPEG tiers + the fused kernel on the GPU (where nvJPEG loads)" | tee -a "$out/summary.txt"
"$sluice" train "$out/shards" "${common[@]}" --pad 2>&1 | tee "$out/real.log" | grep -E 'epoch|stopped' | tee -a "$out/summary.txt"
echo "== synthetic batches on the GPU: the compute-only ceiling" | tee -a "$out/summary.txt"
"$sluice" train "$out/shards" "${common[@]}" --synthetic 2>&1 | tee "$out/synthetic.log" | grep -E 'epoch|stopped' | tee -a "$out/summary.txt"
echo "step lines (last of each run):" | tee -a "$out/summary.txt"
grep ' step ' "$out/real-cpu.log" | tail -1 | tee -a "$out/summary.txt"
grep ' step ' "$out/real.log" | tail -1 | tee -a "$out/summary.txt"
grep ' step ' "$out/synthetic.log" | tail -1 | tee -a "$out/summary.txt"
