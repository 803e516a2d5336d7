// The publisher against the loopback API server (TestCluster). With
// SPIDERPOOL_TEST_KUBECONFIG the same tests run against a real cluster (DRA enabled); the
// ones that need fault injection, an older API version or a Node object skip there.

#include "dra/resourceslice/publisher.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "api/resource_slice.h"
#include "base/clock.h"
#include "base/json.h"
#include "dra/resourceslice/model.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::dra::resourceslice {
namespace {

using base::Json;
using kube::testing::LoopbackOptions;
using kube::testing::TestCluster;

base::IPPrefix P(std::string_view s) { return *base::IPPrefix::Parse(s); }

nic::Nic Nic(std::string name, std::string v4, bool up = true) {
  nic::Nic n;
  n.name = std::move(name);
  n.up = up;
  n.mtu = 1500;
  n.ipv4 = {P(v4)};
  return n;
}

api::Device DeviceWithAttributes(std::string name, int n) {
  api::Device d{.name = std::move(name)};
  for (int i = 0; i < n; ++i) d.attributes["a" + std::to_string(i)] = api::DeviceAttribute::Int(i);
  return d;
}

class PublisherTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }

  void Start(LoopbackOptions options) {
    auto c = TestCluster::Start(std::move(options));
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
    node_ = cluster_->ns() + "-node";  // unique per run, also on a shared real cluster
  }

  void TearDown() override {
    if (cluster_ == nullptr) return;
    Publisher cleanup(cluster_->rest(), node_);
    (void)cleanup.Unpublish();
  }

  bool Loopback() const { return cluster_->loopback() != nullptr; }
  int64_t Writes() const { return cluster_->loopback()->request_counts().writes(); }

  std::vector<api::ResourceSlice> Slices(Publisher& p) {
    auto l = p.List();
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? *l : std::vector<api::ResourceSlice>{};
  }

  std::vector<std::string> DeviceNames(Publisher& p) {
    std::vector<std::string> out;
    for (const auto& s : Slices(p)) {
      for (const auto& d : s.spec.devices) out.push_back(d.name);
    }
    return out;
  }

  std::unique_ptr<TestCluster> cluster_;
  std::string node_;
};

TEST_F(PublisherTest, PublishChangeAndIdempotentRepublish) {
  Publisher pub(cluster_->rest(), node_);
  ModelOptions model{.slots_per_nic = 4};
  std::vector<nic::Nic> nics = {Nic("eth0", "10.10.0.2/24"), Nic("eth1", "10.10.1.2/24")};
  std::vector<PoolCapacity> pools = {{P("10.10.0.0/24"), 3}, {P("10.10.1.0/24"), 10},
                                     {P("10.10.2.0/24"), 10}};

  auto r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->generation, 1);
  EXPECT_EQ(r->created, 1);
  EXPECT_EQ(r->devices, 7);  // eth0: 3 free IPs; eth1: capped at 4
  EXPECT_EQ(r->api_version, "v1");
  std::vector<api::ResourceSlice> slices = Slices(pub);
  ASSERT_EQ(slices.size(), 1u);
  const api::ResourceSlice& s = slices[0];
  EXPECT_EQ(s.metadata.name, node_ + "-netresources.spidernet.io-0");
  EXPECT_EQ(s.spec.driver, "netresources.spidernet.io");
  EXPECT_EQ(s.spec.pool, (api::ResourcePool{node_, 1, 1}));
  EXPECT_EQ(s.spec.node_name, node_);
  EXPECT_TRUE(s.metadata.owner_references.empty());
  EXPECT_EQ(DeviceNames(pub), (std::vector<std::string>{"eth0-0", "eth0-1", "eth0-2", "eth1-0",
                                                       "eth1-1", "eth1-2", "eth1-3"}));
  std::string rv = s.metadata.resource_version;

  // Same devices: no write, resourceVersion unchanged, also from a fresh Publisher (restart).
  int64_t writes = Loopback() ? Writes() : 0;
  r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(r->generation, 1);
  Publisher restarted(cluster_->rest(), node_);
  r = restarted.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(Slices(pub)[0].metadata.resource_version, rv);
  if (Loopback()) {
    EXPECT_EQ(Writes(), writes);
  }

  // A NIC appears: generation 2, the slice is updated in place.
  nics.push_back(Nic("eth2", "10.10.2.7/24"));
  r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->generation, 2);
  EXPECT_EQ(r->updated, 1);
  EXPECT_EQ(DeviceNames(pub).size(), 11u);

  // eth1 moves to a subnet without a pool: its slots vanish.
  nics[1].ipv4 = {P("10.99.0.2/24")};
  r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation, 3);
  EXPECT_EQ(DeviceNames(pub), (std::vector<std::string>{"eth0-0", "eth0-1", "eth0-2", "eth2-0",
                                                       "eth2-1", "eth2-2", "eth2-3"}));

  // eth0 goes down: fewer devices again.
  nics[0].up = false;
  r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation, 4);
  slices = Slices(pub);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].spec.pool.generation, 4);
  EXPECT_EQ(slices[0].spec.devices.size(), 4u);

  // Nothing left: one empty slice keeps the (empty) pool visible.
  r = pub.Publish({});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation, 5);
  slices = Slices(pub);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_TRUE(slices[0].spec.devices.empty());

  auto gone = pub.Unpublish();
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(*gone, 1);
  EXPECT_TRUE(Slices(pub).empty());
}

