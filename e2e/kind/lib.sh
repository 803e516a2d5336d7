#!/usr/bin/env bash
# Helpers for run.sh and cases.sh (sourced, not run): kubectl wrapper, polling, IP checks,
# manifest rendering, log collection. Everything talks to the cluster through `k`.
# shellcheck disable=SC2034  # variables used by the files that source this one

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$E2E_DIR/../.." && pwd)
MANIFESTS=$E2E_DIR/manifests

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }
step() { printf '%s   - %s\n' "$(date +%H:%M:%S)" "$*"; }
# Ends the current case (cases run in a subshell) with a readable reason.
fail() {
  printf '%s   ! %s\n' "$(date +%H:%M:%S)" "$*" >&2
  exit 1
}
die() {
  printf 'e2e: %s\n' "$*" >&2
  exit 1
}

k() { kubectl --context "kind-$E2E_CLUSTER_NAME" "$@"; }

# wait_until SECONDS "what" CMD...: runs CMD every 2 s until it succeeds.
wait_until() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      printf '%s   ! timed out after %ss waiting for %s\n' "$(date +%H:%M:%S)" "$secs" "$what" >&2
      return 1
    fi
    sleep 2
  done
}

# jp KIND/NAME JSONPATH [kubectl args...]: one field (empty when absent).
jp() {
  local obj=$1 path=$2
  shift 2
  k get "$obj" -o "jsonpath=$path" "$@" 2>/dev/null
}

# render FILE [KEY=VALUE...]: FILE with every __KEY__ replaced.
render() {
  local file=$1
  shift
  local script=() kv
  for kv in "$@"; do
    local key=${kv%%=*} val=${kv#*=}
    val=${val//\\/\\\\}
    val=${val//|/\\|}
    val=${val//&/\\&}
    script+=(-e "s|__${key}__|${val}|g")
  done
  if ((${#script[@]})); then sed "${script[@]}" "$file"; else cat "$file"; fi
}

# apply_rendered FILE [KEY=VALUE...]: kubectl apply of the rendered manifest.
apply_rendered() {
  render "$@" | k apply -f - >/dev/null
}

ip2int() {
  local a b c d
  IFS=. read -r a b c d <<<"$1"
  echo $(((a << 24) + (b << 16) + (c << 8) + d))
}

# ip_in_range IP "FIRST-LAST": IPv4 only.
ip_in_range() {
  local ip first last
  ip=$(ip2int "${1%/*}")
  first=$(ip2int "${2%-*}")
  last=$(ip2int "${2#*-}")
  ((ip >= first && ip <= last))
}

# The pool's status.allocatedIPCount (0 when unset).
pool_allocated() {
  local n
  n=$(jp "spiderippool/$1" '{.status.allocatedIPCount}')
  echo "${n:-0}"
}

# pod_ip NS POD: the IPv4 address the pod got (status.podIP: with the multus default-network
# annotation the pod's eth0 is the macvlan interface).
pod_ip() { jp "pod/$2" '{.status.podIP}' -n "$1"; }

# pod_claim_uid NS POD: UID of the ResourceClaim generated for the pod's first claim.
pod_claim_uid() {
  local claim
  claim=$(jp "pod/$2" '{.status.resourceClaimStatuses[0].resourceClaimName}' -n "$1")
  [[ -n $claim ]] || return 1
  jp "resourceclaim/$claim" '{.metadata.uid}' -n "$1"
}

pods_of() {  # pods_of NS SELECTOR: names of the pods that are not terminating
  k get pods -n "$1" -l "$2" -o go-template='{{range .items}}{{if not .metadata.deletionTimestamp}}{{.metadata.name}}{{"\n"}}{{end}}{{end}}'
}

count_lines() { grep -c . || true; }

# collect_logs DIR [NAMESPACE...]: what a human needs to debug a failed case.
collect_logs() {
  local dir=$1
  shift
  mkdir -p "$dir"
  log "collecting logs into $dir"
  k get nodes -o wide >"$dir/nodes.txt" 2>&1 || true
  k get pods -A -o wide >"$dir/pods.txt" 2>&1 || true
  k get events -A --sort-by=.lastTimestamp >"$dir/events.txt" 2>&1 || true
  k get spiderippools,spidersubnets -o yaml >"$dir/pools.yaml" 2>&1 || true
  k get spiderendpoints,spidermultusconfigs,spiderclaimparameters,network-attachment-definitions -A -o yaml \
    >"$dir/spider-objects.yaml" 2>&1 || true
  k get resourceslices,deviceclasses -o yaml >"$dir/resourceslices.yaml" 2>&1 || true
  k get resourceclaims,resourceclaimtemplates -A -o yaml >"$dir/resourceclaims.yaml" 2>&1 || true
  k -n kube-system get lease spiderpool-controller-leases -o yaml >"$dir/lease.yaml" 2>&1 || true
  local p
  for p in $(k -n kube-system get pods -l app.kubernetes.io/name=spiderpool -o name 2>/dev/null); do
    local f=$dir/${p#pod/}
    k -n kube-system logs "$p" --all-containers --timestamps >"$f.log" 2>&1 || true
    k -n kube-system logs "$p" --all-containers --timestamps --previous >"$f.previous.log" 2>/dev/null || true
    k -n kube-system describe "$p" >"$f.describe.txt" 2>&1 || true
  done
  for p in $(k -n kube-system get pods -l app=multus -o name 2>/dev/null); do
    k -n kube-system logs "$p" --all-containers >"$dir/${p#pod/}.log" 2>&1 || true
  done
  local ns
  for ns in "$@"; do
    k -n "$ns" describe pods >"$dir/$ns.pods.describe.txt" 2>&1 || true
    k -n "$ns" get events --sort-by=.lastTimestamp >"$dir/$ns.events.txt" 2>&1 || true
  done
}
