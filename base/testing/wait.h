#pragma once
// The one polling helper of the tests: WaitUntil(pred) re-checks `pred` every `interval` (real
// time) until it holds or `timeout` passes, then checks once more. The timeout bounds a test
// that would otherwise hang on a failure; it is never a timing assertion, so tests pass
// unchanged on a slow machine or a real cluster.

#include <functional>

#include "absl/time/time.h"

namespace spiderpool::base::testing {

bool WaitUntil(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(30),
               absl::Duration interval = absl::Milliseconds(10));

}  // namespace spiderpool::base::testing
