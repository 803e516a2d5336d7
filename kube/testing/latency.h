#pragma once
// The loopback API server's latency model at work (LatencyModel in apiserver.h): when each
// request may be answered and when each watch event may be delivered. Core asks it once per
// HTTP request (RequestReadyAt, then sleeps on the server's clock) and once per stored change
// (WatchDueAt, stamped on the queued watch items). Thread-safe; holds no other lock while it
// runs, so Core may call it with its store locked.

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "kube/testing/apiserver.h"

namespace spiderpool::kube::testing::internal {

class LatencyState {
 public:
  explicit LatencyState(LatencyModel model = {});

  void Set(LatencyModel model);
  LatencyModel Get() const;

  // When a request that arrives at `now` may be served: now + per_request (+ per_write for a
  // write verb); a write of one object (`object_key` not empty: update/patch/delete) then
  // also takes the object's next free per_object_write slot. InfinitePast() when the model is
  // off (nothing to wait for).
  absl::Time RequestReadyAt(absl::Time now, std::string_view verb, const std::string& object_key);

  // When a watch event of a change made at `now` may be delivered (InfinitePast() if
  // watch_delay is zero).
  absl::Time WatchDueAt(absl::Time now);

  // create/update/patch/delete/deletecollection.
  static bool IsWrite(std::string_view verb);

 private:
  absl::Duration StretchedLocked(absl::Duration d);  // d x [1, 1 + jitter]

  mutable std::mutex mu_;
  LatencyModel model_;                         // guarded by mu_
  std::mt19937_64 rng_;                        // guarded by mu_
  std::map<std::string, absl::Time> busy_until_;  // guarded by mu_: per_object_write slots
};

}  // namespace spiderpool::kube::testing::internal
