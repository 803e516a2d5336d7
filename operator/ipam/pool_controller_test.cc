// PoolController against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): counts corrected and kept in step with SpiderReservedIPs, no
// write when nothing changed, finalizers of pools and subnets removed once empty, subnet
// controlledIPPools rebuilt.

#include "operator/ipam/pool_controller.h"

#include <gtest/gtest.h>

#include <thread>

#include "kube/rest/errors.h"
#include "operator/ipam/test_env.h"

namespace spiderpool::op::ipam {
namespace {

using testing::TestEnv;
using testing::WaitUntil;

class PoolControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = TestEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
  }
  void StartController() {
    ctrl_ = std::make_unique<PoolController>(
        PoolControllerOptions{.registry = &env_->registry()}, env_->rest(), env_->caches());
    informers_ = env_->RunInformers();
    ASSERT_TRUE(env_->WaitSynced());
    run_ = std::jthread([this](std::stop_token s) { run_status_ = ctrl_->Run(s); });
  }
  void TearDown() override {
    if (run_.joinable()) {
      run_.request_stop();
      run_.join();
      EXPECT_TRUE(run_status_.ok()) << run_status_;
    }
    informers_.reset();
    ctrl_.reset();
    env_.reset();
  }

  // Waits until the pool's status counts are (total, allocated, reserved, free); they add up.
  bool WaitCounts(const std::string& pool, int64_t total, int64_t allocated, int64_t reserved,
                  int64_t free) {
    EXPECT_EQ(allocated + reserved + free, total) << "a test expecting counts that do not add up";
    return WaitUntil([&] {
      auto p = env_->GetPool(pool);
      return p.ok() && p->status.total_ip_count == total &&
             p->status.allocated_ip_count == allocated &&
             p->status.reserved_ip_count == reserved && p->status.free_ip_count == free;
    });
  }
  std::string Dump(const std::string& pool) {
    auto p = env_->GetPool(pool);
    return p.ok() ? base::DumpJson(api::Encode(p->status)) : p.status().ToString();
  }

  std::unique_ptr<TestEnv> env_;
  std::unique_ptr<PoolController> ctrl_;
  std::unique_ptr<TestEnv::Running> informers_;
  std::jthread run_;
  absl::Status run_status_;
};

api::PoolIPAllocation Rec(const std::string& pod) {
  return {.pod = "ns1/" + pod, .pod_uid = "uid-" + pod};
}

TEST_F(PoolControllerTest, CountsAreCorrectedAndFollowReservedIPs) {
  const std::string pool = env_->Name("p1");
  ASSERT_TRUE(env_->CreatePool(pool, "10.251.0.0/24", {"10.251.0.10-10.251.0.29"},
                               {"10.251.0.10-10.251.0.11"})
                  .ok());
  // Three records, and an allocatedIPCount that drifted (#1797, #3771).
  ASSERT_TRUE(env_->EditRecords(pool,
                                [](api::PoolIPAllocations* r) {
                                  (*r)["10.251.0.12"] = Rec("a");
                                  (*r)["10.251.0.13"] = Rec("b");
                                  (*r)["10.251.0.20"] = Rec("c");
                                },
                                /*update_count=*/false)
                  .ok());
  StartController();
  ASSERT_TRUE(WaitCounts(pool, 18, 3, 0, 15)) << Dump(pool);

  // Nothing changed: another reconcile writes nothing (resourceVersion unchanged).
  auto before = env_->GetPool(pool);
  ASSERT_TRUE(before.ok());
  auto r = ctrl_->ReconcilePool(pool);
  ASSERT_TRUE(r.ok()) << r.status();
  auto after = env_->GetPool(pool);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->metadata.resource_version, before->metadata.resource_version);

  // Reserving .20-.21: .21 is no longer free but reserved; .20 is allocated already and counts
  // once.
  ASSERT_TRUE(env_->CreateReservedIP(env_->Name("r1"), {"10.251.0.20-10.251.0.21"}).ok());
  ASSERT_TRUE(WaitCounts(pool, 18, 3, 1, 14)) << Dump(pool);
  // A reserved IP elsewhere does not matter; deleting ours gives the IP back.
  ASSERT_TRUE(env_->CreateReservedIP(env_->Name("r2"), {"10.9.9.9"}).ok());
  ASSERT_TRUE(kube::Client<api::SpiderReservedIP>(env_->rest()).Delete("", env_->Name("r1")).ok());
  ASSERT_TRUE(WaitCounts(pool, 18, 3, 0, 15)) << Dump(pool);

  // The agent releases one record: the counts follow.
  ASSERT_TRUE(
      env_->EditRecords(pool, [](api::PoolIPAllocations* r) { r->erase("10.251.0.13"); }).ok());
  ASSERT_TRUE(WaitCounts(pool, 18, 2, 0, 16)) << Dump(pool);
  // The spec grows.
  kube::Client<api::SpiderIPPool> pools(env_->rest());
  ASSERT_TRUE(pools
                  .Patch("", pool, kube::PatchType::kMerge,
                         {{"spec", {{"ips", {"10.251.0.10-10.251.0.39"}}}}})
                  .ok());
  ASSERT_TRUE(WaitCounts(pool, 28, 2, 0, 26)) << Dump(pool);

  std::string metrics = env_->registry().Expose();
  EXPECT_NE(metrics.find("spiderpool_total_ippool_counts 1"), std::string::npos) << metrics;
  // Per pool, for the chart's "pool nearly exhausted" alert: total and free as in the status
  // (from the informer's cache, which may trail the status just read).
  const std::string total =
      "spiderpool_debug_ippool_total_ip_counts{ippool=\"" + pool + "\"} 28\n";
  const std::string free =
      "spiderpool_debug_ippool_available_ip_counts{ippool=\"" + pool + "\"} 26\n";
  EXPECT_TRUE(testing::WaitUntil([&] {
    metrics = env_->registry().Expose();
    return metrics.find(total) != std::string::npos && metrics.find(free) != std::string::npos;
  })) << metrics;
}

