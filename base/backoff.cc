#include "base/backoff.h"

#include <algorithm>

namespace spiderpool::base {

Backoff::Backoff(BackoffPolicy policy, uint64_t seed)
    : policy_(policy), current_(policy.initial), rng_(seed) {}

absl::Duration Backoff::Next() {
  if (policy_.steps > 0 && attempts_ >= policy_.steps) return absl::InfiniteDuration();
  ++attempts_;
  absl::Duration d = current_;
  if (policy_.jitter > 0) {
    std::uniform_real_distribution<double> dist(0.0, policy_.jitter);
    d = d * (1.0 + dist(rng_));
  }
  current_ = std::min(current_ * policy_.factor, policy_.max);
  return std::min(d, policy_.max);
}

void Backoff::Reset() {
  current_ = policy_.initial;
  attempts_ = 0;
}

}  // namespace spiderpool::base
