#include "dra/resourceslice/model.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/resource_slice.h"
#include "base/strings.h"

namespace spiderpool::dra::resourceslice {
namespace {

using api::DeviceAttribute;

base::IPPrefix P(std::string_view s) { return *base::IPPrefix::Parse(s); }

nic::Nic Eth1() {
  nic::Nic n;
  n.name = "eth1";
  n.mac = "aa:bb:cc:dd:ee:01";
  n.mtu = 9000;
  n.up = true;
  n.ipv4 = {P("10.6.0.5/16"), P("192.168.9.1/24")};
  n.ipv6 = {P("fd00:6::5/64")};
  n.pci_address = "0000:3b:00.0";
  n.numa_node = 1;
  n.sriov_total_vfs = 8;
  return n;
}

nic::Nic Plain(std::string name, std::string v4) {
  nic::Nic n;
  n.name = std::move(name);
  n.up = true;
  n.mtu = 1500;
  if (!v4.empty()) n.ipv4 = {P(v4)};
  return n;
}

std::vector<std::string> Names(const std::vector<api::Device>& ds) {
  std::vector<std::string> out;
  for (const auto& d : ds) out.push_back(d.name);
  return out;
}

TEST(Model, SlotsAndAttributesOfOneNic) {
  ModelOptions o;
  o.slots_per_nic = 3;
  o.resource_names["eth1"] = "spidernet.io/sriov_netdevice";
  auto ds = BuildDevices({Eth1()}, {{P("10.6.0.0/16"), 100, "pool-a"}}, o);
  EXPECT_EQ(Names(ds), (std::vector<std::string>{"eth1-0", "eth1-1", "eth1-2"}));
  const auto& a = ds[1].attributes;
  std::map<std::string, DeviceAttribute> want = {
      {"ifName", DeviceAttribute::String("eth1")},
      {"mac", DeviceAttribute::String("aa:bb:cc:dd:ee:01")},
      {"mtu", DeviceAttribute::Int(9000)},
      {"state", DeviceAttribute::String("up")},
      {"ipv4Subnet", DeviceAttribute::String("10.6.0.0/16")},
      {"ipv6Subnet", DeviceAttribute::String("fd00:6::/64")},
      {"pciAddress", DeviceAttribute::String("0000:3b:00.0")},
      {"sriovTotalVfs", DeviceAttribute::Int(8)},
      {"sriovVf", DeviceAttribute::Bool(false)},
      {"rdma", DeviceAttribute::Bool(false)},
      {"slot", DeviceAttribute::Int(1)},
      {"resource.kubernetes.io/pcieRoot", DeviceAttribute::String("pci0000:3b")},
      {"resource.kubernetes.io/numaNode", DeviceAttribute::Int(1)},
      {"k8s.cni.cncf.io/deviceID", DeviceAttribute::String("0000:3b:00.0")},
      {"k8s.cni.cncf.io/resourceName", DeviceAttribute::String("spidernet.io/sriov_netdevice")},
      {"cniMacvlan", DeviceAttribute::Bool(true)},
      {"cniIpvlan", DeviceAttribute::Bool(true)},
      {"cniVlan", DeviceAttribute::Bool(true)},
      {"cniSriov", DeviceAttribute::Bool(true)},
      {"pool_pool_a", DeviceAttribute::Bool(true)},
  };
  EXPECT_EQ(a, want);
  EXPECT_FALSE(ds[0].allow_multiple_allocations.has_value());
  // Every device passes the API server's rules.
  api::ResourceSlice s;
  s.metadata.name = "n-0";
  s.spec = {.driver = std::string(kDriverName), .pool = {"n", 1, 1}, .node_name = "n",
            .devices = ds};
  EXPECT_TRUE(api::ValidateResourceSlice(s).empty());
}

TEST(Model, OmitsEmptyAttributes) {
  nic::Nic n = Plain("eth0", "10.0.0.2/24");
  n.mtu = 0;
  auto ds = BuildDevices({n}, {{P("10.0.0.0/24"), 1}}, {});
  ASSERT_EQ(ds.size(), 1u);
  std::set<std::string> keys;
  for (const auto& [k, v] : ds[0].attributes) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"ifName", "state", "ipv4Subnet", "sriovVf", "rdma",
                                         "slot", "cniMacvlan", "cniIpvlan", "cniVlan"}));
}

