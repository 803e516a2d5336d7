// The kubelet plugin over real gRPC unix sockets, driven by the fake kubelet.
#include "dra/kubeletplugin/plugin.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "base/testing/temp_dir.h"
#include "dra/kubeletplugin/proto/dra_v1.grpc.pb.h"
#include "dra/kubeletplugin/proto/health.grpc.pb.h"
#include "dra/kubeletplugin/proto/pluginregistration.grpc.pb.h"
#include "dra/kubeletplugin/testing/fake_kubelet.h"
#include "gtest/gtest.h"
#include "kube/metrics/metrics.h"

namespace spiderpool::dra::kubeletplugin {
namespace {

namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace health = ::grpc::health::v1;
using testing::FakeKubelet;
using testing::FakeKubeletOptions;

constexpr char kUidA[] = "3f0b2a8e-6c1d-4e5f-9a7b-1c2d3e4f5a6b";
constexpr char kUidB[] = "9c8d7e6f-5a4b-4c3d-8e2f-1a0b9c8d7e6f";

bool Exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

// State every instance shares, like the on-disk state of the real driver: what is prepared,
// and whether two calls ever ran in the Driver at the same time.
struct SharedState {
  std::mutex mu;
  std::set<std::string> prepared;  // guarded by mu
  std::atomic<int> in_flight{0};
  std::atomic<bool> overlap{false};
  // A Prepare naming claim `block_uid` waits in the Driver until Release().
  std::string block_uid;
  std::condition_variable cv;
  bool blocked = false;   // a call is waiting in the Driver; guarded by mu
  bool released = false;  // guarded by mu

  void WaitBlocked() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return blocked; });
  }
  void Release() {
    {
      std::lock_guard<std::mutex> l(mu);
      released = true;
    }
    cv.notify_all();
  }
};

// A Driver per plugin instance over the shared state; it counts the calls it gets.
class TestDriver : public Driver {
 public:
  explicit TestDriver(SharedState* shared) : shared_(shared) {}

  std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims) override {
    Enter();
    std::map<std::string, PrepareResult> out;
    {
      std::unique_lock<std::mutex> l(shared_->mu);
      ++prepare_calls;
      for (const ClaimRef& c : claims) {
        seen.push_back(c.uid);
        if (!shared_->block_uid.empty() && c.uid == shared_->block_uid) {
          shared_->blocked = true;
          shared_->cv.notify_all();
          shared_->cv.wait(l, [&] { return shared_->released; });
        }
        if (omit.count(c.uid)) continue;
        if (c.uid.rfind("fail-", 0) == 0) {
          out[c.uid].error = "cannot prepare " + c.uid;
          continue;
        }
        shared_->prepared.insert(c.uid);
        PreparedDevice d;
        d.request_names = {"nic"};
        d.pool_name = "node-1";
        d.device_name = "eth1";
        d.cdi_device_ids = {"k8s.netresources.spidernet.io/claim=" + c.uid};
        if (c.uid.rfind("shared-", 0) == 0) d.share_id = "share-" + c.uid;
        PreparedDevice all;  // serves every request
        all.pool_name = "node-1";
        all.device_name = "eth2";
        out[c.uid].devices = {d, all};
      }
    }
    Leave();
    return out;
  }

  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override {
    Enter();
    std::map<std::string, std::string> out;
    {
      std::lock_guard<std::mutex> l(shared_->mu);
      ++unprepare_calls;
      for (const ClaimRef& c : claims) {
        seen.push_back(c.uid);
        if (omit.count(c.uid)) continue;
        shared_->prepared.erase(c.uid);  // never prepared is fine too
        out[c.uid] = "";
      }
    }
    Leave();
    return out;
  }

  // Guarded by shared_->mu.
  int prepare_calls = 0;
  int unprepare_calls = 0;
  std::vector<std::string> seen;
  std::set<std::string> omit;  // claims the Driver "forgets" to answer

 private:
  void Enter() {
    if (shared_->in_flight.fetch_add(1) != 0) shared_->overlap = true;
    // Widen the window in which a second, unserialized call would be seen.
    for (int i = 0; i < 200; ++i) std::this_thread::yield();
  }
  void Leave() { shared_->in_flight.fetch_sub(1); }

  SharedState* shared_;
};