// Node reservations (records with a node and no pod, agent/ipam/blocks.h) are shown as
// reservedIPCount: neither allocated (no pod) nor free, so allocated + reserved + free == total
// while agents reserve, hand reserved IPs to pods and give them back.
api::PoolIPAllocation NodeHeld(const std::string& node) {
  return {.pod = "", .pod_uid = "", .node = node};
}

TEST_F(PoolControllerTest, NodeReservationsAreCountedApartAndTheCountsAddUp) {
  const std::string pool = env_->Name("p3");
  ASSERT_TRUE(env_->CreatePool(pool, "10.251.2.0/24", {"10.251.2.10-10.251.2.19"}).ok());
  StartController();
  ASSERT_TRUE(WaitCounts(pool, 10, 0, 0, 10)) << Dump(pool);

  // node1's agent reserves three IPs, node2's one.
  ASSERT_TRUE(env_->EditRecords(pool, [](api::PoolIPAllocations* r) {
                    (*r)["10.251.2.10"] = NodeHeld("node1");
                    (*r)["10.251.2.11"] = NodeHeld("node1");
                    (*r)["10.251.2.12"] = NodeHeld("node1");
                    (*r)["10.251.2.13"] = NodeHeld("node2");
                  }).ok());
  ASSERT_TRUE(WaitCounts(pool, 10, 0, 4, 6)) << Dump(pool);

  // A pod takes one of node1's reservations (the record becomes the pod's), another pod a
  // free IP through the pool.
  ASSERT_TRUE(env_->EditRecords(pool, [](api::PoolIPAllocations* r) {
                    (*r)["10.251.2.10"] = Rec("a");
                    (*r)["10.251.2.14"] = Rec("b");
                  }).ok());
  ASSERT_TRUE(WaitCounts(pool, 10, 2, 3, 5)) << Dump(pool);

  // A SpiderReservedIP over a pod's IP, a node reservation and two free IPs: the free ones are
  // held back too; the others are counted once, as before.
  ASSERT_TRUE(env_->CreateReservedIP(env_->Name("r3"), {"10.251.2.13-10.251.2.16"}).ok());
  ASSERT_TRUE(WaitCounts(pool, 10, 2, 5, 3)) << Dump(pool);

  // node1's agent gives its idle reservations back.
  ASSERT_TRUE(env_->EditRecords(pool, [](api::PoolIPAllocations* r) {
                    r->erase("10.251.2.11");
                    r->erase("10.251.2.12");
                  }).ok());
  ASSERT_TRUE(WaitCounts(pool, 10, 2, 3, 5)) << Dump(pool);
  auto p = env_->GetPool(pool);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->status.allocated_ip_count, 2) << "allocatedIPCount: the pods' IPs only";
}

TEST_F(PoolControllerTest, DeletingPoolKeepsItsFinalizerUntilNoIPIsAllocated) {
  const std::string pool = env_->Name("p2");
  ASSERT_TRUE(env_->CreatePool(pool, "10.251.1.0/24", {"10.251.1.10-10.251.1.19"}).ok());
  ASSERT_TRUE(env_->EditRecords(pool, [](api::PoolIPAllocations* r) {
                    (*r)["10.251.1.10"] = Rec("a");
                  }).ok());
  StartController();
  ASSERT_TRUE(WaitCounts(pool, 10, 1, 0, 9)) << Dump(pool);

  kube::Client<api::SpiderIPPool> pools(env_->rest());
  ASSERT_TRUE(pools.Delete("", pool).ok());
  ASSERT_TRUE(WaitUntil([&] {
    auto p = ctrl_->ReconcilePool(pool);  // reconciles whatever the cache holds now
    auto cached = env_->caches().pools->store().Get(pool);
    return p.ok() && cached != nullptr && cached->metadata.IsDeleting();
  }));
  auto p = env_->GetPool(pool);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->metadata.HasFinalizer(api::kSpiderFinalizer));
  EXPECT_TRUE(p->metadata.IsDeleting());

  // The last record goes: the controller lets the pool go.
  ASSERT_TRUE(env_->EditRecords(pool, [](api::PoolIPAllocations* r) { r->clear(); }).ok());
  ASSERT_TRUE(WaitUntil([&] { return kube::IsNotFound(env_->GetPool(pool).status()); }))
      << Dump(pool);
}

