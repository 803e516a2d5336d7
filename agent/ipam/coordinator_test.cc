// GET /v1/coordinator/config's backend: the conversion of a SpiderCoordinator (defaults, the
// `disabled` -> `disable` quirk, bare IPs as CIDRs, phase checks), and CoordinatorConfigSource
// on the loopback API server (or a real cluster through SPIDERPOOL_TEST_KUBECONFIG) reading
// its informer and the IPAM service's pod cache (the default-route-nic annotation).
#include "agent/ipam/coordinator.h"

#include <functional>

#include "agent/ipam/test_agent.h"
#include "base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/spider_cluster.h"

namespace spiderpool::agent::ipam {
namespace {

using ::testing::HasSubstr;


api::SpiderCoordinator Synced(api::CoordinatorSpec spec = {}) {
  api::SpiderCoordinator c;
  c.metadata.name = "default";
  c.spec = std::move(spec);
  c.status = api::CoordinatorStatus{.phase = "Synced",
                                    .overlay_pod_cidr = {"10.233.64.0/18"},
                                    .service_cidr = {"10.233.0.0/18", "fd00:10:233::/112"}};
  return c;
}

TEST(CoordinatorConfigFor, DefaultsWhatTheSpecLeavesUnset) {
  api::SpiderCoordinator coord = Synced();
  auto c = CoordinatorConfigFor(&coord, nullptr, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, (ipamapi::CoordinatorConfig{
                    .mode = "auto",
                    .overlay_pod_cidr = {"10.233.64.0/18"},
                    .service_cidr = {"10.233.0.0/18", "fd00:10:233::/112"},
                    .tune_pod_routes = true,
                    .host_rule_table = 500,
                    .pod_rp_filter = 0,
                    .tx_queue_len = 0,
                    .veth_mtu = 1500}));
}

TEST(CoordinatorConfigFor, CopiesTheSpecAndSendsDisabledAsDisable) {
  api::SpiderCoordinator coord = Synced({.mode = "disabled",
                                         .pod_cidr_type = "none",
                                         .hijack_cidr = {"169.254.0.0/16", "10.9.9.9", "fd00::9"},
                                         .policy_routes = {{.dst = "10.7.0.1", .gw = "10.6.0.1"},
                                                           {.dst = "10.8.0.0/16", .gw = "10.6.0.1"}},
                                         .pod_mac_prefix = "0a:1b",
                                         .tune_pod_routes = false,
                                         .pod_default_route_nic = "eth0",
                                         .host_rule_table = 600,
                                         .pod_rp_filter = -1,
                                         .tx_queue_len = 2000,
                                         .veth_link_address = "169.254.100.1",
                                         .veth_mtu = 9000});
  auto c = CoordinatorConfigFor(&coord, nullptr, "default");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mode, "disable");
  EXPECT_EQ(c->hijack_cidr, (std::vector<std::string>{"169.254.0.0/16", "10.9.9.9/32", "fd00::9/128"}));
  ASSERT_EQ(c->policy_routes.size(), 2u);
  EXPECT_EQ(c->policy_routes[0], (ipamapi::CoordinatorRoute{.dst = "10.7.0.1/32", .gw = "10.6.0.1"}));
  EXPECT_EQ(c->pod_mac_prefix, "0a:1b");
  EXPECT_FALSE(c->tune_pod_routes);
  EXPECT_EQ(c->pod_default_route_nic, "eth0");
  EXPECT_EQ(c->host_rule_table, 600);
  EXPECT_EQ(c->pod_rp_filter, -1);
  EXPECT_EQ(c->tx_queue_len, 2000);
  EXPECT_EQ(c->veth_link_address, "169.254.100.1");
  EXPECT_EQ(c->veth_mtu, 9000);
  // What goes on the wire decodes with the contract's own checks (CIDRs, required fields).
  auto wire = ipamapi::FromJson<ipamapi::CoordinatorConfig>(ipamapi::ToJson(*c));
  ASSERT_TRUE(wire.ok()) << wire.status();
  EXPECT_EQ(*wire, *c);
  for (const char* mode : {"auto", "underlay", "overlay"}) {
    coord.spec.mode = mode;
    EXPECT_EQ(CoordinatorConfigFor(&coord, nullptr, "default")->mode, mode);
  }
}

TEST(CoordinatorConfigFor, PodAnnotationOverridesTheDefaultRouteNIC) {
  api::SpiderCoordinator coord = Synced({.pod_default_route_nic = "eth0"});
  api::Pod pod;
  pod.metadata.annotations[std::string(api::kAnnoDefaultRouteNIC)] = "net1";
  EXPECT_EQ(CoordinatorConfigFor(&coord, &pod, "default")->pod_default_route_nic, "net1");
  api::Pod plain;
  EXPECT_EQ(CoordinatorConfigFor(&coord, &plain, "default")->pod_default_route_nic, "eth0");
}

TEST(CoordinatorConfigFor, MissingOrNotSyncedIsFailedPreconditionNamingIt) {
  auto missing = CoordinatorConfigFor(nullptr, nullptr, "default");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("SpiderCoordinator \"default\" not found"));
  EXPECT_EQ(ipamapi::HttpStatusFor(missing.status()), 500);

