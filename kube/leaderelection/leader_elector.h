#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics
// (k8s.io/client-go/tools/leaderelection):
//
// - A candidate tries to acquire the lease every `retry_period` (jittered by 1.2x). It may take
//   it when the lease does not exist, is held by nobody, or has not been renewed for
//   `lease_duration` as observed on the candidate's OWN clock since the record last changed
//   (never by comparing the holder's renewTime with local time: clocks are skewed).
// - The leader renews every `retry_period`; if it cannot renew for `renew_deadline` it stops
//   leading (on_stopped_leading) — before any other candidate may take over, because
//   renew_deadline < lease_duration.
// - On shutdown with release_on_cancel the leader clears holderIdentity so a successor does
//   not wait out the lease.
// Defaults are Kubernetes' (and Spiderpool's SPIDERPOOL_LEADER_*): 15s / 10s / 2s.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/clock.h"

namespace spiderpool::kube {

// What the lease holds (resourcelock.LeaderElectionRecord).
struct LeaderElectionRecord {
  std::string holder_identity;
  int lease_duration_seconds = 0;
  absl::Time acquire_time;
  absl::Time renew_time;
  int leader_transitions = 0;
  friend bool operator==(const LeaderElectionRecord&, const LeaderElectionRecord&) = default;
};

// The storage of the record (resourcelock.Interface). Update is optimistic: it fails with a
// conflict if the lease changed since the last Get/Create/Update through this lock.
class LeaseLock {
 public:
  virtual ~LeaseLock() = default;
  // NotFound status when the lease does not exist.
  virtual absl::StatusOr<LeaderElectionRecord> Get() = 0;
  virtual absl::Status Create(const LeaderElectionRecord& record) = 0;
  virtual absl::Status Update(const LeaderElectionRecord& record) = 0;
  virtual std::string Describe() const = 0;  // "kube-system/spiderpool-controller-leases"
};

struct LeaderElectionConfig {
  std::string identity;  // unique per candidate (pod name + random suffix)
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  bool release_on_cancel = true;
  base::Clock* clock = nullptr;  // nullptr = RealClock
  // Called on the elector's thread when this candidate becomes leader. `leading` is stopped
  // when leadership ends (lost or released); the callback may return at any time.
  std::function<void(std::stop_token leading)> on_started_leading;
  // Called once leadership ends (after `leading` was stopped).
  std::function<void()> on_stopped_leading;
  // Called when another identity is observed as leader.
  std::function<void(const std::string& leader)> on_new_leader;
};

class LeaderElector {
 public:
  // Fails if the durations violate lease_duration > renew_deadline > 1.2 * retry_period.
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(LeaderElectionConfig config,
                                                                std::unique_ptr<LeaseLock> lock);

  // Campaigns until leader, leads until leadership is lost or `stop` is requested, then
  // returns. Blocks the calling thread. Returns OK if stopped, an error if leadership was lost.
  absl::Status Run(std::stop_token stop);

  bool IsLeader() const;
  std::string ObservedLeader() const;

 private:
  LeaderElector(LeaderElectionConfig config, std::unique_ptr<LeaseLock> lock);
  // One acquire-or-renew attempt (tryAcquireOrRenew). True if we hold the lease afterwards.
  bool TryAcquireOrRenew();
  void Release();
  absl::Duration Jittered(absl::Duration d);

  LeaderElectionConfig config_;
  std::unique_ptr<LeaseLock> lock_;
  base::Clock& clock_;
  mutable std::mutex mu_;
  std::optional<LeaderElectionRecord> observed_;  // guarded by mu_
  absl::Time observed_time_;                      // guarded by mu_
  bool leader_ = false;                           // guarded by mu_
  uint64_t rng_state_;
};

}  // namespace spiderpool::kube
