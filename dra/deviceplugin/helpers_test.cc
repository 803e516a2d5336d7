// The pure parts of the device plugin: naming, rules, device lists, Allocate answers (and a
// fuzz-style pass over Allocate's device IDs, the only untrusted input), option validation.

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "dra/deviceplugin/manager.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::deviceplugin {
namespace {

nic::Nic MakeNic(std::string name, bool up = true) {
  nic::Nic n;
  n.name = std::move(name);
  n.up = up;
  return n;
}

TEST(Naming, UpstreamResourceAndSocketNames) {
  EXPECT_EQ(ResourceNameFor("spidernet.io/", "eth1"), "spidernet.io/eth1-nic");
  EXPECT_EQ(SocketNameFor("spidernet.io/eth1-nic"), "spidernet.io_eth1-nic.sock");
  EXPECT_EQ(DeviceIdFor("eth1", 42), "eth1-42");
  EXPECT_EQ(EnvNameFor("eth1"), "SPIDERPOOL_NIC_ETH1");
  EXPECT_EQ(EnvNameFor("eth1.100"), "SPIDERPOOL_NIC_ETH1_100");
  EXPECT_EQ(EnvNameFor("enp59s0f0-v"), "SPIDERPOOL_NIC_ENP59S0F0_V");
}

TEST(Rules, IncludeExcludeGlobs) {
  Rules all;
  EXPECT_TRUE(MatchesRules(all, "eth1"));
  EXPECT_TRUE(MatchesRules(all, "veth12ab"));
  EXPECT_FALSE(MatchesRules(all, "lo"));  // never
  EXPECT_FALSE(MatchesRules(all, ""));

  Rules r{.include = {"eth*", "ens[0-9]*"}, .exclude = {"eth9", "*.1??"}};
  EXPECT_TRUE(MatchesRules(r, "eth1"));
  EXPECT_TRUE(MatchesRules(r, "ens3"));
  EXPECT_TRUE(MatchesRules(r, "eth1.20"));
  EXPECT_FALSE(MatchesRules(r, "eth1.100"));  // excluded by *.1??
  EXPECT_FALSE(MatchesRules(r, "eth9"));
  EXPECT_FALSE(MatchesRules(r, "ensx"));
  EXPECT_FALSE(MatchesRules(r, "veth0"));

  Rules only_exclude{.exclude = {"veth*", "cali*", "docker0"}};
  EXPECT_TRUE(MatchesRules(only_exclude, "bond0"));
  EXPECT_FALSE(MatchesRules(only_exclude, "cali123"));
  EXPECT_FALSE(MatchesRules(only_exclude, "docker0"));
}

TEST(ValidateResourceName, KubeletRules) {
  EXPECT_TRUE(ValidateResourceName("spidernet.io/eth1-nic").ok());
  EXPECT_TRUE(ValidateResourceName("spidernet.io/eth1.100-nic").ok());
  EXPECT_TRUE(ValidateResourceName("example.com/enp59s0f0_1-nic").ok());
  EXPECT_FALSE(ValidateResourceName("eth1-nic").ok());                 // no domain
  EXPECT_FALSE(ValidateResourceName("spidernet.io/eth1:1-nic").ok());  // ':' in name
  EXPECT_FALSE(ValidateResourceName("spidernet.io/eth1@x-nic").ok());
  EXPECT_FALSE(ValidateResourceName("Spidernet.io/eth1-nic").ok());  // upper-case domain
  EXPECT_FALSE(ValidateResourceName("kubernetes.io/eth1-nic").ok());
  EXPECT_FALSE(ValidateResourceName("foo.kubernetes.io/eth1-nic").ok());
  EXPECT_FALSE(ValidateResourceName("spidernet.io/a/b").ok());
  EXPECT_FALSE(ValidateResourceName("spidernet.io/" + std::string(64, 'a')).ok());
  EXPECT_TRUE(ValidateResourceName("spidernet.io/" + std::string(63, 'a')).ok());
}

TEST(DeviceList, HealthFollowsLinkState) {
  auto up = DeviceListFor(MakeNic("eth1", true), 3);
  ASSERT_EQ(up.devices_size(), 3);
  EXPECT_EQ(up.devices(0).id(), "eth1-0");
  EXPECT_EQ(up.devices(2).id(), "eth1-2");
  for (const auto& d : up.devices()) {
    EXPECT_EQ(d.health(), kHealthy);
    EXPECT_FALSE(d.has_topology());
  }
  auto down = DeviceListFor(MakeNic("eth1", false), 3);
  for (const auto& d : down.devices()) EXPECT_EQ(d.health(), kUnhealthy);
}

// The ListAndWatch message must stay well below gRPC's 4 MiB default receive limit.
TEST(DeviceList, MessageSizeStaysSane) {
  size_t def = DeviceListFor(MakeNic("eth1", true), 10000).ByteSizeLong();
  size_t worst =
      DeviceListFor(MakeNic(std::string(15, 'x'), false), kMaxDevicesPerNic).ByteSizeLong();
  std::printf(
      "ListAndWatch bytes: default (eth1, 10000 healthy) = %zu; worst (15-char name, %d "
      "unhealthy) = %zu\n",
      def, kMaxDevicesPerNic, worst);
  EXPECT_LT(def, 256u * 1024);
  EXPECT_LT(worst, 2u * 1024 * 1024);
}

v1beta1::AllocateRequest Request(const std::vector<std::vector<std::string>>& containers) {
  v1beta1::AllocateRequest req;
  for (const auto& ids : containers) {
    auto* c = req.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
  }
  return req;
}

TEST(Allocate, EnvPerContainer) {
  auto r = AllocateFor(MakeNic("eth1"), 10, Request({{"eth1-0"}, {"eth1-9", "eth1-3"}}));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->container_responses_size(), 2);
  for (const auto& c : r->container_responses()) {
    ASSERT_EQ(c.envs_size(), 1);
    EXPECT_EQ(c.envs().at("SPIDERPOOL_NIC_ETH1"), "eth1");
    EXPECT_EQ(c.mounts_size(), 0);
    EXPECT_EQ(c.devices_size(), 0);
    EXPECT_EQ(c.cdi_devices_size(), 0);
  }
  // Allocation does not depend on the link being up (the kubelet re-allocates after restarts).
  EXPECT_TRUE(AllocateFor(MakeNic("eth1", false), 10, Request({{"eth1-1"}})).ok());
}

