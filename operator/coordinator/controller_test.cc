// The SpiderCoordinator status controller, wired with AddToManager, against the loopback API
// server (or a real cluster through SPIDERPOOL_TEST_KUBECONFIG). Everything is scoped: the
// "system namespace" is the test namespace, the coordinators, Calico IPPools and ServiceCIDRs
// the controller sees carry the test's label, and every expectation is an end state polled
// with a bounded deadline. Tests that need a resource the loopback server registers on demand
// (ServiceCIDRs, Calico IPPools) or fault injection skip on a real cluster.

#include "operator/coordinator/controller.h"


#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "absl/strings/str_join.h"
#include "api/codec.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/testing/wait.h"
#include "kube/controller/manager.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::op::coordinator {
namespace {

using ::spiderpool::base::testing::WaitUntil;

using api::SpiderCoordinator;
using base::Json;
using Strings = std::vector<std::string>;

constexpr char kCrdDir[] = "charts/spiderpool/crds";
constexpr char kTestLabel[] = "coordinator-test.spiderpool.spidernet.io/ns";


class CoordinatorControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = kube::testing::TestCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    absl::Status crds = cluster_->ApplyCRDs(kCrdDir);
    ASSERT_TRUE(crds.ok()) << crds;
    auto rest = cluster_->NewRest();
    ASSERT_TRUE(rest.ok()) << rest.status();
    rest_ = *rest;
  }

  // Starts the controller (separately, so a test can prepare faults and resources first).
  void StartController() {
    manager_ = std::make_unique<kube::Manager>(kube::ManagerOptions{.name = "coordinator-test"});
    const std::string selector = base::StrCat(kTestLabel, "=", ns());
    auto ctrl = AddToManager(manager_.get(), rest_,
                             {.system_namespace = ns(),
                              .coordinator_selector = selector,
                              .source_selector = selector,
                              .resync = absl::Seconds(1),
                              .registry = &registry_});
    ASSERT_TRUE(ctrl.ok()) << ctrl.status();
    run_ = std::jthread([this] { result_ = manager_->Run(stop_.get_token()); });
  }

  void TearDown() override {
    stop_.request_stop();
    if (run_.joinable()) run_.join();
    EXPECT_TRUE(result_.ok()) << result_;
    manager_.reset();
    if (cluster_ == nullptr) return;
    // Cluster-scoped objects outlive the test namespace: delete what this test created.
    for (const std::string& name : coordinators_) (void)Coordinators().Delete("", name);
    for (const auto& [resource, name] : cluster_objects_) {
      (void)kube::DynamicClient(cluster_->rest(), resource).Delete("", name);
    }
  }

  const std::string& ns() const { return cluster_->ns(); }
  Json TestLabels() const { return {{kTestLabel, ns()}}; }

  kube::DynamicClient Coordinators() const {
    return kube::DynamicClient(cluster_->rest(), SpiderCoordinator::Resource());
  }

  // Creates a coordinator named after the test namespace; returns its name.
  std::string CreateCoordinator(const std::string& suffix, const std::string& pod_cidr_type) {
    const std::string name = base::StrCat(ns(), "-", suffix);
    auto created = Coordinators().Create({{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
                                          {"kind", "SpiderCoordinator"},
                                          {"metadata", {{"name", name}, {"labels", TestLabels()}}},
                                          {"spec", {{"podCIDRType", pod_cidr_type}}}});
    EXPECT_TRUE(created.ok()) << created.status();
    coordinators_.push_back(name);
    return name;
  }
  void SetPodCIDRType(const std::string& name, const std::string& type) {
    auto patched = Coordinators().Patch("", name, kube::PatchType::kMerge,
                                        {{"spec", {{"podCIDRType", type}}}});
    ASSERT_TRUE(patched.ok()) << patched.status();
  }

  std::optional<api::CoordinatorStatus> Status(const std::string& name) const {
    auto c = kube::Client<SpiderCoordinator>(cluster_->rest()).Get("", name);
    if (!c.ok()) return std::nullopt;
    return c->status;
  }
  // Waits until the coordinator's status is exactly this; on timeout the test fails with
  // the status it has.
  void ExpectStatus(const std::string& name, std::string_view phase, const Strings& overlay,
                    const Strings& service) {
    const bool ok = WaitUntil([&] {
      auto s = Status(name);
      return s.has_value() && s->phase == phase && s->overlay_pod_cidr == overlay &&
             s->service_cidr == service && (phase != "Synced" || s->reason.empty());
    });
    if (ok) return;
    auto s = Status(name);
    ADD_FAILURE() << "coordinator " << name << " wants " << phase << " overlay [" << absl::StrJoin(overlay, ",")
                  << "] service [" << absl::StrJoin(service, ",") << "], has "
                  << (s.has_value()
                          ? base::StrCat(s->phase, " overlay [", absl::StrJoin(s->overlay_pod_cidr, ","),
                                         "] service [", absl::StrJoin(s->service_cidr, ","), "] reason \"",
                                         s->reason, "\"")
                          : std::string("no status"));
  }
  // Waits for NotReady with a reason containing every one of `words`, and no CIDRs.
  void ExpectNotReady(const std::string& name, const Strings& words) {
    const bool ok = WaitUntil([&] {
      auto s = Status(name);
      if (!s.has_value() || s->phase != "NotReady" || !s->overlay_pod_cidr.empty() ||
          !s->service_cidr.empty()) {
        return false;
      }
      for (const auto& w : words) {
        if (s->reason.find(w) == std::string::npos) return false;
      }
      return true;
    });
    auto s = Status(name);
    EXPECT_TRUE(ok) << "coordinator " << name << ": "
                    << (s.has_value() ? s->phase + " reason \"" + s->reason + "\""
                                      : std::string("no status"));
  }

  // A control-plane pod (as kubeadm's static pods: label component=<component>).
  void CreateControlPlanePod(const std::string& name, const std::string& component,
                             const Strings& command, const Strings& args = {}) {
    Json container = {
        {"name", component}, {"image", "registry.k8s.io/pause:3.9"}, {"command", command}};
    if (!args.empty()) container["args"] = args;
    auto created =
        kube::DynamicClient(cluster_->rest(), api::Pod::Resource())
            .Create({{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata",
                      {{"name", name},
                       {"namespace", ns()},
                       {"labels", {{"component", component}, {"tier", "control-plane"}}}}},
                     {"spec", {{"containers", {container}}}}});
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void PutConfigMap(const std::string& name, const Json& data) {
    kube::DynamicClient cms(cluster_->rest(), api::ConfigMap::Resource());
    Json cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", name}, {"namespace", ns()}}},
               {"data", data}};
    auto existing = cms.Get(ns(), name);
    if (kube::IsNotFound(existing.status())) {
      auto created = cms.Create(cm);
      ASSERT_TRUE(created.ok()) << created.status();
      return;
    }
    ASSERT_TRUE(existing.ok()) << existing.status();
    auto patched = cms.Patch(ns(), name, kube::PatchType::kMerge, {{"data", data}});
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  static std::string KubeadmClusterConfiguration(const std::string& pod_subnet,
                                                 const std::string& service_subnet) {
    std::string yaml =
        "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\n"
        "kubernetesVersion: v1.28.2\nnetworking:\n  dnsDomain: cluster.local\n";
    if (!pod_subnet.empty()) yaml += "  podSubnet: " + pod_subnet + "\n";
    if (!service_subnet.empty()) yaml += "  serviceSubnet: " + service_subnet + "\n";
    return yaml;
  }

  // Loopback only: serve a resource a cluster may or may not have.
  bool ServeOnLoopback(const api::ResourceInfo& info) {
    if (cluster_->loopback() == nullptr) return false;
    absl::Status s = cluster_->loopback()->RegisterResource(info);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok();
  }
  bool ServeCalicoIPPools() { return ServeOnLoopback(CalicoIPPoolResource()); }
  bool ServeServiceCIDRs() { return ServeOnLoopback(ServiceCIDRResource("v1")); }
  // Creates a cluster-scoped object of `resource` (labelled for this test).
  void CreateClusterObject(const api::ResourceInfo& resource, const std::string& name,
                           const Json& spec) {
    const std::string full = base::StrCat(ns(), "-", name);
    auto created =
        kube::DynamicClient(cluster_->rest(), resource)
            .Create({{"metadata", {{"name", full}, {"labels", TestLabels()}}}, {"spec", spec}});
    ASSERT_TRUE(created.ok()) << created.status();
    cluster_objects_.emplace_back(resource, full);
  }

  double Metric(const std::string& family, const std::string& label, const std::string& value) {
    return registry_.AddCounter(family, "").WithLabels({{label, value}}).Value();
  }

  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::shared_ptr<kube::RestClient> rest_;
  kube::metrics::Registry registry_;
  std::unique_ptr<kube::Manager> manager_;
  std::stop_source stop_;
  absl::Status result_;
  std::jthread run_;
  Strings coordinators_;
  std::vector<std::pair<api::ResourceInfo, std::string>> cluster_objects_;
};

// cluster: --cluster-cidr of kube-controller-manager; the service CIDR from kube-apiserver's
// --service-cluster-ip-range, since the ServiceCIDR API is not served (404) on the loopback
// server.
TEST_F(CoordinatorControllerTest, ClusterFromControlPlanePods) {
  if (cluster_->real_cluster()) GTEST_SKIP() << "needs a server without ServiceCIDRs";
  CreateControlPlanePod(
      "kube-controller-manager-node1", "kube-controller-manager",
      {"kube-controller-manager", "--allocate-node-cidrs=true",
       "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56", "--service-cluster-ip-range=10.99.0.0/16"});
  CreateControlPlanePod(
      "kube-apiserver-node1", "kube-apiserver", {"kube-apiserver"},
      {"--secure-port=6443", "--service-cluster-ip-range", "10.96.0.0/12,fd00:10:96::/112"});
  StartController();
  const std::string name = CreateCoordinator("cluster", "cluster");
  ExpectStatus(name, "Synced", {"10.244.0.0/16", "fd00:10:244::/56"},
               {"10.96.0.0/12", "fd00:10:96::/112"});
}

// cluster from kubeadm-config alone (no control-plane pods), service CIDR from its
// networking.serviceSubnet (ServiceCIDR API not served).
TEST_F(CoordinatorControllerTest, ClusterFromKubeadmConfig) {
  if (cluster_->real_cluster()) GTEST_SKIP() << "needs a server without ServiceCIDRs";
  PutConfigMap("kubeadm-config", {{"ClusterConfiguration",
                                   KubeadmClusterConfiguration("172.20.0.0/16", "172.21.0.0/16")}});
  StartController();
  const std::string name = CreateCoordinator("kubeadm", "cluster");
  ExpectStatus(name, "Synced", {"172.20.0.0/16"}, {"172.21.0.0/16"});
}

// Nothing to read: NotReady naming what is missing; then kubeadm-config appears (a watched
// source) and the coordinator converges; then the spec changes to none.
TEST_F(CoordinatorControllerTest, NotReadyUntilASourceAppearsThenFollowsEdits) {
  StartController();
  const std::string name = CreateCoordinator("late", "cluster");
  ExpectNotReady(name, {"kube-controller-manager", "--cluster-cidr",
                        base::StrCat("ConfigMap ", ns(), "/kubeadm-config not found")});

  PutConfigMap("kubeadm-config",
               {{"ClusterConfiguration", KubeadmClusterConfiguration("", "10.96.0.0/12")}});
  ExpectNotReady(name, {"networking.podSubnet"});

  PutConfigMap("kubeadm-config", {{"ClusterConfiguration",
                                   KubeadmClusterConfiguration("10.244.0.0/16", "10.96.0.0/12")}});
  if (cluster_->real_cluster()) {
    // A real cluster may serve ServiceCIDRs of its own (filtered out here) or not: only the
    // pod side is deterministic.
    ASSERT_TRUE(WaitUntil([&] {
      auto s = Status(name);
      return s.has_value() && s->phase == "Synced" &&
             s->overlay_pod_cidr == Strings{"10.244.0.0/16"};
    }));
  } else {
    ExpectStatus(name, "Synced", {"10.244.0.0/16"}, {"10.96.0.0/12"});
  }

  // An edit of the kubeadm-config moves the status along.
  PutConfigMap("kubeadm-config", {{"ClusterConfiguration",
                                   KubeadmClusterConfiguration("10.245.0.0/16", "10.96.0.0/12")}});
  ASSERT_TRUE(WaitUntil([&] {
    auto s = Status(name);
    return s.has_value() && s->overlay_pod_cidr == Strings{"10.245.0.0/16"};
  }));

  // An edit of the coordinator's spec too: none publishes no pod CIDR and is Synced.
  SetPodCIDRType(name, "none");
  ASSERT_TRUE(WaitUntil([&] {
    auto s = Status(name);
    return s.has_value() && s->phase == "Synced" && s->overlay_pod_cidr.empty() &&
           !s->service_cidr.empty();
  }));
}

TEST_F(CoordinatorControllerTest, NoneIsSyncedWithoutAnySource) {
  if (cluster_->real_cluster()) GTEST_SKIP() << "a real cluster may serve ServiceCIDRs";
  StartController();
  const std::string name = CreateCoordinator("none", "none");
  ExpectStatus(name, "Synced", {}, {});
}

TEST_F(CoordinatorControllerTest, CiliumConfigMapAndItsEdits) {
  StartController();
  const std::string name = CreateCoordinator("cilium", "cilium");
  ExpectNotReady(name, {base::StrCat("ConfigMap ", ns(), "/cilium-config not found")});

  PutConfigMap("cilium-config", {{"ipam", "cluster-pool"},
                                 {"cluster-pool-ipv4-cidr", "10.0.0.0/8 172.16.0.0/12"},
                                 {"cluster-pool-ipv6-cidr", "fd00::/104"}});
  ASSERT_TRUE(WaitUntil([&] {
    auto s = Status(name);
    return s.has_value() && s->phase == "Synced" &&
           s->overlay_pod_cidr == Strings{"10.0.0.0/8", "172.16.0.0/12", "fd00::/104"};
  }));

  PutConfigMap("cilium-config", {{"cluster-pool-ipv6-cidr", "not-a-cidr"}});
  ExpectNotReady(name, {"not-a-cidr", "is not a CIDR"});

  PutConfigMap("cilium-config", {{"ipam", "multi-pool"}, {"cluster-pool-ipv6-cidr", "fd00::/104"}});
  ExpectNotReady(name, {"multi-pool", "not supported"});

  // ipam=kubernetes: the cluster's pod CIDRs.
  CreateControlPlanePod("kube-controller-manager-a", "kube-controller-manager",
                        {"kube-controller-manager", "--cluster-cidr=10.42.0.0/16"});
  PutConfigMap("cilium-config", {{"ipam", "kubernetes"}});
  ASSERT_TRUE(WaitUntil([&] {
    auto s = Status(name);
    return s.has_value() && s->phase == "Synced" && s->overlay_pod_cidr == Strings{"10.42.0.0/16"};
  }));
}

TEST_F(CoordinatorControllerTest, CalicoIPPools) {
  StartController();
  const std::string name = CreateCoordinator("calico", "calico");
  if (!ServeCalicoIPPools())
    GTEST_SKIP() << "Calico IPPools are served by the loopback server only";
  // Served, but no IPPool of this test yet.
  ExpectNotReady(name, {"no enabled Calico IPPool"});
  const api::ResourceInfo& ippools = CalicoIPPoolResource();
  CreateClusterObject(ippools, "default-ipv4", {{"cidr", "10.244.0.0/16"}});
  CreateClusterObject(ippools, "old", {{"cidr", "10.100.0.0/16"}, {"disabled", true}});
  CreateClusterObject(ippools, "default-ipv6", {{"cidr", "fd00:10:244::/56"}});
  // Not watched: picked up by the periodic requeue (1 s here).
  ASSERT_TRUE(WaitUntil([&] {
    auto s = Status(name);
    return s.has_value() && s->phase == "Synced" &&
           s->overlay_pod_cidr == Strings{"10.244.0.0/16", "fd00:10:244::/56"};
  }));
}

TEST_F(CoordinatorControllerTest, CalicoNotServedIsNotReady) {
  if (cluster_->real_cluster()) GTEST_SKIP() << "a real cluster may run Calico";
  StartController();
  const std::string name = CreateCoordinator("nocalico", "calico");
  ExpectNotReady(name, {"Calico IPPools", "not served"});
}

// auto: cluster while there is neither Calico nor Cilium, cilium once cilium-config exists,
// calico once it has an IPPool.
TEST_F(CoordinatorControllerTest, AutoPicksCalicoThenCiliumThenCluster) {
  if (cluster_->real_cluster()) GTEST_SKIP() << "a real cluster runs some CNI of its own";
  PutConfigMap("kubeadm-config", {{"ClusterConfiguration",
                                   KubeadmClusterConfiguration("10.244.0.0/16", "10.96.0.0/12")}});
  StartController();
  const std::string name = CreateCoordinator("auto", "auto");
  ExpectStatus(name, "Synced", {"10.244.0.0/16"}, {"10.96.0.0/12"});

  PutConfigMap("cilium-config", {{"cluster-pool-ipv4-cidr", "10.0.0.0/8"}});
  ExpectStatus(name, "Synced", {"10.0.0.0/8"}, {"10.96.0.0/12"});

  ASSERT_TRUE(ServeCalicoIPPools());
  CreateClusterObject(CalicoIPPoolResource(), "pool", {{"cidr", "192.168.0.0/16"}});
  ExpectStatus(name, "Synced", {"192.168.0.0/16"}, {"10.96.0.0/12"});

  // Its only IPPool disabled: still Calico's cluster, now without a CIDR; the reason says
  // what auto resolved to.
  auto patched = kube::DynamicClient(cluster_->rest(), CalicoIPPoolResource())
                     .Patch("", base::StrCat(ns(), "-pool"), kube::PatchType::kMerge,
                            {{"spec", {{"disabled", true}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  ExpectNotReady(name, {"podCIDRType auto resolved to calico", "no enabled Calico IPPool"});
}

// The ServiceCIDR API, when served, wins over the flags and kubeadm-config, and its edits
// are followed.
TEST_F(CoordinatorControllerTest, ServiceCIDRObjects) {
  PutConfigMap("kubeadm-config", {{"ClusterConfiguration",
                                   KubeadmClusterConfiguration("10.244.0.0/16", "10.96.0.0/12")}});
  StartController();
  const std::string name = CreateCoordinator("svc", "cluster");
  if (!cluster_->real_cluster()) ExpectStatus(name, "Synced", {"10.244.0.0/16"}, {"10.96.0.0/12"});
  if (cluster_->real_cluster()) {
    auto served = kube::DynamicClient(cluster_->rest(), ServiceCIDRResource("v1")).List("");
    if (!served.ok())
      GTEST_SKIP() << "this cluster does not serve networking.k8s.io/v1 ServiceCIDRs";
  } else {
    ASSERT_TRUE(ServeServiceCIDRs());
  }
  CreateClusterObject(ServiceCIDRResource("v1"), "primary",
                      {{"cidrs", {"10.112.0.0/16", "fd00:112::/112"}}});
  ExpectStatus(name, "Synced", {"10.244.0.0/16"}, {"10.112.0.0/16", "fd00:112::/112"});
  CreateClusterObject(ServiceCIDRResource("v1"), "secondary", {{"cidrs", {"10.113.0.0/16"}}});
  ExpectStatus(name, "Synced", {"10.244.0.0/16"},
               {"10.112.0.0/16", "fd00:112::/112", "10.113.0.0/16"});
}

// A 409 on the status update is retried through the queue, not counted as an error.
TEST_F(CoordinatorControllerTest, ConflictOnStatusUpdateIsRetried) {
  auto* lb = cluster_->loopback();
  if (lb == nullptr) GTEST_SKIP() << "needs fault injection";
  PutConfigMap("kubeadm-config", {{"ClusterConfiguration",
                                   KubeadmClusterConfiguration("10.244.0.0/16", "10.96.0.0/12")}});
  lb->FailNext(2, 409, {.verb = "update", .resource = "spidercoordinators/status"});
  StartController();
  const std::string name = CreateCoordinator("conflict", "cluster");
  ExpectStatus(name, "Synced", {"10.244.0.0/16"}, {"10.96.0.0/12"});
  EXPECT_GE(Metric("workqueue_retries_total", "name", kControllerName), 2);
  EXPECT_EQ(Metric("controller_runtime_reconcile_errors_total", "controller", kControllerName), 0);
}

// An up-to-date status is not rewritten on every resync.
TEST_F(CoordinatorControllerTest, NoWriteWhenUnchanged) {
  PutConfigMap("kubeadm-config", {{"ClusterConfiguration",
                                   KubeadmClusterConfiguration("10.244.0.0/16", "10.96.0.0/12")}});
  StartController();
  const std::string name = CreateCoordinator("steady", "cluster");
  ASSERT_TRUE(WaitUntil([&] {
    auto s = Status(name);
    return s.has_value() && s->phase == "Synced";
  }));
  auto before = kube::Client<SpiderCoordinator>(cluster_->rest()).Get("", name);
  ASSERT_TRUE(before.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two resync periods
  auto after = kube::Client<SpiderCoordinator>(cluster_->rest()).Get("", name);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->metadata.resource_version, before->metadata.resource_version);
}

}  // namespace
}  // namespace spiderpool::op::coordinator