TEST_F(PublisherTest, MoreThan128DevicesSplitAndShrink) {
  Publisher pub(cluster_->rest(), node_);
  std::vector<nic::Nic> nics;
  std::vector<PoolCapacity> pools;
  for (int i = 0; i < 5; ++i) {
    nics.push_back(Nic("eth" + std::to_string(i), "10.20." + std::to_string(i) + ".2/24"));
    pools.push_back({P("10.20." + std::to_string(i) + ".0/24"), 200});
  }
  auto r = pub.Publish(BuildDevices(nics, pools));  // 5 x 32 = 160 devices
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->slices, 2);
  EXPECT_EQ(r->created, 2);
  std::vector<api::ResourceSlice> slices = Slices(pub);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0].spec.devices.size(), 128u);
  EXPECT_EQ(slices[1].spec.devices.size(), 32u);
  EXPECT_EQ(slices[1].metadata.name, node_ + "-netresources.spidernet.io-1");
  for (const auto& s : slices) EXPECT_EQ(s.spec.pool, (api::ResourcePool{node_, 1, 2}));

  nics.resize(3);  // 96 devices: one slice, the second one deleted
  r = pub.Publish(BuildDevices(nics, pools));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation, 2);
  EXPECT_EQ(r->updated, 1);
  EXPECT_EQ(r->deleted, 1);
  slices = Slices(pub);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].spec.pool, (api::ResourcePool{node_, 2, 1}));
}