TEST(Model, SlotCountIsBoundedByFreeIPs) {
  std::vector<PoolCapacity> pools = {{P("10.6.0.0/16"), 2}, {P("10.6.0.0/16"), 3},
                                     {P("10.7.0.0/16"), 50}, {P("fd00:6::/64"), 4}};
  auto plans = PlanNics({Eth1()}, pools, {});
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].free_ips, 5);  // two v4 pools on the NIC's subnet; v6 has 4
  EXPECT_EQ(plans[0].slots, 5);
  // The larger family wins: a v6-only claim may use the v6 addresses.
  pools.push_back({P("fd00:6::/64"), 10});
  EXPECT_EQ(PlanNics({Eth1()}, pools, {})[0].slots, 14);
  // ... and slots_per_nic caps it.
  EXPECT_EQ(PlanNics({Eth1()}, pools, {.slots_per_nic = 7})[0].slots, 7);
  // Only the first global prefix per family counts (it is what ipv4Subnet says).
  EXPECT_EQ(PlanNics({Eth1()}, {{P("192.168.9.0/24"), 9}}, {})[0].skipped, "no pool with free IPs");
  // A pool with no free IPs, or a non-canonical subnet string of the same network.
  EXPECT_EQ(PlanNics({Eth1()}, {{P("10.6.0.0/16"), 0}}, {})[0].slots, 0);
  EXPECT_EQ(PlanNics({Eth1()}, {{P("10.6.1.1/16"), 2}}, {})[0].slots, 2);
}

TEST(Model, EligibilityRules) {
  nic::Nic down = Plain("eth2", "10.0.0.3/24");
  down.up = false;
  nic::Nic lo = Plain("lo", "127.0.0.1/8");
  nic::Nic bare = Plain("eth3", "");
  std::vector<nic::Nic> nics = {Plain("veth9", "10.0.0.9/24"), down, lo, bare,
                                Plain("eth0", "10.0.0.2/24")};
  std::vector<PoolCapacity> pools = {{P("10.0.0.0/24"), 100}, {P("127.0.0.0/8"), 100}};
  ModelOptions o;
  o.slots_per_nic = 1;
  o.exclude_interfaces = {"veth*"};
  auto plans = PlanNics(nics, pools, o);
  ASSERT_EQ(plans.size(), 5u);  // sorted by name
  EXPECT_EQ(plans[0].nic, "eth0");
  EXPECT_EQ(plans[0].slots, 1);
  EXPECT_EQ(plans[1].skipped, "down");
  EXPECT_EQ(plans[2].skipped, "no subnet");
  EXPECT_EQ(plans[3].skipped, "loopback");
  EXPECT_EQ(plans[4].skipped, "excluded");
  EXPECT_EQ(Names(BuildDevices(nics, pools, o)), std::vector<std::string>{"eth0-0"});
  o.include_interfaces = {"eth[3-9]"};
  o.exclude_interfaces = {};
  EXPECT_TRUE(BuildDevices(nics, pools, o).empty());
  // A NIC without an address can be tied to a subnet by configuration.
  o.declared_subnets["eth3"] = {P("10.0.0.0/24")};
  auto ds = BuildDevices(nics, pools, o);
  EXPECT_EQ(Names(ds), std::vector<std::string>{"eth3-0"});
  EXPECT_EQ(ds[0].attributes.at("ipv4Subnet"), DeviceAttribute::String("10.0.0.0/24"));
}

