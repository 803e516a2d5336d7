#include "kube/leaderelection/leader_elector.h"
#include "kube/leaderelection/testing/candidate.h"
#include "kube/leaderelection/testing/fake_lease_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace spiderpool::kube {
namespace {

using testing::FakeLeaseLock;
using testing::FakeLeaseStore;

// A candidate on the shared in-memory lease.
struct Candidate : testing::Candidate<FakeLeaseLock> {
  void Start(const std::string& id, FakeLeaseStore* store, base::SimulatedClock* clock) {
    ASSERT_TRUE(testing::Candidate<FakeLeaseLock>::Start(
                    id, std::make_unique<FakeLeaseLock>(store), clock).ok());
  }
};

// Advances simulated time in small steps, each after every running candidate has parked.
void Step(base::SimulatedClock& clock, size_t sleepers, absl::Duration total,
          absl::Duration step = absl::Milliseconds(500)) {
  for (absl::Duration d; d < total; d += step) {
    ASSERT_TRUE(clock.WaitForSleepers(sleepers));
    clock.Advance(step);
  }
  ASSERT_TRUE(clock.WaitForSleepers(sleepers));
}

TEST(LeaderElector, RejectsBadDurations) {
  FakeLeaseStore store;
  LeaderElectionConfig cfg;
  cfg.identity = "a";
  cfg.on_started_leading = [](std::stop_token) {};
  cfg.renew_deadline = absl::Seconds(20);
  EXPECT_FALSE(LeaderElector::Create(cfg, std::make_unique<FakeLeaseLock>(&store)).ok());
  cfg.renew_deadline = absl::Seconds(2);
  EXPECT_FALSE(LeaderElector::Create(cfg, std::make_unique<FakeLeaseLock>(&store)).ok());
}

TEST(LeaderElector, OnlyOneLeaderWhileTheLeaderRenews) {
  base::SimulatedClock clock;
  FakeLeaseStore store;
  Candidate a, b;
  a.Start("a", &store, &clock);
  ASSERT_TRUE(clock.WaitForSleepers(1));
  EXPECT_TRUE(a.elector->IsLeader());
  b.Start("b", &store, &clock);
  Step(clock, 2, absl::Seconds(60));
  EXPECT_TRUE(a.elector->IsLeader());
  EXPECT_FALSE(b.elector->IsLeader());
  EXPECT_EQ(b.elector->ObservedLeader(), "a");
  a.started.wait(0);
  EXPECT_EQ(a.started.load(), 1);
  EXPECT_EQ(b.started.load(), 0);
  a.stop.request_stop();
  b.stop.request_stop();
}

TEST(LeaderElector, HandoverWhenTheLeaderStopsRenewing) {
  base::SimulatedClock clock;
  FakeLeaseStore store;
  Candidate a, b;
  a.Start("a", &store, &clock);
  ASSERT_TRUE(clock.WaitForSleepers(1));
  b.Start("b", &store, &clock);
  Step(clock, 2, absl::Seconds(4));
  ASSERT_TRUE(a.elector->IsLeader());

  // The leader is cut off from the API server: it must step down within renewDeadline,
  // and b may take over only after leaseDuration on b's own clock.
  a.lock->partitioned = true;
  absl::Time cut = clock.Now();
  while (a.stopped.load() == 0) {
    // Both candidates parked: move time on. If fewer than two stay parked, `a` has left its
    // loop: wait for it to report that it stopped leading.
    if (clock.WaitForSleepers(2, absl::Seconds(1))) {
      clock.Advance(absl::Milliseconds(500));
    } else {
      a.stopped.wait(0);
    }
    ASSERT_LT(clock.Now() - cut, absl::Seconds(13)) << "leader did not step down";
  }
  a.thread.join();
  EXPECT_EQ(a.stopped.load(), 1);
  EXPECT_EQ(a.result.code(), absl::StatusCode::kAborted);
  EXPECT_GE(clock.Now() - cut, absl::Seconds(10));
  EXPECT_FALSE(b.elector->IsLeader());  // a's lease has not expired yet for b

  while (!b.elector->IsLeader()) {
    Step(clock, 1, absl::Milliseconds(500));
    ASSERT_LT(clock.Now() - cut, absl::Seconds(25)) << "no handover";
  }
  EXPECT_GE(clock.Now() - cut, absl::Seconds(15) - absl::Seconds(2));
  b.started.wait(0);
  EXPECT_EQ(b.started.load(), 1);
  std::lock_guard<std::mutex> l(store.mu);
  EXPECT_EQ(store.record->holder_identity, "b");
  EXPECT_EQ(store.record->leader_transitions, 1);
  b.stop.request_stop();
}

TEST(LeaderElector, ReleaseOnStopLetsTheNextTakeOverAtOnce) {
  base::SimulatedClock clock;
  FakeLeaseStore store;
  Candidate a, b;
  a.Start("a", &store, &clock);
  ASSERT_TRUE(clock.WaitForSleepers(1));
  b.Start("b", &store, &clock);
  Step(clock, 2, absl::Seconds(2));
  a.stop.request_stop();
  a.thread.join();
  EXPECT_TRUE(a.result.ok());
  EXPECT_EQ(a.stopped.load(), 1);
  {
    std::lock_guard<std::mutex> l(store.mu);
    EXPECT_EQ(store.record->holder_identity, "");
  }
  absl::Time released = clock.Now();
  while (!b.elector->IsLeader()) {
    Step(clock, 1, absl::Milliseconds(500));
    ASSERT_LT(clock.Now() - released, absl::Seconds(5));
  }
  b.stop.request_stop();
}

}  // namespace
}  // namespace spiderpool::kube
