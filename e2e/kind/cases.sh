#!/usr/bin/env bash
# The e2e cases (sourced by run.sh). Black box: each case drives the cluster with kubectl only,
# runs in a subshell (a `fail` ends it), works in its own namespace e2e-<case> and removes what
# it created. The shared fixtures are the seed's objects: SpiderIPPool ippool-test and
# SpiderMultusConfig kube-system/macvlan-conf (macvlan on the nodes' eth0), from e2e/samples.
# shellcheck disable=SC2317,SC2034  # cases are called as case_$name; the arrays are run.sh's

ALL_CASES=(quickstart nic_missing ip_lifecycle statefulset nad_repair webhook agent_restart
  agent_rollout leader_failover)
declare -A CASE_DOC=(
  [quickstart]="the seed's Quick Start: pool + SMC + SpiderClaimParameter + ResourceClaimTemplate + 2-replica Deployment"
  [nic_missing]="a pod whose NIC exists only on another node stays Pending with a reason; without the pin it runs there"
  [ip_lifecycle]="IPs survive container restarts, are freed when pods go, and come back on scale-up"
  [statefulset]="a StatefulSet pod keeps its IP when it is re-created"
  [nad_repair]="SMC -> NAD generation; a deleted or edited NAD is repaired; SMC changes propagate"
  [webhook]="invalid pools and SMCs are rejected with their reasons; valid ones pass"
  [agent_restart]="agents killed during pod churn lose no IP and leak none"
  [agent_rollout]="a rolling agent upgrade (maxSurge 1) keeps running pods and serves new claims"
  [leader_failover]="deleting the leading controller moves the Lease; the new leader reconciles"
)

POOL=ippool-test
NETWORK=kube-system/macvlan-conf