TEST(Model, DeterministicOrderAndOptions) {
  std::vector<nic::Nic> a = {Plain("eth1", "10.0.1.2/24"), Plain("eth0", "10.0.0.2/24")};
  std::vector<nic::Nic> b = {a[1], a[0]};
  std::vector<PoolCapacity> pools = {{P("10.0.0.0/24"), 2}, {P("10.0.1.0/24"), 2}};
  auto da = BuildDevices(a, pools, {});
  EXPECT_EQ(Names(da), (std::vector<std::string>{"eth0-0", "eth0-1", "eth1-0", "eth1-1"}));
  EXPECT_EQ(da, BuildDevices(b, pools, {}));
  ModelOptions o;
  o.allow_multiple_allocations = true;
  o.pcie_root_resolver = [](const std::string& pci) { return "pci0000:00"; };
  nic::Nic n = Eth1();
  auto ds = BuildDevices({n}, {{P("10.6.0.0/16"), 1}}, o);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].allow_multiple_allocations, true);
  EXPECT_EQ(ds[0].attributes.at("resource.kubernetes.io/pcieRoot"),
            DeviceAttribute::String("pci0000:00"));
  n.numa_node = -1;
  EXPECT_FALSE(BuildDevices({n}, {{P("10.6.0.0/16"), 1}}, o)[0].attributes.contains(
      "resource.kubernetes.io/numaNode"));
}

TEST(Model, DeviceNames) {
  EXPECT_EQ(DeviceLabel("eth0"), "eth0");
  EXPECT_EQ(DeviceLabel("enp59s0f0np0"), "enp59s0f0np0");
  // Not DNS labels: dots, underscores, upper case, leading '-'.
  EXPECT_EQ(DeviceLabel("bond0.100"), "normalized-mjxw4zbqfyytama");
  EXPECT_EQ(DeviceLabel("eth_1"), "normalized-mv2gqxzr");
  EXPECT_EQ(DeviceLabel("Eth1"), "normalized-iv2gqmi");
  EXPECT_EQ(DeviceLabel("-x"), "normalized-fv4a");
  EXPECT_EQ(DeviceLabel(""), "normalized-0");
  // A valid label that looks normalized is normalized too (keeps the mapping injective).
  EXPECT_NE(DeviceLabel("normalized-abc"), "normalized-abc");
  EXPECT_EQ(SlotDeviceName("bond0.100", 7), "normalized-mjxw4zbqfyytama-7");
  // Every label + the largest slot suffix is a valid device name, even for 15-byte names.
  std::set<std::string> seen;
  for (std::string name : std::vector<std::string>{"a", "eth0", "bond0.100", "x_y", "ABCDEFGHIJKLMNO", "veth1234567890a",
                           "0", "a-", "normalized-x", std::string(40, 'z'), std::string(60, '.')}) {
    std::string dev = SlotDeviceName(name, kMaxSlotsPerNic - 1);
    EXPECT_LE(dev.size(), 63u) << name;
    api::ResourceSlice s;
    s.metadata.name = "n";
    s.spec = {.driver = "d.io", .pool = {"n", 0, 1}, .node_name = "n",
              .devices = {api::Device{.name = dev, .attributes = {{"a", DeviceAttribute::Int(1)}}}}};
    EXPECT_TRUE(api::ValidateResourceSlice(s).empty()) << dev;
    EXPECT_TRUE(seen.insert(DeviceLabel(name)).second) << name;
  }
}

TEST(Model, PCIeRoot) {
  EXPECT_EQ(PCIeRootOf("0000:3b:00.0"), "pci0000:3b");
  EXPECT_EQ(PCIeRootOf("0001:AF:1f.7"), "pci0001:af");
  EXPECT_EQ(PCIeRootOf("3b:00.0"), "");
  EXPECT_EQ(PCIeRootOf("0000:3b:00"), "");
  EXPECT_EQ(PCIeRootOf("000g:3b:00.0"), "");
  EXPECT_EQ(PCIeRootOf(""), "");
  // A malformed address publishes no pcieRoot (but still the raw pciAddress).
  nic::Nic n = Eth1();
  n.pci_address = "virtio0";
  auto ds = BuildDevices({n}, {{P("10.6.0.0/16"), 1}}, {});
  EXPECT_FALSE(ds[0].attributes.contains("resource.kubernetes.io/pcieRoot"));
  EXPECT_EQ(ds[0].attributes.at("pciAddress"), DeviceAttribute::String("virtio0"));
}

