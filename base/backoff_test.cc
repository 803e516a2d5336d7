#include "base/backoff.h"

#include <gtest/gtest.h>

namespace spiderpool::base {
namespace {

TEST(Backoff, GrowsByFactorAndCaps) {
  Backoff b({.initial = absl::Milliseconds(10), .max = absl::Milliseconds(50), .factor = 2});
  EXPECT_EQ(b.Next(), absl::Milliseconds(10));
  EXPECT_EQ(b.Next(), absl::Milliseconds(20));
  EXPECT_EQ(b.Next(), absl::Milliseconds(40));
  EXPECT_EQ(b.Next(), absl::Milliseconds(50));
  EXPECT_EQ(b.Next(), absl::Milliseconds(50));
  b.Reset();
  EXPECT_EQ(b.Next(), absl::Milliseconds(10));
}

TEST(Backoff, StepsLimitAndJitterBounds) {
  // Upstream's IPPool conflict retry: 5 steps from 10ms, factor 1.5, jitter 0.1.
  Backoff b({.initial = absl::Milliseconds(10), .max = absl::Seconds(1), .factor = 1.5,
             .jitter = 0.1, .steps = 5});
  absl::Duration base = absl::Milliseconds(10);
  for (int i = 0; i < 5; ++i) {
    absl::Duration d = b.Next();
    EXPECT_GE(d, base);
    EXPECT_LE(d, base * 1.1);
    base = base * 1.5;
  }
  EXPECT_EQ(b.Next(), absl::InfiniteDuration());
  EXPECT_EQ(b.attempts(), 5);
}

}  // namespace
}  // namespace spiderpool::base
