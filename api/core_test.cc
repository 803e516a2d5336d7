#include "api/core.h"

#include <gtest/gtest.h>

namespace spiderpool::api {
namespace {

void ExpectResource(const ResourceInfo& r, std::string api_version, std::string kind,
                    std::string plural, bool namespaced, bool has_status,
                    std::vector<std::string> short_names) {
  EXPECT_EQ(r.ApiVersion(), api_version) << kind;
  EXPECT_EQ(r.kind, kind);
  EXPECT_EQ(r.plural, plural) << kind;
  std::string singular = kind;
  std::transform(singular.begin(), singular.end(), singular.begin(), ::tolower);
  EXPECT_EQ(r.singular, singular) << kind;
  EXPECT_EQ(r.namespaced, namespaced) << kind;
  EXPECT_EQ(r.has_status, has_status) << kind;
  EXPECT_EQ(r.short_names, short_names) << kind;
}

TEST(Core, ResourcesAreKubernetes) {
  ExpectResource(Pod::Resource(), "v1", "Pod", "pods", true, true, {"po"});
  ExpectResource(Node::Resource(), "v1", "Node", "nodes", false, true, {"no"});
  ExpectResource(Namespace::Resource(), "v1", "Namespace", "namespaces", false, true, {"ns"});
  ExpectResource(Lease::Resource(), "coordination.k8s.io/v1", "Lease", "leases", true, false, {});
  ExpectResource(Event::Resource(), "v1", "Event", "events", true, false, {"ev"});
  ExpectResource(events_v1::Event::Resource(), "events.k8s.io/v1", "Event", "events", true,
                 false, {"ev"});
  ExpectResource(ConfigMap::Resource(), "v1", "ConfigMap", "configmaps", true, false, {"cm"});
  ExpectResource(Secret::Resource(), "v1", "Secret", "secrets", true, false, {});
  EXPECT_EQ(Lease::Resource().GroupResource(), "leases.coordination.k8s.io");
  EXPECT_EQ(Pod::Resource().GroupResource(), "pods");
  EXPECT_EQ(Pod::Resource().ListKind(), "PodList");
}

Pod MakePod(std::string phase, std::string restart_policy, std::string reason = "") {
  Pod p;
  p.status.phase = std::move(phase);
  p.spec.restart_policy = std::move(restart_policy);
  p.status.reason = std::move(reason);
  return p;
}

TEST(Core, PodIsAlive) {
  EXPECT_TRUE(PodIsAlive(MakePod("Running", "Always")));
  EXPECT_TRUE(PodIsAlive(MakePod("Pending", "Never")));
  EXPECT_TRUE(PodIsAlive(MakePod("Unknown", "OnFailure")));
  // Succeeded: dead unless it will be restarted.
  EXPECT_TRUE(PodIsAlive(MakePod("Succeeded", "Always")));
  EXPECT_FALSE(PodIsAlive(MakePod("Succeeded", "OnFailure")));
  EXPECT_FALSE(PodIsAlive(MakePod("Succeeded", "Never")));
  // Failed: dead with Never; OnFailure/Always restart it.
  EXPECT_FALSE(PodIsAlive(MakePod("Failed", "Never")));
  EXPECT_TRUE(PodIsAlive(MakePod("Failed", "OnFailure")));
  EXPECT_TRUE(PodIsAlive(MakePod("Failed", "Always")));
  // Evicted is dead whatever the policy.
  EXPECT_FALSE(PodIsAlive(MakePod("Failed", "Always", "Evicted")));
  EXPECT_TRUE(PodIsAlive(MakePod("Running", "Always", "Evicted")));
  // Terminating.
  Pod deleting = MakePod("Running", "Always");
  deleting.metadata.deletion_timestamp = Time{absl::FromUnixSeconds(1700000000)};
  EXPECT_FALSE(PodIsAlive(deleting));
}

TEST(Core, PodIPsPreferPodIPsList) {
  Pod p;
  EXPECT_TRUE(PodIPs(p).empty());
  p.status.pod_ip = "10.0.0.1";
  EXPECT_EQ(PodIPs(p), std::vector<std::string>{"10.0.0.1"});
  p.status.pod_ips = {{.ip = "10.0.0.1"}, {.ip = "fd00::1"}};
  EXPECT_EQ(PodIPs(p), (std::vector<std::string>{"10.0.0.1", "fd00::1"}));
}

TEST(Core, NodeHelpers) {
  auto n = DecodeJson<Node>(R"({"metadata": {"name": "n1"}, "status": {
      "conditions": [{"type": "MemoryPressure", "status": "False"},
                     {"type": "Ready", "status": "True"}],
      "addresses": [{"type": "Hostname", "address": "n1"},
                    {"type": "InternalIP", "address": "10.6.0.11"}],
      "nodeInfo": {"bootID": "b-1"}}})");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(NodeIsReady(*n));
  EXPECT_EQ(NodeAddressOf(*n, "InternalIP"), "10.6.0.11");
  EXPECT_EQ(NodeAddressOf(*n, "ExternalIP"), "");
  EXPECT_EQ(n->status.node_info.boot_id, "b-1");
  n->status.conditions[1].status = "Unknown";
  EXPECT_FALSE(NodeIsReady(*n));
  EXPECT_FALSE(NodeIsReady(Node{}));
}