TEST(Model, SplitDevices) {
  std::vector<api::Device> ds;
  for (int i = 0; i < 300; ++i) ds.push_back(api::Device{.name = "d" + std::to_string(i)});
  auto chunks = SplitDevices(ds);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].size(), 128u);
  EXPECT_EQ(chunks[1].size(), 128u);
  EXPECT_EQ(chunks[2].size(), 44u);
  EXPECT_EQ(chunks[2].back().name, "d299");
  EXPECT_EQ(SplitDevices({}).size(), 1u);  // an empty pool is one empty slice
  EXPECT_EQ(SplitDevices(std::vector<api::Device>(128)).size(), 1u);
  EXPECT_EQ(SplitDevices(std::vector<api::Device>(129)).size(), 2u);
}

TEST(DeviceClass, Builder) {
  api::DeviceClass c = BuildDeviceClass();
  EXPECT_EQ(c.metadata.name, "netresources.spidernet.io");
  EXPECT_EQ(c.api_version, "resource.k8s.io/v1");
  ASSERT_EQ(c.spec.selectors.size(), 1u);
  EXPECT_EQ(c.spec.selectors[0].cel->expression, "device.driver == \"netresources.spidernet.io\"");
  EXPECT_EQ(base::DumpJson(api::Encode(c)),
            R"({"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":)"
            R"({"name":"netresources.spidernet.io"},"spec":{"selectors":[{"cel":{"expression":)"
            R"("device.driver == \"netresources.spidernet.io\""}}]}})");
}

api::SpiderMultusConfig Smc(std::string type) {
  api::SpiderMultusConfig smc;
  smc.spec.cni_type = type;
  return smc;
}

constexpr std::string_view kA = R"(device.attributes["netresources.spidernet.io"])";

TEST(Selector, MacvlanSingleMasterDualStack) {
  api::SpiderMultusConfig smc = Smc("macvlan");
  smc.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"eth1"}};
  auto sel = SelectorFor(smc, {.ipv4_pools = {"v4-a"}, .ipv6_pools = {"v6.b"}});
  ASSERT_TRUE(sel.ok()) << sel.status();
  EXPECT_EQ(*sel, (std::vector<std::string>{
                      R"("ifName" in device.attributes["netresources.spidernet.io"] && )"
                      R"(device.attributes["netresources.spidernet.io"].ifName == "eth1")",
                      R"("cniMacvlan" in device.attributes["netresources.spidernet.io"] && )"
                      R"(device.attributes["netresources.spidernet.io"].cniMacvlan == true)",
                      R"("pool_v4_a" in device.attributes["netresources.spidernet.io"])",
                      base::StrCat("\"", PoolAttributeName("v6.b"), "\" in ", kA),
                  }));
}

TEST(Selector, ListsBondPoolsAndRdma) {
  api::SpiderMultusConfig smc = Smc("ipvlan");
  smc.spec.ipvlan = api::SpiderIPvlanCniConfig{.master = {"eth1", "eth2", "eth1"}};
  auto sel = SelectorFor(smc, {.ipv4_pools = {"a", "b", "a"}, .rdma = true});
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(*sel, (std::vector<std::string>{
                      R"("ifName" in device.attributes["netresources.spidernet.io"] && )"
                      R"(device.attributes["netresources.spidernet.io"].ifName in ["eth1", "eth2"])",
                      R"("cniIpvlan" in device.attributes["netresources.spidernet.io"] && )"
                      R"(device.attributes["netresources.spidernet.io"].cniIpvlan == true)",
                      R"(("pool_a" in device.attributes["netresources.spidernet.io"] || )"
                      R"("pool_b" in device.attributes["netresources.spidernet.io"]))",
                      R"("rdma" in device.attributes["netresources.spidernet.io"] && )"
                      R"(device.attributes["netresources.spidernet.io"].rdma == true)",
                  }));
  smc.spec.ipvlan->bond = api::BondConfig{.name = "bond0", .mode = 1};
  sel = SelectorFor(smc, {});
  ASSERT_TRUE(sel.ok());
  ASSERT_EQ(sel->size(), 2u);
  EXPECT_EQ((*sel)[0], R"("ifName" in device.attributes["netresources.spidernet.io"] && )"
                       R"(device.attributes["netresources.spidernet.io"].ifName == "bond0")");
}

