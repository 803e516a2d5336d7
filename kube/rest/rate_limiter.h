#pragma once
// Client-side token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter): `burst` tokens,
// refilled at `qps` per second of the injected clock. Every request takes one token; when the
// bucket is empty the caller waits for its reservation (reservations queue up in order).

#include <mutex>
#include <stop_token>

#include "absl/time/time.h"
#include "base/clock.h"

namespace spiderpool::kube {

class TokenBucketRateLimiter {
 public:
  // qps <= 0: unlimited. burst < 1 is treated as 1.
  TokenBucketRateLimiter(double qps, int burst, base::Clock& clock);

  // Takes a token and returns how long the caller must wait before using it (zero when one
  // was available).
  absl::Duration Reserve();
  // Reserve() and sleep on the clock. Returns false if `stop` fired first (the token is
  // handed back).
  bool Wait(std::stop_token stop = {});
  // Takes a token only if one is available right now.
  bool TryAccept();

  double qps() const { return qps_; }
  int burst() const { return burst_; }
  // Tokens currently available (may be negative while reservations wait).
  double Tokens() const;

 private:
  void RefillLocked(absl::Time now) const;

  const double qps_;
  const int burst_;
  base::Clock& clock_;
  mutable std::mutex mu_;
  mutable double tokens_;    // guarded by mu_
  mutable absl::Time last_;  // guarded by mu_
};

}  // namespace spiderpool::kube