class PluginTest : public ::testing::Test {
 protected:
  std::string RegistryDir() const { return root_ + "/registry"; }
  std::string PluginDir() const { return root_ + "/plugins/net"; }

  PluginOptions Options(const std::string& pod_uid = "") {
    PluginOptions o;
    o.registry_dir = RegistryDir();
    o.plugin_dir = PluginDir();
    o.pod_uid = pod_uid;
    o.metrics = &metrics_;
    return o;
  }

  FakeKubeletOptions KubeletOptions() {
    FakeKubeletOptions o;
    o.registry_dir = RegistryDir();
    return o;
  }

  // A short tag: HashedSocketsServeAndRegister's paths must still fit once hashed.
  base::testing::TempDir tmp_{"kp"};
  const std::string root_ = tmp_.path();
  kube::metrics::Registry metrics_;
  SharedState shared_;
};

// A direct v1 call to one endpoint, bypassing the fake kubelet's choice of instance.
grpc::Status PrepareAt(const std::string& endpoint, const std::vector<std::string>& uids,
                       std::chrono::milliseconds timeout,
                       drav1::NodePrepareResourcesResponse* resp) {
  auto channel = grpc::CreateChannel("unix:" + endpoint, grpc::InsecureChannelCredentials());
  drav1::NodePrepareResourcesRequest req;
  for (const auto& uid : uids) {
    auto* c = req.add_claims();
    c->set_namespace_("default");
    c->set_uid(uid);
    c->set_name("claim-" + uid);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return drav1::DRAPlugin::NewStub(channel)->NodePrepareResources(&ctx, req, resp);
}

// Registration.GetInfo on a registration socket, as the kubelet's plugin watcher calls it.
grpc::Status GetInfoAt(const std::string& socket, pluginregistration::PluginInfo* info) {
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  grpc::ClientContext ctx;
  return pluginregistration::Registration::NewStub(channel)->GetInfo(&ctx, {}, info);
}

ClaimRef Claim(const std::string& uid) { return ClaimRef{"default", uid, "claim-" + uid}; }

uint64_t CallCount(kube::metrics::Registry& r, std::string_view method) {
  return r.AddHistogram(kOperationsMetric, "")
      .WithLabels({{"method_name", std::string(method)}})
      .Count();
}

TEST_F(PluginTest, RegistrationHandshake) {
  TestDriver driver(&shared_);
  Plugin plugin(Options(), &driver);
  ASSERT_TRUE(plugin.Start().ok());
  EXPECT_EQ(plugin.sockets().registration, RegistryDir() + "/netresources.spidernet.io-reg.sock");
  EXPECT_EQ(plugin.sockets().dra, PluginDir() + "/dra.sock");
  EXPECT_FALSE(plugin.registration_status().has_value());

  // GetInfo exactly as the kubelet reads it.
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(GetInfoAt(plugin.sockets().registration, &info).ok());
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "netresources.spidernet.io");
  EXPECT_EQ(info.endpoint(), plugin.sockets().dra);
  ASSERT_EQ(info.supported_versions_size(), 2);
  EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
  EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");

  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());
  auto instances = kubelet.instances();
  ASSERT_EQ(instances.size(), 1u);
  EXPECT_EQ(instances[0].registration_socket, plugin.sockets().registration);
  EXPECT_EQ(instances[0].endpoint, plugin.sockets().dra);
  EXPECT_EQ(instances[0].service, "v1.DRAPlugin");
  auto status = plugin.registration_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->plugin_registered);
  EXPECT_EQ(status->error, "");
  EXPECT_EQ(CallCount(metrics_, kMethodNotifyRegistrationStatus), 1u);

  // A second pass keeps the registration (no second notify).
  ASSERT_TRUE(kubelet.Discover().ok());
  EXPECT_EQ(kubelet.instances().size(), 1u);
  EXPECT_EQ(CallCount(metrics_, kMethodNotifyRegistrationStatus), 1u);
}

