#include "kube/workqueue/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace spiderpool::kube::workqueue {

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(absl::Duration base,
                                                                     absl::Duration max)
    : base_(base), max_(max) {}

absl::Duration ItemExponentialFailureRateLimiter::When(const std::string& item) {
  int exp;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exp = failures_[item]++;
  }
  // Computed in floating point like client-go, so huge exponents saturate instead of
  // overflowing.
  double backoff_ns =
      static_cast<double>(absl::ToInt64Nanoseconds(base_)) * std::pow(2.0, exp);
  if (!(backoff_ns < static_cast<double>(std::numeric_limits<int64_t>::max()))) return max_;
  absl::Duration d = absl::Nanoseconds(static_cast<int64_t>(backoff_ns));
  return std::min(d, max_);
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::NumRequeues(const std::string& item) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst, base::Clock& clock)
    : qps_(qps), burst_(burst), clock_(clock), tokens_(burst), last_(clock.Now()) {}

absl::Duration BucketRateLimiter::When(const std::string& item) {
  absl::Time now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (now < last_) last_ = now;  // a clock that went backwards refills nothing
  tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
  last_ = now;
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  // Truncated to whole nanoseconds, as Go's time.Duration conversion does.
  return absl::Nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

absl::Duration MaxOfRateLimiter::When(const std::string& item) {
  absl::Duration worst = absl::ZeroDuration();
  for (auto& l : limiters_) worst = std::max(worst, l->When(item));
  return worst;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (auto& l : limiters_) l->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) {
  int most = 0;
  for (auto& l : limiters_) most = std::max(most, l->NumRequeues(item));
  return most;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(base::Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(absl::Milliseconds(5),
                                                                         absl::Seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace spiderpool::kube::workqueue
