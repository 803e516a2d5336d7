#include "base/testing/wait.h"

#include "absl/time/clock.h"

namespace spiderpool::base::testing {

bool WaitUntil(const std::function<bool()>& pred, absl::Duration timeout,
               absl::Duration interval) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!pred()) {
    if (absl::Now() >= deadline) return pred();
    absl::SleepFor(interval);
  }
  return true;
}

}  // namespace spiderpool::base::testing