// Without a health feed the service is neither advertised nor served: the kubelet's stream
// gets UNIMPLEMENTED (what kubelets 1.34-1.36 logged every 5 s before the agent set one).
TEST_F(PluginTest, ResourceHealthIsServedOnlyWithAFeed) {
  TestDriver driver(&shared_);
  Plugin plugin(Options(), &driver);
  ASSERT_TRUE(plugin.Start().ok());
  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());
  ASSERT_TRUE(kubelet.current().ok());
  EXPECT_FALSE(kubelet.current()->resource_health);
  absl::Status s = kubelet.WatchHealth([](const auto&) { return false; }, std::chrono::seconds(5));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
}

// The stream sends the complete list at once and again after each change (an unchanged Set
// sends nothing); every open stream gets it; the plugin's Stop() ends the stream.
TEST_F(PluginTest, ResourceHealthStreamsTheCompleteListOnEveryChange) {
  DeviceHealthFeed feed;
  feed.Set({{.pool = "node1", .device = "eth1-0", .status = DeviceHealthStatus::kHealthy,
             .last_updated_unix = 100}});
  TestDriver driver(&shared_);
  PluginOptions o = Options();
  o.device_health = &feed;
  Plugin plugin(o, &driver);
  ASSERT_TRUE(plugin.Start().ok());

  // GetInfo advertises it after the DRA services.
  pluginregistration::PluginInfo info;
  ASSERT_TRUE(GetInfoAt(plugin.sockets().registration, &info).ok());
  ASSERT_EQ(info.supported_versions_size(), 3);
  EXPECT_EQ(info.supported_versions(2), "v1alpha1.DRAResourceHealth");

  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());
  EXPECT_TRUE(kubelet.current()->resource_health);
  std::vector<std::vector<DeviceHealth>> got;
  absl::Status s = kubelet.WatchHealth(
      [&](const std::vector<DeviceHealth>& devices) {
        got.push_back(devices);
        if (got.size() == 1) {
          feed.Set(devices);  // unchanged: no message
          feed.Set({{.pool = "node1", .device = "eth1-0",
                     .status = DeviceHealthStatus::kUnhealthy, .last_updated_unix = 200},
                    {.pool = "node1", .device = "eth2-0",
                     .status = DeviceHealthStatus::kHealthy, .last_updated_unix = 200}});
        }
        return got.size() < 2;
      },
      std::chrono::seconds(10));
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(got[0].size(), 1u);
  EXPECT_EQ(got[0][0], (DeviceHealth{.pool = "node1", .device = "eth1-0",
                                     .status = DeviceHealthStatus::kHealthy,
                                     .last_updated_unix = 100}));
  ASSERT_EQ(got[1].size(), 2u);
  EXPECT_EQ(got[1][0].status, DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(got[1][0].last_updated_unix, 200);
  EXPECT_EQ(got[1][1].device, "eth2-0");

  // A stream still open when the plugin stops ends (no hang in Stop()).
  std::atomic<int> messages{0};
  absl::Status ended;
  std::thread watcher([&] {
    ended = kubelet.WatchHealth(
        [&](const auto&) {
          ++messages;
          return true;
        },
        std::chrono::seconds(30));
  });
  for (int i = 0; i < 2000 && messages.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT(messages.load(), 0) << "the second stream never got the list";
  const auto t0 = std::chrono::steady_clock::now();
  plugin.Stop();
  watcher.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_NE(ended.code(), absl::StatusCode::kDeadlineExceeded) << ended;
}

TEST_F(PluginTest, InvalidPluginIsToldWhyAndOtherFilesAreIgnored) {
  TestDriver driver(&shared_);
  PluginOptions o = Options();
  o.driver_name = "other.example.com";
  Plugin plugin(o, &driver);
  ASSERT_TRUE(plugin.Start().ok());
  // Not sockets, or hidden: the watcher must skip them.
  std::ofstream(RegistryDir() + "/README") << "not a socket";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string hidden = RegistryDir() + "/.hidden-reg.sock";
  strncpy(addr.sun_path, hidden.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);

  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());
  close(fd);
  EXPECT_TRUE(kubelet.instances().empty());
  auto rejected = kubelet.rejected();
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected.begin()->first, plugin.sockets().registration);
  auto status = plugin.registration_status();
  ASSERT_TRUE(status.has_value());
  EXPECT_FALSE(status->plugin_registered);
  EXPECT_EQ(status->error,
            "unexpected driver name other.example.com, want netresources.spidernet.io");
  EXPECT_EQ(kubelet.Prepare({Claim("a")}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(PluginTest, PrepareAndUnprepareV1) {
  TestDriver driver(&shared_);
  Plugin plugin(Options(), &driver);
  ASSERT_TRUE(plugin.Start().ok());
  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());

  auto prepared = kubelet.Prepare({Claim("uid-1"), Claim("shared-2"), Claim("fail-3")});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->size(), 3u);
  const PrepareResult& one = prepared->at("uid-1");
  EXPECT_EQ(one.error, "");
  ASSERT_EQ(one.devices.size(), 2u);
  EXPECT_EQ(one.devices[0].request_names, std::vector<std::string>{"nic"});
  EXPECT_EQ(one.devices[0].pool_name, "node-1");
  EXPECT_EQ(one.devices[0].device_name, "eth1");
  EXPECT_EQ(one.devices[0].cdi_device_ids,
            std::vector<std::string>{"k8s.netresources.spidernet.io/claim=uid-1"});
  EXPECT_FALSE(one.devices[0].share_id.has_value());
  EXPECT_TRUE(one.devices[1].request_names.empty());
  EXPECT_TRUE(one.devices[1].cdi_device_ids.empty());
  EXPECT_EQ(prepared->at("shared-2").devices[0].share_id, "share-shared-2");
  EXPECT_EQ(prepared->at("fail-3").error, "cannot prepare fail-3");
  EXPECT_TRUE(prepared->at("fail-3").devices.empty());

  auto unprepared = kubelet.Unprepare({Claim("uid-1"), Claim("shared-2")});
  ASSERT_TRUE(unprepared.ok()) << unprepared.status();
  EXPECT_EQ(*unprepared, (std::map<std::string, std::string>{{"uid-1", ""}, {"shared-2", ""}}));
  EXPECT_EQ(CallCount(metrics_, kMethodPrepareV1), 1u);
  EXPECT_EQ(CallCount(metrics_, kMethodUnprepareV1), 1u);
  EXPECT_EQ(CallCount(metrics_, kMethodPrepareV1beta1), 0u);
  const std::string exposition = metrics_.Expose();
  // One claim (fail-3) failed: counted for the chart's DRA alert.
  EXPECT_NE(exposition.find("spiderpool_dra_prepare_failures_total 1\n"), std::string::npos)
      << exposition;
  EXPECT_NE(exposition.find("dra_grpc_operations_duration_seconds_count{method_name=\"/k8s.io."
                            "kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources\"} 1"),
            std::string::npos)
      << exposition;
}