setup_fixtures() {
  log "applying the seed's SpiderIPPool $POOL and SpiderMultusConfig $NETWORK (e2e/samples)"
  seed_manifest ippool.yaml | k apply -f - >/dev/null
  seed_manifest multusconfig.yaml | k apply -f - >/dev/null
  wait_until 60 "NAD $NETWORK generated from the SpiderMultusConfig" \
    k -n kube-system get network-attachment-definitions macvlan-conf ||
    die "the controller did not generate the NAD"
  wait_until 60 "the pool's status" pool_has_status "$POOL" || true
  local n
  for n in $(k get nodes -o name); do
    n=${n#node/}
    wait_until 90 "a ResourceSlice of node $n" slices_of_node "$n" ||
      die "node $n publishes no ResourceSlice for netresources.spidernet.io"
  done
  log "every node publishes its ResourceSlice (pool = node name)"
}

# slices_of_node NODE: succeeds when a slice of our driver has spec.nodeName and pool NODE.
slices_of_node() {
  k get resourceslices -o jsonpath='{range .items[*]}{.spec.driver} {.spec.nodeName} {.spec.pool.name}{"\n"}{end}' |
    grep -qx "netresources.spidernet.io $1 $1"
}

new_ns() {
  k create namespace "$1" >/dev/null
}

# make_claim NS NAME SMC SMC_NS MASTER: SpiderClaimParameter + ResourceClaimTemplate NAME.
make_claim() {
  local ns=$1 name=$2 smc=$3 smc_ns=$4 master=$5 file=claim.yaml selectors="[]"
  if [[ $RESOURCE_API == resource.k8s.io/v1beta1 ]]; then file="claim-v1beta1.yaml"; fi
  if [[ -n $E2E_NIC_SELECTOR ]]; then
    local expr=${E2E_NIC_SELECTOR//%MASTER%/$master}
    expr=${expr//\\/\\\\}
    expr=${expr//\"/\\\"}
    selectors="[{\"cel\": {\"expression\": \"$expr\"}}]"
  fi
  apply_rendered "$MANIFESTS/$file" NS="$ns" NAME="$name" SMC="$smc" SMC_NS="$smc_ns" \
    SELECTORS="$selectors" RESOURCE_API="$RESOURCE_API"
}

make_deployment() {  # NS NAME REPLICAS RCT NETWORK
  apply_rendered "$MANIFESTS/deployment.yaml" NS="$1" NAME="$2" REPLICAS="$3" RCT="$4" \
    NETWORK="$5" IMAGE="$E2E_TEST_IMAGE"
}

# check_pod NS POD RANGE POOLNAME: Running, DRA_CLAIM_UID = its claim's UID, IP inside RANGE,
# recorded in a SpiderEndpoint from POOLNAME. Prints "<node> <ip> <claim uid>".
check_pod() {
  local ns=$1 pod=$2 range=$3 pool=$4 phase ip uid env node ep_ip ep_pool
  phase=$(jp "pod/$pod" '{.status.phase}' -n "$ns")
  [[ $phase == Running ]] || fail "$ns/$pod is $phase"
  node=$(jp "pod/$pod" '{.spec.nodeName}' -n "$ns")
  uid=$(pod_claim_uid "$ns" "$pod") || fail "$ns/$pod has no generated ResourceClaim"
  env=$(k -n "$ns" exec "$pod" -- printenv DRA_CLAIM_UID) || fail "$ns/$pod: printenv DRA_CLAIM_UID failed (no CDI env)"
  [[ $env == "$uid" ]] || fail "$ns/$pod: DRA_CLAIM_UID=$env, its claim's UID is $uid"
  local claim
  claim=$(jp "pod/$pod" '{.status.resourceClaimStatuses[0].resourceClaimName}' -n "$ns")
  local alloc
  alloc=$(jp "resourceclaim/$claim" '{.status.allocation.devices.results[0].driver} {.status.allocation.devices.results[0].pool}' -n "$ns")
  [[ $alloc == "netresources.spidernet.io $node" ]] ||
    fail "$ns/$claim allocated from '$alloc', want driver netresources.spidernet.io, pool $node"
  ip=$(pod_ip "$ns" "$pod")
  [[ -n $ip ]] || fail "$ns/$pod has no IP"
  ip_in_range "$ip" "$range" || fail "$ns/$pod has IP $ip, outside $range"
  ep_ip=$(jp "spiderendpoint/$pod" '{.status.current.ips[0].ipv4}' -n "$ns")
  ep_pool=$(jp "spiderendpoint/$pod" '{.status.current.ips[0].ipv4Pool}' -n "$ns")
  [[ ${ep_ip%/*} == "$ip" && $ep_pool == "$pool" ]] ||
    fail "SpiderEndpoint $ns/$pod records '$ep_ip' from '$ep_pool', the pod has $ip from $pool"
  echo "$node $ip $uid"
}

# Conditions for wait_until (re-evaluated on every poll).
no_endpoints() { [[ -z $(k -n "$1" get spiderendpoints -o name 2>/dev/null) ]]; }  # NS
no_claims() { [[ -z $(k -n "$1" get resourceclaims -o name 2>/dev/null) ]]; }       # NS
pool_count_is() { [[ $(pool_allocated "$1") -eq $2 ]]; }                            # POOL N
pool_has_status() { [[ -n $(jp "spiderippool/$1" '{.status.totalIPCount}') ]]; }    # POOL
gone() { ! k get "$@" >/dev/null 2>&1; }                                            # KIND/NAME -n NS
# uid_changed KIND/NAME NS OLD-UID: the object exists again, with another UID.
uid_changed() {
  local u
  u=$(jp "$1" '{.metadata.uid}' -n "$2")
  [[ -n $u && $u != "$3" ]]
}
ready() { k -n "$1" wait --for=condition=Ready "pod/$2" --timeout=5s; }             # NS POD
restarted() { [[ $(jp "pod/$2" '{.status.containerStatuses[0].restartCount}' -n "$1") -ge 1 ]]; }  # NS POD
nad_config_is() { [[ $(jp "network-attachment-definitions/$2" '{.spec.config}' -n "$1") == "$3" ]]; }
nad_has_mtu() { jp "network-attachment-definitions/$2" '{.spec.config}' -n "$1" | grep -Eq "\"mtu\": ?$3([^0-9]|\$)"; }
slices_mention() { k get resourceslices -o json | grep -q "\"$1\""; }
lease_moved_from() { local h; h=$(lease_holder); [[ -n $h && $h != "$1" ]]; }

# ------------------------------------------------------------------------------------------------

case_quickstart() {
  local ns=e2e-quickstart base dir=$REPO_ROOT/e2e/samples/dra
  base=$(pool_allocated "$POOL")
  step "NAD kube-system/macvlan-conf, generated from the seed's SpiderMultusConfig:"
  local cfg
  cfg=$(jp network-attachment-definitions/macvlan-conf '{.spec.config}' -n kube-system)
  echo "      $cfg" | head -c 600
  echo
  [[ $cfg == *'"macvlan"'* && $cfg == *'"spiderpool"'* && $cfg == *'"eth0"'* ]] ||
    fail "the NAD config is not macvlan on eth0 with spiderpool IPAM"
  new_ns "$ns"
  step "the seed's objects from e2e/samples/dra (namespace $ns): SpiderClaimParameter macvlan-claim,"
  step "ResourceClaimTemplate macvlan-nic, Deployment dra-demo (2 replicas)"
  local f files=(spiderclaimparameter.yaml resourceclaimtemplate.yaml deployment.yaml)
  if [[ $RESOURCE_API == resource.k8s.io/v1beta1 ]]; then
    # 1.32: the sample's v1 request shape does not exist; the same claim in the flat form.
    E2E_NIC_SELECTOR="" make_claim "$ns" macvlan-nic macvlan-conf kube-system eth0
    files=(deployment.yaml)
  fi
  for f in "${files[@]}"; do
    sed -e "s/namespace: default/namespace: $ns/" -e "s|image: busybox:.*|image: $E2E_TEST_IMAGE|" \
      -e "s|apiVersion: resource.k8s.io/v1\$|apiVersion: $RESOURCE_API|" "$dir/$f" | k apply -f - >/dev/null
  done
  k -n "$ns" rollout status deployment/dra-demo --timeout=240s || fail "the Deployment did not become available"
  local pod line node ip uid ips=()
  for pod in $(pods_of "$ns" app=dra-demo); do
    line=$(check_pod "$ns" "$pod" "$POOL_RANGE" "$POOL") || exit 1
    read -r node ip uid <<<"$line"
    step "$pod on $node: IP $ip from $POOL, printenv DRA_CLAIM_UID = $uid (its claim's UID)"
    [[ $(k -n "$ns" logs "$pod" | head -n1) == "$uid" ]] || fail "$pod did not print its claim UID at start"
    ips+=("$ip")
  done
  ((${#ips[@]} == 2)) || fail "${#ips[@]} pods, want 2"
  [[ ${ips[0]} != "${ips[1]}" ]] || fail "both pods got ${ips[0]}"
  wait_until 30 "allocatedIPCount $((base + 2))" pool_count_is "$POOL" $((base + 2)) ||
    fail "pool $POOL allocatedIPCount $(pool_allocated "$POOL"), want $((base + 2))"
  step "kubectl get sp $POOL: $(k get sp "$POOL" --no-headers)"
  k -n "$ns" delete deployment dra-demo --wait=true >/dev/null
  wait_until 120 "the pods' IPs released" no_endpoints "$ns" || fail "SpiderEndpoints left after the Deployment went"
  wait_until 60 "allocatedIPCount back to $base" pool_count_is "$POOL" "$base" ||
    fail "pool $POOL still counts $(pool_allocated "$POOL") IPs, want $base"
  k delete namespace "$ns" --wait=true >/dev/null
}

case_nic_missing() {
  local ns=e2e-nic_missing master=spe2e0 with without
  read -r with without < <(k get nodes -l '!node-role.kubernetes.io/control-plane' -o name | sed 's|node/||' | head -2 | xargs)
  [[ -n $with && -n $without ]] || fail "needs two worker nodes"
  step "NIC $master exists on $with only (a veth pair created in the node)"
  # An address in e2e-nic-pool's subnet: the driver publishes a NIC only for subnets with a pool.
  docker exec "$with" sh -c "ip link add $master type veth peer name ${master}p && ip addr add 10.233.100.1/24 dev $master && ip link set ${master}p up && ip link set $master up"
  # shellcheck disable=SC2064  # expand now: the values are fixed
  trap "docker exec $with ip link del $master >/dev/null 2>&1 || true" EXIT
  wait_until 60 "node $with to publish $master" slices_mention "$master" ||
    step "(no ResourceSlice mentions $master by name; the driver's device model decides)"
  new_ns "$ns"
  apply_rendered "$MANIFESTS/nic-network.yaml" NS="$ns" MASTER="$master"
  wait_until 60 "NAD $ns/nic-conf" k -n "$ns" get network-attachment-definitions nic-conf || fail "no NAD for nic-conf"
  make_claim "$ns" nic-claim nic-conf "$ns" "$master"
  apply_rendered "$MANIFESTS/pod.yaml" NS="$ns" NAME=pinned-elsewhere RCT=nic-claim NETWORK="$ns/nic-conf" \
    IMAGE="$E2E_TEST_IMAGE" NODE_SELECTOR="{\"kubernetes.io/hostname\": \"$without\"}"
  step "pod pinned-elsewhere is pinned to $without: it must not start"
  sleep 45
  local phase reason
  phase=$(jp pod/pinned-elsewhere '{.status.phase}' -n "$ns")
  [[ $phase == Pending ]] || fail "pinned-elsewhere is $phase on a node without $master"
  [[ -z $(jp pod/pinned-elsewhere '{.status.podIP}' -n "$ns") ]] || fail "pinned-elsewhere got an IP"
  reason=$(k -n "$ns" get events --field-selector involvedObject.name=pinned-elsewhere,type=Warning \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' | tail -n 3)
  [[ -n $reason ]] || fail "pinned-elsewhere is Pending without any Warning event saying why"
  step "Pending, because: $reason"
  [[ $reason == *FailedScheduling* ]] ||
    step "(note: the reason comes from the kubelet, not the scheduler: the NIC was not filtered at scheduling)"
  apply_rendered "$MANIFESTS/pod.yaml" NS="$ns" NAME=anywhere RCT=nic-claim NETWORK="$ns/nic-conf" \
    IMAGE="$E2E_TEST_IMAGE" NODE_SELECTOR="{}"
  k -n "$ns" wait --for=condition=Ready pod/anywhere --timeout=180s >/dev/null || fail "pod anywhere did not start"
  local node
  node=$(jp pod/anywhere '{.spec.nodeName}' -n "$ns")
  [[ $node == "$with" ]] || fail "pod anywhere runs on $node, which has no $master"
  check_pod "$ns" anywhere 10.233.100.10-10.233.100.20 e2e-nic-pool >/dev/null
  step "the same claim without the pin runs on $with with an IP from e2e-nic-pool"
  k delete namespace "$ns" --wait=true >/dev/null
  k delete spiderippool e2e-nic-pool --wait=true >/dev/null
}

case_ip_lifecycle() {
  local ns=e2e-ip_lifecycle base pod ip1 ip2 uid1 uid2 restarts
  base=$(pool_allocated "$POOL")
  new_ns "$ns"
  make_claim "$ns" nic macvlan-conf kube-system eth0
  make_deployment "$ns" churn 1 nic "$NETWORK"
  k -n "$ns" rollout status deployment/churn --timeout=180s >/dev/null || fail "churn did not start"
  pod=$(pods_of "$ns" app=churn)
  read -r _ ip1 uid1 < <(check_pod "$ns" "$pod" "$POOL_RANGE" "$POOL") || exit 1
  step "$pod: $ip1; restarting its container (kill 1)"
  k -n "$ns" exec "$pod" -- kill 1 || true
  wait_until 60 "the container restart" restarted "$ns" "$pod" || fail "no restart"
  k -n "$ns" wait --for=condition=Ready "pod/$pod" --timeout=60s >/dev/null || fail "$pod not Ready after the restart"
  read -r _ ip2 uid2 < <(check_pod "$ns" "$pod" "$POOL_RANGE" "$POOL") || exit 1
  [[ $ip2 == "$ip1" && $uid2 == "$uid1" ]] || fail "after a container restart: $ip2/$uid2, before $ip1/$uid1"
  restarts=$(jp "pod/$pod" '{.status.containerStatuses[0].restartCount}' -n "$ns")
  step "after $restarts restart(s): same IP $ip2, same claim"
  step "deleting $pod: its IP must be released, the replacement gets one"
  k -n "$ns" delete pod "$pod" --wait=true >/dev/null
  k -n "$ns" rollout status deployment/churn --timeout=180s >/dev/null || fail "no replacement pod"
  local newpod
  newpod=$(pods_of "$ns" app=churn)
  [[ $newpod != "$pod" ]] || fail "the pod was not replaced"
  check_pod "$ns" "$newpod" "$POOL_RANGE" "$POOL" >/dev/null
  wait_until 60 "the old SpiderEndpoint removed" gone spiderendpoint "$pod" -n "$ns" ||
    fail "SpiderEndpoint $pod outlived its pod"
  wait_until 30 "allocatedIPCount $((base + 1))" pool_count_is "$POOL" $((base + 1)) ||
    fail "pool counts $(pool_allocated "$POOL"), want $((base + 1))"
  step "scale 0 -> 3 -> 0"
  k -n "$ns" scale deployment churn --replicas=3 >/dev/null
  k -n "$ns" rollout status deployment/churn --timeout=180s >/dev/null || fail "scale-up failed"
  local p
  for p in $(pods_of "$ns" app=churn); do check_pod "$ns" "$p" "$POOL_RANGE" "$POOL" >/dev/null; done
  wait_until 30 "allocatedIPCount $((base + 3))" pool_count_is "$POOL" $((base + 3)) ||
    fail "pool counts $(pool_allocated "$POOL") with 3 pods, want $((base + 3))"
  k -n "$ns" scale deployment churn --replicas=0 >/dev/null
  wait_until 120 "every IP released" no_endpoints "$ns" || fail "SpiderEndpoints left after scale to 0"
  wait_until 60 "allocatedIPCount $base" pool_count_is "$POOL" "$base" ||
    fail "pool counts $(pool_allocated "$POOL") after scale to 0, want $base"
  wait_until 60 "the generated claims deleted" no_claims "$ns" ||
    fail "ResourceClaims left after the pods went"
  k delete namespace "$ns" --wait=true >/dev/null
}

case_statefulset() {
  local ns=e2e-statefulset base ip1 ip2 uid1 uid2
  base=$(pool_allocated "$POOL")
  new_ns "$ns"
  make_claim "$ns" nic macvlan-conf kube-system eth0
  apply_rendered "$MANIFESTS/statefulset.yaml" NS="$ns" NAME=sts RCT=nic NETWORK="$NETWORK" IMAGE="$E2E_TEST_IMAGE"
  k -n "$ns" rollout status statefulset/sts --timeout=180s >/dev/null || fail "sts-0 did not start"
  read -r _ ip1 _ < <(check_pod "$ns" sts-0 "$POOL_RANGE" "$POOL") || exit 1
  uid1=$(jp pod/sts-0 '{.metadata.uid}' -n "$ns")
  step "sts-0 has $ip1; deleting it"
  k -n "$ns" delete pod sts-0 --wait=true >/dev/null
  wait_until 180 "a new sts-0" uid_changed pod/sts-0 "$ns" "$uid1" || fail "sts-0 was not re-created"
  wait_until 120 "the new sts-0 Ready" ready "$ns" sts-0 || fail "the new sts-0 did not become Ready"
  uid2=$(jp pod/sts-0 '{.metadata.uid}' -n "$ns")
  [[ $uid2 != "$uid1" ]] || fail "sts-0 was not re-created"
  read -r _ ip2 _ < <(check_pod "$ns" sts-0 "$POOL_RANGE" "$POOL") || exit 1
  [[ $ip2 == "$ip1" ]] || fail "the re-created sts-0 got $ip2, it had $ip1"
  step "the re-created sts-0 (new UID) kept $ip2"
  k -n "$ns" delete statefulset sts --wait=true >/dev/null
  wait_until 180 "the StatefulSet's IP released" no_endpoints "$ns" || fail "the StatefulSet's SpiderEndpoint stayed"
  wait_until 60 "allocatedIPCount $base" pool_count_is "$POOL" "$base" ||
    fail "pool counts $(pool_allocated "$POOL"), want $base"
  k delete namespace "$ns" --wait=true >/dev/null
}

nad_config() { jp "network-attachment-definitions/$2" '{.spec.config}' -n "$1"; }

case_nad_repair() {
  local ns=e2e-nad_repair cfg uid
  new_ns "$ns"
  apply_rendered "$MANIFESTS/smc.yaml" NS="$ns" NAME=nad-e2e MTU=1400
  wait_until 60 "NAD $ns/nad-e2e" k -n "$ns" get network-attachment-definitions nad-e2e || fail "no NAD generated"
  cfg=$(nad_config "$ns" nad-e2e)
  nad_has_mtu "$ns" nad-e2e 1400 || fail "the NAD lacks mtu 1400: $cfg"
  uid=$(jp network-attachment-definitions/nad-e2e '{.metadata.uid}' -n "$ns")
  step "generated; deleting the NAD"
  k -n "$ns" delete network-attachment-definitions nad-e2e >/dev/null
  wait_until 60 "the NAD re-created" uid_changed network-attachment-definitions/nad-e2e "$ns" "$uid" ||
    fail "the deleted NAD was not re-created"
  [[ $(nad_config "$ns" nad-e2e) == "$cfg" ]] || fail "the re-created NAD differs"
  step "re-created; overwriting its config"
  k -n "$ns" patch network-attachment-definitions nad-e2e --type merge -p '{"spec":{"config":"{\"cniVersion\":\"0.3.1\",\"type\":\"bogus\"}"}}' >/dev/null
  wait_until 60 "the NAD repaired" nad_config_is "$ns" nad-e2e "$cfg" ||
    fail "the edited NAD was not repaired: $(nad_config "$ns" nad-e2e)"
  step "repaired; changing the SMC's mtu to 1300"
  apply_rendered "$MANIFESTS/smc.yaml" NS="$ns" NAME=nad-e2e MTU=1300
  wait_until 60 "mtu 1300 in the NAD" nad_has_mtu "$ns" nad-e2e 1300 ||
    fail "the SMC change did not reach the NAD"
  step "deleting the SMC: its NAD goes with it"
  k -n "$ns" delete spidermultusconfig nad-e2e >/dev/null
  wait_until 60 "the NAD deleted" gone network-attachment-definitions nad-e2e -n "$ns" ||
    fail "the NAD outlived its SMC"
  k delete namespace "$ns" --wait=true >/dev/null
}

# expect_denied DESCRIPTION MANIFEST-ON-STDIN: the API server refuses it through our webhook.
expect_denied() {
  local what=$1 out
  if out=$(k apply --dry-run=server -f - 2>&1); then
    fail "$what was accepted: $out"
  fi
  [[ $out == *"denied the request"* ]] || fail "$what was refused, but not by the webhook: $out"
  step "$what: ${out#*denied the request: }"
}

case_webhook() {
  expect_denied "overlapping pool" < <(seed_manifest invalid/overlapping-pool.yaml)
  expect_denied "gateway outside the subnet" <"$REPO_ROOT/e2e/samples/invalid/gateway-outside-subnet.yaml"
  expect_denied "macvlan SMC without master" <"$MANIFESTS/invalid-smc.yaml"
  local out
  out=$(render "$MANIFESTS/nic-network.yaml" NS=default MASTER=eth0 | k apply --dry-run=server -f - 2>&1) ||
    fail "a valid pool and SMC were refused: $out"
  step "a valid pool and SMC pass (dry run)"
  # The pool in nic-network.yaml has no ipVersion: the mutating webhook fills it in.
  out=$(render "$MANIFESTS/nic-network.yaml" NS=default MASTER=eth0 | sed '/^---$/q' |
    k apply --dry-run=server -o jsonpath='{.spec.ipVersion}' -f - 2>&1) || fail "dry-run create failed: $out"
  [[ $out == 4 ]] || fail "the mutating webhook did not default spec.ipVersion (got '$out')"
  step "the mutating webhook defaults spec.ipVersion=4"
}

case_agent_restart() {
  local ns=e2e-agent_restart base n=5
  base=$(pool_allocated "$POOL")
  new_ns "$ns"
  make_claim "$ns" nic macvlan-conf kube-system eth0
  make_deployment "$ns" churn 0 nic "$NETWORK"
  step "scaling to $n while every agent is deleted"
  k -n "$ns" scale deployment churn --replicas=$n >/dev/null
  sleep 2
  k -n kube-system delete pod -l app.kubernetes.io/component=spiderpool-agent --wait=false >/dev/null
  k -n kube-system rollout status daemonset/spiderpool-agent --timeout=300s >/dev/null || fail "the agents did not come back"
  k -n "$ns" rollout status deployment/churn --timeout=300s >/dev/null || fail "the pods did not all start"
  local p ips=() line
  for p in $(pods_of "$ns" app=churn); do
    line=$(check_pod "$ns" "$p" "$POOL_RANGE" "$POOL") || exit 1
    ips+=("$(cut -d' ' -f2 <<<"$line")")
  done
  ((${#ips[@]} == n)) || fail "${#ips[@]} pods, want $n"
  local uniq
  uniq=$(printf '%s\n' "${ips[@]}" | sort -u | count_lines)
  ((uniq == n)) || fail "duplicate IPs: ${ips[*]}"
  wait_until 30 "allocatedIPCount $((base + n))" pool_count_is "$POOL" $((base + n)) ||
    fail "pool counts $(pool_allocated "$POOL") for $n pods, want $((base + n))"
  [[ $(k -n "$ns" get spiderendpoints -o name | count_lines) -eq $n ]] || fail "SpiderEndpoints != pods"
  step "$n pods, $n distinct IPs (${ips[*]}), pool count exact"
  step "scaling to 0 while every agent is deleted again"
  k -n "$ns" scale deployment churn --replicas=0 >/dev/null
  sleep 1
  k -n kube-system delete pod -l app.kubernetes.io/component=spiderpool-agent --wait=false >/dev/null
  k -n kube-system rollout status daemonset/spiderpool-agent --timeout=300s >/dev/null || fail "the agents did not come back"
  wait_until 180 "every IP released" no_endpoints "$ns" || fail "SpiderEndpoints leaked"
  wait_until 60 "allocatedIPCount $base" pool_count_is "$POOL" "$base" ||
    fail "pool leaked: counts $(pool_allocated "$POOL"), want $base"
  step "no IP leaked"
  k delete namespace "$ns" --wait=true >/dev/null
}

case_agent_rollout() {
  local ns=e2e-agent_rollout before after
  new_ns "$ns"
  make_claim "$ns" nic macvlan-conf kube-system eth0
  make_deployment "$ns" steady 2 nic "$NETWORK"
  k -n "$ns" rollout status deployment/steady --timeout=180s >/dev/null || fail "steady did not start"
  before=$(pods_of "$ns" app=steady | sort | xargs)
  step "rolling the agents (maxSurge $(jp daemonset/spiderpool-agent '{.spec.updateStrategy.rollingUpdate.maxSurge}' -n kube-system))"
  k -n kube-system rollout restart daemonset/spiderpool-agent >/dev/null
  k -n kube-system rollout status daemonset/spiderpool-agent --timeout=600s || fail "the agent rollout did not finish"
  after=$(pods_of "$ns" app=steady | sort | xargs)
  [[ $after == "$before" ]] || fail "pods changed during the rollout: $before -> $after"
  local p
  for p in $after; do
    [[ $(jp "pod/$p" '{.status.containerStatuses[0].restartCount}' -n "$ns") == 0 ]] || fail "$p restarted"
  done
  step "running pods untouched; new claims after the rollout:"
  k -n "$ns" scale deployment steady --replicas=4 >/dev/null
  k -n "$ns" rollout status deployment/steady --timeout=180s >/dev/null || fail "new pods did not start after the rollout"
  for p in $(pods_of "$ns" app=steady); do check_pod "$ns" "$p" "$POOL_RANGE" "$POOL" >/dev/null; done
  step "4 pods prepared; removing them (unprepare on the new agents)"
  k -n "$ns" delete deployment steady --wait=true >/dev/null
  wait_until 120 "every IP released" no_endpoints "$ns" || fail "SpiderEndpoints left"
  k delete namespace "$ns" --wait=true >/dev/null
}

lease_holder() { jp lease/spiderpool-controller-leases '{.spec.holderIdentity}' -n kube-system; }

case_leader_failover() {
  local holder pod p node new ns=e2e-leader_failover
  holder=$(lease_holder)
  [[ -n $holder ]] || fail "no leader holds Lease spiderpool-controller-leases"
  # The identity is "<hostname>_<random>": the node name with host networking, else the pod name.
  for p in $(k -n kube-system get pods -l app.kubernetes.io/component=spiderpool-controller -o name); do
    p=${p#pod/}
    node=$(jp "pod/$p" '{.spec.nodeName}' -n kube-system)
    if [[ ${holder%_*} == "$p" || ${holder%_*} == "$node" ]]; then pod=$p; fi
  done
  [[ -n ${pod:-} ]] || fail "no controller pod matches the holder $holder"
  step "leader: $pod ($holder); deleting it"
  k -n kube-system delete pod "$pod" --wait=false >/dev/null
  wait_until 90 "another holder" lease_moved_from "$holder" ||
    fail "the Lease stayed with $holder"
  new=$(lease_holder)
  step "new leader: $new"
  new_ns "$ns"
  apply_rendered "$MANIFESTS/smc.yaml" NS="$ns" NAME=after-failover MTU=1500
  wait_until 60 "the new leader to generate a NAD" k -n "$ns" get network-attachment-definitions after-failover ||
    fail "no NAD after the failover: the new leader does not reconcile"
  expect_denied "overlapping pool (webhook after the failover)" < <(seed_manifest invalid/overlapping-pool.yaml)
  k -n kube-system rollout status deployment/spiderpool-controller --timeout=180s >/dev/null ||
    fail "the controller Deployment did not recover"
  step "the new leader reconciles, the webhook answers, 2 replicas again"
  k delete namespace "$ns" --wait=true >/dev/null
}
