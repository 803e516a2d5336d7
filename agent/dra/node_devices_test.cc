// NodeDevices end to end: a network namespace with a veth "NIC" as the node, NIC discovery
// inside it, ResourceSlices on the API server (loopback, or SPIDERPOOL_TEST_KUBECONFIG).
#include "agent/dra/node_devices.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include <gtest/gtest.h>

#include "absl/strings/str_join.h"

#include "api/resource_slice.h"
#include "base/subprocess.h"
#include "base/testing/temp_dir.h"
#include "dra/kubeletplugin/plugin.h"
#include "dra/kubeletplugin/testing/fake_kubelet.h"
#include "kube/rest/client.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::agent::dra {
namespace {

using kube::testing::TestCluster;
namespace kp = ::spiderpool::dra::kubeletplugin;

void Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/sbin/ip"};  // Debian (merged /usr)
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<base::ProcessResult> r = base::RunProcess({.argv = argv});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << absl::StrJoin(argv, " ") << ": " << r->stderr_data;
}

api::SpiderIPPool Pool(std::string name, std::string subnet, std::vector<std::string> ips) {
  api::SpiderIPPool p;
  p.metadata.name = std::move(name);
  p.spec.subnet = std::move(subnet);
  p.spec.ips = std::move(ips);
  return p;
}

TEST(PoolCapacities, FiltersByNodeAndCountsFree) {
  auto a = std::make_shared<api::SpiderIPPool>(Pool("a", "10.6.0.0/16", {"10.6.0.10-10.6.0.19"}));
  a->spec.exclude_ips = {"10.6.0.19"};
  auto b = std::make_shared<api::SpiderIPPool>(Pool("b", "10.7.0.0/16", {"10.7.0.1-10.7.0.4"}));
  b->status.free_ip_count = 1;  // as the last status writer counted it
  auto other = std::make_shared<api::SpiderIPPool>(Pool("other", "10.8.0.0/16", {"10.8.0.1"}));
  other->spec.node_name = {"node2"};
  auto disabled = std::make_shared<api::SpiderIPPool>(Pool("off", "10.9.0.0/16", {"10.9.0.1"}));
  disabled->spec.disable = true;
  auto affinity = std::make_shared<api::SpiderIPPool>(Pool("aff", "10.10.0.0/16", {"10.10.0.1"}));
  api::LabelSelector sel;
  sel.match_labels = {{"zone", "a"}};
  affinity->spec.node_affinity = sel;

  std::vector<rs::PoolCapacity> got =
      PoolCapacities({a, b, other, disabled, affinity}, "node1", {{"zone", "b"}});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "a");
  EXPECT_EQ(got[0].free_ips, 9);  // never counted: 10 IPs, one excluded, no records
  EXPECT_EQ(got[0].subnet.ToString(), "10.6.0.0/16");
  EXPECT_EQ(got[1].name, "b");
  EXPECT_EQ(got[1].free_ips, 1);

  EXPECT_FALSE(got[0].selects_node);  // admits every node
  got = PoolCapacities({affinity}, "node1", {{"zone", "a"}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].free_ips, 1);
  EXPECT_TRUE(got[0].selects_node);  // names the node through its affinity
  other->spec.node_name = {"node2", "node1"};
  got = PoolCapacities({other}, "node1", {});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].selects_node);
}

TEST(Flags, DeclaredSubnetsAndResourceNames) {
  std::map<std::string, std::vector<base::IPPrefix>> subnets;
  ASSERT_TRUE(ParseDeclaredSubnets("eth1=10.7.0.9/24, eth1=fd00:7::/64,eth2=10.8.0.0/24", &subnets).ok());
  ASSERT_EQ(subnets.size(), 2u);
  ASSERT_EQ(subnets["eth1"].size(), 2u);
  EXPECT_EQ(subnets["eth1"][0].ToString(), "10.7.0.0/24");
  EXPECT_EQ(subnets["eth2"][0].ToString(), "10.8.0.0/24");
  absl::Status bad = ParseDeclaredSubnets("eth1=10.7.0.0/33", &subnets);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("--dra-declared-subnets: \"eth1=10.7.0.0/33\""), std::string::npos);
  EXPECT_FALSE(ParseDeclaredSubnets("eth1", &subnets).ok());
  std::map<std::string, std::string> names;
  ASSERT_TRUE(ParseResourceNames("ens1f0=spidernet.io/sriov_a", &names).ok());
  EXPECT_EQ(names["ens1f0"], "spidernet.io/sriov_a");
  EXPECT_FALSE(ParseResourceNames("ens1f0=x,ens1f0=y", &names).ok());
  EXPECT_FALSE(ParseResourceNames("=x", &names).ok());
}

