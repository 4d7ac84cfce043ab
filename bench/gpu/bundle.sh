#!/usr/bin/env bash
# Builds here, with CUDA on, a self-contained folder that runs on a machine
# with none of Debian's -dev packages (the lent GPU machine: an NVIDIA
# driver, CUDA 13, nvcc, CMake, ninja and a pip PyTorch, nothing else):
#
#   bin/        sluice and libsluice_kernels.so (beside it, where sluice looks)
#   lib/        every shared library they and the tests need, except glibc,
#               libstdc++/libgcc_s and NVIDIA's own (driver, CUDA runtime,
#               nvJPEG, NVML, NCCL: the machine's are used, found at run time)
#   tests/      the GoogleTest binaries (built with SLUICE_RELOCATABLE_TESTS:
#               they name tests/data and tests/lib/ relative to the bundle),
#               the fake CUDA/nvJPEG/NVML libraries, the test data and the
#               CLI tests
#   trainer/    a kit that builds sluice-train there against its PyTorch:
#               the trainer's sources, the headers they include and the rest
#               of sluice as static libraries (bench/gpu/trainer/CMakeLists.txt)
#   run         runs a command with the bundle's libraries: ./run sluice doctor
#   run-tests   runs every test from the bundle's root (see below)
#   check.sh    bench/gpu/check.sh, the GPU check run from the bundle
#
# The folder is about 53 MiB; it travels as build/gpu-bundle.tar.xz (about
# 13 MB), which with the working tree must stay under the 64 MiB the device
# tool carries: the script fails above LIMIT_MB (default 40). On the GPU
# machine, in one call (carry build/gpu-bundle.tar.xz; Python unpacks it
# where no xz is installed):
#   python3 -c 'import tarfile; tarfile.open("build/gpu-bundle.tar.xz").extractall("/tmp/b")' \
#     && /tmp/b/gpu-bundle/check.sh "$OUT"
# Usage: bench/gpu/bundle.sh [OUT_DIR]   (default build/gpu-bundle; env
# BUILD_DIR, default build/bundle-build, JOBS default 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
out="${1:-build/gpu-bundle}"
build="${BUILD_DIR:-build/bundle-build}"
limit_mb="${LIMIT_MB:-40}"

# The modules as shared libraries (one copy for sluice and forty test
# binaries), sections per function and --gc-sections (the linker drops what
# a binary does not call): 67 MiB with static modules became 53 MiB
# (13 MB packed). No run path into this build tree (CMAKE_SKIP_RPATH): the
# bundle's `run` and `run-tests` set the library path.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_C_FLAGS="-ffunction-sections -fdata-sections" \
  -DCMAKE_CXX_FLAGS="-ffunction-sections -fdata-sections" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--gc-sections" -DCMAKE_SHARED_LINKER_FLAGS="-Wl,--gc-sections" \
  -DSLUICE_CUDA=ON -DSLUICE_TORCH=OFF -DSLUICE_BUILD_PYTHON=OFF -DSLUICE_BUILD_BENCH=OFF \
  -DSLUICE_RELOCATABLE_TESTS=ON -DSLUICE_SHARED_MODULES=ON -DCMAKE_SKIP_RPATH=ON \
  >"$build.configure.log" 2>&1 \
  || { tail -30 "$build.configure.log"; exit 1; }
cmake --build "$build" -j"${JOBS:-2}" >"$build.build.log" 2>&1 || { grep -B2 -A12 -m3 'error' "$build.build.log"; exit 1; }

