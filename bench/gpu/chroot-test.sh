#!/usr/bin/env bash
# Proves a GPU bundle (bench/gpu/bundle.sh) portable without a GPU: a
# brand-new Debian bookworm chroot (minbase, plus python3 for the CLI tests:
# none of the -dev packages this project builds with) runs the bundle's CPU
# and fake-GPU tests. With --trainer TORCH it also builds the bundle's
# trainer kit there, as the lent GPU machine would, against an unpacked pip
# PyTorch wheel (TORCH is the folder holding torch/) with this machine's CUDA
# toolkit bind-mounted; the chroot then gets the compiler, CMake and ninja
# (the GPU machine has those) and the link accepts torch's own CUDA
# libraries missing (cuDNN, cuSPARSELt... are pip packages there), so this
# proves that sluice's side compiles and links, not that it runs on a GPU.
#
#   bench/gpu/chroot-test.sh [BUNDLE] [--trainer TORCH]   (as root; needs debootstrap)
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle="build/gpu-bundle" torch=""
while [ $# -gt 0 ]; do
  case "$1" in
    --trainer) torch="$(cd "$2" && pwd)"; shift ;;
    *) bundle="$1" ;;
  esac
  shift
done
bundle="$(cd "$bundle" && pwd)"
root="${CHROOT:-/tmp/sluice-chroot-$$}"
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
if [ ! -x "$root/usr/bin/python3" ]; then
  debootstrap --variant=minbase --include=python3 bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 \
    || { echo "chroot-test: debootstrap failed (log $root.debootstrap.log)"; exit 2; }
fi
cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/" 2>/dev/null || true
mounts=(proc sys dev dev/pts)
for m in "${mounts[@]}"; do mount --bind "/$m" "$root/$m"; done
cleanup() {
  for m in opt/torch usr/local/cuda-13.0 dev/pts dev sys proc; do umount "$root/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
rm -rf "$root/bundle"
cp -a "$bundle" "$root/bundle"
echo "chroot: $root ($(chroot "$root" dpkg -l | grep -c '^ii') packages, $(chroot "$root" dpkg -l | grep -c -- '-dev ') of them -dev)"
SECONDS=0
chroot "$root" /bin/bash -c "cd /bundle && ./run-tests"
echo "chroot-test: the bundle's tests passed in the chroot in ${SECONDS}s"

if [ -n "$torch" ]; then
  chroot "$root" /bin/bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++ make cmake ninja-build >/dev/null"
  mkdir -p "$root/opt/torch" "$root/usr/local/cuda-13.0"
  mount --bind "$torch" "$root/opt/torch"
  mount --bind /usr/local/cuda-13.0 "$root/usr/local/cuda-13.0"
  ln -sfn cuda-13.0 "$root/usr/local/cuda"
  SECONDS=0
  chroot "$root" /bin/bash -c "export PATH=/usr/local/cuda/bin:\$PATH && \
    cmake -S /bundle/trainer -B /tmp/trainer -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH=/opt/torch/torch/share/cmake \
      -DCMAKE_EXE_LINKER_FLAGS='-Wl,--allow-shlib-undefined -Wl,-rpath-link,/usr/local/cuda/lib64' >/tmp/trainer.log 2>&1 && \
    cmake --build /tmp/trainer -j\$(nproc) >>/tmp/trainer.log 2>&1" \
    || { tail -40 "$root/tmp/trainer.log"; exit 1; }
  echo "chroot-test: the trainer kit built sluice-train against $(basename "$torch") in ${SECONDS}s"
  ls -la "$root/tmp/trainer/sluice-train"
fi
