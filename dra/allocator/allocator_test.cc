#include "dra/allocator/allocator.h"

#include <gtest/gtest.h>

#include "api/spider_multusconfig.h"
#include "dra/resourceslice/model.h"

namespace spiderpool::dra::allocator {
namespace {

namespace rs = ::spiderpool::dra::resourceslice;
namespace rv1 = ::spiderpool::api::resource_v1;

base::IPPrefix P(std::string_view s) { return *base::IPPrefix::Parse(s); }

nic::Nic Nic(std::string name, std::string v4) {
  nic::Nic n;
  n.name = std::move(name);
  n.up = true;
  n.mtu = 1500;
  if (!v4.empty()) n.ipv4 = {P(v4)};
  return n;
}

// Two nodes whose eth0 sit on different subnets, each served by its own pool.
std::vector<api::ResourceSlice> Cluster(int slots = 2) {
  rs::ModelOptions o;
  o.slots_per_nic = slots;
  std::vector<api::ResourceSlice> out;
  auto slice = [&](std::string node, std::vector<api::Device> devices) {
    api::ResourceSlice s;
    s.SetTypeMeta();
    s.metadata.name = node + "-netresources.spidernet.io-0";
    s.spec = {.driver = std::string(rs::kDriverName), .pool = {node, 1, 1}, .node_name = node,
              .devices = std::move(devices)};
    out.push_back(std::move(s));
  };
  slice("node1", rs::BuildDevices({Nic("eth0", "172.18.0.11/16")},
                                  {{.subnet = P("172.18.0.0/16"), .free_ips = 10, .name = "pool-a"}}, o));
  slice("node2", rs::BuildDevices({Nic("eth0", "172.19.0.12/16")},
                                  {{.subnet = P("172.19.0.0/16"), .free_ips = 10, .name = "pool-b"}}, o));
  return out;
}

api::SpiderMultusConfig Macvlan(std::string master) {
  api::SpiderMultusConfig smc;
  smc.metadata.name = "smc";
  smc.spec.cni_type = "macvlan";
  smc.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {std::move(master)}};
  return smc;
}

rv1::ResourceClaim Claim(std::string name, const std::vector<std::string>& selectors) {
  rv1::ResourceClaim c;
  c.metadata.name = std::move(name);
  c.metadata.namespace_ = "default";
  c.metadata.uid = c.metadata.name + "-uid";
  rv1::ExactDeviceRequest e{.device_class_name = "netresources.spidernet.io"};
  for (const std::string& s : selectors) e.selectors.push_back({.cel = rv1::CELDeviceSelector{s}});
  c.spec.devices.requests.push_back({.name = "nic", .exactly = e});
  c.spec.devices.config.push_back(
      {.requests = {"nic"},
       .opaque = rv1::OpaqueDeviceConfiguration{.driver = "netresources.spidernet.io",
                                                .parameters = {{"kind", "SpiderClaimParameter"}}}});
  return c;
}

std::vector<std::string> Sel(const api::SpiderMultusConfig& smc, std::vector<std::string> pools) {
  return *rs::SelectorFor(smc, {.ipv4_pools = std::move(pools)});
}

TEST(Allocator, EachClaimLandsOnTheNodeServingItsNetwork) {
  const auto slices = Cluster();
  const std::vector<api::DeviceClass> classes = {rs::BuildDeviceClass()};
  // Node order would pick node1 first: a claim for pool-b must still go to node2.
  auto b = Allocate(Claim("b", Sel(Macvlan("eth0"), {"pool-b"})), classes, slices, {});
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(b->allocated) << b->reason;
  EXPECT_EQ(b->node, "node2");
  ASSERT_EQ(b->allocation.devices.results.size(), 1u);
  EXPECT_EQ(b->allocation.devices.results[0].pool, "node2");
  EXPECT_EQ(b->allocation.devices.results[0].device, "eth0-0");
  ASSERT_EQ(b->allocation.devices.config.size(), 1u);
  EXPECT_EQ(b->allocation.devices.config[0].source, "FromClaim");
  EXPECT_EQ(b->allocation.node_selector["nodeSelectorTerms"][0]["matchFields"][0]["values"][0], "node2");
  auto a = Allocate(Claim("a", Sel(Macvlan("eth0"), {"pool-a"})), classes, slices, {});
  ASSERT_TRUE(a.ok() && a->allocated);
  EXPECT_EQ(a->node, "node1");
  // Without the network's selectors (the seed's template before this issue) any node does.
  auto any = Allocate(Claim("any", {}), classes, slices, {});
  ASSERT_TRUE(any.ok() && any->allocated);
  EXPECT_EQ(any->node, "node1");
}

TEST(Allocator, UnservedNetworkStaysUnallocatedWithTheReason) {
  const auto slices = Cluster();
  const std::vector<api::DeviceClass> classes = {rs::BuildDeviceClass()};
  auto c = Allocate(Claim("c", Sel(Macvlan("eth0"), {"pool-c"})), classes, slices, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->allocated);
  EXPECT_NE(c->reason.find("node1: request \"nic\": 2 device(s) left, none passes the request's "
                           "selector 2 (\"pool_pool_c\" in"),
            std::string::npos)
      << c->reason;
  EXPECT_NE(c->reason.find("node2: "), std::string::npos);
  // A master no node has.
  auto m = Allocate(Claim("m", Sel(Macvlan("eth9"), {"pool-a"})), classes, slices, {});
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->allocated);
  EXPECT_NE(m->reason.find("selector 0"), std::string::npos) << m->reason;
  // A missing class.
  auto k = Allocate(Claim("k", {}), {}, slices, {});
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->allocated);
  EXPECT_NE(k->reason.find("device class netresources.spidernet.io does not exist"), std::string::npos);
}

