#!/usr/bin/env bash
# sluice side by side with the loaders a user would pick instead, on the
# same images and cores, doing the same work (RandomResizedCrop 224 + flip +
# normalise to float32, batch 256), in one run:
#
#   torch       PyTorch's DataLoader over the image folder (peers/torch_dataloader.py)
#   tf_original tf.data over sluice's shards as the original team wrote it (peers/tf_data.py)
#   tf_fast     tf.data with decode_and_crop_jpeg, as a careful user writes it
#   dali        NVIDIA DALI, CPU only, over the shards and their .idx (peers/dali.py)
#   spdl        Meta's SPDL over the image folder (peers/spdl_loader.py)
#
#   bench/compare.sh IMAGE_FOLDER [EPOCHS]
#   ROUNDS=5 bench/compare.sh IMAGE_FOLDER
#   PEERS="torch dali" bench/compare.sh IMAGE_FOLDER
#   CONVERT_OPTS="--rewrite-progressive" bench/compare.sh IMAGE_FOLDER
#   PEERS=none bench/compare.sh IMAGE_FOLDER      # sluice's own figures only
#
# With CONVERT_OPTS, the folder is also converted without them and each
# round measures the full-decode ceiling on those original files, the
# yardstick for what a conversion option buys.
#
# Shared machines drift by 10 % and more over seconds, so every measurement
# runs ROUNDS times (default 3), interleaved, and the medians are compared.
# Converts the folder to shards once (not timed), warms the page cache, then
# each round runs every peer, sluice on the shards with --ceiling, and
# sluice with 1 worker (scaling). A peer that cannot run here is reported
# with its reason and the others go on. Each loader's time includes its
# start-up, as `sluice bench` includes sluice's.
#
# Installs what the peers need (scripts/bootstrap.sh --peers): Debian's
# python3-torch, python3-torchvision, python3-pil and FFmpeg 5 libraries,
# and build/venv (TensorFlow, DALI, SPDL from PyPI, pinned).
set -euo pipefail
src="$(cd "$1" && pwd)"
epochs="${2:-1}"
root="$(cd "$(dirname "$0")/.." && pwd)"
peers="${PEERS:-torch tf_original tf_fast dali spdl}"
[ "$peers" = none ] && peers=""
sluice="$root/build/release/src/cli/sluice"
"$root/scripts/bootstrap.sh" --peers
if [ ! -x "$sluice" ]; then
  cmake --preset release >/dev/null && cmake --build --preset release --target sluice
