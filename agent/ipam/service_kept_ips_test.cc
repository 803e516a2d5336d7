// IpamService: IPs that outlive a pod — a StatefulSet pod's and a KubeVirt VM's (restart, live
// migration, freed with the VM; with enableKubevirtStaticIP off, ordinary pods). The fixture is
// service_test_fixture.h.
#include "agent/ipam/service_test_fixture.h"
#include "api/apps.h"
#include "api/kubevirt.h"
#include "gmock/gmock.h"

namespace spiderpool::agent::ipam {
namespace {

TEST_P(ServiceTest, StatefulSetPodGetsItsIPBackWhenRecreated) {
  CreatePool("v4", "10.60.0.0/24", {"10.60.0.1-10.60.0.9"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a");
  kube::Client<api::StatefulSet> statefulsets(cluster_->rest());
  api::StatefulSet sts;
  sts.metadata.name = "web";
  sts.metadata.namespace_ = ns_;
  sts.spec.replicas = 2;
  sts.spec.selector = api::LabelSelector{.match_labels = {{"app", "web"}}};
  sts.spec.template_.metadata.labels["app"] = "web";
  sts.spec.template_.spec.containers.push_back({.name = "c", .image = "busybox"});
  auto created = statefulsets.Create(sts);
  ASSERT_TRUE(created.ok()) << created.status();
  auto sts_pod = [&](std::string name) {
    api::Pod pod;
    pod.metadata.name = std::move(name);
    pod.metadata.namespace_ = ns_;
    pod.metadata.owner_references.push_back(api::MakeOwnerReference(*created));
    pod.spec.node_name = Node("a");
    pod.spec.containers.push_back({.name = "c", .image = "busybox"});
    auto p = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  };
  // Another pod takes the lowest IP first, so "web-1" does not get it by luck later.
  api::Pod other = CreatePod("other", "a");
  ASSERT_TRUE(agent.Allocate(Add(other), Deadline()).ok());
  api::Pod web1 = sts_pod("web-1");
  auto first = agent.Allocate(Add(web1), Deadline());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->ips[0].address, "10.60.0.2/24");
  // The pod is deleted (a rolling restart): its DEL keeps the IP, the StatefulSet wants it.
  ASSERT_TRUE(agent.Release(Del(web1), Deadline()).ok());
  ASSERT_EQ(Records("v4").size(), 2u);
  // Deleted for good (grace 0: what the kubelet sends once the containers stopped).
  ASSERT_TRUE(kube::Client<api::Pod>(cluster_->rest())
                  .Delete(ns_, "web-1", {.grace_period_seconds = 0})
                  .ok());
  // Meanwhile "other" is gone and a new pod could take the lowest IP...
  ASSERT_TRUE(agent.Release(Del(other), Deadline()).ok());
  // ...but the re-created web-1 (new UID) gets 10.60.0.2 back.
  api::Pod again = sts_pod("web-1");
  ASSERT_NE(again.metadata.uid, web1.metadata.uid);
  auto second = agent.Allocate(Add(again, "c2"), Deadline());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->ips[0].address, "10.60.0.2/24");
  api::PoolIPAllocations recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.at("10.60.0.2").pod_uid, again.metadata.uid);
  auto ep = Endpoint("web-1");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->status->current.uid, again.metadata.uid);
  EXPECT_TRUE(ep->metadata.owner_references.empty()) << "StatefulSet endpoints outlive their pod";

