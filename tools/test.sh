#!/usr/bin/env bash
# README command (2): every test. Installs what it needs, then runs
#   1. the product build: every target that is not a test, in the default config (g++ 12,
#      warnings as errors): the binaries, benchmarks, tools and test fixtures compile and link,
#   2. every Bazel test, built and run once under AddressSanitizer (with LeakSanitizer) and
#      UndefinedBehaviorSanitizer together (--config=sanitizers, .bazelrc: clang, its own output
#      base),
#   3. the dependency-direction rules (tools/check-deps.sh),
#   4. the chart, chart-run, image-script and e2e-script checks (charts/spiderpool/tests/check.sh,
#      charts/spiderpool/tests/run-rendered.sh: the rendered containers started from our
#      binaries against the loopback API server, images/check.sh, e2e/kind/lint.sh).
#   5. the fuzz targets' short runs (FUZZ_CONFIG=smoke tools/fuzz.sh all 10: every libFuzzer
#      target for 10 s, two at a time, no coverage feedback in the libraries: fuzz/README.md) in
#      the sanitizer output base right after 2, which already compiled their code;
#      one counted check per target (a crash prints its reproducer path). Only when the
#      sanitizers config is among the configs run.
# 3 and 4 need little CPU and no build: they run in the background during 2.
# Why the tests run once: a cold run is two full compiles on 2 cores (g++ for the product,
# clang for the sanitizers), and each costs ~15 minutes; running the tests in the default config
# as well would add a third. The sanitizer run is the stricter one: the same tests, the same
# code, every memory error and every undefined behaviour fatal.
# Counting: the unit is one Bazel test target in one config, plus one for the product build and
# one per check of 3 and 4. Bazel reports a test binary whose cases all called GTEST_SKIP() as
# PASSED, so each passed target's GoogleTest XML (bazel-testlogs/<pkg>/<target>/test.xml) is
# read: a target in which no test case ran to completion (all skipped) counts as skipped, not
# passed. Every skipped test case, also those inside targets that passed, is listed with its
# skip message. A target that fails to build, fails, times out or is flaky counts as failed; so
# does a Bazel run that fails without naming a test target (e.g. a library that does not
# compile).
# Ends with the duration of each phase and then one line `N passed, N failed, N skipped`; exits
# non-zero if anything failed (skips alone do not fail the run).
# Environment:
#   SPIDERPOOL_TEST_KUBECONFIG=<kubeconfig>  runs the kube integration tests against that real
#       cluster instead of the loopback API server (fault-injection tests then skip).
#   SPIDERPOOL_TEST_CONFIGS="sanitizers"  the Bazel configs the tests run in (default: only
#       sanitizers); any .bazelrc config name works, e.g. "default", "asan ubsan" or "tsan".
#       With "default" among them the product build of step 1 is part of that run.
#   SPIDERPOOL_TEST_TARGETS="//..."  the Bazel target patterns to build and test (default //...).
#   SPIDERPOOL_BAZEL_DISK_CACHE=<dir>  Bazel's disk cache, shared by all configs and output bases
#       (default ~/.cache/spiderpool-bazel-disk; empty: none). It makes a rerun on the same
#       machine cheap even if an output base is gone. Bazel 4 never shrinks it (it reached 68 GB
#       and filled this machine's disk): files not written for 3 days are deleted first.
#   SPIDERPOOL_FUZZ_SECONDS=10  seconds per fuzz target in step 5 (0: step 5 is skipped and
#       counted as one skip).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

passed=0
failed=0
skipped=0
failures=()
skipped_targets=()
skipped_cases=()
phases=()
phase_t0=$SECONDS
phase_done() { phases+=("$(printf '%6ds  %s' $((SECONDS - phase_t0)) "$1")"); phase_t0=$SECONDS; }

