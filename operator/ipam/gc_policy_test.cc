#include "operator/ipam/gc_policy.h"

#include <gtest/gtest.h>

namespace spiderpool::op::ipam {
namespace {

using Action = Verdict::Action;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

std::shared_ptr<api::Pod> Pod(std::string uid, std::string phase = "Running",
                              std::string node = "n1") {
  auto p = std::make_shared<api::Pod>();
  p->metadata.namespace_ = "ns";
  p->metadata.name = "p";
  p->metadata.uid = std::move(uid);
  p->spec.node_name = std::move(node);
  p->status.phase = std::move(phase);
  return p;
}

PodFacts Facts(std::shared_ptr<api::Pod> pod) {
  PodFacts f;
  f.pod = std::move(pod);
  return f;
}

std::shared_ptr<api::SpiderEndpoint> Endpoint(std::string uid, std::vector<std::string> ipv4) {
  auto ep = std::make_shared<api::SpiderEndpoint>();
  ep->status.emplace();
  ep->status->current.uid = std::move(uid);
  for (auto& ip : ipv4) {
    api::IPAllocationDetail d;
    d.interface_ = "eth0";
    d.ipv4 = ip;
    ep->status->current.ips.push_back(d);
  }
  ep->status->owner_controller_type = "StatefulSet";
  ep->status->owner_controller_name = "web";
  return ep;
}

void SetFinishedAt(api::Pod* p, absl::Time t) {
  api::ContainerStatus c;
  c.name = "c";
  c.unknown = {{"state", {{"terminated", {{"exitCode", 0}, {"finishedAt", api::FormatTime(t)}}}}}};
  p->status.container_statuses.push_back(c);
}

TEST(GCPolicy, AlivePendingAndRunningPodsKeepTheirIPs) {
  GCPolicy policy;
  for (const char* phase : {"Pending", "Running", "Unknown", ""}) {
    EXPECT_EQ(Decide(policy, Facts(Pod("u1", phase)), "u1", "10.0.0.1", kNow).action,
              Action::kKeep)
        << phase;
  }
  // A Pending pod not scheduled yet (no node) too.
  EXPECT_EQ(Decide(policy, Facts(Pod("u1", "Pending", "")), "u1", "10.0.0.1", kNow).action,
            Action::kKeep);
}

TEST(GCPolicy, MissingPodOrOtherUID) {
  GCPolicy policy;
  Verdict v = Decide(policy, PodFacts{}, "u1", "10.0.0.1", kNow);
  EXPECT_EQ(v.action, Action::kReclaim);
  EXPECT_EQ(v.reason, GCReason::kPodMissing);
  v = Decide(policy, Facts(Pod("u2")), "u1", "10.0.0.1", kNow);
  EXPECT_EQ(v.action, Action::kReclaim);
  EXPECT_EQ(v.reason, GCReason::kPodUIDMismatch);
  EXPECT_EQ(GCReasonName(v.reason), "pod_uid_mismatch");
}

TEST(GCPolicy, DeletedNode) {
  GCPolicy policy;
  PodFacts f = Facts(Pod("u1"));
  f.node_exists = false;
  Verdict v = Decide(policy, f, "u1", "10.0.0.1", kNow);
  EXPECT_EQ(v.action, Action::kReclaim);
  EXPECT_EQ(v.reason, GCReason::kNodeMissing);
}

TEST(GCPolicy, TerminatedPodsAfterFinishPlusGrace) {
  GCPolicy policy{.additional_grace_delay = absl::Seconds(5)};
  auto pod = Pod("u1", "Succeeded");
  pod->spec.termination_grace_period_seconds = 10;
  SetFinishedAt(pod.get(), kNow - absl::Seconds(12));
  Verdict v = Decide(policy, Facts(pod), "u1", "10.0.0.1", kNow);
  EXPECT_EQ(v.action, Action::kWait);
  EXPECT_EQ(v.reason, GCReason::kPodTerminated);
  EXPECT_EQ(v.deadline, kNow + absl::Seconds(3));
  v = Decide(policy, Facts(pod), "u1", "10.0.0.1", kNow + absl::Seconds(3));
  EXPECT_EQ(v.action, Action::kReclaim);

  // Failed, no finish time: counted from when the GC first saw it; grace defaults to 30s.
  auto failed = Pod("u1", "Failed");
  PodFacts f = Facts(failed);
  f.first_seen_terminal = kNow;
  v = Decide(GCPolicy{}, f, "u1", "10.0.0.1", kNow + absl::Seconds(29));
  EXPECT_EQ(v.action, Action::kWait);
  v = Decide(GCPolicy{}, f, "u1", "10.0.0.1", kNow + absl::Seconds(30));
  EXPECT_EQ(v.action, Action::kReclaim);
}

TEST(GCPolicy, TerminatingPodsAfterDeletionGrace) {
  auto pod = Pod("u1");
  pod->metadata.deletion_timestamp = api::Time{kNow};
  pod->metadata.deletion_grace_period_seconds = 30;
  GCPolicy policy{.additional_grace_delay = absl::Seconds(60)};
  Verdict v = Decide(policy, Facts(pod), "u1", "10.0.0.1", kNow + absl::Seconds(89));
  EXPECT_EQ(v.action, Action::kWait);
  EXPECT_EQ(v.deadline, kNow + absl::Seconds(90));
  v = Decide(policy, Facts(pod), "u1", "10.0.0.1", kNow + absl::Seconds(90));
  EXPECT_EQ(v.action, Action::kReclaim);
  EXPECT_EQ(v.reason, GCReason::kPodTerminating);

  // Switched off for pods on NotReady nodes.
  policy.gc_terminating_pod_on_not_ready_node = false;
  PodFacts f = Facts(pod);
  f.node_ready = false;
  EXPECT_EQ(Decide(policy, f, "u1", "10.0.0.1", kNow + absl::Hours(1)).action, Action::kKeep);
  f.node_ready = true;
  EXPECT_EQ(Decide(policy, f, "u1", "10.0.0.1", kNow + absl::Hours(1)).action, Action::kReclaim);
}

TEST(GCPolicy, ValidStatefulSetPodsAreNeverReclaimed) {
  GCPolicy policy;
  PodFacts gone;
  gone.valid_statefulset_pod = true;
  EXPECT_EQ(Decide(policy, gone, "u1", "10.0.0.1", kNow).action, Action::kKeep);

  PodFacts recreated = Facts(Pod("u2", "Pending"));
  recreated.valid_statefulset_pod = true;
  EXPECT_EQ(Decide(policy, recreated, "u1", "10.0.0.1", kNow).action, Action::kKeep);
  // ... unless the new pod's endpoint already holds the new UID with other IPs.
  recreated.endpoint = Endpoint("u2", {"10.0.0.9/24"});
  Verdict v = Decide(policy, recreated, "u1", "10.0.0.1", kNow);
  EXPECT_EQ(v.action, Action::kReclaim);
  EXPECT_EQ(v.reason, GCReason::kPodUIDMismatch);
  recreated.endpoint = Endpoint("u2", {"10.0.0.1/24"});  // the agent moved it: keep
  EXPECT_EQ(Decide(policy, recreated, "u1", "10.0.0.1", kNow).action, Action::kKeep);
  recreated.endpoint = Endpoint("u1", {"10.0.0.9/24"});  // not moved yet: keep
  EXPECT_EQ(Decide(policy, recreated, "u1", "10.0.0.1", kNow).action, Action::kKeep);

  auto failed = Pod("u1", "Failed");
  failed->metadata.deletion_timestamp = api::Time{kNow - absl::Hours(1)};
  PodFacts f = Facts(failed);
  f.valid_statefulset_pod = true;
  f.node_exists = false;
  EXPECT_EQ(Decide(policy, f, "u1", "10.0.0.1", kNow).action, Action::kKeep);
  // enableStatefulSet off: an ordinary pod.
  policy.enable_statefulset = false;
  EXPECT_EQ(Decide(policy, gone, "u1", "10.0.0.1", kNow).action, Action::kReclaim);
}

TEST(GCPolicy, KubevirtVMsAreKeptWhileTheVMWantsThem) {
  PodFacts vm;  // no pod named like the VM
  vm.kubevirt_vm = true;
  EXPECT_EQ(Decide(GCPolicy{}, vm, "u1", "10.0.0.1", kNow).action, Action::kKeep);
  PodFacts gone = vm;
  gone.kubevirt_vm_wants_ips = false;
  Verdict v = Decide(GCPolicy{}, gone, "u1", "10.0.0.1", kNow);
  EXPECT_EQ(v.action, Action::kReclaim);
  EXPECT_EQ(GCReasonName(v.reason), "kubevirt_vm_gone");
  GCPolicy off;
  off.enable_kubevirt_static_ip = false;
  EXPECT_EQ(Decide(off, vm, "u1", "10.0.0.1", kNow).action, Action::kReclaim);
}

TEST(GCPolicy, StatefulSetOwner) {
  // Name only.
  auto ref = StatefulSetOwnerOf("web-3", nullptr, nullptr);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->statefulset, "web");
  EXPECT_EQ(ref->ordinal, 3);
  EXPECT_FALSE(StatefulSetOwnerOf("web", nullptr, nullptr).has_value());
  // The endpoint says another kind.
  auto ep = Endpoint("u", {});
  ep->status->owner_controller_type = "Deployment";
  EXPECT_FALSE(StatefulSetOwnerOf("web-3", nullptr, ep.get()).has_value());
  ep->status->owner_controller_type = "StatefulSet";
  ep->status->owner_controller_name = "other";
  EXPECT_FALSE(StatefulSetOwnerOf("web-3", nullptr, ep.get()).has_value());
  ep->status->owner_controller_name = "web";
  EXPECT_TRUE(StatefulSetOwnerOf("web-3", nullptr, ep.get()).has_value());
  // The live pod's controller reference wins.
  auto pod = Pod("u");
  EXPECT_FALSE(StatefulSetOwnerOf("web-3", pod.get(), ep.get()).has_value());
  pod->metadata.owner_references.push_back(
      {.api_version = "apps/v1", .kind = "StatefulSet", .name = "web", .uid = "s",
       .controller = true});
  EXPECT_TRUE(StatefulSetOwnerOf("web-3", pod.get(), nullptr).has_value());
  pod->metadata.owner_references[0].kind = "ReplicaSet";
  EXPECT_FALSE(StatefulSetOwnerOf("web-3", pod.get(), nullptr).has_value());

