#pragma once
// A kubelet stand-in for tests and benchmarks: the plugin-watcher and DRA-manager side of the
// kubelet plugin API, over the same gRPC unix sockets a real kubelet uses.
//
//   FakeKubelet kubelet({.registry_dir = dir + "/registry"});
//   ASSERT_TRUE(kubelet.Discover().ok());            // GetInfo + NotifyRegistrationStatus
//   auto prepared = kubelet.Prepare({{"ns", "uid-1", "claim-a"}});   // newest instance
//
// Like the kubelet (>= 1.33) it keeps every registered instance of the driver and calls the
// newest; when that instance's registration socket disappears (or stops answering GetInfo)
// the next Discover() drops it and calls fall back to the previous one. It prefers
// "v1.DRAPlugin" over "v1beta1.DRAPlugin" unless force_v1beta1 is set. Thread-safe.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/kubeletplugin/device_health.h"
#include "dra/kubeletplugin/driver.h"
#include "dra/kubeletplugin/plugin.h"

namespace grpc {
class Channel;
}

namespace spiderpool::dra::kubeletplugin::testing {

struct FakeKubeletOptions {
  // The directory watched for registration sockets (names starting with '.' are ignored).
  std::string registry_dir = std::string(kDefaultRegistryDir);
  // Plugins must report this name (and type "DRAPlugin"), else they are rejected.
  std::string driver_name = std::string(kDefaultDriverName);
  // Use v1beta1 even when the plugin offers v1 (a 1.32/1.33 kubelet).
  bool force_v1beta1 = false;
  // Per-call deadline of Prepare/Unprepare; the kubelet uses 45 s.
  std::chrono::milliseconds call_timeout{45000};
};

class FakeKubelet {
 public:
  struct Instance {
    std::string registration_socket;  // path in registry_dir
    std::string endpoint;             // PluginInfo.endpoint (the DRA socket)
    std::string service;              // chosen: "v1.DRAPlugin" or "v1beta1.DRAPlugin"
    bool resource_health = false;     // offers "v1alpha1.DRAResourceHealth"
    uint64_t generation = 0;          // registration order; the largest is used
  };

  explicit FakeKubelet(FakeKubeletOptions options);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // One plugin-watcher pass over registry_dir: registers sockets not yet registered
  // (GetInfo, validate, NotifyRegistrationStatus(true), or (false, reason) for an invalid
  // plugin), re-checks registered ones with GetInfo and drops those that are gone or silent.
  // Only a failure to read the directory is an error; rejected sockets go to rejected().
  absl::Status Discover();

  // Registered instances, oldest first.
  std::vector<Instance> instances() const;
  // The instance calls go to (the newest); NotFound when none is registered.
  absl::StatusOr<Instance> current() const;
  // Socket path -> why it was not registered, from the last Discover().
  std::map<std::string, std::string> rejected() const;

  // NodePrepareResources / NodeUnprepareResources on current(), decoded. A non-OK gRPC status
  // (e.g. DEADLINE_EXCEEDED) comes back as the matching absl status.
  absl::StatusOr<std::map<std::string, PrepareResult>> Prepare(const std::vector<ClaimRef>& claims);
  absl::StatusOr<std::map<std::string, std::string>> Unprepare(const std::vector<ClaimRef>& claims);

  // DRAResourceHealth.NodeWatchResources on current(), as kubelets 1.34-1.36 open it for every
  // plugin: `on_update` gets each complete device list until it returns false (then OK), the
  // plugin ends the stream (its gRPC status) or `timeout` passes (DeadlineExceeded).
  absl::Status WatchHealth(const std::function<bool(const std::vector<DeviceHealth>&)>& on_update,
                           std::chrono::milliseconds timeout);

 private:
  struct Registered {
    Instance instance;
    std::shared_ptr<grpc::Channel> channel;  // to the endpoint, reused across calls
  };
  absl::StatusOr<Registered> Current() const;

  FakeKubeletOptions options_;
  std::mutex discover_mu_;  // one Discover() at a time
  mutable std::mutex mu_;
  std::map<std::string, Registered> registered_;  // by registration socket; guarded by mu_
  std::map<std::string, std::string> rejected_;   // guarded by mu_
  uint64_t next_generation_ = 1;                  // guarded by mu_
};

}  // namespace spiderpool::dra::kubeletplugin::testing
