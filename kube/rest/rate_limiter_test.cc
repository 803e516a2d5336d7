#include "kube/rest/rate_limiter.h"

#include <thread>

#include "gtest/gtest.h"

namespace spiderpool::kube {
namespace {

TEST(RateLimiterTest, BurstThenQpsSpacing) {
  base::SimulatedClock clock;
  TokenBucketRateLimiter limiter(5, 10, clock);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(limiter.Reserve(), absl::ZeroDuration()) << i;
  // The bucket is empty: reservations queue up 200ms apart.
  EXPECT_EQ(limiter.Reserve(), absl::Milliseconds(200));
  EXPECT_EQ(limiter.Reserve(), absl::Milliseconds(400));
  EXPECT_EQ(limiter.Reserve(), absl::Milliseconds(600));
  // After the debt is paid plus one period, one token is free again.
  clock.Advance(absl::Milliseconds(800));
  EXPECT_EQ(limiter.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(limiter.Reserve(), absl::Milliseconds(200));
}

TEST(RateLimiterTest, RefillIsCappedAtBurst) {
  base::SimulatedClock clock;
  TokenBucketRateLimiter limiter(10, 3, clock);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());
  clock.Advance(absl::Hours(1));
  EXPECT_DOUBLE_EQ(limiter.Tokens(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryAccept());
  EXPECT_FALSE(limiter.TryAccept());
  clock.Advance(absl::Milliseconds(100));
  EXPECT_TRUE(limiter.TryAccept());
}

TEST(RateLimiterTest, WaitSleepsOnTheClock) {
  base::SimulatedClock clock;
  TokenBucketRateLimiter limiter(2, 1, clock);
  ASSERT_TRUE(limiter.Wait());  // the burst token
  absl::Time start = clock.Now();
  std::atomic<bool> done{false};
  std::jthread waiter([&] {
    EXPECT_TRUE(limiter.Wait());
    done = true;
  });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  EXPECT_FALSE(done.load());
  clock.Advance(absl::Milliseconds(500));
  waiter.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(clock.Now() - start, absl::Milliseconds(500));
}

TEST(RateLimiterTest, StopReturnsTheToken) {
  base::SimulatedClock clock;
  TokenBucketRateLimiter limiter(1, 1, clock);
  ASSERT_TRUE(limiter.TryAccept());
  std::stop_source stop;
  std::jthread waiter([&] { EXPECT_FALSE(limiter.Wait(stop.get_token())); });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  stop.request_stop();
  waiter.join();
  // The cancelled reservation was handed back: one second later a token is free.
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(limiter.TryAccept());
}

TEST(RateLimiterTest, DisabledWhenQpsNotPositive) {
  base::SimulatedClock clock;
  TokenBucketRateLimiter limiter(0, 1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.Reserve(), absl::ZeroDuration());
  EXPECT_TRUE(limiter.TryAccept());
}

}  // namespace
}  // namespace spiderpool::kube
