#!/usr/bin/env bash
# A fuzzing campaign: every libFuzzer target of the fuzz preset (clang,
# ASan + UBSan) until it has run RUNS inputs or SECONDS have passed, from
# its seed corpus plus what earlier runs found, then a table of executions,
# coverage and crashes per target. `make fuzz` is the short CI version.
#
#   scripts/fuzz.sh [--runs N] [--seconds S] [--jobs J] [TARGET...]
#
# Defaults: 10,000,000 runs or 1,800 s, one target at a time. Findings go
# to build/fuzz/fuzz/artifacts (reproduce: the target binary with the file
# as its argument); logs and the table to build/fuzz/fuzz/logs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs=10000000 seconds=1800 jobs=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

cd "$root"
"$root/scripts/bootstrap.sh" --fuzz
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
list=build/fuzz/fuzz/targets.txt
logs=build/fuzz/fuzz/logs
mkdir -p "$logs"
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cut -d' ' -f1 "$list")

run_one() {
  local name="$1" line bin work
  line="$(grep "^$name " "$list")" || { echo "fuzz.sh: no target $name" >&2; return 2; }
  read -r _ bin work seeds <<<"$line"
  # shellcheck disable=SC2086  # the seed folders are separate words
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$bin" -runs="$runs" \
    -max_total_time="$seconds" -rss_limit_mb=2560 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/fuzz/artifacts/$name-" "$work" $seeds >"$logs/$name.log" 2>&1 || true
}
export -f run_one
export list logs runs seconds
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'

# The table: executions, exec/s, edge coverage (cov) and features (ft) at
# the end, corpus size, and findings (crash-, leak-, timeout-, oom- files).
table="$logs/summary.txt"
{
  printf '%-22s %12s %8s %8s %8s %8s %s\n' target executions exec/s cov ft corpus findings
  for name in "${targets[@]}"; do
    log="$logs/$name.log"
    execs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)"
    rate="$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$log" | awk '{print $2}' | tail -1)"
    last="$(grep -E '(DONE|pulse|NEW|REDUCE) +cov:' "$log" | tail -1)"
    cov="$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")"
    ft="$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")"
    corp="$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")"
    found="$(find build/fuzz/fuzz/artifacts -name "$name-*" ! -name "$name-slow-unit-*" | wc -l)"
    printf '%-22s %12s %8s %8s %8s %8s %s\n' "$name" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
      "${ft:-?}" "${corp:-?}" "$found"
  done
} | tee "$table"
! grep -qE ' [1-9][0-9]*$' "$table"
