#pragma once
// Exponential backoff with jitter, as client-go's wait.Backoff: each Next() returns the
// current delay (times a random factor in [1, 1+jitter]) and grows it by `factor`, capped.

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace spiderpool::base {

struct BackoffPolicy {
  absl::Duration initial = absl::Milliseconds(10);
  absl::Duration max = absl::Seconds(30);
  double factor = 2.0;
  double jitter = 0.0;  // 0.1 adds up to +10%
  int steps = 0;        // 0 = unlimited; otherwise Next() fails after this many delays
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, uint64_t seed = 0x5eed);
  // Returns the next delay, or absl::InfiniteDuration() when `steps` are exhausted.
  absl::Duration Next();
  void Reset();
  int attempts() const { return attempts_; }

 private:
  BackoffPolicy policy_;
  absl::Duration current_;
  int attempts_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace spiderpool::base
