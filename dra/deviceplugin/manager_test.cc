// The Manager against a stand-in kubelet, with real gRPC over unix sockets in a temp dir.

#include "dra/deviceplugin/manager.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/testing/temp_dir.h"
#include "dra/deviceplugin/testing/fake_kubelet.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::deviceplugin {
namespace {

using testing::FakeDevice;
using testing::FakeKubelet;
using testing::FakeResource;
using testing::FakeState;

constexpr char kEth1[] = "spidernet.io/eth1-nic";
constexpr char kEth2[] = "spidernet.io/eth2-nic";

nic::Nic MakeNic(std::string name, bool up = true) {
  nic::Nic n;
  n.name = std::move(name);
  n.up = up;
  return n;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::set<std::string> Files(const std::string& dir) {
  std::set<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.insert(n);
  }
  ::closedir(d);
  return out;
}

const FakeResource* Find(const FakeState& s, const std::string& resource) {
  auto it = s.resources.find(resource);
  return it == s.resources.end() ? nullptr : &it->second;
}

// The resource streams, and its latest list has `count` devices all of `health`.
bool Streams(const FakeState& s, const std::string& resource, size_t count,
             const std::string& health) {
  const FakeResource* r = Find(s, resource);
  if (r == nullptr || !r->streaming || r->latest() == nullptr) return false;
  const auto& devs = *r->latest();
  return devs.size() == count && std::all_of(devs.begin(), devs.end(), [&](const FakeDevice& d) {
           return d.health == health;
         });
}

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = FakeKubelet::Start(dir_);
    ASSERT_TRUE(k.ok()) << k.status();
    kubelet_ = std::move(*k);
    options_.kubelet_dir = dir_;
    options_.devices_per_nic = 3;
    options_.resync_interval = std::chrono::milliseconds(0);  // tests call Resync()
  }
  void TearDown() override {
    manager_.reset();
    kubelet_.reset();
  }
  void NewManager() {
    auto m = Manager::Create(options_);
    ASSERT_TRUE(m.ok()) << m.status();
    manager_ = std::move(*m);
  }
  std::string Sock(const std::string& resource) { return dir_ + "/" + SocketNameFor(resource); }

  // Before the kubelet and the manager, whose sockets are in it.
  base::testing::TempDir tmp_{"dp"};
  const std::string dir_ = tmp_.path();
  Options options_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<Manager> manager_;
};

TEST_F(ManagerTest, RegistersOneResourcePerNicAndStreamsDevices) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2")}).ok());
  EXPECT_EQ(manager_->Resources(), (std::vector<std::string>{kEth1, kEth2}));
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && Streams(s, kEth2, 3, kHealthy);
  }));
  FakeState s = kubelet_->Snapshot();
  const FakeResource& r = s.resources.at(kEth1);
  EXPECT_EQ(r.registrations, 1);
  EXPECT_EQ(r.version, "v1beta1");
  EXPECT_EQ(r.endpoint, "spidernet.io_eth1-nic.sock");  // basename in the kubelet's directory
  EXPECT_FALSE(r.pre_start_required);
  EXPECT_FALSE(r.get_preferred_allocation_available);
  EXPECT_TRUE(r.options_fetched);
  EXPECT_EQ(*r.latest(), (std::vector<FakeDevice>{
                             {"eth1-0", kHealthy}, {"eth1-1", kHealthy}, {"eth1-2", kHealthy}}));
  EXPECT_EQ(s.resources.at(kEth2).endpoint, "spidernet.io_eth2-nic.sock");
  EXPECT_EQ(s.resources.at(kEth2).latest()->front().id, "eth2-0");
  EXPECT_EQ(s.resources.size(), 2u);
  EXPECT_TRUE(s.rejected.empty());
  EXPECT_TRUE(Exists(Sock(kEth1)));
  EXPECT_TRUE(Exists(Sock(kEth2)));

  // Nothing changed: no new registration.
  ASSERT_TRUE(manager_->Resync().ok());
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2")}).ok());
  EXPECT_EQ(kubelet_->Snapshot().resources.at(kEth1).registrations, 1);
}

TEST_F(ManagerTest, GetDevicePluginOptionsAndOptionalCalls) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1")}).ok());
  auto stub = kubelet_->Dial(kEth1);
  ASSERT_TRUE(stub.ok());
  {
    grpc::ClientContext ctx;
    v1beta1::DevicePluginOptions opts;
    opts.set_pre_start_required(true);
    ASSERT_TRUE((*stub)->GetDevicePluginOptions(&ctx, v1beta1::Empty(), &opts).ok());
    EXPECT_FALSE(opts.pre_start_required());
    EXPECT_FALSE(opts.get_preferred_allocation_available());
  }
  {
    grpc::ClientContext ctx;
    v1beta1::PreStartContainerRequest req;
    req.add_devices_ids("eth1-0");
    v1beta1::PreStartContainerResponse resp;
    EXPECT_TRUE((*stub)->PreStartContainer(&ctx, req, &resp).ok());
  }
  {
    grpc::ClientContext ctx;
    v1beta1::PreferredAllocationRequest req;
    v1beta1::PreferredAllocationResponse resp;
    EXPECT_EQ((*stub)->GetPreferredAllocation(&ctx, req, &resp).error_code(),
              grpc::StatusCode::UNIMPLEMENTED);
  }
}

