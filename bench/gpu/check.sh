#!/usr/bin/env bash
# The GPU check, in one call, on a machine with an NVIDIA GPU: run from a
# bundle made here by bench/gpu/bundle.sh (which copies this file in), so
# the machine needs no -dev package, only its driver, CUDA, CMake, ninja, a
# C++ compiler and a pip PyTorch (for the trainer).
#
#   build/gpu-bundle/check.sh [OUT_DIR]        (default $OUT, else /tmp/sluice-check-out)
#
# On the lent machine, in one call, with build/gpu-bundle.tar.xz carried
# (bench/gpu/bundle.sh; about 7 of its 10 minutes):
#   python3 -c 'import tarfile; tarfile.open("build/gpu-bundle.tar.xz").extractall("/tmp/b")' \
#     && /tmp/b/gpu-bundle/check.sh "$OUT"
#
# What it checks (each a pass/fail in summary.json; the run exits 1 if any
# failed, after the others have run):
#   tests      the real-GPU tests (tests/cuda): the fused kernel bit-exact
#              against the host; nvJPEG's tiers against libjpeg-turbo on
#              crops at offsets and a 1.3 MP image (GPU Huffman); back-to-back
#              engine batches behind a busy stream; damaged files refused;
#              nvJPEG's buffers kept; the pipeline in copy, kernel and
#              GPU-decode modes against the host. On an A100/H100/H200 the
#              engine must be there and used (tier counts and refusals are
#              asserted). No test may skip.
#   doctor     sluice doctor --require gpu --require cuda-build
#   pipeline   sluice bench, batches of 256 at 224 in bfloat16, on the CPU
#              and on the GPU (copy, kernel, GPU decode): images/s in total
#              and per tier, host-to-device GB/s, GPU busy (NVML); GPU decode
#              must use the engine and reallocate nothing after the start
#   trainer    sluice-train built here against this machine's PyTorch (its
#              torch/share/cmake), in the background while the tests run
#   training   ResNet-50 bf16 on one GPU, the real pipeline against
#              --synthetic batches: the data wait must stay under 2 % of step
#              time, and the pipeline alone must deliver at least twice what
#              training consumes
# Files under OUT_DIR (at most 8): summary.json (every figure, check and
# phase time), check.log (everything printed), tests.log (the GPU tests'
# output, with the measured pixel differences), report.html (sluice bench
# --report of the GPU-decode run), train.txt (the training runs' lines).
#
# Every phase has a time limit, and summary.json is written however the
# run ends.
# Env: IMAGES (4096), TRAIN_STEPS (150), BENCH_EPOCHS (3), JOBS (nproc),
# PYTHON (/opt/torch/.venv/bin/python3 where it exists, else python3),
# WORK (/tmp/sluice-check).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x "$here/bin/sluice" ]; then
  # In the repository: run the bundle's copy.
  bundle="$here/../../build/gpu-bundle"
  [ -x "$bundle/check.sh" ] || { echo "check.sh: no bundle at $bundle: run bench/gpu/bundle.sh" >&2; exit 1; }
  exec "$bundle/check.sh" "$@"
