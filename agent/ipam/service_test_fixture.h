#pragma once
// The fixture of IpamService's tests (service_test.cc: the request flow;
// service_kept_ips_test.cc: StatefulSet and KubeVirt IPs that outlive a pod;
// service_reservation_test.cc: node reservations), against the loopback API server or a real
// cluster through SPIDERPOOL_TEST_KUBECONFIG. Each test file instantiates the suites it uses,
// named by NodeReservationsName.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/ipam/service.h"
#include "agent/ipam/test_agent.h"
#include "api/spider.h"
#include "base/strings.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::agent::ipam {

inline constexpr char kCrdDir[] = "charts/spiderpool/crds";

// Every case runs twice: node reservations off (each ADD writes its record before it returns)
// and on (blocks.h: most ADDs take an IP this node reserved earlier).
class ServiceTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    absl::Status crds = cluster_->ApplyCRDs(kCrdDir);
    ASSERT_TRUE(crds.ok()) << crds;
    ns_ = cluster_->ns();
    for (const char* n : {"a", "b"}) {
      api::Node node;
      node.metadata.name = Node(n);
      node.metadata.labels["zone"] = n;
      ASSERT_TRUE(kube::Client<api::Node>(cluster_->rest()).Create(node).ok());
    }
  }

  void TearDown() override {
    services_.clear();
    if (cluster_ == nullptr) return;
    if (cluster_->loopback() != nullptr) cluster_->loopback()->ClearFaults();
    kube::Client<api::SpiderIPPool> pools(cluster_->rest());
    for (const std::string& p : pools_) (void)pools.Delete("", p);
    for (const char* n : {"a", "b"}) (void)kube::Client<api::Node>(cluster_->rest()).Delete("", Node(n));
  }

  std::string Node(std::string_view n) const { return base::StrCat(ns_, "-node-", n); }
  std::string Pool(std::string_view n) const { return base::StrCat(ns_, "-", n); }

  void CreatePool(std::string_view name, std::string subnet, std::vector<std::string> ips,
                  std::function<void(api::SpiderIPPool&)> edit = nullptr) {
    api::SpiderIPPool pool;
    pool.metadata.name = Pool(name);
    pool.spec.subnet = std::move(subnet);
    pool.spec.ips = std::move(ips);
    if (edit) edit(pool);
    auto created = kube::Client<api::SpiderIPPool>(cluster_->rest()).Create(pool);
    ASSERT_TRUE(created.ok()) << created.status();
    pools_.push_back(pool.metadata.name);
  }

  api::Pod CreatePod(std::string_view name, std::string_view node,
                     std::map<std::string, std::string> annotations = {}) {
    api::Pod pod;
    pod.metadata.name = std::string(name);
    pod.metadata.namespace_ = ns_;
    pod.metadata.annotations = std::move(annotations);
    pod.spec.node_name = Node(node);
    pod.spec.containers.push_back({.name = "c", .image = "busybox"});
    auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : pod;
  }

  IpamService& Agent(std::string_view node, IPAMConfig config = {}) {
    auto rest = cluster_->NewRest();
    EXPECT_TRUE(rest.ok());
    config.node_ip_block_size = GetParam();
    config.node_ip_block_standing = standing_;
    auto s = std::make_unique<TestAgent>(
        *rest, ServiceOptions{.node_name = Node(node),
                              .multus_cluster_network = multus_cluster_network_,
                              .config = config,
                              .prewarm_stagger = prewarm_stagger_});
    EXPECT_TRUE(s->service.WaitForSync(absl::Seconds(30)));
    services_.push_back(std::move(s));
    return services_.back()->service;
  }

  ipamapi::IpamAddArgs Add(const api::Pod& pod, std::string container = "c1",
                           std::string if_name = "eth0") {
    return {.container_id = std::move(container), .if_name = std::move(if_name),
            .net_namespace = "/var/run/netns/x", .pod_namespace = pod.metadata.namespace_,
            .pod_name = pod.metadata.name, .pod_uid = pod.metadata.uid};
  }
  ipamapi::IpamDelArgs Del(const api::Pod& pod, std::string container = "c1") {
    return {.container_id = std::move(container), .if_name = "eth0",
            .pod_namespace = pod.metadata.namespace_, .pod_name = pod.metadata.name,
            .pod_uid = pod.metadata.uid};
  }

  // The pool's pod records (node reservations left out), once every agent has written what
  // it handed out from its reservations.
  api::PoolIPAllocations Records(std::string_view pool) {
    for (const auto& agent : services_) {
      EXPECT_TRUE(agent->service.FlushReservations(Deadline()).ok());
    }
    auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool(pool));
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    auto recs = p->AllocatedIPs();
    EXPECT_TRUE(recs.ok());
    std::erase_if(*recs, [](const auto& kv) { return api::IsNodeReservation(kv.second); });
    EXPECT_EQ(p->status.allocated_ip_count.value_or(0), static_cast<int64_t>(recs->size()))
        << "allocatedIPCount must equal the number of pod records";
    return *recs;
  }

  absl::StatusOr<api::SpiderEndpoint> Endpoint(std::string_view pod) {
    return kube::Client<api::SpiderEndpoint>(cluster_->rest()).Get(ns_, pod);
  }

  absl::Time Deadline() const { return absl::Now() + absl::Seconds(30); }

  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::string ns_;
  std::vector<std::string> pools_;
  std::vector<std::unique_ptr<TestAgent>> services_;
  // nodeIPBlockStanding of the next Agent() (blocks.h point 8). Off unless a case sets it: the
  // cases below count the reservations that pods' demand makes.
  int64_t standing_ = 0;
  // ServiceOptions::prewarm_stagger of the next Agent().
  absl::Duration prewarm_stagger_ = absl::Seconds(1);
  // The Multus cluster network ("ns/name") of the next Agent(); none unless a case sets it.
  std::optional<std::string> multus_cluster_network_;
};

