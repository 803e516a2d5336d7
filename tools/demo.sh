#!/usr/bin/env bash
# README command (1): the main job. Today: start the loopback API server, apply the CRDs and the
# seed-style sample objects with the real kubectl, and list them. Later issues extend this into
# the whole local path (IPAM through the real CNI plugins, webhooks, DRA).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
$SUDO ./tools/install-deps.sh
TOOLS=$($SUDO ./tools/fetch-kube-tools.sh)
KUBECTL="$TOOLS/kubectl"

echo "=== building the loopback API server"
bazel build --noshow_progress //kube/testing:loopback-apiserver
BIN=bazel-bin/kube/testing/loopback-apiserver

WORK=$(mktemp -d /tmp/spiderpool-demo-XXXXXX)
KCFG="$WORK/kubeconfig"
"$BIN" --port 0 --kubeconfig-out "$KCFG" >"$WORK/apiserver.log" 2>&1 &
SERVER_PID=$!
cleanup() {
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  [[ -s $KCFG ]] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/apiserver.log"; exit 1; }
  sleep 0.1
done
[[ -s $KCFG ]] || { echo "loopback API server did not write $KCFG"; cat "$WORK/apiserver.log"; exit 1; }
k() { "$KUBECTL" --kubeconfig "$KCFG" "$@"; }

echo "=== API server up: $(k config view -o jsonpath='{.clusters[0].cluster.server}')"
echo "=== applying CRDs (charts/spiderpool/crds/)"
k apply --validate=false -f charts/spiderpool/crds/
k wait --for condition=established --timeout=30s crd --all
k api-resources --api-group=spiderpool.spidernet.io

echo "=== applying the samples (e2e/samples/)"
k apply --validate=false -f e2e/samples/

echo "=== listing them"
k get spiderippools -o wide
k get spidermultusconfigs -A
k get sp ippool-test -o yaml
echo "=== demo finished"