TEST(Selector, OtherTypesAndErrors) {
  api::SpiderMultusConfig sriov = Smc("sriov");
  sriov.spec.sriov = api::SpiderSRIOVCniConfig{.resource_name = "spidernet.io/sriov_a"};
  auto sel = SelectorFor(sriov, {.ipv4_pools = {"p"}});
  ASSERT_TRUE(sel.ok());
  ASSERT_EQ(sel->size(), 3u);
  EXPECT_EQ((*sel)[0], R"("resourceName" in device.attributes["k8s.cni.cncf.io"] && )"
                       R"(device.attributes["k8s.cni.cncf.io"].resourceName == "spidernet.io/sriov_a")");
  EXPECT_NE((*sel)[1].find("cniSriov"), std::string::npos);
  api::SpiderMultusConfig ipoib = Smc("ipoib");
  ipoib.spec.ipoib = api::SpiderIpoibCniConfig{.master = "ib0"};
  EXPECT_EQ(SelectorFor(ipoib, {})->size(), 2u);
  EXPECT_TRUE(SelectorFor(Smc("custom"), {})->empty());
  EXPECT_TRUE(SelectorFor(api::SpiderMultusConfig{}, {})->empty());
  // The macvlan section is ignored when the type says vlan: only the cniType requirement.
  api::SpiderMultusConfig mixed = Smc("vlan");
  mixed.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"eth9"}};
  EXPECT_EQ(SelectorFor(mixed, {})->size(), 1u);
  api::SpiderMultusConfig long_master = Smc("macvlan");
  long_master.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {std::string(65, 'x')}};
  EXPECT_EQ(SelectorFor(long_master, {}).status().code(), absl::StatusCode::kInvalidArgument);
  // Quotes and backslashes in names are escaped in the CEL literal.
  api::SpiderMultusConfig odd = Smc("macvlan");
  odd.spec.macvlan = api::SpiderMacvlanCniConfig{.master = {"a\"b\\c"}};
  EXPECT_EQ((*SelectorFor(odd, {}))[0],
            R"("ifName" in device.attributes["netresources.spidernet.io"] && )"
            R"(device.attributes["netresources.spidernet.io"].ifName == "a\"b\\c")");
  EXPECT_EQ(CelQuote("x\n\x01"), R"("x\n\x01")");
}

TEST(Model, PoolAttributeNames) {
  EXPECT_EQ(PoolAttributeName("ippool-test"), "pool_ippool_test");
  EXPECT_EQ(PoolAttributeName("a23456789012345678901234567"), "pool_a23456789012345678901234567");
  const std::string hashed = PoolAttributeName("a234567890123456789012345678");  // 28: too long
  EXPECT_EQ(hashed.rfind("pool__", 0), 0u);
  EXPECT_LE(hashed.size(), 32u);
  EXPECT_NE(PoolAttributeName("v4.pool"), PoolAttributeName("v4-pool"));
  EXPECT_NE(PoolAttributeName("v4.pool"), PoolAttributeName("v4.poom"));
  EXPECT_EQ(PoolAttributeName("v4.pool").rfind("pool__", 0), 0u);
}

