#!/usr/bin/env bash
# sluice side by side with the PyTorch DataLoader on the same images, cores
# and settings (train augment, 224, batch 256), in one run.
#
#   bench/compare.sh IMAGE_FOLDER [EPOCHS]
#   CONVERT_OPTS="--rewrite-progressive" bench/compare.sh IMAGE_FOLDER
#   ROUNDS=5 bench/compare.sh IMAGE_FOLDER
#
# Shared machines drift by 10 % and more over seconds, so every measurement
# runs ROUNDS times (default 3), interleaved, and the medians are compared.
#
# Converts the folder to shards once (not timed), warms the page cache, then
# runs: the peer (bench/peers/torch_dataloader.py), sluice on the shards
# with --ceiling, sluice with 1 worker (scaling), and prints the ratios.
# Needs Debian's python3-torch, python3-torchvision, python3-pil.
set -euo pipefail
src="$(cd "$1" && pwd)"
epochs="${2:-1}"
root="$(cd "$(dirname "$0")/.." && pwd)"
sluice="$root/build/release/src/cli/sluice"
if [ ! -x "$sluice" ]; then
  cmake --preset release >/dev/null && cmake --build --preset release --target sluice
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cores=$(nproc)
echo "machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem/{print $2}') GB"
echo "images: $src ($(find "$src" -type f | wc -l) files, $(du -sh "$src" | cut -f1))"
"$sluice" convert "$src" -o "$work/shards" -q ${CONVERT_OPTS:-} >/dev/null
cat $(find "$src" -type f) "$work"/shards/*.tfrecord > /dev/null  # page cache

rounds="${ROUNDS:-3}"
for r in $(seq 1 "$rounds"); do
  /usr/bin/python3 "$root/bench/peers/torch_dataloader.py" "$src" --epochs "$epochs" --json "$work/peer.$r.json" | tail -1
  "$sluice" bench "$work/shards" --epochs "$epochs" --ceiling --json "$work/sluice.$r.json" | grep -E "images/s|ceiling|floor"
  "$sluice" bench "$work/shards" --epochs "$epochs" --workers 1 --json "$work/one.$r.json" -q
done

/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, os, statistics, sys
w, n = sys.argv[1], int(sys.argv[2])
load = lambda name, key: statistics.median(json.load(open(os.path.join(w, f"{name}.{r}.json")))[key] for r in range(1, n + 1))
peer = load("peer", "images_per_second")
ips = load("sluice", "images_per_second")
ceiling = load("sluice", "ceiling_images_per_second")
floor = load("sluice", "plan_floor_images_per_second")
one = load("one", "images_per_second")
rss = max(json.load(open(os.path.join(w, f"sluice.{r}.json")))["peak_rss_bytes"] for r in range(1, n + 1))
budget = json.load(open(os.path.join(w, "sluice.1.json")))["memory_budget_bytes"]
print()
print(f"medians of {n} interleaved rounds")
print(f"{'':38} {'images/s':>10} {'sluice is':>10}")
print(f"{'PyTorch DataLoader':38} {peer:10.0f} {ips / peer:9.2f}x   (target >= 3x)")
print(f"{'libjpeg-turbo full-decode ceiling':38} {ceiling:10.0f} {ips / ceiling:9.2f}x   (target >= 1.0x)")
print(f"{'plan floor (sluice decode calls only)':38} {floor:10.0f} {ips / floor:9.2f}x   (overhead {100 * (floor / ips - 1):.1f} %, target < 10 %)")
print(f"{'sluice, 1 worker':38} {one:10.0f} {ips / one:9.2f}x   (2 workers vs 1, target >= 1.8x)")
print(f"{'sluice':38} {ips:10.0f}")
print(f"sluice peak RSS {rss / 1e6:.0f} MB, memory budget {budget / 1e6:.0f} MB")
PY
