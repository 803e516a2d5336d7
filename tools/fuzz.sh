#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (fuzz/README.md):
#
#   tools/fuzz.sh TARGET|all SECONDS
#
# TARGET is a fuzz target's name (`watch`, `crd_spiderippool`, ...) or label
# (//kube/fuzz:watch); `all` is every target tagged fuzz_target (fuzz/fuzz.bzl). Builds them in
# --config=fuzz (every library with libFuzzer's coverage instrumentation) in its own output base
# ~/.cache/bazel-fuzz (the first build compiles the tree once), then runs each for
# SECONDS, FUZZ_JOBS (default 2) at a time, each in one process, from an empty working
# corpus plus the seeds in <pkg>/fuzz/corpus/<target>/ (never written to). Prints one line per
# target (executions, exec/s, coverage cov/ft, corpus, seconds) and exits non-zero if any target
# crashed, leaked, timed out or hit a sanitizer report: for each it prints the reproducer path,
# the end of its log and the command that replays it.
# Environment:
#   FUZZ_JOBS=N      targets run at once (default 2)
#   FUZZ_OUT=DIR     working corpora, crash inputs and logs (default: a new /tmp/spiderpool-fuzz-*)
#   FUZZ_ARGS="..."  extra libFuzzer flags for every target (e.g. -max_len=4096)
#   FUZZ_CONFIG=smoke  --config=fuzz_smoke in the sanitizer output base instead (what
#       tools/test.sh uses after its sanitizer run: only the fuzz targets' own files compile;
#       the libraries carry no coverage instrumentation, so the runs replay and mutate the
#       seeds without coverage feedback: .bazelrc)
#   SPIDERPOOL_BAZEL_DISK_CACHE  as in tools/test.sh (default ~/.cache/spiderpool-bazel-disk)
# To keep what a long run found: libFuzzer's -merge=1 into the target's corpus directory
# (fuzz/README.md).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

if [[ $# -ne 2 || ! $2 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 TARGET|all SECONDS" >&2
  exit 2
fi
want=$1
seconds=$2
jobs=${FUZZ_JOBS:-2}
out=${FUZZ_OUT:-$(mktemp -d /tmp/spiderpool-fuzz-XXXXXX)}
mkdir -p "$out/corpus" "$out/artifacts" "$out/logs" || exit 1
read -r -a extra_args <<<"${FUZZ_ARGS:-}"

case ${FUZZ_CONFIG:-full} in
  full) startup=(--output_base="$HOME/.cache/bazel-fuzz"); flags=(--config=fuzz) ;;
  smoke) startup=(--output_base="$HOME/.cache/bazel-sanitizers"); flags=(--config=fuzz_smoke) ;;
  *) echo "fuzz: FUZZ_CONFIG must be full or smoke" >&2; exit 2 ;;
esac
flags+=(--symlink_prefix=/)
disk_cache=${SPIDERPOOL_BAZEL_DISK_CACHE-$HOME/.cache/spiderpool-bazel-disk}
[[ -n $disk_cache ]] && flags+=(--disk_cache="$disk_cache")

mapfile -t all_labels < <(bazel "${startup[@]}" query --keep_going --noshow_progress \
  'attr(tags, "\bfuzz_target\b", //...)' 2>"$out/logs/query.log" | sort)
if ((${#all_labels[@]} == 0)); then
  echo "fuzz: bazel query found no fuzz targets (see $out/logs/query.log)" >&2
  exit 1
fi
labels=()
for l in "${all_labels[@]}"; do
  if [[ $want == all || $want == "$l" || $want == "${l##*:}" ]]; then labels+=("$l"); fi
done
if ((${#labels[@]} == 0)); then
  echo "fuzz: no fuzz target named $want; there are:" >&2
  printf '  %s\n' "${all_labels[@]}" >&2
  exit 2
fi

t0=$SECONDS
echo "=== fuzz: building ${#labels[@]} target(s) (${flags[0]})"
if ! bazel "${startup[@]}" build "${flags[@]}" -- "${labels[@]}" >"$out/logs/build.log" 2>&1; then
  grep -v "Cannot export local symbol" "$out/logs/build.log" | tail -40
  echo "fuzz: build failed (see $out/logs/build.log)" >&2
  exit 1
fi
bin=$(bazel "${startup[@]}" info "${flags[@]}" bazel-bin 2>/dev/null)
build_secs=$((SECONDS - t0))
echo "=== fuzz: built in ${build_secs}s; running each for ${seconds}s, $jobs at a time (output: $out)"

# run_one LABEL: one libFuzzer run; its exit code in logs/NAME.rc.
run_one() {
  local label=$1 pkg=${1#//} name
  name=${pkg##*:}
  pkg=${pkg%%:*}
  # pkg is the target's package, <pkg>/fuzz; its seeds are in corpus/<name> there.
  local seeds="$pkg/corpus/$name" work="$out/corpus/$name"
  mkdir -p "$work"
  if [[ ! -d $seeds ]]; then
    echo "fuzz: $label has no seed directory $seeds" >"$out/logs/$name.log"
    echo 1 >"$out/logs/$name.rc"
    return
  fi
  # -entropic=0: libFuzzer 14's entropic scheduler (UpdateFeatureFrequency) cost 40% of the
  # time of a run here, e.g. crd_spiderclaimparameter 156 -> 624 exec/s without it.
  # -print_funcs=0: no symbolized NEW_FUNC lines (log noise, DWARF parsing at start-up).
  "$bin/$pkg/$name" -max_total_time="$seconds" -print_final_stats=1 -entropic=0 -print_funcs=0 \
    -timeout=30 -rss_limit_mb=2560 -artifact_prefix="$out/artifacts/$name-" \
    "${extra_args[@]}" "$work" "$seeds" >"$out/logs/$name.log" 2>&1 </dev/null
  echo $? >"$out/logs/$name.rc"
}

running=0
for label in "${labels[@]}"; do
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
  run_one "$label" &
  running=$((running + 1))
done
wait

failed=()
printf '%-26s %-6s %12s %8s %6s %7s %6s %5s\n' target result execs exec/s cov ft corpus secs
for label in "${labels[@]}"; do
  name=${label##*:}
  log="$out/logs/$name.log"
  rc=$(cat "$out/logs/$name.rc" 2>/dev/null || echo none)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: [0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  result=ok
  [[ $rc != 0 ]] && result=FAIL
  printf '%-26s %-6s %12s %8s %6s %7s %6s %5s\n' "$name" "$result" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "${secs:-?}"
  [[ $rc != 0 ]] && failed+=("$label")
done

for label in "${failed[@]}"; do
  name=${label##*:}
  pkg=${label#//}
  pkg=${pkg%%:*}
  echo
  echo "=== fuzz: $label FAILED (exit $(cat "$out/logs/$name.rc" 2>/dev/null)); log: $out/logs/$name.log"
  grep -v '^#[0-9]' "$out/logs/$name.log" | grep -v -e '^	NEW_FUNC' | tail -60
  while read -r repro; do
    echo "reproducer: $repro"
    echo "  replay:   $bin/$pkg/$name $repro"
    echo "  or (g++): bazel run --symlink_prefix=/ $label -- $repro"
    echo "  keep it:  cp $repro $pkg/corpus/$name/  (with the fix)"
  done < <(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$out/logs/$name.log")
done
echo "=== fuzz: ${#labels[@]} target(s), ${#failed[@]} failed; build ${build_secs}s, total $((SECONDS - t0))s"
((${#failed[@]} == 0))
