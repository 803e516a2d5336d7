#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (<pkg>/fuzz/corpus/<target>/) from the tree's
real samples (api/testdata, e2e/samples, the chart's conf.yml keys) and a few hand-written
wire messages. Run from the repository root; it only adds or overwrites seed-*.{json,txt,bin}
files, so crash reproducers kept in a corpus directory stay. Needs python3-yaml."""
import glob
import json
import os
import struct
import zlib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(pkg, target, name, data):
    d = os.path.join(ROOT, pkg, "fuzz", "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def docs(path):
    with open(os.path.join(ROOT, path)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


# ---- API objects: every kind (api_decode), one Spider kind each (crd_<kind>) -------------
objects = {}
for path in sorted(glob.glob(os.path.join(ROOT, "api/testdata/*.yaml")) +
                   glob.glob(os.path.join(ROOT, "api/testdata/malformed/*.yaml")) +
                   glob.glob(os.path.join(ROOT, "e2e/samples/**/*.yaml"), recursive=True)):
    rel = os.path.relpath(path, ROOT)
    for i, d in enumerate(docs(rel)):
        if not isinstance(d, dict):
            continue
        name = rel.replace("/", "_").replace(".yaml", "") + ("" if i == 0 else "-%d" % i)
        objects[name] = d
for name, d in objects.items():
    write("api", "api_decode", "seed-%s.json" % name, compact(d))
    kind = d.get("kind", "")
    if kind.startswith("Spider"):
        write("api", "crd_" + kind.lower(), "seed-%s.json" % name, compact(d))
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        write("api", "resource_claim", "seed-%s.json" % name, compact(d))
    if kind in ("ResourceSlice", "DeviceClass"):
        write("api", "resource_slice", "seed-%s.json" % name, "\x00" + compact(d))

claims = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "c", "namespace": "default", "uid": "u1"},
     "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "netresources.spidernet.io", "count": 1}}],
                          "config": [{"requests": ["nic"], "opaque": {"driver": "netresources.spidernet.io",
                                      "parameters": {"apiVersion": "spiderpool.spidernet.io/v2beta1", "kind": "SpiderClaimParameter", "name": "p"}}}]}},
     "status": {"allocation": {"devices": {"results": [{"request": "nic", "driver": "netresources.spidernet.io", "pool": "node-1", "device": "eth1"}]}},
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "pu"}],
                "devices": [{"driver": "netresources.spidernet.io", "pool": "node-1", "device": "eth1",
                             "networkData": {"interfaceName": "net1", "ips": ["10.0.0.1/24"], "hardwareAddress": "aa:bb:cc:dd:ee:ff"}}]}},
    {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "c"},
     "spec": {"devices": {"requests": [{"name": "nic", "deviceClassName": "c", "count": 3},
                                       {"name": "f", "firstAvailable": [{"name": "x", "deviceClassName": "c"}]}]}}},
    {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaimList", "metadata": {},
     "items": [{"spec": {"devices": {"requests": [{"name": "r", "deviceClassName": "c"}]}}}]},
]
for i, c in enumerate(claims):
    write("api", "resource_claim", "seed-claim-%d.json" % i, compact(c))

slices = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
     "metadata": {"name": "n-d-0", "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u", "controller": True}]},
     "spec": {"driver": "netresources.spidernet.io", "pool": {"name": "n", "generation": 2, "resourceSliceCount": 1},
              "nodeName": "n",
              "devices": [{"name": "eth1-0", "attributes": {"ifName": {"string": "eth1"}, "mtu": {"int": 1500},
                                                            "sriovVf": {"bool": True}, "v": {"version": "1.0.0"}},
                           "capacity": {"c": {"value": "1"}}}]}},
    {"spec": {"driver": "d", "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1}, "allNodes": True,
              "devices": [{"name": "a", "basic": {"attributes": {"x": {"ints": [1, 2]}}, "capacity": {"y": {"value": "2Gi"}}}}]}},
    {"spec": {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
              "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]},
              "sharedCounters": [{"name": "s", "counters": {"mem": {"value": "1"}}}]}},
]
for i, s in enumerate(slices):
    for v in range(3):  # first byte: the version decoded from (v1, v1beta2, v1beta1)
        write("api", "resource_slice", "seed-slice-%d-v%d.json" % (i, v), chr(v) + compact(s))

# ---- AdmissionReview: first byte = webhook path (operator/fuzz/admission_review.cc) -------
def review(obj, op="CREATE", old=None):
    kind = obj.get("kind", "Pod")
    group, _, version = obj.get("apiVersion", "v1").rpartition("/")
    req = {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
           "kind": {"group": group, "version": version, "kind": kind},
           "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
           "name": obj.get("metadata", {}).get("name", ""),
           "namespace": obj.get("metadata", {}).get("namespace", ""),
           "operation": op, "userInfo": {"username": "admin"}, "object": obj}
    if old is not None:
        req["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}

n = 0
for name, d in sorted(objects.items()):
    kind = d.get("kind", "")
    if not (kind.startswith("Spider") or kind == "Pod"):
        continue
    write("operator", "admission_review", "seed-%s.json" % name, chr(n % 13) + compact(review(d)))
    write("operator", "admission_review", "seed-%s-update.json" % name,
          chr((n + 6) % 13) + compact(review(d, "UPDATE", d)))
    n += 1

# ---- CNI: five env lines, then stdin (agent/fuzz/cni_stdin.cc) ---------------------------
ipam_conf = {"cniVersion": "1.0.0", "name": "macvlan-net", "type": "macvlan", "master": "eth0",
             "ipam": {"type": "spiderpool", "log_level": "debug", "default_ipv4_ippool": ["default-v4-ippool"],
                      "clean_gateway": False, "match_master_subnet": True,
                      "ipam_unix_socket_path": "/var/run/spidernet/spiderpool.sock", "ipam_timeout_seconds": 30}}
prev = {"cniVersion": "0.4.0", "name": "n", "ipam": {"type": "spiderpool"},
        "prevResult": {"cniVersion": "0.4.0", "interfaces": [{"name": "eth0", "sandbox": "/x"}],
                       "ips": [{"version": "4", "address": "10.0.0.5/24", "gateway": "10.0.0.1", "interface": 0}],
                       "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}], "dns": {"nameservers": ["1.1.1.1"]}}}
ifacer = {"cniVersion": "1.0.0", "name": "n", "type": "ifacer", "interfaces": ["eth0", "eth1"], "vlanID": 7,
          "bond": {"name": "b0", "mode": 1, "options": "primary=eth1;miimon=100"}}
args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=4f1e-11"
for name, cmd, conf in [("add", "ADD", ipam_conf), ("del", "DEL", ipam_conf), ("check", "CHECK", prev),
                        ("ifacer", "ADD", ifacer), ("version", "VERSION", ipam_conf), ("gc", "GC", ipam_conf),
                        ("status", "STATUS", ipam_conf)]:
    env = "\n".join([cmd, "0123456789abcdef", "/var/run/netns/cni-1", "net1", args]) + "\n"
    write("agent", "cni_stdin", "seed-%s.txt" % name, env + compact(conf))

# ---- the agent's IPAM endpoint: first byte 0 raw HTTP, 1/2/3 bodies (ipam_http.cc) -------
add = {"containerID": "c1", "ifName": "eth0", "netNamespace": "/var/run/netns/x", "podNamespace": "default",
       "podName": "web-0", "podUID": "u1", "defaultIPv4IPPool": ["p4"], "cleanGateway": False}
dele = {"containerID": "c1", "ifName": "eth0", "netNamespace": "/x", "podNamespace": "default", "podName": "web-0", "podUID": "u1"}
coord = {"podNamespace": "default", "podName": "web-0"}

def http(method, path, body, extra=""):
    return ("%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n%s"
            "Content-Length: %d\r\n\r\n%s" % (method, path, extra, len(body), body))

raw = {
    "add": http("POST", "/v1/ipam/ip", compact(add)),
    "del": http("DELETE", "/v1/ipam/ip", compact(dele)),
    "healthy": "GET /v1/ipam/healthy HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "coordinator": http("GET", "/v1/coordinator/config", compact(coord)),
    "coordinator-query": "GET /v1/coordinator/config?podNamespace=default&podName=web-0 HTTP/1.1\r\nHost: x\r\n\r\n",
    "coordinator-chunked": ("GET /v1/coordinator/config HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "%x\r\n%s\r\n0\r\n\r\n" % (len(compact(coord)), compact(coord))),
    "keepalive": http("GET", "/v1/coordinator/config", compact(coord)) + http("POST", "/v1/ipam/ip", compact(add)),
}
for name, text in raw.items():
    write("agent", "ipam_http", "seed-raw-%s.txt" % name, "\x00" + text)
write("agent", "ipam_http", "seed-add.json", "\x01" + compact(add))
write("agent", "ipam_http", "seed-del.json", "\x02" + compact(dele))
write("agent", "ipam_http", "seed-coordinator.json", "\x03" + compact(coord))

# ---- conf.yml (the chart's keys) ----------------------------------------------------------
write("agent", "conf_yml", "seed-chart.txt", """ipamUnixSocketPath: /var/run/spidernet/spiderpool.sock
enableIPv4: true
enableIPv6: false
enableStatefulSet: true
enableKubevirtStaticIP: true
enableSpiderSubnet: true
enableAutoPoolForApplication: true
enableIPConflictDetection: false
enableGatewayDetection: false
enableValidatingResourcesDeletedWebhook: false
clusterSubnetDefaultFlexibleIPNumber: 1
clusterNetwork: "kube-system/macvlan"
""")
write("agent", "conf_yml", "seed-json.txt", compact({"enableIPv4": True, "enableIPv6": True, "waitAutoPoolSeconds": 5,
                                                     "nodeIPBlockSize": 16, "nodeIPBlockStanding": 4}))

# ---- DRA checkpoint: first byte odd = recompute the checksum (dra_checkpoint.cc) ---------
data = {"nodeBootID": "3f1e8a3c-5d1b-4c1e-9b1a-0d6c2f0e8a11",
        "preparedClaims": {"u1": {"state": "PrepareCompleted", "namespace": "default", "name": "c",
                                  "devices": [{"requestNames": ["nic"], "pool": "node-1", "device": "eth1",
                                               "cdiDeviceIDs": ["k8s.netresources.spidernet.io/claim=u1-eth1"]}],
                                  "cdiSpecPath": "/var/run/cdi/k8s.netresources.spidernet.io-claim_u1.json",
                                  "statusDevices": [{"driver": "netresources.spidernet.io", "pool": "node-1", "device": "eth1"}]},
                           "u2": {"state": "PrepareStarted", "namespace": "ns", "name": "d",
                                  "devices": [{"pool": "node-1", "device": "eth2", "shareID": "s1"}]}}}
text = compact(data)
ck = {"version": 1, "checksum": "crc32:%08x" % (zlib.crc32(text.encode()) & 0xffffffff), "data": data}
write("agent", "dra_checkpoint", "seed-file.json", "\x00" + compact(ck) + "\n")
write("agent", "dra_checkpoint", "seed-data.json", "\x01" + compact(ck))
write("agent", "dra_checkpoint", "seed-empty.json", "\x01" + compact({"version": 1, "checksum": "", "data": {"nodeBootID": "b"}}))

# ---- kubelet gRPC: first byte = method, then the protobuf body (kubelet_grpc.cc) ---------
def varint(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def field(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload

def claim(ns, uid, name):
    return field(1, ns) + field(2, uid) + field(3, name)

req = field(1, claim("default", "uid-1", "claim-a")) + field(1, claim("ns2", "uid-2", "claim-b"))
dup = field(1, claim("default", "uid-1", "a")) + field(1, claim("default", "uid-1", "a")) + field(1, claim("x", "", "e"))
for method in range(4):
    write("agent", "kubelet_grpc", "seed-claims-%d.bin" % method, bytes([method]) + req)
    write("agent", "kubelet_grpc", "seed-dup-%d.bin" % method, bytes([method]) + dup)
write("agent", "kubelet_grpc", "seed-getinfo.bin", bytes([4]))
write("agent", "kubelet_grpc", "seed-notify-ok.bin", bytes([5]) + varint(1 << 3) + varint(1))
write("agent", "kubelet_grpc", "seed-notify-err.bin", bytes([5]) + field(2, "registration failed: version"))
