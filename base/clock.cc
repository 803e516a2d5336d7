#include "base/clock.h"

#include <chrono>

namespace spiderpool::base {

RealClock& RealClock::Get() {
  static RealClock* clock = new RealClock();
  return *clock;
}

bool RealClock::SleepUntil(absl::Time deadline, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(mu);
  auto until = std::chrono::system_clock::now() + absl::ToChronoNanoseconds(deadline - absl::Now());
  cv.wait_until(lock, stop, until, [] { return false; });
  return !stop.stop_requested();
}

SimulatedClock::SimulatedClock(absl::Time start) : now_(start) {}

absl::Time SimulatedClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

bool SimulatedClock::SleepUntil(absl::Time deadline, std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = deadlines_.insert(deadline);
  cv_.notify_all();  // wakes WaitForSleepers
  bool reached = cv_.wait(lock, stop, [&] { return now_ >= deadline; });
  deadlines_.erase(it);
  cv_.notify_all();
  return reached;
}

void SimulatedClock::Advance(absl::Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ += d;
  cv_.notify_all();
}

void SimulatedClock::SetTime(absl::Time t) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ = t;
  cv_.notify_all();
}

size_t SimulatedClock::ParkedLocked() const {
  return std::distance(deadlines_.upper_bound(now_), deadlines_.end());
}

bool SimulatedClock::WaitForSleepers(size_t n, absl::Duration timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                      [&] { return ParkedLocked() >= n; });
}

size_t SimulatedClock::sleepers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ParkedLocked();
}

}  // namespace spiderpool::base
