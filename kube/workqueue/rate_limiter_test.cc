#include "kube/workqueue/rate_limiter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace spiderpool::kube::workqueue {
namespace {

TEST(ItemExponentialFailureRateLimiter, DoublesPerFailureUpToMax) {
  ItemExponentialFailureRateLimiter r(absl::Milliseconds(5), absl::Seconds(1000));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(5));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(10));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(20));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(40));
  EXPECT_EQ(r.NumRequeues("a"), 4);
  EXPECT_EQ(r.When("b"), absl::Milliseconds(5));  // per item
  EXPECT_EQ(r.NumRequeues("b"), 1);
  for (int i = 4; i < 18; ++i) r.When("a");
  // 5ms * 2^17 = 655.36s, the last step under the cap; 5ms * 2^18 = 1310.72s is capped.
  EXPECT_EQ(r.NumRequeues("a"), 18);
  EXPECT_EQ(r.When("a"), absl::Seconds(1000));
  r.Forget("a");
  EXPECT_EQ(r.NumRequeues("a"), 0);
  EXPECT_EQ(r.When("a"), absl::Milliseconds(5));
  EXPECT_EQ(r.NumRequeues("nobody"), 0);
}

TEST(ItemExponentialFailureRateLimiter, ExactStepBelowCap) {
  ItemExponentialFailureRateLimiter r(absl::Milliseconds(5), absl::Seconds(1000));
  absl::Duration last;
  for (int i = 0; i < 18; ++i) last = r.When("a");
  EXPECT_EQ(last, absl::Milliseconds(655360));
}

TEST(ItemExponentialFailureRateLimiter, HugeExponentSaturatesAtMax) {
  ItemExponentialFailureRateLimiter r(absl::Milliseconds(1), absl::Hours(1));
  absl::Duration last;
  for (int i = 0; i < 5000; ++i) last = r.When("a");  // 2^4999 overflows double: still max
  EXPECT_EQ(last, absl::Hours(1));
}

TEST(BucketRateLimiter, BurstThenQps) {
  base::SimulatedClock clock;
  BucketRateLimiter r(10, 100, clock);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(r.When("x"), absl::ZeroDuration()) << i;
  EXPECT_EQ(r.When("x"), absl::Milliseconds(100));
  EXPECT_EQ(r.When("y"), absl::Milliseconds(200));  // the bucket is shared by all items
  clock.Advance(absl::Seconds(1));                  // +10 tokens: 8 left
  for (int i = 0; i < 8; ++i) ASSERT_EQ(r.When("x"), absl::ZeroDuration()) << i;
  EXPECT_EQ(r.When("x"), absl::Milliseconds(100));
  clock.Advance(absl::Hours(1));  // refills only up to the burst
  for (int i = 0; i < 100; ++i) ASSERT_EQ(r.When("x"), absl::ZeroDuration()) << i;
  EXPECT_EQ(r.When("x"), absl::Milliseconds(100));
  EXPECT_EQ(r.NumRequeues("x"), 0);
}

TEST(DefaultControllerRateLimiter, MaxOfItemBackoffAndBucket) {
  base::SimulatedClock clock;
  std::unique_ptr<RateLimiter> r = DefaultControllerRateLimiter(clock);
  EXPECT_EQ(r->When("a"), absl::Milliseconds(5));
  EXPECT_EQ(r->When("a"), absl::Milliseconds(10));
  EXPECT_EQ(r->When("a"), absl::Milliseconds(20));
  EXPECT_EQ(r->NumRequeues("a"), 3);
  r->Forget("a");
  EXPECT_EQ(r->NumRequeues("a"), 0);
  // 3 tokens used; 97 more items at their first failure get 5ms, then the bucket is empty.
  for (int i = 0; i < 97; ++i) ASSERT_EQ(r->When("k" + std::to_string(i)), absl::Milliseconds(5));
  EXPECT_EQ(r->When("late"), absl::Milliseconds(100));
}

TEST(MaxOfRateLimiter, NumRequeuesIsTheMaximum) {
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(absl::Milliseconds(1),
                                                                  absl::Seconds(1)));
  v.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(absl::Milliseconds(3),
                                                                  absl::Seconds(1)));
  MaxOfRateLimiter r(std::move(v));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(3));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(6));
  EXPECT_EQ(r.NumRequeues("a"), 2);
  r.Forget("a");
  EXPECT_EQ(r.NumRequeues("a"), 0);
}

}  // namespace
}  // namespace spiderpool::kube::workqueue
