#pragma once
// Rate limiters for WorkQueue::AddRateLimited, with client-go's semantics
// (k8s.io/client-go/util/workqueue/default_rate_limiters.go). All are thread-safe.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "base/clock.h"

namespace spiderpool::kube::workqueue {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // How long to wait before `item` may be processed again. Records a failure/attempt.
  virtual absl::Duration When(const std::string& item) = 0;
  // Stops tracking `item` (call after it was processed successfully).
  virtual void Forget(const std::string& item) = 0;
  // Failures recorded for `item` since the last Forget.
  virtual int NumRequeues(const std::string& item) = 0;
};

// base * 2^failures, capped at `max` (client-go's ItemExponentialFailureRateLimiter).
class ItemExponentialFailureRateLimiter : public RateLimiter {
 public:
  ItemExponentialFailureRateLimiter(absl::Duration base, absl::Duration max);
  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const absl::Duration base_;
  const absl::Duration max_;
  std::mutex mu_;
  std::map<std::string, int> failures_;  // guarded by mu_
};

// An overall token bucket (golang.org/x/time/rate reservation semantics): starts full with
// `burst` tokens, refills at `qps`; When() takes a token and returns how long until the
// bucket would no longer be in debt. Items are not tracked (Forget/NumRequeues are no-ops).
class BucketRateLimiter : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, base::Clock& clock);
  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override {}
  int NumRequeues(const std::string& item) override { return 0; }

 private:
  const double qps_;
  const double burst_;
  base::Clock& clock_;
  std::mutex mu_;
  double tokens_;       // guarded by mu_
  absl::Time last_;     // guarded by mu_
};

// The worst (longest) delay of several limiters; NumRequeues is the maximum, Forget is
// forwarded to all.
class MaxOfRateLimiter : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);
  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// client-go's DefaultControllerRateLimiter: max of per-item exponential backoff
// (5ms .. 1000s) and an overall bucket of 10 qps with burst 100.
std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(base::Clock& clock);

}  // namespace spiderpool::kube::workqueue
