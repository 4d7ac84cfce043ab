#!/usr/bin/env bash
# A GPU bundle's tests (bench/gpu/bundle.sh copies this file in as
# run-tests), run from the bundle's root: every GoogleTest binary, then the
# command-line tests (Python's standard library only). The CPU tests and the
# fake-GPU tests (a fake CUDA runtime, kernel library and nvJPEG that model
# the real ones) run on any x86-64 Linux; the real-GPU tests (cuda_*) skip
# where no GPU is visible, and with --gpu they must run instead.
#
#   ./run-tests [--gpu] [--only REGEX] [--no-cli] [LOG]
#
# One line per binary; the full output goes to LOG (default
# run-tests.log). Exit 1 if any test fails (or, with --gpu, skips).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
gpu=0 only="" cli=1 log="run-tests.log"
while [ $# -gt 0 ]; do
  case "$1" in
    --gpu) gpu=1 ;;
    --only) only="$2"; shift ;;
    --no-cli) cli=0 ;;
    -*) echo "run-tests: unknown option $1" >&2; exit 2 ;;
    *) log="$1" ;;
  esac
  shift
done
export LD_LIBRARY_PATH="$here/lib:$here/tests/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SLUICE_TEST_DATA=tests/data
: >"$log"
failed=0 ran=0
for t in tests/bin/*; do
  name="$(basename "$t")"
  if [ -n "$only" ] && ! [[ "$name" =~ $only ]]; then continue; fi
  # The real kernels for the real-GPU tests (the fakes' tests set their
  # own), and the toolkit's CUDA runtime that they link.
  extra=(env)
  [[ "$name" == cuda_* ]] && extra=(env "SLUICE_KERNELS_LIBRARY=$here/bin/libsluice_kernels.so"
    "LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64")
  SECONDS=0
  # A binary that hangs (a wait that never ends) fails instead of taking
  # the whole run with it.
  output="$(timeout "${TEST_TIMEOUT:-240}" "${extra[@]}" "$t" 2>&1)"
  rc=$?
  { echo "=== $name (exit $rc, ${SECONDS}s)"; echo "$output"; } >>"$log"
  ran=$((ran + 1))
  passed="$(grep -o '\[  PASSED  \] [0-9]* test' <<<"$output" | grep -o '[0-9]*' || echo 0)"
  skipped="$(grep -o '\[  SKIPPED \] [0-9]* test' <<<"$output" | grep -o '[0-9]*' || echo 0)"
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $name (exit $rc)"
    grep -E '^\[  FAILED  \]|Failure|error' <<<"$output" | head -20
    failed=$((failed + 1))
  elif [ "$gpu" = 1 ] && [[ "$name" == cuda_* ]] && [ "$skipped" != 0 ]; then
    echo "FAIL $name: $skipped test(s) skipped on a GPU machine"
    grep -A1 'SKIPPED' <<<"$output" | head -6
    failed=$((failed + 1))
  else
    note=""
    [ "$skipped" != 0 ] && note=", $skipped skipped"
    echo "ok   $name ($passed passed$note, ${SECONDS}s)"
  fi
done
if [ "$cli" = 1 ] && [ -z "$only" ]; then
  SECONDS=0
  output="$(SLUICE_BIN="$here/bin/sluice" SLUICE_FAKE_NVML="$here/tests/lib/libfake_nvml.so" \
    SLUICE_FAKE_CUDA="$here/tests/lib/libfake_cuda.so" \
    SLUICE_FAKE_KERNELS="$here/tests/lib/libfake_kernels.so" \
    SLUICE_FAKE_NVJPEG="$here/tests/lib/libfake_nvjpeg_full.so" \
    SLUICE_TEST_DATA="$here/tests/data" python3 tests/cli/cli_test.py 2>&1)"
  rc=$?
  { echo "=== cli_test.py (exit $rc, ${SECONDS}s)"; echo "$output"; } >>"$log"
  ran=$((ran + 1))
  if [ "$rc" -ne 0 ]; then
    echo "FAIL cli_test.py (exit $rc)"
    grep -E '^(FAIL|ERROR):|Error' <<<"$output" | head -20
    failed=$((failed + 1))
  else
    echo "ok   cli_test.py ($(tail -3 <<<"$output" | grep -o 'Ran [0-9]* tests'), ${SECONDS}s)"
  fi
fi
echo "run-tests: $ran run, $failed failed (log: $here/$log)"
[ "$failed" -eq 0 ]
