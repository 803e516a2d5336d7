#!/usr/bin/env bash
# README command (1): the main job, the whole local path on one machine, no cluster:
#   loopback API server -> CRDs + the seed's objects (real kubectl) -> spiderpool-controller
#   (NAD generation, webhooks, IP GC) -> two "nodes" (network namespaces whose eth0 NICs sit on
#   different subnets), one spiderpool-agent each (IPAM socket, NIC discovery, ResourceSlices,
#   the kubelet DRA plugin) -> pods started by the REAL macvlan plugin, which execs our
#   `spiderpool` IPAM plugin -> the seed's DRA claim allocated and prepared through the plugin's
#   gRPC sockets (a kubelet stand-in) -> podman runs the claim's container: it gets an IP from a
#   SpiderIPPool through our IPAM and prints DRA_CLAIM_UID from the CDI spec -> counts, cleanup.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -ne 0 ]]; then
  echo "demo: network namespaces need root; run as root (CI and the README do)" >&2
  exit 1
fi
./tools/install-deps.sh
TOOLS=$(./tools/fetch-kube-tools.sh)
KUBECTL="$TOOLS/kubectl"

echo "=== building"
TARGETS=(//kube/testing:loopback-apiserver //agent:spiderpool-agent //agent/cni:spiderpool
         //agent/coordinator:coordinator //dra/kubeletplugin/testing:kubelet-standin
         //dra/allocator:dra-allocate)
HAVE_CONTROLLER=0
if bazel query --noshow_progress //operator:spiderpool-controller >/dev/null 2>&1; then
  TARGETS+=(//operator:spiderpool-controller)
  HAVE_CONTROLLER=1
fi
bazel build --noshow_progress "${TARGETS[@]}"
BIN=$(bazel info bazel-bin 2>/dev/null)

WORK=$(mktemp -d /tmp/spiderpool-demo-XXXXXX)
ID=$(basename "$WORK" | tail -c 7 | tr 'A-Z' 'a-z')
SW_NS="spd${ID}-sw"
BRIDGE="spd${ID}br"
PIDS=()
PODS=()
CLAIMS=()
cleanup() {
  echo "=== cleanup: claims unprepared, agents stopped (on SIGTERM they remove their sockets), namespaces removed"
  for c in "${CLAIMS[@]}"; do
    # shellcheck disable=SC2086
    "$BIN/dra/kubeletplugin/testing/kubelet-standin" --registry-dir="$WORK/node1/plugins_registry" \
      unprepare $c >/dev/null 2>&1 || true
  done
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  for p in "${PODS[@]}"; do ip netns del "spd${ID}-$p" 2>/dev/null || true; done
  ip netns del "spd${ID}-node1" 2>/dev/null || true
  ip netns del "spd${ID}-node2" 2>/dev/null || true
  ip netns del "$SW_NS" 2>/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
wait_for() {  # wait_for <what> <seconds> <command...>
  local what=$1 secs=$2; shift 2
  for _ in $(seq 1 $((secs * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "demo: timed out waiting for $what" >&2
  return 1
}

KCFG="$WORK/kubeconfig"
"$BIN/kube/testing/loopback-apiserver" --port 0 --kubeconfig-out "$KCFG" >"$WORK/apiserver.log" 2>&1 &
PIDS+=($!)
wait_for "the API server" 10 test -s "$KCFG" || { cat "$WORK/apiserver.log"; exit 1; }
k() { "$KUBECTL" --kubeconfig "$KCFG" "$@"; }
echo "=== API server up: $(k config view -o jsonpath='{.clusters[0].cluster.server}')"

echo "=== applying CRDs (charts/spiderpool/crds/)"
k apply --validate=false -f charts/spiderpool/crds/ >/dev/null
k wait --for condition=established --timeout=30s crd --all >/dev/null
k api-resources --api-group=spiderpool.spidernet.io

if [[ $HAVE_CONTROLLER == 1 ]]; then
  echo "=== starting spiderpool-controller (webhooks over HTTPS, NAD generation, IP GC)"
  WEBHOOK_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # The webhook configurations name Service kube-system/spiderpool-controller; the loopback
  # API server dials the address in this annotation (a real cluster routes the Service).
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata:
  name: spiderpool-controller
  namespace: kube-system
  annotations:
    loopback.kube-testing.spiderpool.io/dial-address: "127.0.0.1:$WEBHOOK_PORT"
spec:
  ports: [{name: webhook, port: 5722, targetPort: $WEBHOOK_PORT}]
YAML
  "$BIN/operator/spiderpool-controller" --kubeconfig="$KCFG" --health-port=-1 \
    --webhook-port="$WEBHOOK_PORT" --webhook-create-configurations \
    >"$WORK/controller.log" 2>&1 &
  PIDS+=($!)
  wait_for "the webhook configurations" 30 k get validatingwebhookconfigurations spiderpool-controller \
    || { cat "$WORK/controller.log"; exit 1; }
  k get mutatingwebhookconfigurations,validatingwebhookconfigurations
fi

echo "=== applying the seed's objects (e2e/samples/)"
k apply --validate=false -f e2e/samples/
k get sp -o wide
k get smc -A

if [[ $HAVE_CONTROLLER == 1 ]]; then
  echo "=== the NetworkAttachmentDefinition generated from SpiderMultusConfig kube-system/macvlan-conf"
  wait_for "the NAD" 30 k -n kube-system get network-attachment-definitions macvlan-conf || { cat "$WORK/controller.log"; exit 1; }
  k -n kube-system get network-attachment-definitions macvlan-conf -o jsonpath='{.spec.config}' | python3 -m json.tool
  NAD_CONFIG=$(k -n kube-system get network-attachment-definitions macvlan-conf -o jsonpath='{.spec.config}')
  echo "=== pools the validating webhook rejects (e2e/samples/invalid/):"
  for f in e2e/samples/invalid/*.yaml; do
    echo "--- kubectl apply -f $f"
    if k apply --validate=false -f "$f" 2>&1 | sed 's/^/    /'; then
      echo "demo: $f was accepted, but the webhook must reject it" >&2
      exit 1
    fi
  done
else
  # What the controller generates for the seed SMC (multus/testdata/macvlan-conf.nad.json).
  NAD_CONFIG=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["spec"]["config"]))' multus/testdata/macvlan-conf.nad.json)
fi

echo "=== the seed's DRA objects (e2e/samples/dra/): DeviceClass, SpiderClaimParameter, ResourceClaimTemplate"
k apply --validate=false -f e2e/samples/dra/deviceclass.yaml -f e2e/samples/dra/spiderclaimparameter.yaml \
  -f e2e/samples/dra/resourceclaimtemplate.yaml
echo "    (e2e/samples/dra/deployment.yaml is the workload; this machine has no scheduler or kubelet,"
echo "     so the demo plays their parts below for its first replica)"

echo "=== the SpiderCoordinator \"default\" (the chart's install hook creates it; spiderpool-controller syncs it)"
# podCIDRType none: this machine runs no kube-controller-manager, Calico or Cilium whose pod
# CIDRs the controller could discover (on a cluster: auto).
k apply --validate=false -f - >/dev/null <<'YAML'
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderCoordinator
metadata:
  name: default
spec:
  podCIDRType: none
  hijackCIDR: ["169.254.0.0/16"]
YAML
coordinator_synced() { [[ $(k get spidercoordinator default -o jsonpath='{.status.phase}') == Synced ]]; }
wait_for "the SpiderCoordinator to be Synced" 30 coordinator_synced || { cat "$WORK/controller.log"; exit 1; }
k get spidercoordinator default -o jsonpath='{"    "}{.spec}{" -> status "}{.status}{"\n"}'

echo "=== two nodes: network namespaces whose eth0 (a veth into one switch) is the macvlan master"
ip netns add "$SW_NS"
ip -n "$SW_NS" link add br0 type bridge && ip -n "$SW_NS" link set br0 up
add_node() {  # add_node <node> <eth0 address>
  local ns="spd${ID}-$1"
  ip netns add "$ns"
  ip link add "spd${ID}$1a" type veth peer name "spd${ID}$1b"
  ip link set "spd${ID}$1a" netns "$ns" name eth0
  ip link set "spd${ID}$1b" netns "$SW_NS"
  ip -n "$SW_NS" link set "spd${ID}$1b" master br0 up
  ip -n "$ns" addr add "$2" dev eth0
  ip -n "$ns" link set eth0 up
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata: {name: $1}
YAML
  echo "    $1: eth0 $2"
}
add_node node1 172.18.0.11/16
add_node node2 172.19.0.12/16

start_agent() {  # start_agent <node>
  local dir="$WORK/$1"
  mkdir -p "$dir"
  POD_UID="demo-agent-$1" "$BIN/agent/spiderpool-agent" --node-name="$1" --kubeconfig="$KCFG" \
    --socket="$dir/spiderpool.sock" --health-port=-1 \
    --dra-enabled --nic-netns="/var/run/netns/spd${ID}-$1" --nic-include=eth0 --sysfs-root= \
    --kubelet-registry-dir="$dir/plugins_registry" --kubelet-plugins-dir="$dir/plugins" \
    --dra-cdi-dir=/var/run/cdi --dra-health-port=-1 >"$dir/agent.log" 2>&1 &
  PIDS+=($!)
  wait_for "the $1 agent's IPAM socket" 30 test -S "$dir/spiderpool.sock" || { cat "$dir/agent.log"; exit 1; }
  wait_for "the $1 agent's DRA registration socket" 30 \
    sh -c "ls '$dir/plugins_registry'/*-reg.sock" || { cat "$dir/agent.log"; exit 1; }
  echo "    $1: IPAM on $dir/spiderpool.sock, DRA plugin registration socket" \
       "$(basename "$(ls "$dir"/plugins_registry/*-reg.sock)")"
}
echo "=== one spiderpool-agent per node (--dra-enabled: NIC discovery inside the node's namespace)"
start_agent node1
start_agent node2

slices() {  # slices <node>: "<n> devices: a b c ..."
  k get resourceslices --field-selector "spec.nodeName=$1" -o json | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
names = [d["name"] for s in items for d in s["spec"].get("devices", [])]
print(len(names), "devices:", " ".join(names[:6]) + (" ..." if len(names) > 6 else ""))'
}
first_device() {  # first_device <node>: prints the name of its first published device
  k get resourceslices --field-selector "spec.nodeName=$1" -o json | python3 -c '
import json, sys
names = [d["name"] for s in json.load(sys.stdin)["items"] for d in s["spec"].get("devices", [])]
print(names[0] if names else "")'
}
has_devices() { [[ -n $(first_device "$1") ]]; }
echo "=== ResourceSlices: a NIC is published as slots only where a SpiderIPPool serves its subnet"
wait_for "node1's devices" 30 has_devices node1 || { cat "$WORK/node1/agent.log"; exit 1; }
echo "    node1 (eth0 in 172.18.0.0/16, pool ippool-test has free IPs): $(slices node1)"
echo "    node2 (eth0 in 172.19.0.0/16, no pool serves that subnet):    $(slices node2)"
echo "    -> a claim of this DeviceClass can only be placed on node1; on node2 it would stay Pending"
k get resourceslices --field-selector spec.nodeName=node1 -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)["items"][0]["spec"]["devices"][0]
print("    first device of node1:", d["name"], json.dumps({k: list(v.values())[0] for k, v in d["attributes"].items()}))'
echo "=== a pool for node2's subnet appears: node2 publishes too"
k apply -f - <<'YAML'
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata:
  name: ippool-node2
spec:
  subnet: 172.19.0.0/16
  ips: ["172.19.30.131-172.19.30.135"]
  gateway: 172.19.0.1
YAML
wait_for "node2's devices" 30 has_devices node2 || { cat "$WORK/node2/agent.log"; exit 1; }
echo "    node2: $(slices node2)"

# The NAD's conflist run as libcni (and so Multus) runs it, unchanged: ADD each plugin in order
# (macvlan, which execs `spiderpool` for IPAM, then `coordinator`) with the previous result as
# prevResult; DEL in reverse with the cached ADD result. The only per-node setting is the
# agent's socket (each demo node has its own agent; a real node uses /var/run/spidernet).
cni() {  # cni ADD|DEL <pod> <node>
  local uid
  uid=$(k get pod "$2" -o jsonpath='{.metadata.uid}')
  ip netns exec "spd${ID}-$3" python3 - "$1" "$NAD_CONFIG" "$WORK/$3/spiderpool.sock" "$WORK/$2.result" \
    "$BIN" "ctr-$2" "/var/run/netns/spd${ID}-$2" \
    "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$2;K8S_POD_UID=$uid" <<'PY'
import json, os, subprocess, sys
cmd, nad, sock, cache, bin_dir, ctr, netns, args = sys.argv[1:]
conf = json.loads(nad)
plugins = conf["plugins"]
paths = {"coordinator": bin_dir + "/agent/coordinator/coordinator"}
env = dict(os.environ, CNI_COMMAND=cmd, CNI_CONTAINERID=ctr, CNI_NETNS=netns, CNI_IFNAME="eth0",
           CNI_PATH=bin_dir + "/agent/cni:/usr/lib/cni", CNI_ARGS=args)
prev = json.load(open(cache)) if cmd == "DEL" and os.path.exists(cache) else None
out = ""
for p in (reversed(plugins) if cmd == "DEL" else plugins):
    p = dict(p, name=conf["name"], cniVersion=conf["cniVersion"])
    if "ipam" in p:
        p["ipam"] = dict(p["ipam"], ipam_unix_socket_path=sock)
    if p["type"] == "coordinator":
        p["ipam_unix_socket_path"] = sock
    if prev is not None:
        p["prevResult"] = prev
    r = subprocess.run([paths.get(p["type"], "/usr/lib/cni/" + p["type"])], input=json.dumps(p),
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.stdout.write(r.stdout)
        sys.exit(r.returncode)
    if cmd == "ADD":
        prev = json.loads(r.stdout)
    out = r.stdout
if cmd == "ADD":
    json.dump(prev, open(cache, "w"))
elif os.path.exists(cache):
    os.remove(cache)
sys.stdout.write(out)
PY
}
start_pod() {  # start_pod <pod> <node> <pool>
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: default
  annotations:
    v1.multus-cni.io/default-network: kube-system/macvlan-conf
    ipam.spidernet.io/ippool: '{"ipv4":["$3"]}'
spec:
  nodeName: $2
  containers: [{name: app, image: busybox}]
YAML
  ip netns add "spd${ID}-$1"
  PODS+=("$1")
  echo "--- CNI ADD $1 on $2 (macvlan -> spiderpool -> $2's agent, then coordinator)"
  cni ADD "$1" "$2" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("    result:", json.dumps({"ips": r["ips"], "routes": r.get("routes", [])}))'
  echo "    inside $1: $(ip -n "spd${ID}-$1" -4 -o addr show dev eth0 | awk '{print $4}')," \
       "$(ip -n "spd${ID}-$1" route show default)"
}
echo "=== pods through the real macvlan plugin: three on node1 (ippool-test), one on node2 (ippool-node2)"
start_pod pod-a node1 ippool-test
start_pod pod-b node1 ippool-test
start_pod pod-c node1 ippool-test
start_pod pod-d node2 ippool-node2
echo "=== pod-a reaches its own node (node1, 172.18.0.11) through the coordinator's veth0"
echo "    (a macvlan pod cannot reach its master's host by itself; the coordinator added:)"
ip -n "spd${ID}-pod-a" route show dev veth0 | sed 's/^/      pod-a: /'
ip -n "spd${ID}-node1" rule show | grep 'lookup 500' | head -3 | sed 's/^/      node1: /'
ip netns exec "spd${ID}-pod-a" busybox ping -c 1 -W 2 172.18.0.11 | sed 's/^/    /'
echo "=== pod-a pings pod-c over the macvlan network"
ip netns exec "spd${ID}-pod-a" busybox ping -c 1 -W 2 \
  "$(ip -n "spd${ID}-pod-c" -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)" | sed 's/^/    /'

# claim_from_template <claim> <template>: the resourceclaim controller's part (the claim goes
# through spiderpool-controller's ResourceClaim webhook, which adds the network's selectors).
claim_from_template() {
  k get resourceclaimtemplate "$2" -o json | python3 -c '
import json, sys
t = json.load(sys.stdin)
print(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                  "metadata": {"name": sys.argv[1], "namespace": "default",
                               "annotations": {"resource.kubernetes.io/pod-claim-name": "nic"}},
                  "spec": t["spec"]["spec"]}))' "$1" | k create -f - >/dev/null
}
selectors() {  # selectors <claim>: the CEL selectors of its first request
  k get resourceclaim "$1" -o json | python3 -c '
import json, sys
for s in json.load(sys.stdin)["spec"]["devices"]["requests"][0]["exactly"].get("selectors", []):
    print("      " + s["cel"]["expression"])'
}
allocate() {  # allocate <claim>: the scheduler's part (dra/allocator evaluates the CEL)
  "$BIN/dra/allocator/dra-allocate" --kubeconfig="$KCFG" --namespace=default "$1" | sed 's/^/    /'
  return "${PIPESTATUS[0]}"
}

echo "=== DRA: the claim of replica dra-demo-0, from ResourceClaimTemplate macvlan-nic (seed objects, unchanged)"
echo "    (the resourceclaim controller's part: create the claim; spiderpool-controller's webhook adds"
echo "     the selectors of SpiderClaimParameter macvlan-claim -> SMC kube-system/macvlan-conf -> its pools)"
if [[ $HAVE_CONTROLLER != 1 ]]; then echo "demo: the DRA placement needs spiderpool-controller's claim webhook" >&2; exit 1; fi
wait_for "the ResourceClaim webhook configuration" 30 k get mutatingwebhookconfigurations spiderpool-controller-dra \
  || { cat "$WORK/controller.log"; exit 1; }
claim_from_template dra-demo-0-nic macvlan-nic
selectors dra-demo-0-nic
echo "=== two more networks: SMC macvlan-node2 (pool ippool-node2, 172.19.0.0/16) and SMC macvlan-nowhere"
echo "    (pool ippool-nowhere, 10.99.0.0/24, only for a node3 that does not exist)"
k apply -f - >/dev/null <<'YAML'
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata: {name: ippool-nowhere}
spec: {subnet: 10.99.0.0/24, ips: ["10.99.0.10-10.99.0.19"], nodeName: [node3]}
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderMultusConfig
metadata: {name: macvlan-node2, namespace: kube-system}
spec:
  cniType: macvlan
  macvlan: {master: [eth0], ippools: {ipv4: [ippool-node2]}}
---
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderMultusConfig
metadata: {name: macvlan-nowhere, namespace: kube-system}
spec:
  cniType: macvlan
  macvlan: {master: [eth0], ippools: {ipv4: [ippool-nowhere]}}
YAML
for n in node2 nowhere; do
  k apply -f - >/dev/null <<YAML
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderClaimParameter
metadata: {name: macvlan-$n, namespace: default}
spec:
  defaultNic: {multusName: macvlan-$n, namespace: kube-system}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: macvlan-$n, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: nic, exactly: {deviceClassName: netresources.spidernet.io}}]
      config:
      - requests: [nic]
        opaque:
          driver: netresources.spidernet.io
          parameters: {apiVersion: spiderpool.spidernet.io/v2beta1, kind: SpiderClaimParameter, name: macvlan-$n}
YAML
  claim_from_template "demo-$n-nic" "macvlan-$n"
done
echo "    claim demo-node2-nic:"; selectors demo-node2-nic
echo "=== the scheduler's part (dra/allocator: the DeviceClass and request CEL against the ResourceSlices)"
echo "--- both nodes publish eth0 slots; node1 comes first in name order:"
echo "    node1: $(slices node1)"; echo "    node2: $(slices node2)"
allocate dra-demo-0-nic || { echo "demo: the seed claim was not allocated" >&2; exit 1; }
allocate demo-node2-nic || { echo "demo: the node2 claim was not allocated" >&2; exit 1; }
set +e
allocate demo-nowhere-nic
rc=$?
set -e
if [[ $rc != 3 ]]; then echo "demo: the claim for an unserved SMC must stay unallocated (rc $rc)" >&2; exit 1; fi
NODE_OF() { k get resourceclaim "$1" -o jsonpath='{.status.allocation.devices.results[0].pool}'; }
[[ $(NODE_OF dra-demo-0-nic) == node1 ]] || { echo "demo: the seed claim is not on node1" >&2; exit 1; }
[[ $(NODE_OF demo-node2-nic) == node2 ]] || { echo "demo: the node2 claim is not on node2" >&2; exit 1; }
[[ -z $(NODE_OF demo-nowhere-nic) ]] || { echo "demo: the unserved claim was allocated" >&2; exit 1; }
echo "    -> dra-demo-0-nic on node1 (SMC macvlan-conf's pool ippool-test), demo-node2-nic on node2,"
echo "       demo-nowhere-nic stays Pending with the reason above"
DEVICE=$(k get resourceclaim dra-demo-0-nic -o jsonpath='{.status.allocation.devices.results[0].device}')
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: dra-demo-0
  namespace: default
  annotations:
    v1.multus-cni.io/default-network: kube-system/macvlan-conf
spec:
  nodeName: node1
  resourceClaims: [{name: nic, resourceClaimName: dra-demo-0-nic}]
  containers: [{name: app, image: busybox, resources: {claims: [{name: nic}]}}]
YAML
POD_UID=$(k get pod dra-demo-0 -o jsonpath='{.metadata.uid}')
CLAIM_UID=$(k get resourceclaim dra-demo-0-nic -o jsonpath='{.metadata.uid}')
k patch resourceclaim dra-demo-0-nic --subresource=status --type=merge \
  -p "{\"status\": {\"reservedFor\": [{\"resource\": \"pods\", \"name\": \"dra-demo-0\", \"uid\": \"$POD_UID\"}]}}" >/dev/null
echo "    claim dra-demo-0-nic (uid $CLAIM_UID) allocated: pool node1, device $DEVICE, reserved for pod dra-demo-0"
echo "=== the kubelet's part: NodePrepareResources over node1's DRA plugin socket (gRPC)"
CLAIMS+=("default dra-demo-0-nic $CLAIM_UID")
"$BIN/dra/kubeletplugin/testing/kubelet-standin" --registry-dir="$WORK/node1/plugins_registry" \
  prepare default dra-demo-0-nic "$CLAIM_UID" | sed 's/^/    /'
SPEC="/var/run/cdi/k8s.netresources.spidernet.io-claim_$CLAIM_UID.yaml"
echo "--- the CDI spec the agent wrote: $SPEC"
sed 's/^/    /' "$SPEC"
echo "--- the claim's status.devices, as the driver reported it"
k get resourceclaim dra-demo-0-nic -o jsonpath='{.status.devices}' | python3 -m json.tool | sed 's/^/    /'

echo "=== podman runs dra-demo-0's container: a CNI network through our IPAM + the claim's CDI device"
PODMAN="$WORK/podman"
mkdir -p "$PODMAN/net" "$PODMAN/rootfs/bin"
cp /bin/busybox "$PODMAN/rootfs/bin/busybox"
k apply -f - >/dev/null <<'YAML'
apiVersion: spiderpool.spidernet.io/v2beta1
kind: SpiderIPPool
metadata:
  name: ippool-podman
spec:
  subnet: 10.233.80.0/24
  ips: ["10.233.80.10-10.233.80.19"]
YAML
python3 - "$BRIDGE" "$WORK/node1/spiderpool.sock" >"$PODMAN/net/spdemo.conflist" <<'PY'
import json, sys
print(json.dumps({"cniVersion": "1.0.0", "name": "spdemo", "plugins": [{
    "type": "bridge", "bridge": sys.argv[1],
    "args": {"cni": {"K8S_POD_NAMESPACE": "default"}},
    "ipam": {"type": "spiderpool", "default_ipv4_ippool": ["ippool-podman"],
             "ipam_unix_socket_path": sys.argv[2]}}]}))
PY
printf '%s\n' '[containers]' 'default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]' \
  '[engine]' 'cgroup_manager = "cgroupfs"' 'runtime = "runc"' \
  '[network]' 'network_backend = "cni"' "network_config_dir = \"$PODMAN/net\"" \
  "cni_plugin_dirs = [\"$BIN/agent/cni\", \"/usr/lib/cni\"]" >"$PODMAN/containers.conf"
printf '%s\n' '[storage]' 'driver = "vfs"' "runroot = \"$PODMAN/run\"" \
  "graphroot = \"$PODMAN/graph\"" >"$PODMAN/storage.conf"
# shellcheck disable=SC2016
CONTAINERS_CONF="$PODMAN/containers.conf" CONTAINERS_STORAGE_CONF="$PODMAN/storage.conf" \
  podman run --rm --name dra-demo-0 --network spdemo \
  --device "k8s.netresources.spidernet.io/claim=$CLAIM_UID" --rootfs "$PODMAN/rootfs" \
  /bin/busybox sh -c 'echo "IP: $(ip -o -4 addr show eth0 | awk "{print \$4}")"; echo "printenv DRA_CLAIM_UID: $DRA_CLAIM_UID"' \
  | tee "$WORK/podman.out" | sed 's/^/    /'
grep -q "DRA_CLAIM_UID: $CLAIM_UID" "$WORK/podman.out" \
  || { echo "demo: the container did not print the claim UID" >&2; exit 1; }
echo "    (the container exited: podman's CNI DEL gave its IP back)"

# The pool's printer columns add up: ALLOCATED (pods' IPs) + RESERVED (held back from pods:
# node agents' reservations, SpiderReservedIPs) + FREE = TOTAL, in every status any writer
# (controller or agent) stores (api/pool_counts.h). One read: one object version.
check_counts() {
  k get sp "$1" -o json | python3 -c '
import json, sys
st = json.load(sys.stdin).get("status", {})
recs = json.loads(st.get("allocatedIPs") or "{}")
held = sorted(ip for ip, r in recs.items() if not r.get("pod") and r.get("node"))
n = {k: st.get(k + "IPCount") for k in ("allocated", "reserved", "free", "total")}
print("    %s: allocated %s + reserved %s + free %s = total %s; node reservations: %s"
      % (sys.argv[1], n["allocated"], n["reserved"], n["free"], n["total"], ", ".join(held) or "none"))
if None in n.values() or n["allocated"] + n["reserved"] + n["free"] != n["total"]:
    sys.exit("demo: the counts of %s do not add up: %s" % (sys.argv[1], n))
if n["reserved"] < len(held):
    sys.exit("demo: reservedIPCount %s < %d node reservations" % (n["reserved"], len(held)))' "$1"
}

echo "=== the pools and the endpoints"
k get sp -o wide
k get spiderendpoints -n default
# An agent reserves a few IPs ahead per pool (agent/ipam/blocks.h): records without a pod,
# neither allocated nor free but RESERVED, handed out without a pool write, given back when idle.
echo "--- ALLOCATED + RESERVED + FREE = TOTAL (node reservations: allocatedIPs entries with a node and no pod)"
check_counts ippool-test
check_counts ippool-podman

echo "=== CNI DEL pod-b frees its IP; NodeUnprepareResources removes the claim's CDI spec"
cni DEL pod-b node1
# A pod bound to a node is deleted gracefully (it stays Terminating until its kubelet
# confirms); the kubelet's final delete is a grace-0 one, sent here in its place.
k delete pod pod-b --grace-period=0 --force >/dev/null 2>&1
"$BIN/dra/kubeletplugin/testing/kubelet-standin" --registry-dir="$WORK/node1/plugins_registry" \
  unprepare default dra-demo-0-nic "$CLAIM_UID" >/dev/null
CLAIMS=()
if [[ -e $SPEC ]]; then echo "demo: $SPEC is still there" >&2; exit 1; fi
echo "    $SPEC removed"
k get sp ippool-test -o wide
check_counts ippool-test
echo "=== demo finished"