fi
out="${1:-${OUT:-/tmp/sluice-check-out}}"
work="${WORK:-/tmp/sluice-check}"
default_python=python3
[ -x /opt/torch/.venv/bin/python3 ] && default_python=/opt/torch/.venv/bin/python3
python="${PYTHON:-$default_python}"
# The Python environment holding PyTorch: its pip NVIDIA wheels join
# sluice's library search, and nvcc is where the toolkit puts it.
venv="$(dirname "$(dirname "$(command -v "$python" || echo /x/x)")")"
[ -f "$venv/pyvenv.cfg" ] && export VIRTUAL_ENV="$venv"
export PATH="$PATH:/usr/local/cuda/bin"
jobs="${JOBS:-$(nproc)}"
images="${IMAGES:-4096}"
mkdir -p "$out" "$work"
exec > >(tee "$out/check.log") 2>&1
tee_pid=$!
cd "$here"
sluice() { "$here/run" sluice "$@"; }
checks="$work/checks.tsv"
: >"$checks"
# check NAME ok|fail DETAIL: one line of the verdict.
check() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$checks"
  printf '%-10s %-4s %s\n' "$1" "$2" "$3"
}
# 8. The summary, written however the run ends (a phase over its limit, a
#    kill): the device tool brings back what is under OUT.
finish() {
  trap - EXIT
  [ -n "${trainer_pid:-}" ] && kill "$trainer_pid" 2>/dev/null
  [ "${completed:-0}" = 1 ] || check complete fail "the run stopped early (in phase ${phase:-start})"
  "$python" - "$work" "$out/summary.json" "$gpu_name" "$torch_version" <<'PY'
import json, os, sys
w, dst, gpu, torch = sys.argv[1:5]
def load(n):
    p = os.path.join(w, n)
    try:
        return json.load(open(p)) if os.path.exists(p) else None
    except ValueError:
        return None
def lines(n):
    p = os.path.join(w, n)
    return [l.rstrip("\n").split("\t") for l in open(p) if l.strip()] if os.path.exists(p) else []
checks = [dict(zip(("name", "result", "detail"), l)) for l in lines("checks.tsv")]
phases = {l[0]: int(l[1]) for l in lines("phases.tsv") if len(l) == 2}
pipeline = {}
for mode in ("cpu", "copy", "kernel", "gpu-decode"):
    j = load(f"bench-{mode}.json")
    if not j:
        continue
    p = {"images_per_second": j["images_per_second"], "workers": j.get("workers")}
    if "device" in j:
        d = j["device"]
        p.update({k: d.get(k) for k in ("h2d_gb_per_second", "gpu_busy_percent", "tiers",
                                         "hardware_share", "gpu_decode", "gpu_decode_allocations",
                                         "gpu_decode_reallocations")})
    pipeline[mode] = p
seconds = os.path.join(w, "trainer.seconds")
summary = {"format": "sluice gpu check 1", "gpu": gpu, "torch": torch,
           "passed": bool(checks) and all(c["result"] == "ok" for c in checks), "checks": checks,
           "phase_seconds": phases, "pipeline": pipeline,
           "training": {n: load(f"train-{n}.json") for n in ("real", "synthetic")},
           "trainer_build_seconds": int(open(seconds).read()) if os.path.exists(seconds) else None,
           "doctor": load("doctor.json")}
json.dump(summary, open(dst, "w"), indent=2)
print()
for c in checks:
    print(f"{c.get('name', ''):10} {c.get('result', ''):4} {c.get('detail', '')}")
print("phases (s):", " ".join(f"{k} {v}" for k, v in phases.items()))
print("PASSED" if summary["passed"] else "FAILED")
sys.exit(0 if summary["passed"] else 1)
PY
  rc=$?
  # Let tee write the last lines of check.log before the files are collected.
  exec >&- 2>&-
  wait "$tee_pid" 2>/dev/null
  exit $rc
}
trap finish EXIT
phase_start() { phase="$1"; SECONDS=0; echo "== $1"; }
phase_end() { printf '%s\t%s\n' "$phase" "$SECONDS" >>"$work/phases.tsv"; }
: >"$work/phases.tsv"

# 0. The machine.
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "cores: $(nproc); bundle commit: $(cat "$here/COMMIT" 2>/dev/null)"
# GPUs with nvJPEG's hardware engine: there it must be found and used.
engine=0
[[ "$gpu_name" =~ (A100|A30|A800|H100|H800|H200|GH200|B200|GB200) ]] && engine=1
export SLUICE_EXPECT_JPEG_ENGINE=$engine

# 1. The trainer, built in the background while the tests run (niced, so
#    the tests' timings are not the point; the benches start after it).
torch_prefix="$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"
torch_version="$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
trainer_build="$work/trainer"
(
  start=$(date +%s)
  if [ -z "$torch_prefix" ]; then echo "no PyTorch in $python" >"$work/trainer.log"; exit 1; fi
  # PyTorch's CUDA libraries (cuDNN, cuSPARSELt...) sit in pip's wheels,
  # which libtorch_cuda finds through its own run path at run time; the
  # link need not see them.
  timeout 420 nice -n 10 cmake -S "$here/trainer" -B "$trainer_build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_prefix" \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined >"$work/trainer.log" 2>&1 &&
    timeout 420 nice -n 10 cmake --build "$trainer_build" -j"$jobs" >>"$work/trainer.log" 2>&1
  rc=$?
  echo $(( $(date +%s) - start )) >"$work/trainer.seconds"
  exit $rc
) &
trainer_pid=$!

# 2. The real-GPU tests: none may skip.
phase_start tests
if ./run-tests --gpu --only '^cuda_' tests.log; then
  check tests ok "tests/cuda on $gpu_name (engine expected: $engine)"
else
  check tests fail "see tests.log"
fi
cp tests.log "$out/tests.log"
phase_end

# 3. doctor.
phase_start doctor
sluice doctor --json >"$work/doctor.json"
if sluice doctor --require gpu --require cuda-build; then check doctor ok "GPU and sluice's kernels found"
else check doctor fail "sluice doctor --require gpu --require cuda-build"; fi
phase_end

# 4. Data: ImageNet-sized JPEGs from sluice's renderer, in 16 shards.
phase_start data
data="$work/data"
if [ ! -f "$data/shards/dataset.json" ]; then
  rm -rf "$data"
  sluice synth "$data/images" --classes 16 --per-class $((images / 16)) --val-per-class 0 \
    --size 400 --png-fraction 0 >/dev/null &&
    sluice convert "$data/images/train" -o "$data/shards" --shards 16 -q