TEST_F(PublisherTest, InvalidDeviceIsRefusedBeforeAnyWrite) {
  Publisher pub(cluster_->rest(), node_);
  int64_t writes = Loopback() ? Writes() : 0;
  auto r = pub.Publish({DeviceWithAttributes("eth0-0", 33)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "refusing to publish an invalid ResourceSlice: ResourceSlice.resource.k8s.io \"" +
                node_ +
                "-netresources.spidernet.io-0\" is invalid: spec.devices[0]: Invalid value: 33: "
                "the total number of attributes and capacities must not exceed 32");
  // An invalid device in the second slice refuses the whole publish too.
  std::vector<api::Device> many;
  for (int i = 0; i < 130; ++i) many.push_back(DeviceWithAttributes("d" + std::to_string(i), 1));
  many.back().name = "Not_A_Label";
  EXPECT_EQ(pub.Publish(many).status().code(), absl::StatusCode::kInvalidArgument);
  if (Loopback()) {
    EXPECT_EQ(Writes(), writes);
  }
  EXPECT_TRUE(Slices(pub).empty());
}

TEST_F(PublisherTest, TakesOverStaleGenerationsAndLeavesOthersAlone) {
  // Leftovers of an earlier run: generation 7 with other content, plus an extra slice; and a
  // slice of another driver on the same node.
  kube::DynamicClient raw(cluster_->rest(), api::ResourceSliceResourceIn("v1"));
  auto make = [&](std::string name, std::string driver, int64_t gen, int64_t count) {
    api::ResourceSlice s;
    s.metadata.name = std::move(name);
    s.spec.driver = std::move(driver);
    s.spec.pool = {node_, gen, count};
    s.spec.node_name = node_;
    s.spec.devices = {DeviceWithAttributes("old-0", 1)};
    auto created = raw.Create(*api::EncodeResourceSliceAs(s, "v1"));
    ASSERT_TRUE(created.ok()) << created.status();
  };
  make(node_ + "-netresources.spidernet.io-0", "netresources.spidernet.io", 7, 2);
  make(node_ + "-netresources.spidernet.io-1", "netresources.spidernet.io", 7, 2);
  make(node_ + "-other.example.com-0", "other.example.com", 1, 1);

  Publisher pub(cluster_->rest(), node_);
  auto r = pub.Publish({DeviceWithAttributes("eth0-0", 2)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation, 8);
  EXPECT_EQ(r->updated, 1);
  EXPECT_EQ(r->deleted, 1);
  std::vector<api::ResourceSlice> slices = Slices(pub);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].spec.pool, (api::ResourcePool{node_, 8, 1}));
  EXPECT_TRUE(raw.Get("", node_ + "-other.example.com-0").ok());
  Publisher other(cluster_->rest(), node_, "other.example.com");
  EXPECT_EQ(other.Unpublish().value_or(-1), 1);
}

TEST_F(PublisherTest, OwnerReferenceToTheNode) {
  if (!Loopback()) GTEST_SKIP() << "creates a Node object";
  kube::DynamicClient nodes(cluster_->rest(), api::ResourceInfo{.version = "v1", .kind = "Node",
                                                                .plural = "nodes"});
  auto node = nodes.Create(Json{{"metadata", {{"name", node_}}}});
  ASSERT_TRUE(node.ok()) << node.status();
  std::string uid = (*node)["metadata"]["uid"];
  Publisher pub(cluster_->rest(), node_, std::string(kDriverName), {.node_uid = uid});
  auto r = pub.Publish({DeviceWithAttributes("eth0-0", 1)});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<api::ResourceSlice> slices = Slices(pub);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].metadata.owner_references,
            (std::vector<api::OwnerReference>{{"v1", "Node", node_, uid, true, std::nullopt}}));
  // A slice without the reference (written by an older agent) is rewritten.
  Publisher no_owner(cluster_->rest(), node_);
  r = no_owner.Publish({DeviceWithAttributes("eth0-0", 1)});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->changed);
  EXPECT_TRUE(Slices(pub)[0].metadata.owner_references.empty());
}

// An API server without the DRAConsumableCapacity gate drops allowMultipleAllocations on
// write; the stored slice then never equals the sent one. The publisher must not rewrite it
// on every call.
class DropAllowMultipleAllocations : public kube::testing::Admission {
 public:
  std::optional<kube::testing::ApiStatus> Mutate(const kube::testing::AdmissionAttributes& a,
                                                 Json* object) override {
    if (a.resource.plural != "resourceslices" || !object->is_object()) return std::nullopt;
    Json& spec = (*object)["spec"];
    if (spec.is_object() && spec.contains("devices")) {
      for (Json& d : spec["devices"]) d.erase("allowMultipleAllocations");
    }
    return std::nullopt;
  }
};

