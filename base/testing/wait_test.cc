#include "base/testing/wait.h"

#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace spiderpool::base::testing {
namespace {

TEST(WaitUntil, TrueAtOnceNeedsNoWait) {
  int calls = 0;
  EXPECT_TRUE(WaitUntil([&] { return ++calls > 0; }));
  EXPECT_EQ(calls, 1);
}

TEST(WaitUntil, SeesAConditionAnotherThreadSets) {
  std::atomic<bool> flag{false};
  std::thread t([&] {
    absl::SleepFor(absl::Milliseconds(30));
    flag = true;
  });
  EXPECT_TRUE(WaitUntil([&] { return flag.load(); }));
  t.join();
}

TEST(WaitUntil, GivesUpAfterTheTimeoutAndPollsMeanwhile) {
  int calls = 0;
  EXPECT_FALSE(WaitUntil([&] { return ++calls < 0; }, absl::Milliseconds(50),
                         absl::Milliseconds(5)));
  EXPECT_GT(calls, 2);
}

}  // namespace
}  // namespace spiderpool::base::testing