TEST_F(PluginTest, PrepareAndUnprepareV1beta1ReachTheSameDriver) {
  TestDriver driver(&shared_);
  Plugin plugin(Options(), &driver);
  ASSERT_TRUE(plugin.Start().ok());
  FakeKubeletOptions ko = KubeletOptions();
  ko.force_v1beta1 = true;
  FakeKubelet kubelet(ko);
  ASSERT_TRUE(kubelet.Discover().ok());
  ASSERT_EQ(kubelet.current()->service, "v1beta1.DRAPlugin");

  auto prepared = kubelet.Prepare({Claim("shared-1")});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->at("shared-1").devices.size(), 2u);
  // v1beta1 has no share_id on the wire.
  EXPECT_FALSE(prepared->at("shared-1").devices[0].share_id.has_value());
  EXPECT_EQ(prepared->at("shared-1").devices[0].cdi_device_ids,
            std::vector<std::string>{"k8s.netresources.spidernet.io/claim=shared-1"});
  auto unprepared = kubelet.Unprepare({Claim("shared-1")});
  ASSERT_TRUE(unprepared.ok());
  EXPECT_EQ(unprepared->at("shared-1"), "");
  EXPECT_EQ(driver.prepare_calls, 1);
  EXPECT_EQ(driver.unprepare_calls, 1);
  EXPECT_EQ(CallCount(metrics_, kMethodPrepareV1beta1), 1u);
  EXPECT_EQ(CallCount(metrics_, kMethodUnprepareV1beta1), 1u);
  EXPECT_EQ(CallCount(metrics_, kMethodPrepareV1), 0u);
}

