#!/usr/bin/env bash
# sluice side by side with the PyTorch DataLoader on the same images, cores
# and settings (train augment, 224, batch 256), in one run.
#
#   bench/compare.sh IMAGE_FOLDER [EPOCHS]
#   CONVERT_OPTS="--rewrite-progressive" bench/compare.sh IMAGE_FOLDER
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

/usr/bin/python3 "$root/bench/peers/torch_dataloader.py" "$src" --epochs "$epochs" --json "$work/peer.json" | tail -1
"$sluice" bench "$work/shards" --epochs "$epochs" --ceiling --json "$work/sluice.json" | grep -E "images/s|verdict|ceiling|floor|CPU"
"$sluice" bench "$work/shards" --epochs "$epochs" --workers 1 --json "$work/one.json" -q

/usr/bin/python3 - "$work" <<'PY'
import json, sys, os
w = sys.argv[1]
peer = json.load(open(os.path.join(w, "peer.json")))["images_per_second"]
s = json.load(open(os.path.join(w, "sluice.json")))
one = json.load(open(os.path.join(w, "one.json")))["images_per_second"]
ips = s["images_per_second"]
print()
print(f"{'':34} {'images/s':>10} {'sluice is':>10}")
print(f"{'PyTorch DataLoader':34} {peer:10.0f} {ips / peer:9.2f}x   (target >= 3x)")
print(f"{'libjpeg-turbo full-decode ceiling':34} {s['ceiling_images_per_second']:10.0f} {ips / s['ceiling_images_per_second']:9.2f}x   (target >= 1.0x)")
print(f"{'plan floor (sluice decode calls only)':34} {s['plan_floor_images_per_second']:10.0f} {ips / s['plan_floor_images_per_second']:9.2f}x   (overhead {100 * (s['plan_floor_images_per_second'] / ips - 1):.1f} %, target < 10 %)")
print(f"{'sluice, 1 worker':34} {one:10.0f} {ips / one:9.2f}x   (2 workers vs 1, target >= 1.8x)")
print(f"sluice peak RSS {s['peak_rss_bytes'] / 1e6:.0f} MB, memory budget {s['memory_budget_bytes'] / 1e6:.0f} MB")
PY
