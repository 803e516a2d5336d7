// Integration tests: leader election on a real coordination.k8s.io Lease through the REST
// client, against the loopback API server (or a real cluster via SPIDERPOOL_TEST_KUBECONFIG).

#include "kube/leaderelection/lease_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kube/leaderelection/testing/candidate.h"
#include "kube/rest/errors.h"
#include "kube/testing/test_cluster.h"

namespace spiderpool::kube {
namespace {

// A lock that can be cut off from the API server, as a leader whose node lost the network.
class PartitionableLock : public LeaseLock {
 public:
  explicit PartitionableLock(std::unique_ptr<LeaseLock> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<LeaderElectionRecord> Get() override {
    if (cut) return absl::UnavailableError("partitioned");
    return inner_->Get();
  }
  absl::Status Create(const LeaderElectionRecord& r) override {
    if (cut) return absl::UnavailableError("partitioned");
    return inner_->Create(r);
  }
  absl::Status Update(const LeaderElectionRecord& r) override {
    if (cut) return absl::UnavailableError("partitioned");
    return inner_->Update(r);
  }
  std::string Describe() const override { return inner_->Describe(); }
  std::atomic<bool> cut{false};

 private:
  std::unique_ptr<LeaseLock> inner_;
};

// A candidate with a real Lease lock on the test cluster.
struct Candidate : testing::Candidate<PartitionableLock> {
  void Start(const std::string& id, const testing::TestCluster& cluster,
             base::SimulatedClock* clock) {
    auto rest = cluster.NewRest();
    ASSERT_TRUE(rest.ok()) << rest.status();
    auto l = std::make_unique<PartitionableLock>(
        std::make_unique<KubeLeaseLock>(*rest, cluster.ns(), "spiderpool-controller-leases"));
    ASSERT_TRUE(testing::Candidate<PartitionableLock>::Start(id, std::move(l), clock).ok());
  }
};

TEST(KubeLeaseLock, OptimisticUpdatesConflict) {
  auto cluster = testing::TestCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  KubeLeaseLock a((*cluster)->rest(), (*cluster)->ns(), "lease");
  KubeLeaseLock b((*cluster)->rest(), (*cluster)->ns(), "lease");
  EXPECT_EQ(a.Get().status().code(), absl::StatusCode::kNotFound);
  LeaderElectionRecord r{.holder_identity = "a", .lease_duration_seconds = 15,
                         .acquire_time = absl::FromUnixMicros(1'700'000'000'123'456),
                         .renew_time = absl::FromUnixMicros(1'700'000'000'123'456)};
  ASSERT_TRUE(a.Create(r).ok());
  auto seen = b.Get();
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, r);  // MicroTime keeps microseconds through the API server
  r.renew_time += absl::Seconds(2);
  ASSERT_TRUE(a.Update(r).ok());
  r.holder_identity = "b";
  absl::Status stale = b.Update(r);  // b's resourceVersion is old
  EXPECT_TRUE(kube::IsConflict(stale)) << stale;
  ASSERT_TRUE(b.Get().ok());
  EXPECT_TRUE(b.Update(r).ok());
}

TEST(LeaderElection, HandoverWhenTheLeaderStopsRenewing) {
  auto cluster = testing::TestCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  base::SimulatedClock clock;
  Candidate a, b;
  a.Start("controller-a", **cluster, &clock);
  ASSERT_TRUE(clock.WaitForSleepers(1));
  a.started.wait(0);
  b.Start("controller-b", **cluster, &clock);
  for (int i = 0; i < 10; ++i) {  // 5s of renewals: a keeps the lease
    ASSERT_TRUE(clock.WaitForSleepers(2));
    clock.Advance(absl::Milliseconds(500));
  }
  ASSERT_TRUE(clock.WaitForSleepers(2));
  EXPECT_TRUE(a.elector->IsLeader());
  EXPECT_FALSE(b.elector->IsLeader());
  EXPECT_EQ(b.elector->ObservedLeader(), "controller-a");

  a.lock->cut = true;  // a can no longer renew
  const absl::Time cut = clock.Now();
  while (a.stopped.load() == 0) {
    if (clock.WaitForSleepers(2, absl::Seconds(1))) {
      clock.Advance(absl::Milliseconds(500));
    } else {
      a.stopped.wait(0);
    }
    ASSERT_LT(clock.Now() - cut, absl::Seconds(13)) << "the cut-off leader did not step down";
  }
  a.thread.join();
  EXPECT_EQ(a.result.code(), absl::StatusCode::kAborted);
  // Loop on IsLeader, not on `started`: the leading callback runs on its own thread, which a
  // loaded machine may schedule only after many simulated steps.
  while (!b.elector->IsLeader()) {
    ASSERT_TRUE(clock.WaitForSleepers(1));
    clock.Advance(absl::Milliseconds(500));
    ASSERT_LT(clock.Now() - cut, absl::Seconds(25)) << "no handover";
  }
  EXPECT_GE(clock.Now() - cut, absl::Seconds(13));  // not before a's lease could have expired
  b.started.wait(0);
  KubeLeaseLock reader((*cluster)->rest(), (*cluster)->ns(), "spiderpool-controller-leases");
  auto rec = reader.Get();
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->holder_identity, "controller-b");
  EXPECT_EQ(rec->leader_transitions, 1);
  b.stop.request_stop();
  b.thread.join();
  rec = reader.Get();
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->holder_identity, "");  // released on stop
}

}  // namespace
}  // namespace spiderpool::kube
