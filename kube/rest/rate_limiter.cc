#include "kube/rest/rate_limiter.h"

#include <algorithm>

namespace spiderpool::kube {

TokenBucketRateLimiter::TokenBucketRateLimiter(double qps, int burst, base::Clock& clock)
    : qps_(qps), burst_(std::max(burst, 1)), clock_(clock), tokens_(burst_), last_(clock.Now()) {}

void TokenBucketRateLimiter::RefillLocked(absl::Time now) const {
  if (now <= last_) return;
  tokens_ = std::min<double>(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
  last_ = now;
}

absl::Duration TokenBucketRateLimiter::Reserve() {
  if (qps_ <= 0) return absl::ZeroDuration();
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(clock_.Now());
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  // Round up to whole nanoseconds so the wait never ends a hair before the token exists.
  return absl::Ceil(absl::Seconds(-tokens_ / qps_), absl::Nanoseconds(1));
}

bool TokenBucketRateLimiter::Wait(std::stop_token stop) {
  absl::Duration d = Reserve();
  if (d <= absl::ZeroDuration()) return true;
  absl::Time deadline = clock_.Now() + d;
  if (clock_.SleepUntil(deadline, stop)) return true;
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ = std::min<double>(burst_, tokens_ + 1);
  return false;
}

bool TokenBucketRateLimiter::TryAccept() {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(clock_.Now());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

double TokenBucketRateLimiter::Tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  RefillLocked(clock_.Now());
  return tokens_;
}

}  // namespace spiderpool::kube
