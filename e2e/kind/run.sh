#!/usr/bin/env bash
# Cluster e2e on kind: create a cluster (DRA and CDI set up for the Kubernetes version), build
# and load the images, install Multus and the chart with dra.enabled=true, run the cases, collect
# logs of failed cases, tear down. See e2e/kind/README.md.
#
#   e2e/kind/run.sh [options] [CASE...]
#     --k8s-version vX.Y.Z   Kubernetes (kindest/node tag; default $E2E_K8S_VERSION or v1.34.0)
#     --name NAME            kind cluster name (default spiderpool-e2e)
#     --multus thick|thin    Multus flavour (default thick)
#     --skip-build           use images already built (tools/build-images.sh --tag e2e)
#     --reuse                use an existing cluster of that name, and keep it
#     --keep                 keep the cluster at the end (also: E2E_KEEP_CLUSTER=1)
#     --list                 list the cases and exit
#     --print-kind-config    print the kind cluster config for --k8s-version and exit
#   CASE...                  run only these (default: all, in the listed order)
# Needs: docker, kind, kubectl, helm (v3 or v4), curl. Exit status 0 when every case passed.
set -euo pipefail

# shellcheck source=e2e/kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=e2e/kind/cases.sh
source "$E2E_DIR/cases.sh"

E2E_K8S_VERSION=${E2E_K8S_VERSION:-v1.34.0}
E2E_CLUSTER_NAME=${E2E_CLUSTER_NAME:-spiderpool-e2e}
E2E_MULTUS_MODE=${E2E_MULTUS_MODE:-thick}
E2E_MULTUS_VERSION=${E2E_MULTUS_VERSION:-v4.1.4}
E2E_TEST_IMAGE=${E2E_TEST_IMAGE:-docker.io/library/busybox:1.36.1}
E2E_IMAGE_TAG=${E2E_IMAGE_TAG:-e2e}
E2E_ARTIFACTS=${E2E_ARTIFACTS:-${TMPDIR:-/tmp}/spiderpool-e2e-$(date +%Y%m%d-%H%M%S)}
E2E_KEEP_CLUSTER=${E2E_KEEP_CLUSTER:-0}
E2E_SKIP_BUILD=${E2E_SKIP_BUILD:-0}
E2E_REUSE=${E2E_REUSE:-0}
# CEL selector of the claims the cases write (not the seed's Quick Start, used as it is):
# %MASTER% = the SMC's master NIC (dra/resourceslice/model.h attribute ifName); "" = none.
E2E_NIC_SELECTOR=${E2E_NIC_SELECTOR-device.attributes[\"netresources.spidernet.io\"].ifName == \"%MASTER%\"}

selected=()
print_config=0
while (($#)); do
  case $1 in
    --k8s-version) E2E_K8S_VERSION=$2; shift 2 ;;
    --name) E2E_CLUSTER_NAME=$2; shift 2 ;;
    --multus) E2E_MULTUS_MODE=$2; shift 2 ;;
    --skip-build) E2E_SKIP_BUILD=1; shift ;;
    --reuse) E2E_REUSE=1; E2E_KEEP_CLUSTER=1; shift ;;
    --keep) E2E_KEEP_CLUSTER=1; shift ;;
    --list) printf '%s\n' "${ALL_CASES[@]}"; exit 0 ;;
    --print-kind-config) print_config=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) selected+=("$1"); shift ;;
  esac