TEST(Core, LeaseMicroTimes) {
  Lease l;
  l.SetTypeMeta();
  l.metadata.name = "spiderpool-controller-leases";
  l.metadata.namespace_ = "kube-system";
  l.spec.holder_identity = "me";
  l.spec.lease_duration_seconds = 15;
  l.spec.renew_time = MicroTime{absl::FromUnixMicros(1700000000123456)};
  l.spec.lease_transitions = 0;  // set: written even though zero
  Json j = Encode(l);
  EXPECT_EQ(j, Json::parse(R"({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
      "metadata": {"name": "spiderpool-controller-leases", "namespace": "kube-system"},
      "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
               "renewTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 0}})"));
  auto back = Decode<Lease>(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->spec.renew_time, l.spec.renew_time);
  EXPECT_FALSE(back->spec.acquire_time.has_value());
}

TEST(Core, EventReferences) {
  Pod p;
  p.metadata.name = "web-1";
  p.metadata.namespace_ = "default";
  p.metadata.uid = "u-1";
  p.metadata.resource_version = "42";
  Event e;
  e.SetTypeMeta();
  e.involved_object = MakeObjectReference(p);
  e.reason = "IPAllocated";
  e.type = std::string(kEventTypeNormal);
  e.count = 1;
  Json j = Encode(e);
  EXPECT_EQ(j["involvedObject"], Json::parse(R"({"kind": "Pod", "namespace": "default",
      "name": "web-1", "uid": "u-1", "apiVersion": "v1", "resourceVersion": "42"})"));
  EXPECT_EQ(j["apiVersion"], "v1");
  EXPECT_EQ(j["kind"], "Event");
  EXPECT_FALSE(j.contains("eventTime"));
  events_v1::Event ev;
  ev.SetTypeMeta();
  EXPECT_EQ(Encode(ev)["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(Encode(ev)["eventTime"], "1970-01-01T00:00:00.000000Z");  // required: always written
}

TEST(Core, SecretData) {
  Secret s;
  s.metadata.name = "certs";
  s.metadata.namespace_ = "kube-system";
  s.Set("tls.key", std::string("\x00\x01key\xff", 6));
  EXPECT_EQ(s.data["tls.key"], "AAFrZXn/");
  auto v = s.Get("tls.key");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, std::string("\x00\x01key\xff", 6));
  EXPECT_EQ(s.Get("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.Get("nope").status().message(), "secret kube-system/certs has no key \"nope\"");
  s.data["bad"] = "not base64!";
  EXPECT_EQ(s.Get("bad").status().code(), absl::StatusCode::kInvalidArgument);
  s.data["unpadded"] = "YWI";  // Go's StdEncoding rejects missing padding
  EXPECT_FALSE(s.Get("unpadded").ok());
  s.string_data["tls.key"] = "plain";
  EXPECT_EQ(*s.Get("tls.key"), "plain");
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
}

TEST(Core, OwnerReferences) {
  Node owner;
  owner.metadata.name = "worker-1";
  owner.metadata.uid = "node-uid";
  OwnerReference ref = MakeOwnerReference(owner);
  EXPECT_EQ(Encode(ref), Json::parse(R"({"apiVersion": "v1", "kind": "Node", "name": "worker-1",
      "uid": "node-uid", "controller": true, "blockOwnerDeletion": true})"));

  ObjectMeta m;
  m.name = "obj";
  m.namespace_ = "ns";
  EXPECT_FALSE(IsOwnedBy(m, "node-uid"));
  ASSERT_TRUE(SetOwnerReference(&m, ref).ok());
  EXPECT_TRUE(IsOwnedBy(m, "node-uid"));
  EXPECT_TRUE(IsControlledBy(m, "node-uid"));
  // Setting it again replaces, not duplicates.
  ref.block_owner_deletion = false;
  ASSERT_TRUE(SetOwnerReference(&m, ref).ok());
  ASSERT_EQ(m.owner_references.size(), 1u);
  EXPECT_EQ(m.owner_references[0].block_owner_deletion, false);
  // A second controller is refused; a non-controller reference is fine.
  Pod other;
  other.metadata.name = "p";
  other.metadata.uid = "pod-uid";
  absl::Status st = SetOwnerReference(&m, MakeOwnerReference(other));
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(st.message(), "Object ns/obj is already owned by another Node controller worker-1");
  ASSERT_TRUE(SetOwnerReference(&m, MakeOwnerReference(other, /*controller=*/false)).ok());
  EXPECT_EQ(m.owner_references.size(), 2u);
  EXPECT_TRUE(IsOwnedBy(m, "pod-uid"));
  EXPECT_FALSE(IsControlledBy(m, "pod-uid"));
  EXPECT_TRUE(RemoveOwnerReference(&m, "node-uid"));
  EXPECT_FALSE(RemoveOwnerReference(&m, "node-uid"));
  EXPECT_FALSE(IsControlledBy(m, "node-uid"));
  EXPECT_EQ(m.owner_references.size(), 1u);
}

TEST(Core, ContainerStatusAlwaysWritesReadyAndRestartCount) {
  ContainerStatus cs;
  cs.name = "web";
  EXPECT_EQ(Encode(cs), Json::parse(R"({"name": "web", "ready": false, "restartCount": 0})"));
}

}  // namespace
}  // namespace spiderpool::api
