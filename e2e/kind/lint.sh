#!/usr/bin/env bash
# The checks of the cluster e2e that run without a cluster (README command (2), tools/test.sh):
#   1. shellcheck of the e2e, image, chart-check and image-build scripts (every severity), and
#      of the other tools/ scripts and .ci/run (errors only: they predate this check);
#   2. every e2e manifest parses as it will be applied, Spider objects against the CRD schemas
#      (lint_manifests.py);
#   3. the kind cluster config run.sh writes for Kubernetes 1.32, 1.33 and 1.34 (DRA gate and
#      runtime-config only before 1.34; CDI on in containerd; 3 nodes).
# Exit status 0 when all pass.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

PY=python3
if /usr/bin/python3 -c 'import yaml' 2>/dev/null; then PY=/usr/bin/python3; fi
rc=0
fail() { echo "e2e-lint: FAIL $*"; rc=1; }

command -v shellcheck >/dev/null || { echo "e2e-lint: shellcheck is not installed (tools/install-deps.sh)"; exit 1; }
strict=(e2e/kind/*.sh images/*.sh tools/build-images.sh charts/spiderpool/tests/*.sh)
if shellcheck -x "${strict[@]}"; then
  echo "e2e-lint: shellcheck clean: ${strict[*]}"
else
  fail "shellcheck"
fi
others=()
for f in tools/*.sh .ci/run; do
  [[ " ${strict[*]} " == *" $f "* ]] || others+=("$f")
done
if shellcheck -x --severity=error "${others[@]}"; then
  echo "e2e-lint: no shellcheck errors in ${others[*]}"
else
  fail "shellcheck --severity=error"
fi

$PY e2e/kind/lint_manifests.py || fail "e2e manifests"

for v in v1.32.8 v1.33.4 v1.34.0 v1.35.0; do
  if ! e2e/kind/run.sh --k8s-version "$v" --print-kind-config | $PY -c '
import sys, yaml
minor = int(sys.argv[1].split(".")[1])
c = yaml.safe_load(sys.stdin)
assert c["kind"] == "Cluster" and c["apiVersion"] == "kind.x-k8s.io/v1alpha4", "not a kind Cluster"
assert [n["role"] for n in c["nodes"]] == ["control-plane", "worker", "worker"], "nodes"
assert all(n["image"] == "kindest/node:" + sys.argv[1] for n in c["nodes"]), "node image"
patch = "".join(c["containerdConfigPatches"])
assert "enable_cdi = true" in patch and "/var/run/cdi" in patch, "CDI not enabled in containerd"
gates = c.get("featureGates", {})
rc = c.get("runtimeConfig", {})
if minor < 34:
    assert gates.get("DynamicResourceAllocation") is True, "DRA gate missing"
    assert rc.get("resource.k8s.io/v1beta1") == "true", "v1beta1 not served"
    assert (rc.get("resource.k8s.io/v1beta2") == "true") == (minor == 33), "v1beta2"
else:
    assert not gates and not rc, "DRA is GA: no gate or runtime-config"
' "$v"; then
    fail "kind config for $v"
  fi
done
[[ $rc -eq 0 ]] && echo "e2e-lint: kind configs for 1.32-1.35 as expected"
exit $rc