  api::SpiderCoordinator coord = Synced();
  coord.status->phase = "NotReady";
  coord.status->reason = "no kubeadm-config found";
  auto not_ready = CoordinatorConfigFor(&coord, nullptr, "default");
  EXPECT_EQ(ipamapi::HttpStatusFor(not_ready.status()), 500);
  EXPECT_EQ(not_ready.status().message(),
            "SpiderCoordinator \"default\" is not ready: phase \"NotReady\" "
            "(reason: no kubeadm-config found)");

  coord.status.reset();
  auto no_status = CoordinatorConfigFor(&coord, nullptr, "default");
  EXPECT_EQ(ipamapi::HttpStatusFor(no_status.status()), 500);
  EXPECT_THAT(std::string(no_status.status().message()), HasSubstr("phase unset"));
}

// ---- against the (loopback) API server ------------------------------------------------------

class CoordinatorSourceTest : public kube::testing::SpiderClusterTest {
 protected:
  void SetUp() override {
    SpiderClusterTest::SetUp();
    if (HasFatalFailure()) return;
    ns_ = cluster_->ns();
    // Not `default`: on a real cluster that one belongs to the cluster.
    name_ = base::StrCat(ns_, "-coordinator");
    node_ = base::StrCat(ns_, "-node");
    api::Node node;
    node.metadata.name = node_;
    ASSERT_TRUE(kube::Client<api::Node>(cluster_->rest()).Create(node).ok());
  }

  void TearDown() override {
    source_.reset();
    agent_.reset();
    if (cluster_ == nullptr) return;
    (void)kube::Client<api::SpiderCoordinator>(cluster_->rest()).Delete("", name_);
    (void)kube::Client<api::Node>(cluster_->rest()).Delete("", node_);
    SpiderClusterTest::TearDown();
  }

  api::Pod CreatePod(std::string name, std::string node,
                     std::map<std::string, std::string> annotations = {}) {
    api::Pod pod;
    pod.metadata.name = std::move(name);
    pod.metadata.namespace_ = ns_;
    pod.metadata.annotations = std::move(annotations);
    pod.spec.node_name = std::move(node);
    pod.spec.containers.push_back({.name = "c", .image = "busybox"});
    auto created = kube::Client<api::Pod>(cluster_->rest()).Create(pod);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : pod;
  }

  // The agent's wiring (main.cc): the shared caches' coordinator and pods feed the source.
  void StartAgent() {
    auto rest = cluster_->NewRest();
    ASSERT_TRUE(rest.ok());
    agent_ = std::make_unique<TestAgent>(*rest, ServiceOptions{.node_name = node_}, name_);
    ASSERT_TRUE(agent_->service.WaitForSync(absl::Seconds(30)));
    source_ = std::make_unique<CoordinatorConfigSource>(&agent_->caches.coordinator,
                                                        &agent_->caches.pods, name_);
    ASSERT_TRUE(source_->WaitForSync(absl::Seconds(30)));
  }

  // Polls until `ok` holds for the answer (the informer catches up with our writes).
  absl::StatusOr<ipamapi::CoordinatorConfig> Await(
      const ipamapi::GetCoordinatorArgs& args,
      const std::function<bool(const absl::StatusOr<ipamapi::CoordinatorConfig>&)>& ok) {
    absl::StatusOr<ipamapi::CoordinatorConfig> last = absl::UnknownError("not asked");
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      last = source_->GetCoordinatorConfig(args);
      if (ok(last)) return last;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return last;
  }

  std::string ns_, name_, node_;
  std::unique_ptr<TestAgent> agent_;
  std::unique_ptr<CoordinatorConfigSource> source_;
};

