#include "kube/testing/latency.h"

#include <algorithm>

namespace spiderpool::kube::testing {

// Reasoning and calibration runs: bench/README.md ("ipam_e2e", latency model).
LatencyModel CalibratedLatencyModel() {
  LatencyModel m;
  m.per_request = absl::Milliseconds(1);
  m.per_write = absl::Milliseconds(4);
  m.per_object_write = absl::Milliseconds(8);
  m.watch_delay = absl::Milliseconds(5);
  m.jitter = 0.5;
  return m;
}

namespace internal {

namespace {
// Slots of objects no write is waiting for are forgotten once the map grows past this.
constexpr size_t kMaxTrackedObjects = 4096;
}  // namespace

LatencyState::LatencyState(LatencyModel model) : model_(model), rng_(model.seed) {}

void LatencyState::Set(LatencyModel model) {
  std::lock_guard<std::mutex> l(mu_);
  model_ = model;
  rng_.seed(model.seed);
  if (model.per_object_write <= absl::ZeroDuration()) busy_until_.clear();
}

LatencyModel LatencyState::Get() const {
  std::lock_guard<std::mutex> l(mu_);
  return model_;
}

bool LatencyState::IsWrite(std::string_view verb) {
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete" ||
         verb == "deletecollection";
}

absl::Duration LatencyState::StretchedLocked(absl::Duration d) {
  if (d <= absl::ZeroDuration() || model_.jitter <= 0) return d;
  return d * std::uniform_real_distribution<double>(1.0, 1.0 + model_.jitter)(rng_);
}

absl::Time LatencyState::RequestReadyAt(absl::Time now, std::string_view verb,
                                        const std::string& object_key) {
  std::lock_guard<std::mutex> l(mu_);
  if (!model_.enabled()) return absl::InfinitePast();
  const bool write = IsWrite(verb);
  absl::Time ready = now + StretchedLocked(model_.per_request);
  if (write) ready += StretchedLocked(model_.per_write);
  if (write && !object_key.empty() && model_.per_object_write > absl::ZeroDuration()) {
    if (busy_until_.size() > kMaxTrackedObjects) {
      for (auto it = busy_until_.begin(); it != busy_until_.end();) {
        it = it->second < now ? busy_until_.erase(it) : std::next(it);
      }
    }
    absl::Time& busy = busy_until_[object_key];
    busy = std::max(ready, busy) + StretchedLocked(model_.per_object_write);
    ready = busy;
  }
  return ready;
}

absl::Time LatencyState::WatchDueAt(absl::Time now) {
  std::lock_guard<std::mutex> l(mu_);
  if (model_.watch_delay <= absl::ZeroDuration()) return absl::InfinitePast();
  return now + StretchedLocked(model_.watch_delay);
}

}  // namespace internal
}  // namespace spiderpool::kube::testing