rm -rf "$out"
mkdir -p "$out"/{bin,lib,tests/bin,tests/lib,tests/cli} "$out"/trainer/{src,include,third_party}
cp "$build/src/cli/sluice" "$build/src/cli/libsluice_kernels.so" "$out/bin/"
find "$build/tests" -type f -executable -name '*_test' -exec cp {} "$out/tests/bin/" \;
find "$build/tests" -type f -name 'libfake_*.so' -exec cp {} "$out/tests/lib/" \;
find "$build/src" -type f -name 'libsluice_*.so' ! -name libsluice_kernels.so -exec cp {} "$out/lib/" \;
cp -r tests/data "$out/tests/data"
cp tests/cli/*.py "$out/tests/cli/"
strip --strip-unneeded "$out"/bin/* "$out"/tests/bin/* "$out"/tests/lib/* "$out"/lib/libsluice_*

# Shared libraries: what ldd resolves for every binary, less what the target
# machine has (or must provide itself). OpenCV's core needs BLAS and LAPACK:
# the reference ones (Debian's libblas3, liblapack3), not OpenBLAS (44 MB)
# that the alternatives point to for LibTorch.
system='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libcuda\.so|libcudart|libnvjpeg|libnvidia-ml|libnccl|libfake_|libsluice_)'
reference=/usr/lib/x86_64-linux-gnu/lapack:/usr/lib/x86_64-linux-gnu/blas
[ -e /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3 ] \
  || { echo "bundle.sh: the reference LAPACK is missing: run scripts/bootstrap.sh (liblapack3)" >&2; exit 1; }
for f in "$out"/bin/* "$out"/lib/libsluice_* "$out"/tests/bin/* "$out"/tests/lib/*; do
  LD_LIBRARY_PATH="$reference:$build/src/base" ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if ! [[ "$name" =~ $system ]]; then cp -L "$path" "$out/lib/$name"; fi
done
strip --strip-unneeded "$out"/lib/*

# The trainer kit: the trainer's sources and every internal header (small),
# the public headers, the header-only libraries and fmt's headers; the rest
# of sluice, and what it needs, is lib/'s shared libraries.
cp bench/gpu/trainer/CMakeLists.txt "$out/trainer/"
(cd src && find . -name '*.h' -exec cp --parents {} "$root/$out/trainer/src/" \;)
cp -r src/train "$out/trainer/src/"
cp -r include/sluice "$out/trainer/include/"
cp -r /usr/include/fmt /usr/include/nlohmann /usr/include/CLI "$out/trainer/third_party/"
shared=()
for n in sluice_pipeline sluice_dataset sluice_ops sluice_device sluice_telemetry sluice_image \
         sluice_record sluice_base fmt; do
  f="$(cd "$out/lib" && ls "lib$n.so"* 2>/dev/null | head -1)"
  [ -n "$f" ] || { echo "bundle.sh: lib$n is not among the bundled libraries" >&2; exit 1; }
  shared+=("\${CMAKE_CURRENT_SOURCE_DIR}/../lib/$f")
done
version="$(sed -n 's/^project(sluice VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
{
  echo "# Written by bench/gpu/bundle.sh: what sluice-train links besides PyTorch."
  echo "set(SLUICE_KIT_VERSION \"$version\")"
  echo "set(SLUICE_KIT_SHARED ${shared[*]})"
} >"$out/trainer/kit.cmake"

cat >"$out/run" <<'RUN'
#!/usr/bin/env bash
# Runs a command with the bundle's libraries: ./run sluice doctor. NVIDIA's
# libraries are the machine's (the loader's path, the CUDA toolkit, pip's
# wheels: sluice searches them at run time). The toolkit's folder is not put
# on the library path: PyTorch (sluice-train) must keep its own CUDA
# libraries, found through its run path.
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="$here/bin:$PATH"
export LD_LIBRARY_PATH="$here/lib:$here/tests/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$@"
RUN
cp bench/gpu/run-tests.sh "$out/run-tests"
cp bench/gpu/check.sh "$out/check.sh"
chmod +x "$out/run" "$out/run-tests" "$out/check.sh"
git rev-parse HEAD >"$out/COMMIT" 2>/dev/null || true

# What travels: the folder as one xz archive (Python's tarfile unpacks it
# where no xz is installed).
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
mb=$(du -sm "$out" | cut -f1)
packed=$(( $(stat -c %s "$out.tar.xz") / 1048576 ))
echo "bundle: $out, ${mb} MB ($(ls "$out/tests/bin" | wc -l) test binaries, $(ls "$out/lib" | wc -l) shared libraries); $out.tar.xz ${packed} MB"
if [ "$packed" -gt "$limit_mb" ]; then
  echo "bundle.sh: $out.tar.xz is ${packed} MB, over the ${limit_mb} MB that leaves room for the working tree" >&2
  exit 1
fi
