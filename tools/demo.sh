#!/usr/bin/env bash
# README command (1): the main job, the local end-to-end path on this machine:
#   loopback API server -> CRDs + the seed's SpiderIPPool / SpiderMultusConfig (real kubectl)
#   -> spiderpool-controller (NAD generation, webhooks, IP GC) -> spiderpool-agent for a "node"
#   (a network namespace whose eth0 is the macvlan master) -> pods started as network namespaces
#   by the REAL macvlan plugin from /usr/lib/cni, which execs our `spiderpool` IPAM plugin
#   -> their IPs and routes (seen with `ip` inside them), the pool's counts, DEL frees.
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
TARGETS=(//kube/testing:loopback-apiserver //agent:spiderpool-agent //agent/cni:spiderpool)
HAVE_CONTROLLER=0
if bazel query --noshow_progress //operator:spiderpool-controller >/dev/null 2>&1; then
  TARGETS+=(//operator:spiderpool-controller)
  HAVE_CONTROLLER=1
fi
bazel build --noshow_progress "${TARGETS[@]}"
BIN=$(bazel info bazel-bin 2>/dev/null)

WORK=$(mktemp -d /tmp/spiderpool-demo-XXXXXX)
ID=$(basename "$WORK" | tail -c 7 | tr 'A-Z' 'a-z')
NODE_NS="spd${ID}-node1"
SW_NS="spd${ID}-sw"
PIDS=()
PODS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  for p in "${PODS[@]}"; do ip netns del "spd${ID}-$p" 2>/dev/null || true; done
  ip netns del "$NODE_NS" 2>/dev/null || true
  ip netns del "$SW_NS" 2>/dev/null || true
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

echo "=== a node: network namespace $NODE_NS, eth0 = one end of a veth pair (the macvlan master)"
ip netns add "$SW_NS"
ip netns add "$NODE_NS"
ip -n "$SW_NS" link add br0 type bridge && ip -n "$SW_NS" link set br0 up
ip link add "spd${ID}a" type veth peer name "spd${ID}b"
ip link set "spd${ID}a" netns "$NODE_NS" name eth0
ip link set "spd${ID}b" netns "$SW_NS"
ip -n "$SW_NS" link set "spd${ID}b" master br0 up
ip -n "$NODE_NS" link set eth0 up
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata: {name: node1}
YAML

SOCK="$WORK/spiderpool.sock"
echo "=== starting spiderpool-agent for node1 (IPAM on $SOCK)"
"$BIN/agent/spiderpool-agent" --node-name=node1 --kubeconfig="$KCFG" --socket="$SOCK" \
  --health-port=-1 >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
wait_for "the agent socket" 30 test -S "$SOCK" || { cat "$WORK/agent.log"; exit 1; }

# The macvlan plugin entry of the NAD's conflist, as libcni hands it to the plugin, with the
# agent socket of this demo (the coordinator entry is not built yet).
PLUGIN_CONF=$(python3 - "$NAD_CONFIG" "$SOCK" <<'PY'
import json, sys
conf = json.loads(sys.argv[1])
p = dict(conf["plugins"][0])
p["cniVersion"] = conf["cniVersion"]
p["name"] = conf["name"]
p["ipam"] = dict(p.get("ipam", {}), ipam_unix_socket_path=sys.argv[2])
print(json.dumps(p))
PY
)
cni() {  # cni ADD|DEL <pod>
  local uid
  uid=$(k get pod "$2" -o jsonpath='{.metadata.uid}')
  ip netns exec "$NODE_NS" env CNI_COMMAND="$1" CNI_CONTAINERID="ctr-$2" \
    CNI_NETNS="/var/run/netns/spd${ID}-$2" CNI_IFNAME=eth0 \
    CNI_PATH="$BIN/agent/cni:/usr/lib/cni" \
    CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$2;K8S_POD_UID=$uid" \
    /usr/lib/cni/macvlan <<<"$PLUGIN_CONF"
}

echo "=== three pods on node1, each asking for SpiderIPPool ippool-test (pod annotation)"
for p in pod-a pod-b pod-c; do
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $p
  namespace: default
  annotations:
    v1.multus-cni.io/default-network: kube-system/macvlan-conf
    ipam.spidernet.io/ippool: '{"ipv4":["ippool-test"]}'
spec:
  nodeName: node1
  containers: [{name: app, image: busybox}]
YAML
  ip netns add "spd${ID}-$p"
  PODS+=("$p")
  echo "--- CNI ADD $p (macvlan -> spiderpool -> agent)"
  cni ADD "$p" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("    result:", json.dumps({"ips": r["ips"], "routes": r.get("routes", [])}))'
  echo "    inside $p: $(ip -n "spd${ID}-$p" -4 -o addr show dev eth0 | awk '{print $4}')," \
       "$(ip -n "spd${ID}-$p" route show default)"
done
echo "=== pod-a pings pod-c over the macvlan network"
ip netns exec "spd${ID}-pod-a" busybox ping -c 1 -W 2 \
  "$(ip -n "spd${ID}-pod-c" -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)" | sed 's/^/    /'
echo "=== the pool and the endpoints"
k get sp ippool-test -o wide
k get spiderendpoints -n default

echo "=== CNI DEL pod-b frees its IP"
cni DEL pod-b
k delete pod pod-b >/dev/null
k get sp ippool-test -o wide
k get sp ippool-test -o jsonpath='{.status.allocatedIPs}' | python3 -m json.tool
echo "=== demo finished"