  // Scaled down below its ordinal: now the DEL frees the IP.
  auto cur = statefulsets.Get(ns_, "web");
  ASSERT_TRUE(cur.ok());
  cur->spec.replicas = 1;
  ASSERT_TRUE(statefulsets.Update(*cur).ok());
  ASSERT_TRUE(agent.Release(Del(again, "c2"), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
  EXPECT_TRUE(kube::IsNotFound(Endpoint("web-1").status()));
}

// KubeVirt (reference §2.6): a VM keeps its IP across its pods (restart, live migration), kept
// under the VMI's name, and frees it once the VM is deleted.
TEST_P(ServiceTest, KubevirtVMKeepsItsIPAcrossPodsAndMigration) {
  ASSERT_TRUE(cluster_->ApplyCRDs("kube/testing/testdata/kubevirt-crds", {.keep_existing = true}).ok());
  CreatePool("v4", "10.61.0.0/24", {"10.61.0.1-10.61.0.9"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& node_a = Agent("a", {.enable_ip_conflict_detection = true});
  IpamService& node_b = Agent("b", {.enable_ip_conflict_detection = true});
  kube::DynamicClient vms(cluster_->rest(), api::kubevirt::VMResource());
  kube::DynamicClient vmis(cluster_->rest(), api::kubevirt::VMIResource());
  kube::DynamicClient vmims(cluster_->rest(), api::kubevirt::VMIMResource());
  auto vm = vms.Create({{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachine"},
                        {"metadata", {{"name", "vm1"}, {"namespace", ns_}}}, {"spec", base::Json::object()}});
  ASSERT_TRUE(vm.ok()) << vm.status();
  auto vmi = vmis.Create(
      {{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachineInstance"},
       {"metadata", {{"name", "vm1"}, {"namespace", ns_},
                     {"ownerReferences", {{{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachine"},
                                           {"name", "vm1"}, {"uid", (*vm)["metadata"]["uid"]},
                                           {"controller", true}}}}}},
       {"spec", base::Json::object()}});
  ASSERT_TRUE(vmi.ok()) << vmi.status();
  auto launcher = [&](std::string name, std::string_view node,
                      std::map<std::string, std::string> annotations = {}) {
    api::Pod pod;
    pod.metadata.name = std::move(name);
    pod.metadata.namespace_ = ns_;
    pod.metadata.annotations = std::move(annotations);
    pod.metadata.owner_references.push_back(
        {.api_version = "kubevirt.io/v1", .kind = "VirtualMachineInstance", .name = "vm1",
         .uid = (*vmi)["metadata"]["uid"].get<std::string>(), .controller = true});
    pod.spec.node_name = Node(node);
    pod.spec.containers.push_back({.name = "compute", .image = "virt-launcher"});
    auto p = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  };
  auto delete_pod = [&](const api::Pod& pod) {
    ASSERT_TRUE(kube::Client<api::Pod>(cluster_->rest())
                    .Delete(ns_, pod.metadata.name, {.grace_period_seconds = 0})
                    .ok());
  };

  api::Pod first = launcher("virt-launcher-vm1-aaaaa", "a");
  auto got = node_a.Allocate(Add(first), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  const std::string ip = got->ips[0].address;
  EXPECT_TRUE(got->ips[0].enable_ip_conflict_detection) << "not a migration: detection stays on";
  auto ep = Endpoint("vm1");
  ASSERT_TRUE(ep.ok()) << "the endpoint carries the VMI's name: " << ep.status();
  EXPECT_EQ(ep->status->owner_controller_type, "VirtualMachineInstance");
  EXPECT_EQ(ep->status->owner_controller_name, "vm1");
  EXPECT_TRUE(ep->metadata.owner_references.empty()) << "a VM's endpoint outlives its pods";
  EXPECT_TRUE(kube::IsNotFound(Endpoint(first.metadata.name).status()));
  api::PoolIPAllocations recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod, ns_ + "/vm1");

  // The VM restarts: its pod goes (DEL keeps the IP: the VMI and the VM want it)...
  ASSERT_TRUE(node_a.Release(Del(first), Deadline()).ok());
  delete_pod(first);
  ASSERT_EQ(Records("v4").size(), 1u);
  // ...another pod could take the lowest free IP meanwhile...
  api::Pod other = CreatePod("other", "a");
  auto other_ip = node_a.Allocate(Add(other), Deadline());
  ASSERT_TRUE(other_ip.ok()) << other_ip.status();
  EXPECT_NE(other_ip->ips[0].address, ip);
  ASSERT_TRUE(node_a.Release(Del(other), Deadline()).ok());
  // ...and the VM's new pod, another name and UID, gets the same IP.
  api::Pod second = launcher("virt-launcher-vm1-bbbbb", "a");
  got = node_a.Allocate(Add(second, "c2"), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ips[0].address, ip);
  recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod_uid, second.metadata.uid);

  // Live migration to node b: the target pod gets the same IP, without conflict detection
  // (the source still answers for that IP until the switch-over).
  ASSERT_TRUE(vmims.Create({{"apiVersion", "kubevirt.io/v1"}, {"kind", "VirtualMachineInstanceMigration"},
                            {"metadata", {{"name", "mig1"}, {"namespace", ns_}}},
                            {"spec", {{"vmiName", "vm1"}}}}).ok());
  api::Pod target = launcher("virt-launcher-vm1-ccccc", "b",
                             {{std::string(api::kubevirt::kAnnotationMigrationJobName), "mig1"}});
  got = node_b.Allocate(Add(target, "c3"), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->ips[0].address, ip);
  EXPECT_FALSE(got->ips[0].enable_ip_conflict_detection);
  ep = Endpoint("vm1");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->status->current.uid, target.metadata.uid);
  EXPECT_EQ(ep->status->current.node, Node("b"));
  // The source pod ends: its DEL frees nothing (the IP is the target's now).
  ASSERT_TRUE(node_a.Release(Del(second, "c2"), Deadline()).ok());
  delete_pod(second);
  recs = Records("v4");
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs.begin()->second.pod_uid, target.metadata.uid);

  // The VM is deleted: the last pod's DEL frees the IP and the endpoint.
  ASSERT_TRUE(vms.Delete(ns_, "vm1").ok());
  // The garbage collector may already be deleting the VMI (the VM controls it).
  absl::Status vmi_deleted = vmis.Delete(ns_, "vm1");
  ASSERT_TRUE(vmi_deleted.ok() || kube::IsNotFound(vmi_deleted)) << vmi_deleted;
  for (int i = 0; i < 100 && (vms.Get(ns_, "vm1").ok() || vmis.Get(ns_, "vm1").ok()); ++i) {
    absl::SleepFor(absl::Milliseconds(100));  // a real server may take a moment
  }
  ASSERT_TRUE(node_b.Release(Del(target, "c3"), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
  for (int i = 0; i < 100 && Endpoint("vm1").ok(); ++i) absl::SleepFor(absl::Milliseconds(100));
  EXPECT_TRUE(kube::IsNotFound(Endpoint("vm1").status()));
  (void)vmims.Delete(ns_, "mig1");
}

// With enableKubevirtStaticIP off, a VM's pod is an ordinary pod: its own endpoint, freed on DEL.
TEST_P(ServiceTest, KubevirtStaticIPOffTreatsVMPodsAsStateless) {
  CreatePool("v4", "10.62.0.0/24", {"10.62.0.1-10.62.0.9"}, [](api::SpiderIPPool& p) { p.spec.default_ = true; });
  IpamService& agent = Agent("a", {.enable_kubevirt_static_ip = false});
  api::Pod pod;
  pod.metadata.name = "virt-launcher-vm2-aaaaa";
  pod.metadata.namespace_ = ns_;
  pod.metadata.owner_references.push_back({.api_version = "kubevirt.io/v1",
                                           .kind = "VirtualMachineInstance", .name = "vm2",
                                           .uid = "00000000-0000-0000-0000-000000000002",
                                           .controller = true});
  pod.spec.node_name = Node("a");
  pod.spec.containers.push_back({.name = "compute", .image = "virt-launcher"});
  auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(agent.Allocate(Add(*created), Deadline()).ok());
  auto ep = Endpoint(pod.metadata.name);
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_FALSE(ep->metadata.owner_references.empty());
  EXPECT_TRUE(kube::IsNotFound(Endpoint("vm2").status()));
  ASSERT_TRUE(agent.Release(Del(*created), Deadline()).ok());
  EXPECT_TRUE(Records("v4").empty());
}

INSTANTIATE_TEST_SUITE_P(NodeReservations, ServiceTest, ::testing::Values(0, 16),
                         NodeReservationsName);

}  // namespace
}  // namespace spiderpool::agent::ipam