TEST_F(PoolControllerTest, SubnetControlledPoolsCountsAndFinalizer) {
  const std::string subnet = env_->Name("s1");
  const std::string manual = env_->Name("manual");
  ASSERT_TRUE(env_->CreateSubnet(subnet, "10.252.0.0/24", {"10.252.0.10-10.252.0.29"}).ok());
  ASSERT_TRUE(env_->CreatePool(manual, "10.252.0.0/24", {"10.252.0.10-10.252.0.14"}, {},
                               {{std::string(api::kLabelOwnerSpiderSubnet), subnet}})
                  .ok());
  // An application that exists (replicas 0: no pods on a real cluster).
  api::Deployment web;
  web.metadata.namespace_ = env_->ns();
  web.metadata.name = "web";
  web.spec.replicas = 0;
  web.spec.selector = api::LabelSelector{.match_labels = {{"app", "web"}}};
  web.spec.template_.metadata.labels["app"] = "web";
  web.spec.template_.spec.containers.push_back({.name = "c", .image = "registry.k8s.io/pause:3.9"});
  ASSERT_TRUE(kube::Client<api::Deployment>(env_->rest()).Create(web).ok());

  StartController();
  kube::Client<api::SpiderSubnet> subnets(env_->rest());
  auto controlled = [&]() -> api::PoolIPPreAllocations {
    auto s = subnets.Get("", subnet);
    if (!s.ok()) return {};
    auto c = s->ControlledIPPools();
    return c.ok() ? *c : api::PoolIPPreAllocations{};
  };
  auto counts_are = [&](int64_t total, int64_t allocated, int64_t free) {
    auto s = subnets.Get("", subnet);
    return s.ok() && s->status.total_ip_count == total &&
           s->status.allocated_ip_count == allocated && s->status.free_ip_count == free;
  };
  ASSERT_TRUE(WaitUntil([&] {
    auto c = controlled();
    return c.size() == 1 && c.count(manual) && c[manual].ips ==
                                                   std::vector<std::string>{"10.252.0.10-10.252.0.14"};
  }));
  ASSERT_TRUE(WaitUntil([&] { return counts_are(20, 5, 15); }));

  // Auto pools' pre-allocations: one whose application and pool are gone, one whose
  // application exists (its pool is about to be created).
  const std::string app_gone = base::StrCat("apps_v1_Deployment_", env_->ns(), "_gone");
  const std::string app_live = base::StrCat("apps_v1_Deployment_", env_->ns(), "_web");
  ASSERT_TRUE(kube::RetryOnConflict(kube::DefaultRetry(), [&]() -> absl::Status {
                auto s = subnets.Get("", subnet);
                if (!s.ok()) return s.status();
                auto c = s->ControlledIPPools();
                if (!c.ok()) return c.status();
                (*c)["auto4-gone"] = {.ips = {"10.252.0.20-10.252.0.21"}, .application = app_gone};
                (*c)["auto4-web"] = {.ips = {"10.252.0.22"}, .application = app_live};
                // operator/subnet's releasing records follow their pool / application.
                (*c)["auto4-web/releasing"] = {.ips = {"10.252.0.23"}, .application = app_live};
                (*c)["auto4-gone/releasing"] = {.ips = {"10.252.0.24"}, .application = app_gone};
                s->SetControlledIPPools(*c);
                return subnets.UpdateStatus(*s).status();
              }).ok());
  ASSERT_TRUE(WaitUntil([&] {
    auto c = controlled();
    return c.size() == 3 && c.count(manual) && c.count("auto4-web") &&
           c.count("auto4-web/releasing");
  }));
  ASSERT_TRUE(WaitUntil([&] { return counts_are(20, 7, 13); }));
  ASSERT_TRUE(env_->CreateReservedIP(env_->Name("r"), {"10.252.0.29"}).ok());
  ASSERT_TRUE(WaitUntil([&] { return counts_are(20, 7, 12); }));

  // Deletion: held while pools hold IPs of the subnet.
  ASSERT_TRUE(subnets.Delete("", subnet).ok());
  ASSERT_TRUE(
      kube::Client<api::Deployment>(env_->rest()).Delete(env_->ns(), "web").ok());
  auto s = subnets.Get("", subnet);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->metadata.IsDeleting());
  // The manual pool goes (no records: its own finalizer is removed by the controller), which
  // requeues the subnet: both entries go, and so does the subnet.
  ASSERT_TRUE(kube::Client<api::SpiderIPPool>(env_->rest()).Delete("", manual).ok());
  ASSERT_TRUE(WaitUntil([&] { return kube::IsNotFound(subnets.Get("", subnet).status()); }));
}

}  // namespace
}  // namespace spiderpool::op::ipam