summary() {  # the phase durations, then the one closing line
  if ((${#skipped_cases[@]})); then
    echo "=== skipped test cases: ${#skipped_cases[@]} (config, target, case: reason)"
    printf '  %s\n' "${skipped_cases[@]}"
  fi
  if ((${#skipped_targets[@]})); then
    echo "=== skipped test targets (no test case ran): ${#skipped_targets[@]}"
    printf '  %s\n' "${skipped_targets[@]}"
  fi
  if ((${#failures[@]})); then
    echo "=== failures"
    printf '  %s\n' "${failures[@]}"
  fi
  echo "=== phase durations (seconds)"
  printf '  %s\n' "${phases[@]}"
  echo "$passed passed, $failed failed, $skipped skipped"
}

if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
if ! $SUDO ./tools/install-deps.sh; then
  failed=1
  failures+=("[deps] tools/install-deps.sh")
  phase_done "install deps"
  summary
  exit 1
fi
phase_done "install deps"

LOG_DIR=$(mktemp -d /tmp/spiderpool-test-XXXXXX)
DISK_CACHE=${SPIDERPOOL_BAZEL_DISK_CACHE-$HOME/.cache/spiderpool-bazel-disk}
if [[ -n $DISK_CACHE && -d $DISK_CACHE ]]; then
  find "$DISK_CACHE" -type f -mtime +3 -delete 2>/dev/null
fi
read -r -a TARGETS <<<"${SPIDERPOOL_TEST_TARGETS:-//...}"

# classify_targets TESTLOGS < "LABEL STATUS" lines: for each test target that Bazel ran
# (PASSED, FAILED, FLAKY), reads its test.xml file(s) and prints
#   target<TAB>LABEL<TAB>passed|skipped|unreadable<TAB>detail    (PASSED targets only)
#   case<TAB>LABEL<TAB>Suite.Case<TAB>skip message (file:line)   (every skipped test case)
# GoogleTest 1.12 marks a GTEST_SKIP()ped case <testcase status="run" result="skipped"> with a
# <skipped message="FILE:LINE&#x0A;REASON"> child; a DISABLED_ case is status="notrun"
# result="suppressed" (not run, not listed). A test binary that writes no XML (a crash, a
# non-GoogleTest test) gets one from Bazel with a plain <testcase status="run">.
read -r -d '' CLASSIFY_PY <<'PY'
import glob, os, sys, xml.etree.ElementTree as ET

testlogs = sys.argv[1]
for line in sys.stdin:
    label, status = line.split()
    pkg, _, name = label[2:].partition(":")
    top = os.path.join(testlogs, pkg, name)
    # test.xml, or one per shard/run: shard_K_of_N/, run_K_of_N/, shard_K_of_N_run_K_of_N/
    files = glob.glob(os.path.join(glob.escape(top), "test.xml"))
    files += glob.glob(os.path.join(glob.escape(top), "shard_*_of_*", "test.xml"))
    files += glob.glob(os.path.join(glob.escape(top), "run_*_of_*", "test.xml"))
    completed = skipped_cases = 0
    problem = "" if files else "no test.xml under " + top
    for path in sorted(files):
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            problem = "%s: %s" % (path, e)
            continue
        for tc in root.iter("testcase"):
            case = "%s.%s" % (tc.get("classname", ""), tc.get("name", ""))
            skip = tc.find("skipped")
            if skip is not None or tc.get("result") == "skipped":
                skipped_cases += 1
                text = (skip.get("message") if skip is not None else None) or ""
                where, _, why = text.partition("\n")
                if not why.strip():
                    why = "(no reason given)"
                msg = " ".join(why.split())
                if where:
                    msg += " (%s)" % where
                print("case\t%s\t%s\t%s" % (label, case, msg))
            elif tc.get("status", "run") == "run":
                completed += 1
    if status != "PASSED":
        continue
    if problem:
        print("target\t%s\tunreadable\t%s" % (label, problem))
    elif completed == 0:
        print("target\t%s\tskipped\t%d skipped test case(s), none ran" % (label, skipped_cases))
    else:
        print("target\t%s\tpassed\t" % label)
PY
classify_targets() { python3 -c "$CLASSIFY_PY" "$1"; }

# bazel_flags CONFIG: fills the arrays `startup` and `flags` for that config.
bazel_flags() {
  startup=()
  # Each non-default config gets its own output base: configs share bazel-out/k8-fastbuild, so
  # switching configs in one output base would rebuild everything every time.
  [[ $1 != default ]] && startup=(--output_base="$HOME/.cache/bazel-$1")
  # No convenience symlinks: a bazel-<dir> link into one output base is a foreign directory
  # tree to the others, which would then try to load packages from it (.bazelignore covers
  # links left by earlier interactive builds).
  flags=(--symlink_prefix=/)
  [[ $1 != default ]] && flags+=("--config=$1")
  [[ -n $DISK_CACHE ]] && flags+=(--disk_cache="$DISK_CACHE")
}

run_bazel_tests() {  # run_bazel_tests CONFIG
  local name=$1 startup flags
  local log="$LOG_DIR/$name.log"
  bazel_flags "$name"
  echo "=== bazel ${startup[*]} test ($name) --keep_going ${flags[*]} ${TARGETS[*]}"
  bazel "${startup[@]}" test --keep_going "${flags[@]}" -- "${TARGETS[@]}" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}

  # Bazel's summary, after its last `INFO: Elapsed time` line: one line per test target,
  # `//pkg:name  [(cached)] STATUS ...` (test output printed earlier may contain anything).
  local -A status=()
  local label rest st
  while read -r label rest; do
    rest=${rest#(cached) }
    case $rest in
      PASSED*) st=PASSED ;;
      FLAKY*) st=FLAKY ;;
      "FAILED TO BUILD"*) st=FAILED_TO_BUILD ;;
      FAILED*) st=FAILED ;;
      TIMEOUT*) st=TIMEOUT ;;
      "NO STATUS"*) st=NO_STATUS ;;
      INCOMPLETE*) st=INCOMPLETE ;;
      SKIPPED*) st=SKIPPED ;;
      *) continue ;;
    esac
    status[$label]=$st
  done < <(awk '/^INFO: Elapsed time:/ { n = NR } { l[NR] = $0 }
                END { for (i = n + 1; i <= NR; i++) print l[i] }' "$log" | grep -E '^//[^ ]+ ')
  local labels=()
  mapfile -t labels < <(printf '%s\n' "${!status[@]}" | grep . | sort)

  local p=0 f=0 s=0 build_failed=0
  for label in "${labels[@]}"; do
    case ${status[$label]} in
      PASSED) ;;  # passed or skipped: its XML below decides
      SKIPPED)  # Bazel's own skip (e.g. a target incompatible with the platform): not run
        s=$((s + 1))
        skipped_targets+=("[$name] $label (Bazel: SKIPPED)") ;;
      *)
        f=$((f + 1))
        [[ ${status[$label]} == FAILED_TO_BUILD || ${status[$label]} == NO_STATUS ]] && build_failed=1
        failures+=("[$name] $label ${status[$label]//_/ }") ;;
    esac
  done

  # The XML of every test that ran in this invocation, cached or not, is in this output base's
  # bazel-testlogs (no convenience link: ask `bazel info` with the same options).
  local testlogs="" kind detail classified=0 to_classify=0
  for label in "${labels[@]}"; do [[ ${status[$label]} == PASSED ]] && to_classify=$((to_classify + 1)); done
  if ((${#labels[@]})); then
    testlogs=$(bazel "${startup[@]}" info "${flags[@]}" bazel-testlogs 2>>"$log")
    [[ -d $testlogs ]] || testlogs=/nonexistent  # every PASSED target then counts as unreadable
    while IFS=$'\t' read -r kind label st detail; do
      if [[ $kind == case ]]; then
        skipped_cases+=("[$name] $label $st: $detail")
        continue
      fi
      classified=$((classified + 1))
      case $st in
        passed) p=$((p + 1)) ;;
        skipped)
          s=$((s + 1))
          skipped_targets+=("[$name] $label: $detail") ;;
        *)
          f=$((f + 1))
          failures+=("[$name] $label PASSED, but its test.xml is unreadable: $detail") ;;
      esac
    done < <(for label in "${labels[@]}"; do
               case ${status[$label]} in PASSED | FAILED | FLAKY) echo "$label ${status[$label]}" ;; esac
             done | classify_targets "$testlogs")
  fi
  if ((classified != to_classify)); then  # e.g. python3 missing: never count unread results
    f=$((f + to_classify - classified))
    failures+=("[$name] $((to_classify - classified)) PASSED target(s) whose test.xml was not read (see $log)")
  fi

  # Bazel's exit code: 0 all passed, 3 all built but a test failed; anything else (1: a build or
  # analysis failure, 4: no test target, ...) fails the config too, counted once unless a test
  # target already shows it (FAILED TO BUILD, NO STATUS): e.g. a library no test depends on
  # that does not compile.
  if ((rc != 0)) && { ((rc != 3 && build_failed == 0)) || ((f == 0)); }; then
    f=$((f + 1))
    failures+=("[$name] bazel exited $rc (see $log)")
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  skipped=$((skipped + s))
  echo "=== ($name) $p passed, $f failed, $s skipped"
}

