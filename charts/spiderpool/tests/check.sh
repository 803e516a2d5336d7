#!/usr/bin/env bash
# The chart checks of README command (2) (tools/test.sh): helm lint and helm template of
# charts/spiderpool for every value set in check_chart.py, with the rendered objects asserted,
# the rendered command lines parsed by the real spiderpool-agent / spiderpool-controller
# binaries and conf.yml read by the agent. Uses the official helm from
# tools/fetch-kube-tools.sh. The CRDs in crds/ are checked against api/ by //api:crd_fields_test.
#   charts/spiderpool/tests/check.sh [--only CASE]
# SPIDERPOOL_CHART_CHECK_BINARIES=0 skips the binaries (no Bazel build).
set -euo pipefail
cd "$(dirname "$0")/../../.."

tools=$(./tools/fetch-kube-tools.sh)
PY=python3
if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then PY=/usr/bin/python3; fi
$PY -c 'import yaml' 2>/dev/null || { echo "chart-check: PyYAML missing (apt-get install python3-yaml)"; exit 1; }

bins=()
if [[ ${SPIDERPOOL_CHART_CHECK_BINARIES:-1} != 0 ]]; then
  # The default configuration: already built by `bazel test //...` in tools/test.sh.
  bazel build --symlink_prefix=/ --noshow_progress //agent:spiderpool-agent //operator:spiderpool-controller
  bin=$(bazel info --symlink_prefix=/ bazel-bin 2>/dev/null)
  bins=(--agent "$bin/agent/spiderpool-agent" --controller "$bin/operator/spiderpool-controller")
fi
exec $PY charts/spiderpool/tests/check_chart.py --helm "$tools/helm" "${bins[@]}" "$@"
