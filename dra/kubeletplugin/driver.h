#pragma once
// The seam between the kubelet-facing gRPC plugin (this directory) and the driver logic
// (dra/driver). The plugin owns sockets, registration, versions (v1 / v1beta1), serialization
// of calls across plugin instances and metrics; a Driver only turns claim references into
// prepared devices. Both calls must be idempotent: the kubelet repeats them after restarts and
// may send Prepare to one plugin instance and Unprepare to another.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spiderpool::dra::kubeletplugin {

// What the kubelet sends: only these three; the driver reads the claim itself.
struct ClaimRef {
  std::string namespace_;
  std::string uid;
  std::string name;
};

// One prepared device (DRA service `Device`).
struct PreparedDevice {
  std::vector<std::string> request_names;  // empty = the device serves every request
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;  // "vendor/class=name"
  std::optional<std::string> share_id;      // v1 only
};

struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;  // non-empty: this claim failed (the kubelet retries it)
};

class Driver {
 public:
  virtual ~Driver() = default;
  // One entry per claim UID of `claims` (a missing entry is a bug: the plugin fills
  // "internal error: no result" so the kubelet retries).
  virtual std::map<std::string, PrepareResult> Prepare(const std::vector<ClaimRef>& claims) = 0;
  // claim UID -> error ("" = unprepared, including claims never prepared here).
  virtual std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) = 0;
};

}  // namespace spiderpool::dra::kubeletplugin