TEST_F(PluginTest, RepeatedCallsReachTheDriverEachTime) {
  TestDriver driver(&shared_);
  Plugin plugin(Options(), &driver);
  ASSERT_TRUE(plugin.Start().ok());
  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());

  auto first = kubelet.Prepare({Claim("uid-1")});
  auto second = kubelet.Prepare({Claim("uid-1")});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->at("uid-1").devices.size(), second->at("uid-1").devices.size());
  EXPECT_EQ(first->at("uid-1").devices[0].cdi_device_ids,
            second->at("uid-1").devices[0].cdi_device_ids);
  EXPECT_EQ(driver.prepare_calls, 2);  // no caching in the plugin: the Driver is idempotent
  EXPECT_EQ(shared_.prepared.size(), 1u);
  for (int i = 0; i < 2; ++i) {
    auto u = kubelet.Unprepare({Claim("uid-1"), Claim("never-prepared")});
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(*u, (std::map<std::string, std::string>{{"uid-1", ""}, {"never-prepared", ""}}));
  }
  EXPECT_EQ(driver.unprepare_calls, 2);
  EXPECT_TRUE(shared_.prepared.empty());
  // Duplicates in one request reach the Driver once.
  ASSERT_TRUE(kubelet.Prepare({Claim("dup"), Claim("dup")}).ok());
  EXPECT_EQ(std::count(driver.seen.begin(), driver.seen.end(), "dup"), 1);
}

TEST_F(PluginTest, MissingResultsAreFilledWithAnError) {
  TestDriver driver(&shared_);
  driver.omit = {"forgotten"};
  Plugin plugin(Options(), &driver);
  ASSERT_TRUE(plugin.Start().ok());
  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());

  auto prepared = kubelet.Prepare({Claim("ok"), Claim("forgotten")});
  ASSERT_TRUE(prepared.ok());
  ASSERT_EQ(prepared->size(), 2u);
  EXPECT_EQ(prepared->at("ok").error, "");
  EXPECT_EQ(prepared->at("forgotten").error,
            "internal error: driver returned no result for claim forgotten");
  EXPECT_TRUE(prepared->at("forgotten").devices.empty());
  // The claim without a result counts as failed.
  EXPECT_NE(metrics_.Expose().find("spiderpool_dra_prepare_failures_total 1\n"), std::string::npos)
      << metrics_.Expose();
  auto unprepared = kubelet.Unprepare({Claim("ok"), Claim("forgotten")});
  ASSERT_TRUE(unprepared.ok());
  EXPECT_EQ(*unprepared,
            (std::map<std::string, std::string>{
                {"ok", ""},
                {"forgotten", "internal error: driver returned no result for claim forgotten"}}));
}

TEST_F(PluginTest, EmptyUidNeverReachesTheDriver) {
  TestDriver driver(&shared_);
  Plugin plugin(Options(), &driver);
  // Exported from the start (the alert's series exists before any failure).
  EXPECT_NE(metrics_.Expose().find("spiderpool_dra_prepare_failures_total 0\n"), std::string::npos)
      << metrics_.Expose();
  ASSERT_TRUE(plugin.Start().ok());
  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());

  auto only_empty = kubelet.Prepare({ClaimRef{"ns", "", "nameless"}});
  ASSERT_TRUE(only_empty.ok());
  ASSERT_EQ(only_empty->size(), 1u);
  EXPECT_EQ(only_empty->at("").error, "claim ns/nameless has no uid");
  EXPECT_EQ(driver.prepare_calls, 0);
  // Refused before the driver: a failed claim all the same.
  EXPECT_NE(metrics_.Expose().find("spiderpool_dra_prepare_failures_total 1\n"), std::string::npos)
      << metrics_.Expose();

  auto mixed = kubelet.Unprepare({ClaimRef{"ns", "", "nameless"}, Claim("uid-1")});
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(*mixed, (std::map<std::string, std::string>{{"", "claim ns/nameless has no uid"},
                                                        {"uid-1", ""}}));
  EXPECT_EQ(driver.seen, std::vector<std::string>{"uid-1"});
}