// Reservations (blocks.h): most ADDs of a node need no pool write; the pod records appear in
// the background and the unused reservations go back.
// What only exists with node reservations on: run with a block size, never with them off
// (a skipped "Off" variant would say nothing).
class ReservationTest : public ServiceTest {
 protected:
  // Node "a"'s agent allocates for `pods` pods (most from its reservations), then "crashes":
  // nothing it writes to the pool reaches the server any more. Returns pod -> IP.
  std::map<std::string, std::string> AddThenCrash(int pods) {
    std::map<std::string, std::string> held;
    IpamService& agent = Agent("a");
    for (int i = 0; i < pods; ++i) {
      api::Pod pod = CreatePod(base::StrCat("p", i), "a");
      auto r = agent.Allocate(Add(pod), Deadline());
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok()) break;
      held[pod.metadata.name] = r->ips[0].address;
    }
    EXPECT_GE(agent.block_stats().taken, pods - 1) << "most ADDs should use the reservations";
    cluster_->loopback()->FailNext(100000, 500, {.verb = "update", .resource = "spiderippools/status"});
    services_.clear();
    cluster_->loopback()->ClearFaults();
    return held;
  }
  // This test's nodes' reservations now recorded in `pool` (-1: cannot read it). Only theirs:
  // on a real cluster the agents of its real nodes may reserve in a default pool too.
  int Reservations(std::string_view pool) {
    auto p = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", Pool(pool));
    if (!p.ok()) return -1;
    auto recs = p->AllocatedIPs();
    if (!recs.ok()) return -1;
    int n = 0;
    for (const auto& [ip, rec] : *recs) {
      const std::string node = rec.node.value_or("");
      n += api::IsNodeReservation(rec) && (node == Node("a") || node == Node("b"));
    }
    return n;
  }
};

// The instantiations' names: "Off" (no node reservations) or "Block<size>".
inline std::string NodeReservationsName(const ::testing::TestParamInfo<int64_t>& p) {
  return p.param == 0 ? std::string("Off") : base::StrCat("Block", p.param);
}

}  // namespace spiderpool::agent::ipam
