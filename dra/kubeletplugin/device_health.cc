#include "dra/kubeletplugin/device_health.h"

#include <utility>

namespace spiderpool::dra::kubeletplugin {

void DeviceHealthFeed::Set(std::vector<DeviceHealth> devices) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (current_.version != 0 && current_.devices == devices) return;
    current_.devices = std::move(devices);
    ++current_.version;
  }
  cv_.notify_all();
}

DeviceHealthFeed::Snapshot DeviceHealthFeed::Current() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_;
}

std::optional<DeviceHealthFeed::Snapshot> DeviceHealthFeed::WaitNewer(
    uint64_t seen, absl::Duration timeout) const {
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_for(l, absl::ToChronoNanoseconds(timeout),
                    [&] { return current_.version != seen; })) {
    return std::nullopt;
  }
  return current_;
}

}  // namespace spiderpool::dra::kubeletplugin
