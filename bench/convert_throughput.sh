#!/usr/bin/env bash
# Convert throughput in images/s on an image folder (e.g. one built by
# ../shared/tools/make-corpus). Runs the release build twice, first to warm
# the page cache, and prints the second run's rate.
#   bench/convert_throughput.sh IMAGE_FOLDER [extra convert options]
set -euo pipefail
src="$1"; shift
root="$(cd "$(dirname "$0")/.." && pwd)"
sluice="$root/build/release/src/cli/sluice"
[ -x "$sluice" ] || { cmake --preset release >/dev/null && cmake --build --preset release --target sluice; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$sluice" convert "$src" -o "$out/warm" -q "$@" >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$sluice" convert "$src" -o "$out/run" -q "$@" | head -1
