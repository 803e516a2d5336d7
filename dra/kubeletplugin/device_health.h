#pragma once
// The health of the driver's devices, as the kubelet's DRA resource-health stream reports it
// (KEP-4680; proto/dra_health_v1alpha1.proto). Whoever knows the devices (the agent: NIC link
// state) Set()s the complete list; the plugin sends it to every open stream at once and after
// each change.
//
//   DeviceHealthFeed feed;
//   PluginOptions o;  o.device_health = &feed;          // serves DRAResourceHealth
//   feed.Set({{.pool = node, .device = "eth1-0", .status = DeviceHealthStatus::kHealthy}});

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace spiderpool::dra::kubeletplugin {

// The proto's HealthStatus values.
enum class DeviceHealthStatus { kUnknown = 0, kHealthy = 1, kUnhealthy = 2 };

struct DeviceHealth {
  std::string pool;    // the ResourceSlice pool
  std::string device;  // the device's name in the pool
  DeviceHealthStatus status = DeviceHealthStatus::kUnknown;
  int64_t last_updated_unix = 0;  // when `status` was last determined (Unix seconds)
  bool operator==(const DeviceHealth&) const = default;
};

// Thread-safe. Versions start at 1 with the first Set(); 0 means "nothing yet".
class DeviceHealthFeed {
 public:
  struct Snapshot {
    uint64_t version = 0;
    std::vector<DeviceHealth> devices;
  };

  // Replaces the list; a list equal to the current one changes nothing (no new version).
  void Set(std::vector<DeviceHealth> devices);
  Snapshot Current() const;
  // Waits up to `timeout` for a version newer than `seen`: the snapshot, or nullopt on
  // timeout (callers poll their own cancellation between waits).
  std::optional<Snapshot> WaitNewer(uint64_t seen, absl::Duration timeout) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Snapshot current_;  // guarded by mu_
};

}  // namespace spiderpool::dra::kubeletplugin
