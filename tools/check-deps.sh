#!/usr/bin/env bash
# Dependency-direction rules of ../shared/docs/architecture.md, checked with `bazel query`.
# Each rule: "no target under FROM may (transitively) depend on a target under TO".
# Prints one line per rule and exits non-zero if any rule is broken.
set -uo pipefail
cd "$(dirname "$0")/.."

RULES=(
  "//base/... -> //api/... //kube/... //ipam/... //multus/... //dra/... //operator/... //agent/..."
  "//api/... -> //kube/... //ipam/... //multus/... //dra/... //operator/... //agent/..."
  "//ipam/... -> //kube/... //multus/... //dra/... //operator/... //agent/..."
  "//multus/... -> //kube/... //ipam/... //dra/... //operator/... //agent/..."
  "//kube/... -> //ipam/... //multus/... //dra/... //operator/... //agent/..."
  "//dra/... -> //operator/... //agent/..."
  "//operator/... -> //agent/..."
  "//agent/... -> //operator/..."
  # The CNI plugins are exec'd for every pod: only base/, api:codec and the agent's wire
  # contract (spiderpool IPAM, ifacer, coordinator), never the Kubernetes client or the domains.
  "//agent/cni/... -> //kube/... //ipam/... //multus/... //dra/... //operator/... //agent/ipam/..."
  "//agent/ifacer/... -> //kube/... //ipam/... //multus/... //dra/... //operator/... //agent/ipam/..."
  "//agent/coordinator/... -> //kube/... //ipam/... //multus/... //dra/... //operator/... //agent/ipam/..."
  "//agent/ipamapi/... -> //kube/... //ipam/... //multus/... //dra/... //operator/... //agent/ipam/..."
  # The product binaries are linked -static: Debian ships cpp-httplib only as a shared library
  # (product HTTP is //base:http; tests and the loopback API server keep cpp-httplib).
  "//agent:spiderpool-agent -> //third_party:httplib"
  "//operator:spiderpool-controller -> //third_party:httplib"
)

# A package pattern with no targets yet makes `bazel query` fail; skip those.
has_targets() {
  bazel query --noshow_progress "$1" >/dev/null 2>&1
}

failed=0
for rule in "${RULES[@]}"; do
  from="${rule%% -> *}"
  to=(${rule#* -> })
  if ! has_targets "$from"; then
    echo "deps: SKIP $from (no targets yet)"
    continue
  fi
  forbidden=""
  for t in "${to[@]}"; do
    has_targets "$t" && forbidden="${forbidden:+$forbidden + }$t"
  done
  if [[ -z "$forbidden" ]]; then
    echo "deps: OK   $from (nothing it must avoid exists yet)"
    continue
  fi
  # Product code only: a test may exec a higher layer's binary as runtime data (multus's node
  # test runs our CNI plugins), which `deps` would count as an edge.
  bad=$(bazel query --noshow_progress \
    "deps($from except attr(testonly, 1, $from)) intersect ($forbidden)" 2>/dev/null)
  if [[ $? -ne 0 ]]; then
    echo "deps: FAIL $from: bazel query failed"
    failed=1
  elif [[ -n "$bad" ]]; then
    echo "deps: FAIL $from must not depend on: $(echo $bad)"
    failed=1
  else
    echo "deps: OK   $from"
  fi
done

# kube/ knows generic Kubernetes types, never our CRDs (outside its test support).
if has_targets "//kube/..."; then
  bad=$(bazel query --noshow_progress \
    "deps(//kube/... except attr(testonly, 1, //kube/...)) intersect //api:spider" 2>/dev/null || true)
  if [[ -n "$bad" ]]; then
    echo "deps: FAIL //kube/... (non-test) must not depend on //api:spider"
    failed=1
  else
    echo "deps: OK   //kube/... does not use the Spider CRD types"
  fi
fi
exit $failed