fi
venv="$root/build/venv/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
echo "machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem/{print $2}') GB"
echo "images: $src ($(find "$src" -type f | wc -l) files, $(du -sh "$src" | cut -f1))"
echo "versions: $("$sluice" --version | head -1); Debian python3 $(/usr/bin/python3 -c 'import sys, torch, torchvision, numpy; print(sys.version.split()[0], "torch", torch.__version__, "torchvision", torchvision.__version__, "numpy", numpy.__version__)' 2>/dev/null || echo '(torch missing)')"
echo "          build/venv: $("$venv" -c '
import importlib.metadata as m, sys
print("python", sys.version.split()[0], *(f"{p} {m.version(p)}" for p in ("tensorflow-cpu", "nvidia-dali-cuda120", "spdl", "numpy")))' 2>/dev/null || echo '(build/venv missing)')"
"$sluice" convert "$src" -o "$work/shards" -q ${CONVERT_OPTS:-} >/dev/null
if [ -n "${CONVERT_OPTS:-}" ]; then
  "$sluice" convert "$src" -o "$work/original" -q >/dev/null
  cat "$work"/original/*.tfrecord > /dev/null
fi
cat $(find "$src" -type f) "$work"/shards/*.tfrecord > /dev/null  # page cache

# peer NAME: runs one peer for this round, its figures in NAME.R.json; a
# failure leaves NAME.failed with the peer's last words.
peer() {
  local name="$1" r="$2" cmd
  case "$name" in
    torch) cmd=(/usr/bin/python3 "$root/bench/peers/torch_dataloader.py" "$src") ;;
    tf_original) cmd=("$venv" "$root/bench/peers/tf_data.py" "$work/shards" --form original) ;;
    tf_fast) cmd=("$venv" "$root/bench/peers/tf_data.py" "$work/shards" --form fast) ;;
    dali) cmd=("$venv" "$root/bench/peers/dali.py" "$work/shards") ;;
    spdl) cmd=("$venv" "$root/bench/peers/spdl_loader.py" "$src") ;;
    *) echo "unknown peer $name (torch tf_original tf_fast dali spdl)" >&2; exit 2 ;;
  esac
  [ -f "$work/$name.failed" ] && return 0
  if "${cmd[@]}" --epochs "$epochs" --json "$work/$name.$r.json" > "$work/$name.log" 2>&1; then
    tail -1 "$work/$name.log"
  else
    tail -3 "$work/$name.log" > "$work/$name.failed"
    echo "$name: did not run: $(tail -1 "$work/$name.log")"
  fi
}

rounds="${ROUNDS:-3}"
for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  for p in $peers; do peer "$p" "$r"; done
  "$sluice" bench "$work/shards" --epochs "$epochs" --ceiling --json "$work/sluice.$r.json" | grep -E "images/s|ceiling|floor"
  "$sluice" bench "$work/shards" --epochs "$epochs" --workers 1 --json "$work/one.$r.json" -q
  if [ -n "${CONVERT_OPTS:-}" ]; then
    "$sluice" bench "$work/original" --epochs "$epochs" --ceiling --json "$work/original.$r.json" -q >/dev/null
  fi
done

/usr/bin/python3 - "$work" "$rounds" $peers <<'PY'
import json, os, statistics, sys
w, n, peers = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
NAMES = {"torch": "PyTorch DataLoader", "tf_original": "tf.data, as the team wrote it",
         "tf_fast": "tf.data, decode_and_crop_jpeg", "dali": "DALI, CPU only", "spdl": "SPDL"}
def median(name, key="images_per_second"):
    runs = [os.path.join(w, f"{name}.{r}.json") for r in range(1, n + 1)]
    if not all(os.path.exists(p) for p in runs):
        return None
    return statistics.median(json.load(open(p))[key] for p in runs)
ips = median("sluice")
print()
print(f"medians of {n} interleaved rounds")
print(f"{'':40} {'images/s':>10} {'sluice is':>10}")
for p in peers:
    v = median(p)
    if v is None:
        why = open(os.path.join(w, f"{p}.failed")).read().strip().splitlines()[-1] if os.path.exists(os.path.join(w, f"{p}.failed")) else "no result"
        print(f"{NAMES[p]:40} {'-':>10} {'':>10}   did not run: {why}")
    else:
        print(f"{NAMES[p]:40} {v:10.0f} {ips / v:9.2f}x")
ceiling = median("sluice", "ceiling_images_per_second")
floor = median("sluice", "plan_floor_images_per_second")
one = median("one")
print(f"{'libjpeg-turbo full-decode ceiling':40} {ceiling:10.0f} {ips / ceiling:9.2f}x   (target >= 1.15x)")
original = median("original", "ceiling_images_per_second")
if original is not None:
    print(f"{'ceiling on the original files':40} {original:10.0f} {ips / original:9.2f}x   (target >= 1.4x with --rewrite-progressive)")
print(f"{'plan floor (sluice decode calls only)':40} {floor:10.0f} {ips / floor:9.2f}x   (overhead {100 * (floor / ips - 1):.1f} %, target <= 10 %)")
print(f"{'sluice, 1 worker':40} {one:10.0f} {ips / one:9.2f}x   (2 workers vs 1, target >= 1.85x)")
print(f"{'sluice':40} {ips:10.0f}")
rss = max(json.load(open(os.path.join(w, f"sluice.{r}.json")))["peak_rss_bytes"] for r in range(1, n + 1))
budget = json.load(open(os.path.join(w, "sluice.1.json")))["memory_budget_bytes"]
print(f"sluice peak RSS {rss / 1e6:.0f} MB, memory budget {budget / 1e6:.0f} MB")
PY