fi
if [ -f "$data/shards/dataset.json" ]; then check data ok "$images images, 16 shards"
else check data fail "synth or convert failed"; fi
phase_end

# 5. The trainer build must be done before anything is timed.
phase_start trainer
if wait "$trainer_pid"; then
  check trainer ok "sluice-train against torch $torch_version in $(cat "$work/trainer.seconds") s ($jobs jobs)"
  export PATH="$trainer_build:$PATH"
else
  check trainer fail "see below"
  tail -30 "$work/trainer.log"
fi
phase_end

# 6. The pipeline alone, by mode.
phase_start pipeline
bench=("$here/run" sluice bench "$data/shards" --batch 256 --size 224 --dtype bfloat16 --epochs "${BENCH_EPOCHS:-3}")
for mode in "cpu|--device cpu" "copy|--device cuda --gpu-augment off" \
            "kernel|--device cuda --gpu-decode off" "gpu-decode|--device cuda --gpu-decode on"; do
  name="${mode%%|*}"
  extra=()
  [ "$name" = gpu-decode ] && extra=(--report "$out/report.html")
  echo "-- $name: ${mode#*|}"
  # shellcheck disable=SC2086
  if timeout 150 "${bench[@]}" ${mode#*|} --json "$work/bench-$name.json" "${extra[@]}"; then
    check "bench-$name" ok "$("$python" -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["images_per_second"]), "images/s")' "$work/bench-$name.json")"
  else
    check "bench-$name" fail "sluice bench ${mode#*|}"
  fi
done
"$python" - "$work/bench-gpu-decode.json" "$engine" "$checks" <<'PY'
import json, os, sys
path, engine, checks = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
def line(name, ok, detail):
    print(f"{name:10} {'ok' if ok else 'fail':4} {detail}")
    open(checks, "a").write(f"{name}\t{'ok' if ok else 'fail'}\t{detail}\n")
if not os.path.exists(path):
    line("engine", False, "no GPU-decode bench to read")
    sys.exit(0)
d = json.load(open(path))["device"]
t = d["tiers"]
line("engine", not engine or t["hardware"]["images"] > 0,
     f"tiers: hardware {t['hardware']['images']}, CUDA {t['cuda']['images']}, CPU {t['cpu']['images']}")
# A few arena growths while the first batches show their sizes; not one
# per batch.
line("realloc", d["gpu_decode_reallocations"] <= 8,
     f"{d['gpu_decode_allocations']} allocations, {d['gpu_decode_reallocations']} replacing a buffer (at most 8)")
line("strict", d["gpu_decode_strict"], "nvJPEG strict bitstream checks")
PY
phase_end

# 7. Training: the real pipeline against synthetic batches.
phase_start training
common=(--model resnet50 --amp bf16 --device cuda --batch 256 --size 224 --epochs 1000
        --max-steps "${TRAIN_STEPS:-150}" --log-every 25 --lr 0.1 --warmup 0 --no-val)
: >"$out/train.txt"
for run_name in real synthetic; do
  flags=()
  [ "$run_name" = synthetic ] && flags=(--synthetic)
  echo "-- $run_name" | tee -a "$out/train.txt"
  timeout 180 "$here/run" sluice train "$data/shards" "${common[@]}" "${flags[@]}" \
    --summary "$work/train-$run_name.json" 2>&1 | tee -a "$out/train.txt" | grep -E ' step |epoch|stopped'
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ] || [ ! -f "$work/train-$run_name.json" ]; then
    check "train-$run_name" fail "exit $rc (see train.txt)"
  else
    check "train-$run_name" ok "$("$python" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(round(j["images_per_second"]), "images/s, data wait", round(100*j["data_wait_share"],2), "%")' "$work/train-$run_name.json")"
  fi
done
"$python" - "$work" "$checks" <<'PY'
import json, os, sys
w, checks = sys.argv[1], sys.argv[2]
def load(n):
    p = os.path.join(w, n)
    return json.load(open(p)) if os.path.exists(p) else None
def line(name, ok, detail):
    print(f"{name:10} {'ok' if ok else 'fail':4} {detail}")
    open(checks, "a").write(f"{name}\t{'ok' if ok else 'fail'}\t{detail}\n")
real, synth, pipe = load("train-real.json"), load("train-synthetic.json"), load("bench-gpu-decode.json")
if real and synth and pipe:
    wait = real["data_wait_share"]
    line("data-wait", wait < 0.02, f"{100 * wait:.2f} % of step time (target < 2 %)")
    ratio = pipe["images_per_second"] / max(1e-9, synth["images_per_second"])
    line("headroom", ratio >= 2.0,
         f"pipeline {pipe['images_per_second']:.0f} images/s = {ratio:.2f}x what training consumes "
         f"({synth['images_per_second']:.0f} images/s synthetic, {real['images_per_second']:.0f} real; target >= 2x)")
else:
    line("training", False, "a training run or the GPU-decode bench is missing")
PY
phase_end
completed=1