  api::StatefulSet sts;
  sts.metadata.name = "web";
  sts.spec.replicas = 2;
  sts.spec.ordinals = api::StatefulSetOrdinals{.start = 2};
  EXPECT_TRUE(IsValidStatefulSetPod(*ref, &sts));  // 2 <= 3 < 4
  EXPECT_FALSE(IsValidStatefulSetPod({"web", 4}, &sts));
  EXPECT_FALSE(IsValidStatefulSetPod({"web", 1}, &sts));
  EXPECT_FALSE(IsValidStatefulSetPod(*ref, nullptr));
  sts.metadata.deletion_timestamp = api::Time{kNow};
  EXPECT_FALSE(IsValidStatefulSetPod(*ref, &sts));
}

TEST(GCPolicy, Helpers) {
  auto pod = Pod("u", "Succeeded");
  EXPECT_FALSE(PodFinishedAt(*pod).has_value());
  SetFinishedAt(pod.get(), kNow - absl::Seconds(5));
  SetFinishedAt(pod.get(), kNow - absl::Seconds(2));
  api::ContainerStatus junk;
  junk.name = "j";
  junk.unknown = {{"state", {{"terminated", {{"finishedAt", "garbage"}}}}}};
  pod->status.container_statuses.push_back(junk);
  junk.unknown = {{"state", "weird"}};
  pod->status.container_statuses.push_back(junk);
  EXPECT_EQ(PodFinishedAt(*pod), kNow - absl::Seconds(2));

  auto ep = Endpoint("u", {"10.0.0.5/24"});
  api::IPAllocationDetail d;
  d.interface_ = "net1";
  d.ipv6 = "fd00::0:5/64";
  ep->status->current.ips.push_back(d);
  EXPECT_TRUE(EndpointHasIP(*ep, "10.0.0.5"));
  EXPECT_TRUE(EndpointHasIP(*ep, "fd00::5"));
  EXPECT_FALSE(EndpointHasIP(*ep, "10.0.0.50"));
  EXPECT_FALSE(EndpointHasIP(api::SpiderEndpoint{}, "10.0.0.5"));
}

}  // namespace
}  // namespace spiderpool::op::ipam