TEST_F(ManagerTest, IncludeExcludeRules) {
  options_.rules.include = {"eth*", "ens*"};
  options_.rules.exclude = {"eth9"};
  NewManager();
  ASSERT_TRUE(manager_
                  ->Update({MakeNic("eth1"), MakeNic("eth9"), MakeNic("ens3"), MakeNic("veth0"),
                            MakeNic("lo"), MakeNic("eth1:bad")})
                  .ok());
  EXPECT_EQ(manager_->Resources(), (std::vector<std::string>{"spidernet.io/ens3-nic", kEth1}));
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && Streams(s, "spidernet.io/ens3-nic", 3, kHealthy);
  }));
  FakeState s = kubelet_->Snapshot();
  EXPECT_EQ(s.resources.size(), 2u);
  EXPECT_EQ(Files(dir_), (std::set<std::string>{"kubelet.sock", "spidernet.io_ens3-nic.sock",
                                                "spidernet.io_eth1-nic.sock"}));
}

TEST_F(ManagerTest, NicDownMakesDevicesUnhealthyAndUpHealthyAgain) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && Streams(s, kEth2, 3, kHealthy);
  }));
  ASSERT_TRUE(manager_->Update({MakeNic("eth1", false), MakeNic("eth2")}).ok());
  ASSERT_TRUE(
      kubelet_->WaitFor([](const FakeState& s) { return Streams(s, kEth1, 3, kUnhealthy); }));
  ASSERT_TRUE(manager_->Update({MakeNic("eth1", true), MakeNic("eth2")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && s.resources.at(kEth1).updates.size() == 3;
  }));
  FakeState s = kubelet_->Snapshot();
  EXPECT_EQ(s.resources.at(kEth1).updates[1][0].health, kUnhealthy);
  EXPECT_EQ(s.resources.at(kEth1).registrations, 1);    // an update, not a re-registration
  EXPECT_EQ(s.resources.at(kEth2).updates.size(), 1u);  // eth2 did not change
}

TEST_F(ManagerTest, NicRemovedStopsItsServer) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && Streams(s, kEth2, 3, kHealthy);
  }));
  ASSERT_TRUE(manager_->Update({MakeNic("eth1")}).ok());
  EXPECT_EQ(manager_->Resources(), (std::vector<std::string>{kEth1}));
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    const FakeResource* r = Find(s, kEth2);
    return r != nullptr && !r->streaming && !r->stream_end.empty();
  }));
  EXPECT_FALSE(Exists(Sock(kEth2)));
  EXPECT_TRUE(Exists(Sock(kEth1)));
  EXPECT_FALSE(kubelet_->Allocate(kEth2, {{"eth2-0"}}).ok());  // nobody serves it
  EXPECT_TRUE(kubelet_->Snapshot().resources.at(kEth1).streaming);

  // It comes back: served and registered again.
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth2, 3, kHealthy) && s.resources.at(kEth2).registrations == 2;
  }));
}

TEST_F(ManagerTest, AllocateAnswersEnvsAndRefusesUnknownIds) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2")}).ok());
  auto r = kubelet_->Allocate(kEth1, {{"eth1-0"}, {"eth1-1", "eth1-2"}});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->container_responses_size(), 2);
  for (const auto& c : r->container_responses()) {
    EXPECT_EQ(c.envs_size(), 1);
    EXPECT_EQ(c.envs().at("SPIDERPOOL_NIC_ETH1"), "eth1");
  }
  auto r2 = kubelet_->Allocate(kEth2, {{"eth2-2"}});
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(r2->container_responses(0).envs().at("SPIDERPOOL_NIC_ETH2"), "eth2");

  auto bad = kubelet_->Allocate(kEth1, {{"eth1-0"}, {"eth1-3"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(bad.status().message()).find("eth1-3"), std::string::npos);
  auto other = kubelet_->Allocate(kEth1, {{"eth2-0"}});  // another NIC's device
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ManagerTest, KubeletRestartReRegistersAndStreamsAgain) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2", false)}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && Streams(s, kEth2, 3, kUnhealthy);
  }));
  ASSERT_TRUE(kubelet_->Restart().ok());
  EXPECT_EQ(Files(dir_), (std::set<std::string>{"kubelet.sock"}));  // our sockets wiped
  FakeState s = kubelet_->Snapshot();
  EXPECT_EQ(s.generation, 2);
  EXPECT_FALSE(s.resources.at(kEth1).streaming);

  ASSERT_TRUE(manager_->Resync().ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && Streams(s, kEth2, 3, kUnhealthy) &&
           s.resources.at(kEth1).registrations == 2 && s.resources.at(kEth2).registrations == 2;
  }));
  EXPECT_TRUE(Exists(Sock(kEth1)));
  EXPECT_TRUE(kubelet_->Allocate(kEth1, {{"eth1-1"}}).ok());
  // Changes keep flowing on the new stream.
  ASSERT_TRUE(manager_->Update({MakeNic("eth1", false), MakeNic("eth2", false)}).ok());
  ASSERT_TRUE(
      kubelet_->WaitFor([](const FakeState& s) { return Streams(s, kEth1, 3, kUnhealthy); }));
}

