#pragma once
// Time as a side effect behind an interface: production code takes a Clock&, tests pass
// a SimulatedClock and move time forward explicitly (no sleeps for synchronization).

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>
#include <stop_token>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace spiderpool::base {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Blocks until Now() >= deadline. Returns false if `stop` was requested first.
  virtual bool SleepUntil(absl::Time deadline, std::stop_token stop = {}) = 0;
  bool SleepFor(absl::Duration d, std::stop_token stop = {}) {
    return SleepUntil(Now() + d, std::move(stop));
  }
};

// Wall clock; a process-wide instance is returned by RealClock::Get().
class RealClock : public Clock {
 public:
  static RealClock& Get();
  absl::Time Now() const override { return absl::Now(); }
  bool SleepUntil(absl::Time deadline, std::stop_token stop = {}) override;
};

// A clock that only moves when told to. Threads blocked in SleepUntil wake when Advance
// passes their deadline; WaitForSleepers lets a test wait until N threads are parked.
class SimulatedClock : public Clock {
 public:
  explicit SimulatedClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000));
  absl::Time Now() const override;
  bool SleepUntil(absl::Time deadline, std::stop_token stop = {}) override;
  void Advance(absl::Duration d);
  void SetTime(absl::Time t);
  // Blocks until at least `n` threads are parked in SleepUntil with a deadline still in the
  // future (a thread whose deadline has passed is waking up and does not count), or until
  // `timeout` of real time passes (returns false: a safety net against hung tests).
  bool WaitForSleepers(size_t n, absl::Duration timeout = absl::Seconds(30)) const;
  size_t sleepers() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable_any cv_;
  size_t ParkedLocked() const;
  absl::Time now_;                     // guarded by mu_
  std::multiset<absl::Time> deadlines_;  // guarded by mu_: one entry per sleeping thread
};

}  // namespace spiderpool::base
