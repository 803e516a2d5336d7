#!/usr/bin/env bash
# The chart's containers run as rendered (issue 19 point 6; a check of README command (2),
# tools/test.sh): helm template of charts/spiderpool (default values, dra.enabled=true,
# spiderpoolController.replicas=2), then the spiderpool-controller (every replica) and
# spiderpool-agent main containers started from the Bazel-built binaries with exactly the
# rendered command/args/env (substitutions listed in run_rendered.py) against the loopback API
# server, each required to pass its rendered startup/readiness probes and to stop cleanly; a
# self-test case appends an unknown flag and requires every start to fail.
#   charts/spiderpool/tests/run-rendered.sh [--only CASE] [--keep]
# Uses the official helm and kubectl from tools/fetch-kube-tools.sh, openssl for the webhook
# certificates, and the default-configuration binaries (already built by the product build of
# tools/test.sh: a cache hit there).
set -euo pipefail
cd "$(dirname "$0")/../../.."

tools=$(./tools/fetch-kube-tools.sh)
PY=python3
if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then PY=/usr/bin/python3; fi
$PY -c 'import yaml' 2>/dev/null || { echo "run-rendered: PyYAML missing (apt-get install python3-yaml)"; exit 1; }
command -v openssl >/dev/null || { echo "run-rendered: openssl missing"; exit 1; }

bazel build --symlink_prefix=/ --noshow_progress \
  //agent:spiderpool-agent //agent:spiderpool-agent-dra //operator:spiderpool-controller \
  //kube/testing:loopback-apiserver
bin=$(bazel info --symlink_prefix=/ bazel-bin 2>/dev/null)
exec $PY charts/spiderpool/tests/run_rendered.py --helm "$tools/helm" --kubectl "$tools/kubectl" \
  --bin-dir "$bin" "$@"
