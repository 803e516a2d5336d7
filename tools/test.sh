#!/usr/bin/env bash
# README command (2): every test. Installs what it needs, then runs
#   1. all Bazel tests (default config),
#   2. the same tests under AddressSanitizer and UndefinedBehaviorSanitizer,
#   3. the dependency-direction rules (tools/check-deps.sh),
#   4. the chart, image-script and e2e-script checks (charts/spiderpool/tests/check.sh,
#      images/check.sh, e2e/kind/lint.sh).
# Ends with one line `N passed, N failed` and exits non-zero if anything failed.
# Environment: SPIDERPOOL_TEST_KUBECONFIG=<kubeconfig> runs the kube integration tests against
# that real cluster instead of the loopback API server (fault-injection tests then skip).
#              SPIDERPOOL_TEST_CONFIGS="default asan ubsan" picks the build configs.
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
$SUDO ./tools/install-deps.sh || { echo "install-deps failed"; echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
failures=()
LOG_DIR=$(mktemp -d /tmp/spiderpool-test-XXXXXX)

run_bazel_tests() {
  local name=$1; shift
  local log="$LOG_DIR/$name.log"
  # Each sanitizer config gets its own output base: configs share bazel-out/k8-fastbuild, so
  # switching configs in one output base would rebuild everything every time.
  local startup=()
  [[ $name != default ]] && startup=(--output_base="$HOME/.cache/bazel-$name")
  echo "=== bazel ${startup[*]} test ($name) $*"
  # No convenience symlinks: a bazel-<dir> link into one output base is a foreign directory
  # tree to the others, which would then try to load packages from it (.bazelignore covers
  # links left by earlier interactive builds).
  bazel "${startup[@]}" test --symlink_prefix=/ --keep_going "$@" //... 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local p f
  p=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
  f=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log")
  while read -r line; do failures+=("[$name] $line"); done < <(
    grep -E '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log" | awk '{print $1, $2, $3, $4}')
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    # The build broke before any test ran, or Bazel itself failed: count it.
    f=1
    failures+=("[$name] bazel exited $rc (see $log)")
  fi
  passed=$((passed + p))
  failed=$((failed + f))
}

CONFIGS=${SPIDERPOOL_TEST_CONFIGS:-default asan ubsan}
for c in $CONFIGS; do
  if [[ $c == default ]]; then
    run_bazel_tests default
  else
    run_bazel_tests "$c" "--config=$c"
  fi
done

echo "=== dependency rules"
if ./tools/check-deps.sh; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  failures+=("[deps] tools/check-deps.sh")
fi

# The chart (helm lint/template + rendered objects), the images' scripts, and the kind e2e
# scripts and manifests (shellcheck, YAML): one counted check each.
run_check() {  # run_check NAME COMMAND...
  local name=$1
  shift
  echo "=== $name: $*"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("[$name] $*")
  fi
}
run_check chart charts/spiderpool/tests/check.sh
run_check images images/check.sh
run_check e2e-lint e2e/kind/lint.sh

if ((${#failures[@]})); then
  echo "=== failures"
  printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