TEST_F(PublisherTest, FieldDroppedByTheServerDoesNotCauseRewrites) {
  if (!Loopback()) GTEST_SKIP() << "needs a custom admission plugin";
  cluster_->loopback()->SetAdmission(std::make_shared<DropAllowMultipleAllocations>());
  Publisher pub(cluster_->rest(), node_);
  ModelOptions model{.slots_per_nic = 2, .allow_multiple_allocations = true};
  std::vector<nic::Nic> nics = {Nic("eth0", "10.40.0.2/24")};
  std::vector<PoolCapacity> pools = {{P("10.40.0.0/24"), 5}};
  auto r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  EXPECT_FALSE(Slices(pub)[0].spec.devices[0].allow_multiple_allocations.has_value());
  int64_t writes = Writes();
  r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(Writes(), writes);
  // A real change is still written.
  pools[0].free_ips = 1;
  r = pub.Publish(BuildDevices(nics, pools, model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->generation, 2);
}

TEST_F(PublisherTest, RetriesConflicts) {
  if (!Loopback()) GTEST_SKIP() << "needs fault injection";
  Publisher pub(cluster_->rest(), node_, std::string(kDriverName), {.max_attempts = 3});
  ASSERT_TRUE(pub.Publish({DeviceWithAttributes("a-0", 1)}).ok());

  cluster_->loopback()->FailNext(1, 409, {.verb = "update", .resource = "resourceslices"});
  auto r = pub.Publish({DeviceWithAttributes("b-0", 1)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(r->generation, 2);

  // Deleting a leftover meets a conflict too.
  std::vector<api::Device> many;
  for (int i = 0; i < 200; ++i) many.push_back(DeviceWithAttributes("c-" + std::to_string(i), 1));
  ASSERT_TRUE(pub.Publish(many).ok());
  cluster_->loopback()->FailNext(1, 409, {.verb = "delete", .resource = "resourceslices"});
  r = pub.Publish({DeviceWithAttributes("d-0", 1)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(Slices(pub).size(), 1u);

  // A conflict that does not go away is returned after max_attempts.
  cluster_->loopback()->FailNext(10, 409, {.verb = "update", .resource = "resourceslices"});
  r = pub.Publish({DeviceWithAttributes("e-0", 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(kube::IsConflict(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("still conflicting after 3 attempts"),
            absl::string_view::npos);
  cluster_->loopback()->ClearFaults();
  EXPECT_TRUE(pub.Publish({DeviceWithAttributes("e-0", 1)}).ok());
}

TEST_F(PublisherTest, ServerErrors) {
  if (!Loopback()) GTEST_SKIP() << "needs fault injection";
  Publisher pub(cluster_->rest(), node_);
  // 500 without Retry-After: returned as the API error, nothing half-done.
  cluster_->loopback()->FailNext(1, 500, {.verb = "list", .resource = "resourceslices"});
  auto r = pub.Publish({DeviceWithAttributes("a-0", 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(kube::IsServerError(r.status())) << r.status();
  EXPECT_EQ(kube::HttpCode(r.status()), 500);
  cluster_->loopback()->FailNext(1, 500, {.verb = "create", .resource = "resourceslices"});
  r = pub.Publish({DeviceWithAttributes("a-0", 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("creating ResourceSlice"), absl::string_view::npos);
  r = pub.Publish({DeviceWithAttributes("a-0", 1)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->generation, 1);

  // 429 and 500 with Retry-After: the RestClient waits (on a simulated clock) and retries.
  base::SimulatedClock clock;
  kube::Config config = cluster_->config();
  config.clock = &clock;
  config.qps = 0;
  auto rest = kube::RestClient::Create(config);
  ASSERT_TRUE(rest.ok()) << rest.status();
  Publisher slow(*rest, node_);
  cluster_->loopback()->FailNext(1, 429, {.verb = "update", .resource = "resourceslices"}, 2);
  cluster_->loopback()->FailNext(1, 500, {.verb = "list", .resource = "resourceslices"}, 1);
  absl::StatusOr<PublishResult> result;
  std::thread t([&] { result = slow.Publish({DeviceWithAttributes("b-0", 1)}); });
  ASSERT_TRUE(clock.WaitForSleepers(1));  // the list's Retry-After
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(clock.WaitForSleepers(1));  // the update's Retry-After
  clock.Advance(absl::Seconds(2));
  t.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->generation, 2);
  EXPECT_EQ(result->attempts, 1);
}

TEST_F(PublisherTest, DiscoversTheServedVersion) {
  Publisher pub(cluster_->rest(), node_);
  auto v = pub.ApiVersion();
  ASSERT_TRUE(v.ok()) << v.status();
  if (Loopback()) {
    EXPECT_EQ(*v, "v1");
  }
  Publisher forced(cluster_->rest(), node_, std::string(kDriverName), {.api_version = "v2"});
  EXPECT_EQ(forced.ApiVersion().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SliceName("n", "d.io", 3), "n-d.io-3");
  std::string long_node(250, 'a');
  long_node[200] = '.';
  std::string name = SliceName(long_node, kDriverName, 12);
  EXPECT_EQ(name.size(), 253u);
  EXPECT_EQ(name.substr(name.size() - 29), "-netresources.spidernet.io-12");
  EXPECT_NE(SliceName(long_node, kDriverName, 0), SliceName(long_node + "b", kDriverName, 0));
}

class OldServerTest : public PublisherTest {
 protected:
  void SetUp() override {}
};

TEST_F(OldServerTest, V1beta1OnlyServerGetsBasicWrappedDevices) {
  Start({.omit_builtin_versions = {"resource.k8s.io/v1"}});
  if (!Loopback()) GTEST_SKIP() << "needs an API server without resource.k8s.io/v1";
  Publisher none(cluster_->rest(), node_);
  EXPECT_EQ(none.ApiVersion().status().code(), absl::StatusCode::kNotFound);

  ASSERT_TRUE(cluster_->loopback()
                  ->RegisterResource({"resource.k8s.io", "v1beta1", "ResourceSlice",
                                      "resourceslices", "resourceslice", false, false, {}, ""})
                  .ok());
  Publisher pub(cluster_->rest(), node_);
  ASSERT_EQ(pub.ApiVersion().value_or(""), "v1beta1");
  std::vector<nic::Nic> nics = {Nic("eth0", "10.30.0.2/24")};
  std::vector<PoolCapacity> pools = {{P("10.30.0.0/24"), 2}};
  auto r = pub.Publish(BuildDevices(nics, pools));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->api_version, "v1beta1");
  EXPECT_EQ(r->created, 1);

  auto raw = cluster_->loopback()->Call("GET", "/apis/resource.k8s.io/v1beta1/resourceslices");
  ASSERT_EQ(raw.code, 200);
  ASSERT_EQ(raw.body["items"].size(), 1u);
  const Json& dev = raw.body["items"][0]["spec"]["devices"][0];
  EXPECT_EQ(dev["name"], "eth0-0");
  EXPECT_FALSE(dev.contains("attributes"));
  EXPECT_EQ(dev["basic"]["attributes"]["ifName"]["string"], "eth0");
  EXPECT_EQ(dev["basic"]["attributes"]["slot"]["int"], 0);

  // Read back through v1beta1 and found current: no write.
  int64_t writes = Writes();
  r = pub.Publish(BuildDevices(nics, pools));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(Writes(), writes);
  std::vector<api::ResourceSlice> slices = Slices(pub);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].spec.devices[1].attributes.at("slot"), api::DeviceAttribute::Int(1));
}

TEST_F(OldServerTest, PrefersV1beta2OverV1beta1) {
  Start({.omit_builtin_versions = {"resource.k8s.io/v1"}});
  if (!Loopback()) GTEST_SKIP() << "needs an API server without resource.k8s.io/v1";
  for (const char* v : {"v1beta1", "v1beta2"}) {
    ASSERT_TRUE(cluster_->loopback()
                    ->RegisterResource({"resource.k8s.io", v, "ResourceSlice", "resourceslices",
                                        "resourceslice", false, false, {}, ""})
                    .ok());
  }
  Publisher pub(cluster_->rest(), node_);
  auto r = pub.Publish({DeviceWithAttributes("eth0-0", 1)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->api_version, "v1beta2");
  auto raw = cluster_->loopback()->Call("GET", "/apis/resource.k8s.io/v1beta2/resourceslices");
  ASSERT_EQ(raw.code, 200);
  EXPECT_EQ(raw.body["items"][0]["spec"]["devices"][0]["attributes"]["a0"]["int"], 0);
}

}  // namespace
}  // namespace spiderpool::dra::resourceslice
