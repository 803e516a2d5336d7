#include "base/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace spiderpool::base {
namespace {

TEST(SimulatedClock, SleeperWakesOnlyWhenTimePasses) {
  SimulatedClock clock;
  std::atomic<bool> woke{false};
  std::jthread t([&] {
    EXPECT_TRUE(clock.SleepFor(absl::Seconds(10)));
    woke = true;
  });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  clock.Advance(absl::Seconds(9));
  EXPECT_EQ(clock.sleepers(), 1u);  // still parked: 1s short
  EXPECT_FALSE(woke.load());
  clock.Advance(absl::Seconds(1));
  t.join();
  EXPECT_TRUE(woke.load());
}

TEST(SimulatedClock, StopTokenInterruptsSleep) {
  SimulatedClock clock;
  std::stop_source stop;
  bool result = true;
  std::jthread t([&] { result = clock.SleepFor(absl::Hours(1), stop.get_token()); });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  stop.request_stop();
  t.join();
  EXPECT_FALSE(result);
}

TEST(RealClock, StopTokenInterruptsSleep) {
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(RealClock::Get().SleepFor(absl::Hours(1), stop.get_token()));
  EXPECT_TRUE(RealClock::Get().SleepFor(absl::ZeroDuration()));
}

}  // namespace
}  // namespace spiderpool::base
