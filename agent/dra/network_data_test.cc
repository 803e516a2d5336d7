// NetworkDataReporter against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): a claim reserved for a pod gets networkData from the pod's
// SpiderEndpoint, follows a re-ADD (new address), and loses it when the endpoint goes.

#include "agent/dra/network_data.h"

#include <gtest/gtest.h>

#include <thread>

#include "base/testing/temp_dir.h"
#include "dra/resourceslice/model.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::agent::dra {
namespace {

namespace rv1 = ::spiderpool::api::resource_v1;
using base::Json;

constexpr char kNode[] = "node-nd";

api::SpiderEndpoint Endpoint(const std::string& ns, const std::string& uid, const std::string& ip,
                             const std::string& pool) {
  api::SpiderEndpoint e;
  e.metadata.name = "pod-a";
  e.metadata.namespace_ = ns;
  e.status.emplace();
  e.status->current = {.uid = uid, .node = kNode,
                       .ips = {{.interface_ = "eth0", .ipv4 = ip, .ipv4_pool = pool}}};
  e.status->owner_controller_type = "Pod";
  e.status->owner_controller_name = "pod-a";
  return e;
}

TEST(NetworkDataFor, PicksTheInterfaceWhosePoolServesTheDevice) {
  api::Device dev{.name = "eth1-0"};
  dev.attributes[::spiderpool::dra::resourceslice::PoolAttributeName("p1")] =
      api::DeviceAttribute::Bool(true);
  api::SpiderEndpoint e = Endpoint("ns", "u1", "10.0.0.5/24", "p0");
  e.status->current.ips.push_back({.interface_ = "net1", .ipv4 = "10.1.0.5/16",
                                  .ipv6 = "fd00::5/64", .ipv4_pool = "p1",
                                  .mac = "aa:bb:cc:dd:ee:ff"});
  auto nd = NetworkDataFor(e, "u1", kNode, &dev);
  ASSERT_TRUE(nd.has_value());
  EXPECT_EQ(nd->interface_name, "net1");
  EXPECT_EQ(nd->ips, (std::vector<std::string>{"10.1.0.5/16", "fd00::5/64"}));
  EXPECT_EQ(nd->hardware_address, "aa:bb:cc:dd:ee:ff");
  // Another pod's endpoint (same name, new UID), another node, no endpoint: none.
  EXPECT_FALSE(NetworkDataFor(e, "u2", kNode, &dev).has_value());
  EXPECT_FALSE(NetworkDataFor(e, "u1", "other", &dev).has_value());
  EXPECT_FALSE(NetworkDataFor(std::nullopt, "u1", kNode, &dev).has_value());
  // Two interfaces, none served by the device: ambiguous, none. One interface: that one.
  EXPECT_FALSE(NetworkDataFor(e, "u1", kNode, nullptr).has_value());
  auto one = NetworkDataFor(Endpoint("ns", "u1", "10.0.0.5/24", "p0"), "u1", kNode, nullptr);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->interface_name, "eth0");
}

class ReporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = kube::testing::TestCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    ASSERT_TRUE(cluster_->ApplyCRDs("charts/spiderpool/crds").ok());
    ns_ = cluster_->ns();
    dir_ = tmp_.path();
    driver_ = std::make_unique<::spiderpool::dra::driver::NetDriver>(
        cluster_->rest(), ::spiderpool::dra::driver::Options{.node_name = kNode,
                                                             .plugin_dir = dir_ + "/plugin",
                                                             .cdi_dir = dir_ + "/cdi"});
  }
  void TearDown() override {
    driver_.reset();
  }

  // A claim allocated on kNode (device eth0-0) and reserved for pod-a with `uid`.
  void CreateClaim(const std::string& uid) {
    kube::DynamicClient claims(cluster_->rest(), rv1::ResourceClaim::Resource());
    Json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", "claim-a"}, {"namespace", ns_}}},
                  {"spec", {{"devices", {{"requests", {{{"name", "nic"},
                     {"exactly", {{"deviceClassName", "netresources.spidernet.io"}}}}}}}}}}};
    auto created = claims.Create(claim);
    ASSERT_TRUE(created.ok()) << created.status();
    Json obj = *created;
    obj["status"] = {{"allocation", {{"devices", {{"results", {{{"request", "nic"},
                        {"driver", "netresources.spidernet.io"}, {"pool", kNode},
                        {"device", "eth0-0"}}}}}}}},
                     {"reservedFor", {{{"resource", "pods"}, {"name", "pod-a"}, {"uid", uid}}}}};
    auto updated = claims.UpdateStatus(obj);
    ASSERT_TRUE(updated.ok()) << updated.status();
  }
  std::optional<rv1::NetworkDeviceData> NetworkData() {
    auto c = kube::Client<rv1::ResourceClaim>(cluster_->rest()).Get(ns_, "claim-a");
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return std::nullopt;
    for (const auto& d : c->status.devices) {
      if (d.device == "eth0-0") return d.network_data;
    }
    return std::nullopt;
  }

  base::testing::TempDir tmp_{"nd"};  // before driver_, which writes into it
  std::unique_ptr<kube::testing::TestCluster> cluster_;
  std::string ns_, dir_;
  std::unique_ptr<::spiderpool::dra::driver::NetDriver> driver_;
};