TEST(Allocate, UnknownIdsRefused) {
  for (const char* id : {"eth1-10", "eth1-01", "eth1--1", "eth1-+1", "eth1-", "eth1", "eth2-0",
                         "eth10-0", "eth1-1x", " eth1-1", "eth1-99999999999999999999", ""}) {
    auto r = AllocateFor(MakeNic("eth1"), 10, Request({{"eth1-0"}, {id}}));
    ASSERT_FALSE(r.ok()) << id;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(r.status().message()).find("unknown device ID"), std::string::npos);
  }
}

// Fuzz-style: random mutations of valid IDs never crash, and are accepted exactly when they
// are still "<nic>-<i>" in canonical form with i < count.
TEST(Allocate, FuzzDeviceIds) {
  std::mt19937 rng(12345);
  const std::string alphabet = "eth1-0239x+ .\xff";
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string id = DeviceIdFor("eth1", static_cast<int>(rng() % 20));
    int edits = static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = id.empty() ? 0 : rng() % (id.size() + 1);
      switch (rng() % 3) {
        case 0:
          id.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (!id.empty() && pos < id.size()) id.erase(pos, 1);
          break;
        default:
          if (pos < id.size()) id[pos] = alphabet[rng() % alphabet.size()];
          break;
      }
    }
    bool want = false;
    for (int k = 0; k < 10; ++k) want = want || id == DeviceIdFor("eth1", k);
    auto r = AllocateFor(MakeNic("eth1"), 10, Request({{id}}));
    EXPECT_EQ(r.ok(), want) << "\"" << id << "\"";
    accepted += r.ok();
  }
  EXPECT_GT(accepted, 1000);  // the generator does produce valid IDs too
}

TEST(ManagerCreate, ValidatesOptions) {
  base::testing::TempDir tmp("dp");  // outlives the managers declared after it
  const std::string& dir = tmp.path();
  Options o;
  o.kubelet_dir = dir + "/";
  auto m = Manager::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->options().kubelet_dir, dir);  // trailing '/' dropped

  Options bad = o;
  bad.kubelet_dir = "relative/dir";
  EXPECT_FALSE(Manager::Create(bad).ok());
  bad = o;
  bad.kubelet_dir = dir + "/missing";
  EXPECT_EQ(Manager::Create(bad).status().code(), absl::StatusCode::kFailedPrecondition);
  bad = o;
  bad.devices_per_nic = 0;
  EXPECT_FALSE(Manager::Create(bad).ok());
  bad.devices_per_nic = kMaxDevicesPerNic + 1;
  EXPECT_FALSE(Manager::Create(bad).ok());
  bad = o;
  bad.resource_prefix = "spidernet.io";
  EXPECT_FALSE(Manager::Create(bad).ok());
  bad.resource_prefix = "kubernetes.io/";
  EXPECT_FALSE(Manager::Create(bad).ok());
  bad.resource_prefix = "Bad_Domain/";
  EXPECT_FALSE(Manager::Create(bad).ok());
}

}  // namespace
}  // namespace spiderpool::dra::deviceplugin