TEST_F(CoordinatorSourceTest, ServesTheSyncedCoordinatorWithThePodsOverride) {
  StartAgent();
  const ipamapi::GetCoordinatorArgs no_pod;
  // Missing: 500 naming it.
  auto missing = source_->GetCoordinatorConfig(no_pod);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(name_));

  kube::Client<api::SpiderCoordinator> coordinators(cluster_->rest());
  api::SpiderCoordinator coord;
  coord.metadata.name = name_;
  coord.spec = {.mode = "disabled",
                .pod_cidr_type = "none",
                .hijack_cidr = {"10.9.9.9"},
                .pod_default_route_nic = "eth0"};
  auto created = coordinators.Create(coord);
  ASSERT_TRUE(created.ok()) << created.status();

  // Created, but the controller has not synced it yet.
  auto unsynced = Await(no_pod, [](const auto& r) {
    return r.status().code() == absl::StatusCode::kFailedPrecondition &&
           r.status().message().find("not ready") != absl::string_view::npos;
  });
  EXPECT_THAT(std::string(unsynced.status().message()), HasSubstr("is not ready"));

  created->status = api::CoordinatorStatus{.phase = "NotReady", .reason = "no service CIDR found"};
  auto updated = coordinators.UpdateStatus(*created);
  ASSERT_TRUE(updated.ok()) << updated.status();
  auto not_ready = Await(no_pod, [](const auto& r) {
    return r.status().message().find("no service CIDR found") != absl::string_view::npos;
  });
  EXPECT_EQ(not_ready.status().message(),
            base::StrCat("SpiderCoordinator \"", name_,
                         "\" is not ready: phase \"NotReady\" (reason: no service CIDR found)"));

  updated->status = api::CoordinatorStatus{.phase = "Synced",
                                           .overlay_pod_cidr = {"10.233.64.0/18"},
                                           .service_cidr = {"10.233.0.0/18"}};
  ASSERT_TRUE(coordinators.UpdateStatus(*updated).ok());
  auto config = Await(no_pod, [](const auto& r) { return r.ok(); });
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mode, "disable");
  EXPECT_EQ(config->overlay_pod_cidr, std::vector<std::string>{"10.233.64.0/18"});
  EXPECT_EQ(config->service_cidr, std::vector<std::string>{"10.233.0.0/18"});
  EXPECT_EQ(config->hijack_cidr, std::vector<std::string>{"10.9.9.9/32"});
  EXPECT_EQ(config->pod_default_route_nic, "eth0");
  // Defaults whether or not a webhook applied them (the loopback server runs none).
  EXPECT_TRUE(config->tune_pod_routes);
  EXPECT_EQ(config->host_rule_table, 500);
  EXPECT_EQ(config->veth_mtu, 1500);

  // A pod of this node with the annotation: its NIC; without it: the spec's.
  api::Pod annotated =
      CreatePod("annotated", node_, {{std::string(api::kAnnoDefaultRouteNIC), "net1"}});
  api::Pod plain = CreatePod("plain", node_);
  auto with_override =
      Await({.pod_name = "annotated", .pod_namespace = ns_},
            [](const auto& r) { return r.ok() && r->pod_default_route_nic == "net1"; });
  ASSERT_TRUE(with_override.ok()) << with_override.status();
  EXPECT_EQ(with_override->pod_default_route_nic, "net1");
  EXPECT_EQ(with_override->mode, "disable");
  auto without = source_->GetCoordinatorConfig({.pod_name = "plain", .pod_namespace = ns_});
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(without->pod_default_route_nic, "eth0");
  // A pod the cache does not hold (another node's): no override, no error.
  CreatePod("elsewhere", base::StrCat(ns_, "-other-node"),
            {{std::string(api::kAnnoDefaultRouteNIC), "net2"}});
  auto elsewhere = source_->GetCoordinatorConfig({.pod_name = "elsewhere", .pod_namespace = ns_});
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(elsewhere->pod_default_route_nic, "eth0");

  // Deleted: missing again. (On a real cluster the webhook's finalizer keeps it a while.)
  if (cluster_->real_cluster()) return;
  ASSERT_TRUE(coordinators.Delete("", name_).ok());
  auto gone = Await(no_pod, [](const auto& r) {
    return r.status().message().find("not found") != absl::string_view::npos;
  });
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace spiderpool::agent::ipam