TEST_F(ReporterTest, WrittenUpdatedAndClearedWithTheEndpoint) {
  CreateClaim("uid-a");
  NetworkDataReporter r(cluster_->rest(), driver_.get(), {.node_name = kNode}, nullptr, nullptr);
  // No endpoint yet (CNI ADD not done): nothing written.
  ASSERT_TRUE(r.Reconcile(ns_, "pod-a").ok());
  EXPECT_FALSE(NetworkData().has_value());
  kube::Client<api::SpiderEndpoint> endpoints(cluster_->rest());
  auto e = endpoints.Create(Endpoint(ns_, "uid-a", "10.6.0.10/16", "pool-a"));
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(r.Reconcile(ns_, "pod-a").ok());
  auto nd = NetworkData();
  ASSERT_TRUE(nd.has_value());
  EXPECT_EQ(nd->interface_name, "eth0");
  EXPECT_EQ(nd->ips, std::vector<std::string>{"10.6.0.10/16"});
  // A re-ADD gave another address.
  e->status->current.ips[0].ipv4 = "10.6.0.11/16";
  ASSERT_TRUE(endpoints.Update(*e).ok());
  ASSERT_TRUE(r.Reconcile(ns_, "pod-a").ok());
  ASSERT_TRUE(NetworkData().has_value());
  EXPECT_EQ(NetworkData()->ips, std::vector<std::string>{"10.6.0.11/16"});
  // Released: the endpoint goes, so does networkData.
  ASSERT_TRUE(endpoints.Delete(ns_, "pod-a").ok());
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {  // a delete is not immediate on a real cluster
    ASSERT_TRUE(r.Reconcile(ns_, "pod-a").ok());
    gone = !NetworkData().has_value();
    if (!gone) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(gone);
}

TEST_F(ReporterTest, TheRunningReporterFollowsEndpointEvents) {
  CreateClaim("uid-b");
  // The agent's shared SpiderEndpoint cache (agent/ipam/caches.h), run here by the test.
  kube::Informer<api::SpiderEndpoint> cache(cluster_->rest());
  NetworkDataReporter r(cluster_->rest(), driver_.get(), {.node_name = kNode}, nullptr, &cache);
  std::jthread informer([&cache](std::stop_token stop) { cache.Run(stop); });
  r.Start();
  kube::Client<api::SpiderEndpoint> endpoints(cluster_->rest());
  ASSERT_TRUE(endpoints.Create(Endpoint(ns_, "uid-b", "10.6.0.20/16", "pool-a")).ok());
  std::optional<rv1::NetworkDeviceData> nd;
  for (int i = 0; i < 100 && !nd.has_value(); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    nd = NetworkData();
  }
  ASSERT_TRUE(nd.has_value());
  EXPECT_EQ(nd->ips, std::vector<std::string>{"10.6.0.20/16"});
  ASSERT_TRUE(endpoints.Delete(ns_, "pod-a").ok());
  for (int i = 0; i < 100 && nd.has_value(); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    nd = NetworkData();
  }
  EXPECT_FALSE(nd.has_value());
  r.Stop();
}

}  // namespace
}  // namespace spiderpool::agent::dra