// This node's reservations in the pool status count as free for it unless handed to a pod;
// other nodes' do not (agent/ipam/blocks.h keeps the pairing until it writes pod records).
TEST(PoolCapacities, ThisNodesUnusedReservationsAreFree) {
  auto p = std::make_shared<api::SpiderIPPool>(Pool("p", "10.6.0.0/16", {"10.6.0.1-10.6.0.10"}));
  api::PoolIPAllocations recs;
  recs["10.6.0.1"] = {.pod = "ns/a", .pod_uid = "uid-a", .node = "node1"};
  for (const char* ip : {"10.6.0.2", "10.6.0.3", "10.6.0.4", "10.6.0.5"}) {
    recs[ip] = {.pod = "", .pod_uid = "", .node = "node1"};
  }
  for (const char* ip : {"10.6.0.6", "10.6.0.7"}) recs[ip] = {.pod = "", .pod_uid = "", .node = "node2"};
  p->SetAllocatedIPs(recs);
  p->status.free_ip_count = 3;  // 10 - 1 pod - 6 reserved
  auto handed = [](const std::string& pool) {
    EXPECT_EQ(pool, "p");
    return std::set<base::IPAddress>{*base::IPAddress::Parse("10.6.0.2")};
  };
  EXPECT_EQ(PoolCapacities({p}, "node1", {}, handed)[0].free_ips, 3 + 3);
  EXPECT_EQ(PoolCapacities({p}, "node1", {})[0].free_ips, 3 + 4);  // nothing handed out
  EXPECT_EQ(PoolCapacities({p}, "node2", {}, handed)[0].free_ips, 3 + 2);
  EXPECT_EQ(PoolCapacities({p}, "node3", {}, handed)[0].free_ips, 3);
}

class NodeDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for network namespaces";
    netns_ = "spnd-" + std::to_string(getpid());
    Ip({"netns", "add", netns_});
    Ip({"-n", netns_, "link", "add", "nic0", "type", "veth", "peer", "name", "peer0"});
    Ip({"-n", netns_, "link", "set", "peer0", "up"});
    Ip({"-n", netns_, "addr", "add", "10.77.0.2/24", "dev", "nic0"});
    Ip({"-n", netns_, "link", "set", "nic0", "up"});
    auto cluster = TestCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    node_ = "sp-nd-" + std::to_string(getpid());
  }
  void TearDown() override {
    devices_.reset();
    if (!netns_.empty()) (void)base::RunProcess({.argv = {"/usr/sbin/ip", "netns", "del", netns_}});
    if (cluster_) {
      kube::DynamicClient slices(cluster_->rest(), api::ResourceSlice::Resource());
      (void)slices.DeleteCollection("", {.field_selector = "spec.nodeName=" + node_});
    }
  }

  void StartDevices(bool publish,
                    ::spiderpool::dra::kubeletplugin::DeviceHealthFeed* health = nullptr) {
    NodeDevicesOptions o{.node_name = node_, .netns_path = "/var/run/netns/" + netns_,
                         .publish_slices = publish};
    o.device_health = health;
    o.discovery.sysfs_root = "";
    o.discovery.quiet = absl::Milliseconds(20);
    o.model.include_interfaces = {"nic*"};
    o.model.slots_per_nic = 8;
    o.min_backoff = absl::Milliseconds(10);
    o.min_publish_interval = min_publish_interval_;
    devices_ = std::make_unique<NodeDevices>(cluster_->rest(), o, [this] {
      std::lock_guard lock(mu_);
      return pools_;
    });
    ASSERT_TRUE(devices_->Start().ok());
  }
  void SetFree(int64_t free_ips) {
    {
      std::lock_guard lock(mu_);
      pools_ = {{.subnet = *base::IPPrefix::Parse("10.77.0.0/24"), .free_ips = free_ips,
                 .name = "p"}};
    }
    devices_->Refresh();
  }
  // Devices in this node's slices of the newest generation.
  std::vector<std::string> PublishedDevices() {
    kube::Client<api::ResourceSlice> slices(cluster_->rest());
    auto list = slices.List("", {.field_selector = "spec.nodeName=" + node_});
    EXPECT_TRUE(list.ok()) << list.status();
    std::vector<std::string> names;
    if (!list.ok()) return names;
    int64_t gen = 0;
    for (const auto& s : list->items) gen = std::max(gen, s.spec.pool.generation);
    for (const auto& s : list->items) {
      if (s.spec.pool.generation != gen) continue;
      for (const auto& d : s.spec.devices) names.push_back(d.name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // Waits for the publisher to settle on `want` devices (bounded: a failure guard only).
  std::vector<std::string> AwaitDevices(size_t want) {
    std::vector<std::string> got;
    for (int i = 0; i < 200; ++i) {
      EXPECT_TRUE(devices_->WaitIdle(absl::Seconds(30)));
      got = PublishedDevices();
      if (got.size() == want) break;
      usleep(50 * 1000);  // a netlink event may still be coalescing
    }
    return got;
  }

  std::string netns_, node_;
  std::unique_ptr<TestCluster> cluster_;
  std::mutex mu_;
  std::vector<rs::PoolCapacity> pools_;
  std::unique_ptr<NodeDevices> devices_;
  absl::Duration min_publish_interval_ = absl::ZeroDuration();
};

TEST_F(NodeDevicesTest, PublishesSlotsForNicWithFreePoolAndFollowsChanges) {
  {
    std::lock_guard lock(mu_);
    pools_ = {{.subnet = *base::IPPrefix::Parse("10.77.0.0/24"), .free_ips = 5, .name = "p"}};
  }
  StartDevices(/*publish=*/true);
  // 5 free IPs in the NIC's subnet: 5 slots (fewer than slots_per_nic = 8).
  EXPECT_EQ(AwaitDevices(5), (std::vector<std::string>{"nic0-0", "nic0-1", "nic0-2", "nic0-3",
                                                       "nic0-4"}));
  const int64_t first_generation = devices_->last_publish()->generation;

  SetFree(100);  // capped by slots_per_nic
  EXPECT_EQ(AwaitDevices(8).size(), 8u);
  EXPECT_GT(devices_->last_publish()->generation, first_generation);

  SetFree(0);  // the pool is exhausted: the scheduler must not pick this node
  EXPECT_EQ(AwaitDevices(0).size(), 0u);

  SetFree(100);
  EXPECT_EQ(AwaitDevices(8).size(), 8u);
  Ip({"-n", netns_, "link", "set", "nic0", "down"});  // a down NIC publishes nothing
  EXPECT_EQ(AwaitDevices(0).size(), 0u);
  Ip({"-n", netns_, "link", "set", "nic0", "up"});
  EXPECT_EQ(AwaitDevices(8).size(), 8u);

  // A second NIC in the same subnet appears, then goes away.
  Ip({"-n", netns_, "link", "add", "nic1", "type", "veth", "peer", "name", "peer1"});
  Ip({"-n", netns_, "link", "set", "peer1", "up"});
  Ip({"-n", netns_, "addr", "add", "10.77.0.3/24", "dev", "nic1"});
  Ip({"-n", netns_, "link", "set", "nic1", "up"});
  std::vector<std::string> both = AwaitDevices(16);
  ASSERT_EQ(both.size(), 16u);
  EXPECT_EQ(both[8], "nic1-0");
  Ip({"-n", netns_, "link", "del", "nic1"});
  EXPECT_EQ(AwaitDevices(8).size(), 8u);

  // Only the newest generation is left on the server.
  kube::Client<api::ResourceSlice> slices(cluster_->rest());
  auto list = slices.List("", {.field_selector = "spec.nodeName=" + node_});
  ASSERT_TRUE(list.ok()) << list.status();
  for (const auto& s : list->items) {
    EXPECT_EQ(s.spec.pool.generation, devices_->last_publish()->generation);
    EXPECT_EQ(s.spec.pool.name, node_);
    EXPECT_EQ(s.spec.driver, "netresources.spidernet.io");
  }
}

// A driver that prepares nothing: the health stream needs a plugin, not claims.
class NoClaims : public kp::Driver {
 public:
  std::map<std::string, kp::PrepareResult> Prepare(const std::vector<kp::ClaimRef>&) override {
    return {};
  }
  std::map<std::string, std::string> Unprepare(const std::vector<kp::ClaimRef>&) override {
    return {};
  }
};

// The kubelet's DRAResourceHealth stream (through the real plugin, read by the kubelet
// stand-in) reports a device Healthy while its NIC is up and Unhealthy once the veth goes down,
// although the down NIC's devices leave the ResourceSlice (a claim may still hold one).
TEST_F(NodeDevicesTest, HealthStreamFollowsTheNicLinkState) {
  {
    std::lock_guard lock(mu_);
    pools_ = {{.subnet = *base::IPPrefix::Parse("10.77.0.0/24"), .free_ips = 2, .name = "p"}};
  }
  kp::DeviceHealthFeed feed;
  StartDevices(/*publish=*/true, &feed);
  ASSERT_EQ(AwaitDevices(2).size(), 2u);

  base::testing::TempDir tmp("health");  // before the plugin, whose sockets are in it
  NoClaims driver;
  kp::Plugin plugin({.registry_dir = tmp.Join("registry"), .plugin_dir = tmp.Join("plugin"),
                     .device_health = &feed},
                    &driver);
  ASSERT_TRUE(plugin.Start().ok());
  kp::testing::FakeKubelet kubelet({.registry_dir = tmp.Join("registry")});
  ASSERT_TRUE(kubelet.Discover().ok());
  ASSERT_TRUE(kubelet.current().ok());
  EXPECT_TRUE(kubelet.current()->resource_health) << "GetInfo must advertise the health service";

  using Status = kp::DeviceHealthStatus;
  std::vector<std::vector<kp::DeviceHealth>> updates;
  bool took_down = false;
  absl::Status s = kubelet.WatchHealth(
      [&](const std::vector<kp::DeviceHealth>& devices) {
        updates.push_back(devices);
        const bool all_healthy = std::all_of(devices.begin(), devices.end(), [](const auto& d) {
          return d.status == Status::kHealthy;
        });
        const bool all_unhealthy = std::all_of(devices.begin(), devices.end(), [](const auto& d) {
          return d.status == Status::kUnhealthy;
        });
        if (!took_down && devices.size() == 2 && all_healthy) {
          took_down = true;
          Ip({"-n", netns_, "link", "set", "nic0", "down"});
          return true;
        }
        return !(took_down && devices.size() == 2 && all_unhealthy);  // done
      },
      std::chrono::seconds(30));
  EXPECT_TRUE(s.ok()) << s;
  ASSERT_TRUE(took_down) << "never saw both devices Healthy";
  const std::vector<kp::DeviceHealth>& last = updates.back();
  ASSERT_EQ(last.size(), 2u);
  for (const kp::DeviceHealth& d : last) {
    EXPECT_EQ(d.pool, node_);
    EXPECT_EQ(d.status, Status::kUnhealthy) << d.device;
    EXPECT_GT(d.last_updated_unix, 0);
  }
  EXPECT_EQ(last[0].device, "nic0-0");
  EXPECT_EQ(last[1].device, "nic0-1");
  EXPECT_EQ(AwaitDevices(0).size(), 0u) << "a down NIC publishes no devices";
  plugin.Stop();
}

// Issue 15 point 7: an IPAM storm near exhaustion changes the slot count on every ADD; the
// slices are written at most once per min_publish_interval, with the latest state.
TEST_F(NodeDevicesTest, ChurnIsBoundedToOneWritePerInterval) {
  {
    std::lock_guard lock(mu_);
    pools_ = {{.subnet = *base::IPPrefix::Parse("10.77.0.0/24"), .free_ips = 8, .name = "p"}};
  }
  min_publish_interval_ = absl::Seconds(1);
  StartDevices(/*publish=*/true);
  ASSERT_EQ(AwaitDevices(8).size(), 8u);
  const int64_t before = devices_->slice_writes();
  const absl::Time start = absl::Now();
  for (int free = 7; free >= 1; --free) {  // 7 ADDs within ~0.35 s: 7 different slot counts
    SetFree(free);
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_EQ(AwaitDevices(1).size(), 1u);  // the latest state arrives
  ASSERT_TRUE(devices_->WaitIdle(absl::Seconds(30)));
  const absl::Duration took = absl::Now() - start;
  const int64_t writes = devices_->slice_writes() - before;
  EXPECT_GE(writes, 1);
  // One write per started interval at most (+1 for the interval already running at the start).
  EXPECT_LE(writes, 1 + static_cast<int64_t>(absl::ToDoubleSeconds(took))) << "took " << took;
  EXPECT_LT(writes, 7);
}

TEST_F(NodeDevicesTest, UnchangedDevicesCauseNoApiCalls) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  {
    std::lock_guard lock(mu_);
    pools_ = {{.subnet = *base::IPPrefix::Parse("10.77.0.0/24"), .free_ips = 100, .name = "p"}};
  }
  StartDevices(/*publish=*/true);
  ASSERT_EQ(AwaitDevices(8).size(), 8u);
  // A pool status write that changes nothing for this node (still >= 8 free) must not reach
  // the API server: the next LIST of slices fails, and it must be ours, not the agent's.
  cluster_->loopback()->FailNext(1, 500, {.verb = "list", .resource = "resourceslices"});
  SetFree(99);
  ASSERT_TRUE(devices_->WaitIdle(absl::Seconds(30)));
  kube::Client<api::ResourceSlice> slices(cluster_->rest());
  auto list = slices.List("", {.field_selector = "spec.nodeName=" + node_});
  EXPECT_FALSE(list.ok()) << "the agent listed slices although its devices had not changed";
  cluster_->loopback()->ClearFaults();
}

TEST_F(NodeDevicesTest, WithoutDraNothingIsWritten) {
  StartDevices(/*publish=*/false);
  SetFree(100);
  ASSERT_TRUE(devices_->WaitIdle(absl::Seconds(30)));
  ASSERT_EQ(devices_->nics().size(), 2u);  // nic0 and its peer, discovered in the namespace
  EXPECT_EQ(devices_->nics()[0].name, "nic0");
  EXPECT_FALSE(devices_->last_publish().has_value());
  EXPECT_TRUE(PublishedDevices().empty());
}

}  // namespace
}  // namespace spiderpool::agent::dra