TEST(Model, ServingPoolsAndCniTypesAreAttributes) {
  std::vector<PoolCapacity> pools = {{.subnet = P("10.6.0.0/16"), .free_ips = 5, .name = "b-pool"},
                                     {.subnet = P("10.6.0.0/16"), .free_ips = 5, .name = "a-pool"},
                                     {.subnet = P("10.6.0.0/16"), .free_ips = 0, .name = "empty"},
                                     {.subnet = P("10.7.0.0/16"), .free_ips = 5, .name = "other"}};
  auto ds = BuildDevices({Plain("eth1", "10.6.0.5/16")}, pools);
  ASSERT_EQ(ds.size(), 10u);
  const auto& a = ds[0].attributes;
  EXPECT_EQ(a.at("pool_a_pool"), DeviceAttribute::Bool(true));
  EXPECT_EQ(a.at("pool_b_pool"), DeviceAttribute::Bool(true));
  EXPECT_FALSE(a.contains("pool_empty"));  // no free IPs: does not serve
  EXPECT_FALSE(a.contains("pool_other"));  // another subnet
  EXPECT_EQ(a.at("cniMacvlan"), DeviceAttribute::Bool(true));
  EXPECT_EQ(a.at("cniIpvlan"), DeviceAttribute::Bool(true));
  EXPECT_EQ(a.at("cniVlan"), DeviceAttribute::Bool(true));
  EXPECT_FALSE(a.contains("cniSriov"));
  // An SR-IOV PF also serves sriov; an InfiniBand NIC ipoib (and ib-sriov) only.
  auto pf = BuildDevices({Eth1()}, {{.subnet = P("10.6.0.0/16"), .free_ips = 1, .name = "p"}});
  ASSERT_EQ(pf.size(), 1u);
  EXPECT_TRUE(pf[0].attributes.contains("cniSriov"));
  nic::Nic ib = Plain("ib0", "10.6.0.9/16");
  ib.mac = "00:00:10:29:fe:80:00:00:00:00:00:00:50:6b:4b:03:00:f3:8a:dc";
  auto ibd = BuildDevices({ib}, {{.subnet = P("10.6.0.0/16"), .free_ips = 1, .name = "p"}});
  ASSERT_EQ(ibd.size(), 1u);
  EXPECT_TRUE(ibd[0].attributes.contains("cniIpoib"));
  EXPECT_FALSE(ibd[0].attributes.contains("cniMacvlan"));
}

TEST(Model, AttributeBudgetDropsPoolsBeyondTheLimit) {
  std::vector<PoolCapacity> pools;
  for (int i = 0; i < 40; ++i) {
    pools.push_back({.subnet = P("10.6.0.0/16"), .free_ips = 1,
                     .name = "p" + std::string(i < 10 ? "0" : "") + std::to_string(i)});
  }
  std::vector<NicPlan> plans = PlanNics({Eth1()}, pools, {});
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].pools.size(), 40u);
  auto ds = BuildDevices({Eth1()}, pools);
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].attributes.size(), 32u);  // the API's limit, exactly
  EXPECT_TRUE(ds[0].attributes.contains("pool_p00"));  // by name: the first ones stay
  EXPECT_FALSE(ds[0].attributes.contains("pool_p39"));
  EXPECT_TRUE(api::ValidateResourceSliceStatus([&] {
                api::ResourceSlice s;
                s.SetTypeMeta();
                s.metadata.name = "n";
                s.spec.driver = "netresources.spidernet.io";
                s.spec.pool = {.name = "n", .generation = 1, .resource_slice_count = 1};
                s.spec.node_name = "n";
                s.spec.devices = {ds[0]};
                return s;
              }()).ok());
}

TEST(Model, NicWithoutAddressIsServedByThePoolsNamingTheNode) {
  nic::Nic underlay = Plain("eth2", "");
  std::vector<PoolCapacity> pools = {
      {.subnet = P("10.9.0.0/24"), .free_ips = 3, .name = "pinned", .selects_node = true},
      {.subnet = P("10.8.0.0/24"), .free_ips = 3, .name = "anywhere"}};
  std::vector<NicPlan> plans = PlanNics({underlay}, pools, {});
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].skipped, "");
  EXPECT_EQ(plans[0].ipv4_subnet, P("10.9.0.0/24"));
  EXPECT_EQ(plans[0].pools, std::vector<std::string>{"pinned"});
  EXPECT_EQ(plans[0].slots, 3);
  auto ds = BuildDevices({underlay}, pools);
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds[0].attributes.at("ipv4Subnet"), DeviceAttribute::String("10.9.0.0/24"));
  EXPECT_TRUE(ds[0].attributes.contains("pool_pinned"));
  // Without a pool naming the node, nothing; a declared subnet wins over the pools.
  EXPECT_EQ(PlanNics({underlay}, {pools[1]}, {})[0].skipped, "no subnet");
  ModelOptions declared;
  declared.declared_subnets["eth2"] = {P("10.8.0.0/24")};
  auto dd = PlanNics({underlay}, pools, declared);
  EXPECT_EQ(dd[0].pools, std::vector<std::string>{"anywhere"});
}

}  // namespace
}  // namespace spiderpool::dra::resourceslice