TEST_F(PluginTest, TwoInstancesServeSideBySideAndCallsAreSerialized) {
  TestDriver old_driver(&shared_);
  TestDriver new_driver(&shared_);
  Plugin old_plugin(Options(kUidA), &old_driver);
  Plugin new_plugin(Options(kUidB), &new_driver);
  ASSERT_TRUE(old_plugin.Start().ok());
  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());
  ASSERT_TRUE(new_plugin.Start().ok());
  ASSERT_TRUE(kubelet.Discover().ok());

  EXPECT_EQ(old_plugin.sockets().registration,
            RegistryDir() + "/netresources.spidernet.io-" + kUidA + "-reg.sock");
  EXPECT_EQ(old_plugin.sockets().dra, PluginDir() + "/dra-" + kUidA + ".sock");
  EXPECT_EQ(new_plugin.sockets().dra, PluginDir() + "/dra-" + kUidB + ".sock");
  auto instances = kubelet.instances();
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_EQ(instances[0].endpoint, old_plugin.sockets().dra);
  EXPECT_EQ(instances[1].endpoint, new_plugin.sockets().dra);
  EXPECT_EQ(kubelet.current()->endpoint, new_plugin.sockets().dra);  // the newest
  EXPECT_TRUE(old_plugin.registration_status()->plugin_registered);
  EXPECT_TRUE(new_plugin.registration_status()->plugin_registered);

  // Both serve.
  drav1::NodePrepareResourcesResponse resp;
  ASSERT_TRUE(PrepareAt(old_plugin.sockets().dra, {"a"}, std::chrono::seconds(45), &resp).ok());
  ASSERT_TRUE(kubelet.Prepare({Claim("b")}).ok());
  EXPECT_EQ(old_driver.prepare_calls, 1);
  EXPECT_EQ(new_driver.prepare_calls, 1);

  // While a call is inside the new instance's Driver, neither instance lets another one in:
  // both give up at their deadline instead.
  shared_.block_uid = "block";
  std::thread blocked([&] { EXPECT_TRUE(kubelet.Prepare({Claim("block")}).ok()); });
  shared_.WaitBlocked();
  grpc::Status s = PrepareAt(old_plugin.sockets().dra, {"other"}, std::chrono::seconds(1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  s = PrepareAt(new_plugin.sockets().dra, {"other"}, std::chrono::seconds(1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  shared_.Release();
  blocked.join();
  resp.Clear();
  ASSERT_TRUE(PrepareAt(old_plugin.sockets().dra, {"other"}, std::chrono::seconds(45), &resp).ok());
  EXPECT_EQ(resp.claims().at("other").error(), "");

  // Many concurrent calls spread over both instances never overlap in the Driver.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const Plugin& p = (t + i) % 2 == 0 ? old_plugin : new_plugin;
        drav1::NodePrepareResourcesResponse r;
        if (!PrepareAt(p.sockets().dra, {"c-" + std::to_string(t) + "-" + std::to_string(i)},
                       std::chrono::seconds(45), &r)
                 .ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_FALSE(shared_.overlap.load());
}

TEST_F(PluginTest, StopRemovesOnlyItsOwnSocketsAndTheKubeletFallsBack) {
  TestDriver old_driver(&shared_);
  TestDriver new_driver(&shared_);
  Plugin old_plugin(Options(kUidA), &old_driver);
  auto new_plugin = std::make_unique<Plugin>(Options(kUidB), &new_driver);
  ASSERT_TRUE(old_plugin.Start().ok());
  FakeKubelet kubelet(KubeletOptions());
  ASSERT_TRUE(kubelet.Discover().ok());
  ASSERT_TRUE(new_plugin->Start().ok());
  ASSERT_TRUE(kubelet.Discover().ok());
  ASSERT_TRUE(kubelet.Prepare({Claim("x")}).ok());
  EXPECT_EQ(new_driver.prepare_calls, 1);

  const SocketPaths gone = new_plugin->sockets();
  new_plugin->Stop();
  EXPECT_FALSE(Exists(gone.registration));
  EXPECT_FALSE(Exists(gone.dra));
  EXPECT_TRUE(Exists(old_plugin.sockets().registration));
  EXPECT_TRUE(Exists(old_plugin.sockets().dra));
  EXPECT_TRUE(Exists(PluginDir() + "/serialize.lock"));
  new_plugin->Stop();  // idempotent
  new_plugin.reset();

  ASSERT_TRUE(kubelet.Discover().ok());
  ASSERT_EQ(kubelet.instances().size(), 1u);
  EXPECT_EQ(kubelet.current()->endpoint, old_plugin.sockets().dra);
  // Unprepare of a claim the other instance prepared lands here and works.
  auto u = kubelet.Unprepare({Claim("x")});
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->at("x"), "");
  EXPECT_EQ(old_driver.unprepare_calls, 1);
  EXPECT_TRUE(shared_.prepared.empty());
}

TEST_F(PluginTest, LockWaitIsBoundedByTheCallDeadline) {
  TestDriver driver(&shared_);
  Plugin plugin(Options(kUidA), &driver);
  ASSERT_TRUE(plugin.Start().ok());
  FakeKubeletOptions ko = KubeletOptions();
  ko.call_timeout = std::chrono::milliseconds(300);
  FakeKubelet kubelet(ko);
  ASSERT_TRUE(kubelet.Discover().ok());

  // Another instance (here: the test) holds the serialization lock.
  int fd = open((PluginDir() + "/serialize.lock").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  auto prepared = kubelet.Prepare({Claim("late")});
  EXPECT_EQ(prepared.status().code(), absl::StatusCode::kDeadlineExceeded) << prepared.status();
  // An empty request (the liveness check) does not wait for the lock.
  drav1::NodePrepareResourcesResponse resp;
  EXPECT_TRUE(PrepareAt(plugin.sockets().dra, {}, std::chrono::seconds(45), &resp).ok());
  plugin.Stop();  // waits for the abandoned handler
  flock(fd, LOCK_UN);
  close(fd);
  EXPECT_EQ(driver.prepare_calls, 0);  // it gave up instead of answering late
  EXPECT_EQ(CallCount(metrics_, kMethodPrepareV1), 2u);
}

health::HealthCheckResponse::ServingStatus CheckHealth(int port, const std::string& service,
                                                       grpc::Status* status) {
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  health::HealthCheckRequest req;
  req.set_service(service);
  health::HealthCheckResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  *status = health::Health::NewStub(channel)->Check(&ctx, req, &resp);
  return resp.status();
}

TEST_F(PluginTest, HealthFollowsTheSockets) {
  TestDriver driver(&shared_);
  PluginOptions o = Options(kUidA);
  o.health_port = 0;
  o.health_host = "127.0.0.1";
  Plugin plugin(o, &driver);
  ASSERT_TRUE(plugin.Start().ok());
  const int port = plugin.health_port();
  ASSERT_GT(port, 0);

  grpc::Status s;
  EXPECT_EQ(CheckHealth(port, "", &s), health::HealthCheckResponse::SERVING);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(CheckHealth(port, "liveness", &s), health::HealthCheckResponse::SERVING);
  CheckHealth(port, "something-else", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(driver.prepare_calls, 0);  // the probe's empty prepare stays out of the Driver

  {  // Watch sends the current status first.
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials());
    grpc::ClientContext ctx;
    auto reader = health::Health::NewStub(channel)->Watch(&ctx, health::HealthCheckRequest());
    health::HealthCheckResponse resp;
    ASSERT_TRUE(reader->Read(&resp));
    EXPECT_EQ(resp.status(), health::HealthCheckResponse::SERVING);
    ctx.TryCancel();
    reader->Finish();
  }

  // The registration socket vanished: the kubelet cannot reach us, so we are not live.
  ASSERT_EQ(unlink(plugin.sockets().registration.c_str()), 0);
  EXPECT_EQ(CheckHealth(port, "", &s), health::HealthCheckResponse::NOT_SERVING);
  EXPECT_TRUE(s.ok());

  plugin.Stop();
  CheckHealth(port, "", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(SocketPathsTest, ClassicAndPerPodNames) {
  PluginOptions o;
  auto classic = ComputeSocketPaths(o);
  ASSERT_TRUE(classic.ok());
  EXPECT_EQ(classic->registration,
            "/var/lib/kubelet/plugins_registry/netresources.spidernet.io-reg.sock");
  EXPECT_EQ(classic->dra, "/var/lib/kubelet/plugins/netresources.spidernet.io/dra.sock");
  o.pod_uid = kUidA;
  auto per_pod = ComputeSocketPaths(o);
  ASSERT_TRUE(per_pod.ok());
  EXPECT_EQ(per_pod->registration,
            std::string("/var/lib/kubelet/plugins_registry/netresources.spidernet.io-") + kUidA +
                "-reg.sock");
  EXPECT_EQ(per_pod->dra, std::string("/var/lib/kubelet/plugins/netresources.spidernet.io/dra-") +
                              kUidA + ".sock");
}

TEST(SocketPathsTest, HashedNamesWhenThePathWouldNotFit) {
  PluginOptions o;
  o.pod_uid = kUidA;
  o.registry_dir = "/tmp/sp-abcdef/" + std::string(30, 'r');  // 46 bytes
  o.plugin_dir = "/tmp/sp-abcdef/" + std::string(50, 'p');    // 65 bytes
  auto paths = ComputeSocketPaths(o);
  ASSERT_TRUE(paths.ok()) << paths.status();
  // base64url(sha256(uid)[:8]) = TBBiL1Kk5rU
  EXPECT_EQ(paths->registration,
            o.registry_dir + "/netresources.spidernet.io-TBBiL1Kk5rU-reg.sock");
  EXPECT_EQ(paths->dra, o.plugin_dir + "/dra-TBBiL1Kk5rU.sock");

  o.driver_name = std::string(50, 'd') + ".example.com";
  paths = ComputeSocketPaths(o);
  ASSERT_TRUE(paths.ok()) << paths.status();
  // base64url(sha256(driver NUL uid)[:16])
  EXPECT_EQ(paths->registration, o.registry_dir + "/dra-jxKAskWPQWm6dt1b4Zj2rA-reg.sock");
  EXPECT_LE(paths->registration.size(), kMaxSocketPathLength);

  o.registry_dir = "/" + std::string(100, 'x');
  EXPECT_EQ(ComputeSocketPaths(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = PluginOptions();
  o.pod_uid = "a/b";
  EXPECT_EQ(ComputeSocketPaths(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = PluginOptions();
  o.driver_name = "";
  EXPECT_EQ(ComputeSocketPaths(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PluginTest, HashedSocketsServeAndRegister) {
  TestDriver driver(&shared_);
  PluginOptions o = Options(kUidA);
  o.registry_dir = root_ + "/" + std::string(30, 'r');
  o.plugin_dir = root_ + "/" + std::string(50, 'p');
  Plugin plugin(o, &driver);
  ASSERT_TRUE(plugin.Start().ok());
  EXPECT_EQ(plugin.sockets().registration,
            o.registry_dir + "/netresources.spidernet.io-TBBiL1Kk5rU-reg.sock");
  EXPECT_EQ(plugin.sockets().dra, o.plugin_dir + "/dra-TBBiL1Kk5rU.sock");
  FakeKubeletOptions ko;
  ko.registry_dir = o.registry_dir;
  FakeKubelet kubelet(ko);
  ASSERT_TRUE(kubelet.Discover().ok());
  auto prepared = kubelet.Prepare({Claim("h")});
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->at("h").error, "");
}

TEST_F(PluginTest, StartRefusesToReplaceANonSocket) {
  TestDriver driver(&shared_);
  std::filesystem::create_directories(PluginDir());
  std::ofstream(PluginDir() + "/dra.sock") << "precious";
  Plugin plugin(Options(), &driver);
  absl::Status s = plugin.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(Exists(PluginDir() + "/dra.sock"));
  EXPECT_FALSE(Exists(RegistryDir() + "/netresources.spidernet.io-reg.sock"));
}

}  // namespace
}  // namespace spiderpool::dra::kubeletplugin