TEST(Allocator, DevicesInUseAreNotGivenTwice) {
  const auto slices = Cluster(/*slots=*/1);
  const std::vector<api::DeviceClass> classes = {rs::BuildDeviceClass()};
  std::vector<rv1::ResourceClaim> claims;
  auto first = Allocate(Claim("x", Sel(Macvlan("eth0"), {"pool-a"})), classes, slices, {});
  ASSERT_TRUE(first.ok() && first->allocated);
  rv1::ResourceClaim held = Claim("x", {});
  held.status.allocation = first->allocation;
  claims.push_back(held);
  auto second = Allocate(Claim("y", Sel(Macvlan("eth0"), {"pool-a"})), classes, slices, InUse(claims));
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->allocated);
  EXPECT_NE(second->reason.find("node1: request \"nic\": 1 matching device(s), 1 in use"),
            std::string::npos)
      << second->reason;
  // The claim's own allocation does not count against it.
  EXPECT_TRUE(InUse(claims, "x-uid").empty());
}

TEST(Allocator, UnsupportedInputIsAnError) {
  const auto slices = Cluster();
  const std::vector<api::DeviceClass> classes = {rs::BuildDeviceClass()};
  auto bad = Allocate(Claim("b", {"device.attributes[\"d\"].x.matches(\"y\")"}), classes, slices, {});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("spec.devices.requests[0].exactly.selectors[0]"),
            std::string::npos);
  rv1::ResourceClaim all = Claim("all", {});
  all.spec.devices.requests[0].exactly->allocation_mode = "All";
  EXPECT_EQ(Allocate(all, classes, slices, {}).status().code(), absl::StatusCode::kUnimplemented);
  rv1::ResourceClaim constrained = Claim("c", {});
  constrained.spec.devices.constraints.push_back({.requests = {"nic"}});
  EXPECT_EQ(Allocate(constrained, classes, slices, {}).status().code(), absl::StatusCode::kUnimplemented);
  // No slices at all is a reason.
  auto none = Allocate(Claim("n", {}), classes, {}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->allocated);
  EXPECT_NE(none->reason.find("no node publishes devices"), std::string::npos);
}

}  // namespace
}  // namespace spiderpool::dra::allocator