done
((${#selected[@]})) || selected=("${ALL_CASES[@]}")
for c in "${selected[@]}"; do
  [[ " ${ALL_CASES[*]} " == *" $c "* ]] || die "unknown case $c (--list shows them)"
done
[[ $E2E_MULTUS_MODE == thick || $E2E_MULTUS_MODE == thin ]] || die "--multus thick|thin"
[[ $E2E_K8S_VERSION =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || die "--k8s-version vX.Y.Z, not $E2E_K8S_VERSION"
K8S_MINOR=${BASH_REMATCH[1]}
((K8S_MINOR >= 32)) || die "DRA with structured parameters needs Kubernetes >= 1.32"

# ------------------------------------------------------------------------------- the cluster

kind_config() {
  echo "kind: Cluster"
  echo "apiVersion: kind.x-k8s.io/v1alpha4"
  if ((K8S_MINOR < 34)); then
    # DRA is beta and off by default before 1.34 (GA, on): the gate on every component and the
    # beta API served.
    echo "featureGates:"
    echo "  DynamicResourceAllocation: true"
    echo "runtimeConfig:"
    echo "  resource.k8s.io/v1beta1: \"true\""
    if ((K8S_MINOR == 33)); then echo "  resource.k8s.io/v1beta2: \"true\""; fi
  fi
  # CDI in containerd (1.7 needs it; 2.x has it on and accepts this form): the kubelet passes
  # the CDI device IDs our plugin returns, containerd reads the specs from /var/run/cdi.
  cat <<'EOT'
containerdConfigPatches:
  - |-
    [plugins."io.containerd.grpc.v1.cri"]
      enable_cdi = true
      cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
nodes:
  - role: control-plane
    image: __IMAGE__
  - role: worker
    image: __IMAGE__
  - role: worker
    image: __IMAGE__
EOT
}

create_cluster() {
  if kind get clusters 2>/dev/null | grep -qx "$E2E_CLUSTER_NAME"; then
    ((E2E_REUSE)) || die "a kind cluster $E2E_CLUSTER_NAME exists: delete it, or pass --reuse"
    log "reusing kind cluster $E2E_CLUSTER_NAME"
    return
  fi
  local cfg image=${E2E_KIND_NODE_IMAGE:-kindest/node:$E2E_K8S_VERSION}
  cfg=$(mktemp)
  kind_config | sed "s|__IMAGE__|$image|" >"$cfg"
  log "creating kind cluster $E2E_CLUSTER_NAME ($image, 1 control plane + 2 workers)"
  kind create cluster --name "$E2E_CLUSTER_NAME" --config "$cfg" --wait 180s
  rm -f "$cfg"
}

delete_cluster() {
  if ((E2E_KEEP_CLUSTER)); then
    log "keeping the cluster: kind delete cluster --name $E2E_CLUSTER_NAME"
  else
    log "deleting the cluster"
    kind delete cluster --name "$E2E_CLUSTER_NAME" >/dev/null 2>&1 || true
  fi
}

# The docker network kind attaches the nodes to; the seed's pool (172.18.30.131-140 in
# 172.18.0.0/16, gateway 172.18.0.1) is moved into it when docker chose another /16.
detect_subnet() {
  local s
  s=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' | tr ' ' '\n' | grep -m1 '\.' || true)
  [[ $s =~ ^([0-9]+)\.([0-9]+)\.0\.0/16$ ]] ||
    die "the kind docker network is $s; the e2e pool needs a /16 (docker network rm kind; recreate with --subnet)"
  E2E_NET_PREFIX="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
  POOL_RANGE="$E2E_NET_PREFIX.30.131-$E2E_NET_PREFIX.30.140"
  log "kind network $s: pool ippool-test = $POOL_RANGE"
}

# The seed's sample objects, moved into the kind network.
seed_manifest() { sed "s/172\.18\./$E2E_NET_PREFIX./g" "$REPO_ROOT/e2e/samples/$1"; }

# ------------------------------------------------------------------------------- images, Multus, chart

load_images() {
  local controller agent
  controller=$("$REPO_ROOT/tools/build-images.sh" --tag "$E2E_IMAGE_TAG" --print | sed -n 1p)
  agent=$("$REPO_ROOT/tools/build-images.sh" --tag "$E2E_IMAGE_TAG" --print | sed -n 2p)
  if ((!E2E_SKIP_BUILD)); then
    log "building the images (images/Dockerfile, bazel -c opt)"
    "$REPO_ROOT/tools/build-images.sh" --tag "$E2E_IMAGE_TAG"
  fi
  docker image inspect "$controller" "$agent" >/dev/null || die "images missing: run tools/build-images.sh --tag $E2E_IMAGE_TAG"
  # One platform only: `kind load` of a multi-platform image can miss layers.
  docker image inspect "$E2E_TEST_IMAGE" >/dev/null 2>&1 ||
    docker pull -q --platform "linux/$(docker version -f '{{.Server.Arch}}')" "$E2E_TEST_IMAGE" >/dev/null
  log "loading $controller, $agent, $E2E_TEST_IMAGE into the nodes"
  kind load docker-image --name "$E2E_CLUSTER_NAME" "$controller" "$agent" "$E2E_TEST_IMAGE" >/dev/null
}

install_multus() {
  local file=multus-daemonset.yml tag=$E2E_MULTUS_VERSION from=snapshot
  if [[ $E2E_MULTUS_MODE == thick ]]; then file=multus-daemonset-thick.yml tag=$E2E_MULTUS_VERSION-thick from=snapshot-thick; fi
  local url=https://raw.githubusercontent.com/k8snetworkplumbingwg/multus-cni/$E2E_MULTUS_VERSION/deployments/$file
  log "installing Multus $E2E_MULTUS_MODE $E2E_MULTUS_VERSION ($url)"
  # The manifests in the repository name the moving `snapshot` images: pin them to the release.
  curl -fsSL "$url" | sed "s|multus-cni:$from\$|multus-cni:$tag|" | k apply -f - >/dev/null
  k -n kube-system rollout status daemonset/kube-multus-ds --timeout=300s
}

install_spiderpool() {
  local args=(--namespace kube-system --wait --timeout 10m
    --set dra.enabled=true
    --set plugins.installCNI=true
    --set spiderpoolAgent.image.tag="$E2E_IMAGE_TAG"
    --set spiderpoolController.image.tag="$E2E_IMAGE_TAG"
    --set spiderpoolAgent.image.pullPolicy=Never
    --set spiderpoolController.image.pullPolicy=Never
    --set spiderpoolAgent.debug.logLevel=debug
    # Two controller replicas (the chart's default is 1) for the leader-failover case: the
    # kind cluster has a node for each.
    --set spiderpoolController.replicas=2)
  # Seamless plugin upgrades need kubelet >= 1.33.
  ((K8S_MINOR >= 33)) || args+=(--set dra.seamlessUpgrade=false)
  log "helm install spiderpool charts/spiderpool -n kube-system --set dra.enabled=true (+ e2e image settings)"
  helm --kube-context "kind-$E2E_CLUSTER_NAME" upgrade --install spiderpool "$REPO_ROOT/charts/spiderpool" "${args[@]}" >/dev/null
  k -n kube-system rollout status deployment/spiderpool-controller --timeout=300s
  k -n kube-system rollout status daemonset/spiderpool-agent --timeout=300s
  RESOURCE_API=$(k api-versions | grep -m1 -E '^resource\.k8s\.io/v1$' ||
    k api-versions | grep -m1 -E '^resource\.k8s\.io/v1beta2$' ||
    k api-versions | grep -m1 -E '^resource\.k8s\.io/v1beta1$') || die "resource.k8s.io is not served"
  log "resource.k8s.io served as $RESOURCE_API"
}

# ------------------------------------------------------------------------------- cases

passed=()
failed=()

run_case() {
  local name=$1 rc
  log "=== CASE $name: ${CASE_DOC[$name]}"
  set +e
  (
    set -euo pipefail
    "case_$name"
  )
  rc=$?
  set -e
  if ((rc == 0)); then
    log "PASS $name"
    passed+=("$name")
  else
    log "FAIL $name"
    failed+=("$name")
    collect_logs "$E2E_ARTIFACTS/$name" "e2e-$name"
  fi
  # Each case cleans up after itself; this is the safety net so the next one starts clean.
  k delete namespace "e2e-$name" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 || true
}

finish() {
  local rc=$?
  if ((rc != 0)) && ((${#passed[@]} + ${#failed[@]} == 0)); then
    log "setup failed (exit $rc)"
    k version >/dev/null 2>&1 && collect_logs "$E2E_ARTIFACTS/setup"
  fi
  delete_cluster
}

main() {
  local tool
  for tool in docker kind kubectl helm curl; do
    command -v "$tool" >/dev/null || die "$tool is not installed (README.md lists the tools)"
  done
  mkdir -p "$E2E_ARTIFACTS"
  trap finish EXIT
  create_cluster
  detect_subnet
  load_images
  install_multus
  install_spiderpool
  setup_fixtures
  for c in "${selected[@]}"; do run_case "$c"; done
  log "e2e: ${#passed[@]} passed, ${#failed[@]} failed${failed[*]:+ (${failed[*]}; logs in $E2E_ARTIFACTS)}"
  ((${#failed[@]} == 0))
}

if ((print_config)); then
  kind_config | sed "s|__IMAGE__|${E2E_KIND_NODE_IMAGE:-kindest/node:$E2E_K8S_VERSION}|"
  exit 0
fi
main