// A kubelet that restarts but leaves our sockets alone (only kubelet.sock is new): register
// again without restarting the servers.
TEST_F(ManagerTest, NewKubeletSocketAloneTriggersRegistration) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) { return Streams(s, kEth1, 3, kHealthy); }));
  kubelet_->Stop();
  ASSERT_EQ(::unlink(kubelet_->socket_path().c_str()) == 0 || errno == ENOENT, true);
  kubelet_.reset();
  auto k = FakeKubelet::Start(dir_);
  ASSERT_TRUE(k.ok());
  kubelet_ = std::move(*k);
  ASSERT_TRUE(manager_->Resync().ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) { return Streams(s, kEth1, 3, kHealthy); }));
  EXPECT_EQ(kubelet_->Snapshot().resources.at(kEth1).registrations, 1);  // the new kubelet's first
}

TEST_F(ManagerTest, KubeletNotUpYetIsRetriedByResync) {
  kubelet_.reset();
  ::unlink((dir_ + "/kubelet.sock").c_str());
  NewManager();
  absl::Status s = manager_->Update({MakeNic("eth1")});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Exists(Sock(kEth1)));  // served anyway, waiting for the kubelet
  EXPECT_EQ(manager_->Resync().code(), absl::StatusCode::kUnavailable);

  auto k = FakeKubelet::Start(dir_);
  ASSERT_TRUE(k.ok());
  kubelet_ = std::move(*k);
  ASSERT_TRUE(manager_->Resync().ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) { return Streams(s, kEth1, 3, kHealthy); }));
}

TEST_F(ManagerTest, BackgroundResyncFollowsKubeletRestart) {
  options_.resync_interval = std::chrono::milliseconds(20);
  NewManager();
  manager_->Start();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) { return Streams(s, kEth1, 3, kHealthy); }));
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && s.resources.at(kEth1).registrations == 2;
  }));
}

TEST_F(ManagerTest, StopRemovesSocketsAndEndsStreams) {
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1"), MakeNic("eth2")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && Streams(s, kEth2, 3, kHealthy);
  }));
  manager_->Stop();
  EXPECT_TRUE(manager_->Resources().empty());
  EXPECT_EQ(Files(dir_), (std::set<std::string>{"kubelet.sock"}));
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return !s.resources.at(kEth1).streaming && !s.resources.at(kEth2).streaming;
  }));
  EXPECT_EQ(kubelet_->Snapshot().resources.at(kEth1).stream_end, "OK");  // a clean end
  manager_->Stop();                                                      // idempotent
  // Update after Stop serves again.
  ASSERT_TRUE(manager_->Update({MakeNic("eth1")}).ok());
  ASSERT_TRUE(kubelet_->WaitFor([](const FakeState& s) {
    return Streams(s, kEth1, 3, kHealthy) && s.resources.at(kEth1).registrations == 2;
  }));
}

// The default 10000 devices per NIC go through the real stream (the message size is fine for
// gRPC's default limits).
TEST_F(ManagerTest, DefaultDeviceCountStreams) {
  options_.devices_per_nic = Options().devices_per_nic;
  NewManager();
  ASSERT_TRUE(manager_->Update({MakeNic("eth1")}).ok());
  ASSERT_TRUE(
      kubelet_->WaitFor([](const FakeState& s) { return Streams(s, kEth1, 10000, kHealthy); }));
  EXPECT_EQ(kubelet_->Snapshot().resources.at(kEth1).latest()->back().id, "eth1-9999");
  EXPECT_TRUE(kubelet_->Allocate(kEth1, {{"eth1-9999"}}).ok());
}

}  // namespace
}  // namespace spiderpool::dra::deviceplugin
