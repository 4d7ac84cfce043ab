#!/bin/sh
# Installs this build into a fresh prefix, then uses it as a user would:
# the installed `sluice synth` makes an image folder, and a separate CMake
# project (tests/install/consumer) finds the package with find_package,
# builds against sluice::pipeline and streams the folder.
# The consumer is compiled as this build was (compiler and flags: a
# sanitizer build's libraries need the sanitizer's runtime).
#   run.sh CMAKE BUILD_DIR SOURCE_DIR GENERATOR CXX "CXXFLAGS" "LDFLAGS"
set -eu
cmake=$1 build=$2 src=$3 generator=$4 cxx=$5 cxxflags=$6 ldflags=$7
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -x "$work/prefix/bin/sluice"
test -f "$work/prefix/include/sluice/pipeline.h"
test -f "$work/prefix/lib/cmake/sluice/sluiceConfig.cmake"
"$work/prefix/bin/sluice" synth "$work/images" --classes 2 --per-class 5 --size 48 >/dev/null
"$cmake" -S "$src/tests/install/consumer" -B "$work/consumer" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/consumer" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/consumer/consumer" "$work/images/train"