# The product build (step 1): every rule under TARGETS except the tests, in the default config.
run_product_build() {
  local log="$LOG_DIR/default-build.log" startup flags
  bazel_flags default
  local query="kind(rule, set(${TARGETS[*]})) except tests(set(${TARGETS[*]}))"
  local build_targets=()
  mapfile -t build_targets < <(bazel "${startup[@]}" query "$query" 2>>"$log")
  if ((${#build_targets[@]} == 0)); then
    failed=$((failed + 1))
    failures+=("[default] bazel query '$query' found nothing (see $log)")
    return
  fi
  echo "=== bazel build (default) --keep_going ${flags[*]}: ${#build_targets[@]} non-test targets"
  if bazel "${startup[@]}" build --keep_going "${flags[@]}" -- "${build_targets[@]}" 2>&1 |
       tee -a "$log"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("[default] build of the ${#build_targets[@]} non-test targets (see $log)")
  fi
}

# The dependency rules, the chart (helm lint/template + rendered objects; the rendered
# containers run from our binaries against the loopback API server), the images' scripts,
# and the kind e2e scripts and manifests (shellcheck, YAML): one counted check each. They need
# little CPU and no build of their own, so they run in the background, one after the other,
# while Bazel builds and tests; each one's output is printed when it is counted.
CHECKS=(
  "deps ./tools/check-deps.sh"
  "chart charts/spiderpool/tests/check.sh"
  "chart-run charts/spiderpool/tests/run-rendered.sh"
  "images images/check.sh"
  "e2e-lint e2e/kind/lint.sh"
)
checks_pid=
start_checks() {
  : >"$LOG_DIR/checks.tsv"
  (
    for spec in "${CHECKS[@]}"; do
      read -r name cmd <<<"$spec"
      t0=$SECONDS
      $cmd >"$LOG_DIR/check-$name.log" 2>&1
      printf '%s\t%s\t%s\t%s\n' "$name" "$?" "$((SECONDS - t0))" "$cmd" >>"$LOG_DIR/checks.tsv"
    done
  ) &
  checks_pid=$!
}
collect_checks() {
  wait "$checks_pid"
  local spec name cmd rc secs reported
  for spec in "${CHECKS[@]}"; do
    read -r name cmd <<<"$spec"
    reported=$(awk -F'\t' -v n="$name" '$1 == n { print $2 " " $3 }' "$LOG_DIR/checks.tsv")
    read -r rc secs <<<"$reported"
    echo "=== $name: $cmd (${secs:-?}s, run in the background)"
    cat "$LOG_DIR/check-$name.log" 2>/dev/null
    if [[ ${rc:-x} == 0 ]]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      failures+=("[$name] $cmd (exit ${rc:-none reported})")
    fi
    phases+=("$(printf '%6ss  %s' "${secs:-?}" "check $name (in the background)")")
  done
}

# The fuzz targets' short runs (step 5): tools/fuzz.sh prints one row per target,
# `NAME ok|FAIL EXECS ...`; each row is one counted check, and a run that fails without rows
# (e.g. the build) counts once.
FUZZ_SECONDS=${SPIDERPOOL_FUZZ_SECONDS:-10}
run_fuzz() {
  local log="$LOG_DIR/fuzz.log" name result rest rows=0 rc
  if [[ $FUZZ_SECONDS == 0 ]]; then
    skipped=$((skipped + 1))
    skipped_targets+=("[fuzz] tools/fuzz.sh: SPIDERPOOL_FUZZ_SECONDS=0")
    return
  fi
  echo "=== fuzz: tools/fuzz.sh all $FUZZ_SECONDS"
  FUZZ_CONFIG=smoke FUZZ_OUT="$LOG_DIR/fuzz" SPIDERPOOL_BAZEL_DISK_CACHE="$DISK_CACHE" \
    ./tools/fuzz.sh all "$FUZZ_SECONDS" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  while read -r name result rest; do
    rows=$((rows + 1))
    if [[ $result == ok ]]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      failures+=("[fuzz] $name: crashed or hung, reproducer under $LOG_DIR/fuzz/artifacts (see $log)")
    fi
  done < <(grep -E '^[a-z0-9_]+ +(ok|FAIL) ' "$log")
  if ((rows == 0)); then
    failed=$((failed + 1))
    failures+=("[fuzz] tools/fuzz.sh all $FUZZ_SECONDS exited $rc with no result rows (see $log)")
  fi
}

configs=${SPIDERPOOL_TEST_CONFIGS:-sanitizers}
if [[ " $configs " != *" default "* ]]; then
  run_product_build
  phase_done "product build (default config, g++)"
fi
start_checks
for c in $configs; do
  run_bazel_tests "$c"
  phase_done "bazel build + test ($c)"
done
if [[ " $configs " == *" sanitizers "* ]]; then
  run_fuzz
  phase_done "fuzz short runs (tools/fuzz.sh all $FUZZ_SECONDS)"
fi
collect_checks
phase_done "waiting for the background checks"

summary
[[ $failed -eq 0 ]]
