// GroupCommitter against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): several "agents" (each its own REST client and committer) allocate
// from one pool at once, with and without injected 409 / 429 / 500 answers.
#include "agent/ipam/committer.h"

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "base/clock.h"
#include "base/strings.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"
#include "kube/testing/spider_cluster.h"

namespace spiderpool::agent::ipam {
namespace {


// A deliberately simple working copy: the records, and whether the batch changed them.
struct Book {
  api::PoolIPAllocations records;
  bool dirty = false;
  std::set<std::string> prepared;  // names whose `prepare` ran on this attempt
};

class KubePoolStore : public PoolStore {
 public:
  explicit KubePoolStore(std::shared_ptr<kube::RestClient> rest) : pools_(std::move(rest)) {}
  absl::StatusOr<api::SpiderIPPool> Get(const std::string& name) override {
    return pools_.Get("", name);
  }
  absl::StatusOr<api::SpiderIPPool> UpdateStatus(const api::SpiderIPPool& pool) override {
    return pools_.UpdateStatus(pool);
  }

 private:
  kube::Client<api::SpiderIPPool> pools_;
};

GroupCommitter<Book>::Hooks BookHooks() {
  return {
      .load = [](const api::SpiderIPPool& pool) -> absl::StatusOr<Book> {
        absl::StatusOr<api::PoolIPAllocations> r = pool.AllocatedIPs();
        if (!r.ok()) return r.status();
        return Book{*std::move(r), false};
      },
      .dirty = [](const Book& b) { return b.dirty; },
      .store = [](const Book& b, api::SpiderIPPool* pool) { pool->SetAllocatedIPs(b.records); },
  };
}

// Lowest free of 10.9.0.1 .. 10.9.0.<size>; idempotent per pod UID.
GroupCommitter<Book>::Mutation Allocate(std::string uid, int size, std::string* got) {
  return [uid = std::move(uid), size, got](Book& book) -> absl::Status {
    for (const auto& [ip, rec] : book.records) {
      if (rec.pod_uid == uid) {
        *got = ip;
        return absl::OkStatus();
      }
    }
    for (int i = 1; i <= size; ++i) {
      std::string ip = base::StrCat("10.9.0.", i);
      if (book.records.count(ip)) continue;
      book.records[ip] = api::PoolIPAllocation{.pod = "ns/" + uid, .pod_uid = uid};
      book.dirty = true;
      *got = ip;
      return absl::OkStatus();
    }
    return absl::ResourceExhaustedError("pool is full");
  };
}

class CommitterTest : public kube::testing::SpiderClusterTest {
 protected:
  void SetUp() override {
    SpiderClusterTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::string> pool =
        CreatePool("committer", "10.9.0.0/24", {"10.9.0.1-10.9.0.254"});
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_name_ = *pool;
  }
  void TearDown() override {
    if (cluster_ == nullptr) return;
    if (cluster_->loopback() != nullptr) cluster_->loopback()->ClearFaults();
    SpiderClusterTest::TearDown();
  }

  api::PoolIPAllocations Records() {
    auto pool = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
    EXPECT_TRUE(pool.ok()) << pool.status();
    if (!pool.ok()) return {};
    EXPECT_EQ(pool->status.allocated_ip_count.value_or(0),
              static_cast<int64_t>(pool->AllocatedIPs()->size()));
    return *pool->AllocatedIPs();
  }

  // `agents` committers x `per_agent` threads, each allocating for its own pod UID.
  // Returns the IPs handed out, checking every call succeeded.
  std::vector<std::string> AllocateInParallel(int agents, int per_agent, int64_t* writes,
                                              int64_t* conflicts) {
    std::vector<std::unique_ptr<KubePoolStore>> stores;
    std::vector<std::unique_ptr<GroupCommitter<Book>>> committers;
    for (int a = 0; a < agents; ++a) {
      auto rest = cluster_->NewRest();
      EXPECT_TRUE(rest.ok());
      stores.push_back(std::make_unique<KubePoolStore>(*rest));
      committers.push_back(std::make_unique<GroupCommitter<Book>>(stores.back().get(), BookHooks()));
    }
    std::vector<std::string> got(agents * per_agent);
    std::vector<absl::Status> results(agents * per_agent);
    {
      std::vector<std::jthread> threads;
      for (int a = 0; a < agents; ++a) {
        for (int t = 0; t < per_agent; ++t) {
          const int i = a * per_agent + t;
          threads.emplace_back([&, a, i] {
            results[i] = committers[a]->Run(pool_name_, Allocate(base::StrCat("uid-", i), 254, &got[i]),
                                           absl::Now() + absl::Seconds(60));
          });
        }
      }
    }
    *writes = *conflicts = 0;
    for (auto& c : committers) {
      *writes += c->stats().writes;
      *conflicts += c->stats().conflicts;
    }
    for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
    return got;
  }

  std::string pool_name_;
};

TEST_F(CommitterTest, ManyAgentsNeverDuplicateAndBatchWrites) {
  int64_t writes = 0, conflicts = 0;
  std::vector<std::string> got = AllocateInParallel(4, 40, &writes, &conflicts);
  std::set<std::string> unique(got.begin(), got.end());
  EXPECT_EQ(unique.size(), got.size()) << "an IP was handed out twice";
  api::PoolIPAllocations records = Records();
  EXPECT_EQ(records.size(), 160u) << "a record was lost";
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(records.count(got[i])) << got[i];
    EXPECT_EQ(records[got[i]].pod_uid, base::StrCat("uid-", i));
  }
  // Group commit: far fewer status writes than allocations.
  EXPECT_LT(writes, 160);
}

TEST_F(CommitterTest, SurvivesConflictsThrottlingAndServerErrors) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  kube::testing::FaultMatch status_writes{.verb = "update", .resource = "spiderippools/status"};
  cluster_->loopback()->FailNext(3, 409, status_writes);
  cluster_->loopback()->FailNext(2, 429, status_writes, 0);
  cluster_->loopback()->FailNext(2, 500, status_writes);
  cluster_->loopback()->FailNext(2, 503, {.verb = "get", .resource = "spiderippools"});
  int64_t writes = 0, conflicts = 0;
  std::vector<std::string> got = AllocateInParallel(2, 10, &writes, &conflicts);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 20u);
  EXPECT_EQ(Records().size(), 20u);
  EXPECT_GE(conflicts, 3);
}

// Background work (OnConflict::kYield) steps back from a lost race instead of retrying at
// once; a caller that waits (kRetry, the default) retries.
TEST_F(CommitterTest, BackgroundMutationsYieldOnAConflictAndOthersRetry) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  const kube::testing::FaultMatch status_writes{.verb = "update", .resource = "spiderippools/status"};
  KubePoolStore store(cluster_->rest());
  GroupCommitter<Book> committer(&store, BookHooks());
  using OnConflict = GroupCommitter<Book>::OnConflict;
  std::string ip;
  cluster_->loopback()->FailNext(1, 409, status_writes);
  absl::Status yielded = committer.Run(pool_name_, Allocate("bg", 5, &ip),
                                       absl::Now() + absl::Seconds(30), OnConflict::kYield);
  EXPECT_TRUE(absl::IsAborted(yielded)) << yielded;
  EXPECT_NE(yielded.message().find("409"), absl::string_view::npos) << yielded;
  EXPECT_TRUE(Records().empty()) << "a yielded mutation must leave no record";
  EXPECT_EQ(committer.stats().conflicts, 1);

  cluster_->loopback()->FailNext(1, 409, status_writes);
  EXPECT_TRUE(committer.Run(pool_name_, Allocate("add", 5, &ip), absl::Now() + absl::Seconds(30)).ok());
  EXPECT_EQ(committer.stats().conflicts, 2);
  // Later, without a conflict, the background mutation goes through.
  std::string bg;
  EXPECT_TRUE(committer.Run(pool_name_, Allocate("bg", 5, &bg), absl::Now() + absl::Seconds(30),
                            OnConflict::kYield).ok());
  EXPECT_EQ(Records().size(), 2u);
}

TEST_F(CommitterTest, AFailingMutationFailsAloneAndLeavesNoRecord) {
  KubePoolStore store(cluster_->rest());
  GroupCommitter<Book> committer(&store, BookHooks());
  std::string a, b;
  // Pool of size 1 for this mutation's view: the second pod finds it full.
  EXPECT_TRUE(committer.Run(pool_name_, Allocate("p1", 1, &a), absl::Now() + absl::Seconds(30)).ok());
  absl::Status full = committer.Run(pool_name_, Allocate("p2", 1, &b), absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(absl::IsResourceExhausted(full)) << full;
  // Idempotent: the same pod gets the same IP back without a write.
  std::string again;
  const int64_t writes_before = committer.stats().writes;
  EXPECT_TRUE(committer.Run(pool_name_, Allocate("p1", 1, &again), absl::Now() + absl::Seconds(30)).ok());
  EXPECT_EQ(again, a);
  EXPECT_EQ(committer.stats().writes, writes_before);
  EXPECT_EQ(Records().size(), 1u);
}

// Holds the first status write until released; counts every status write.
class HoldFirstWrite : public PoolStore {
 public:
  explicit HoldFirstWrite(PoolStore* inner) : inner_(inner) {}
  absl::StatusOr<api::SpiderIPPool> Get(const std::string& name) override { return inner_->Get(name); }
  absl::StatusOr<api::SpiderIPPool> UpdateStatus(const api::SpiderIPPool& pool) override {
    if (writes_.fetch_add(1) == 0) {
      entered_.Notify();
      release_.WaitForNotification();
    }
    return inner_->UpdateStatus(pool);
  }
  absl::Notification entered_, release_;
  std::atomic<int> writes_{0};

 private:
  PoolStore* inner_;
};

// on_landed runs in the order the writes landed and before the pool's next batch is written,
// only for mutations that succeeded (NodeBlocks relies on it to follow the pool's order).
TEST_F(CommitterTest, OnLandedRunsInLandingOrderBeforeTheNextBatch) {
  KubePoolStore kube_store(cluster_->rest());
  HoldFirstWrite store(&kube_store);
  GroupCommitter<Book> committer(&store, BookHooks());
  std::mutex mu;
  std::vector<std::string> order;
  std::vector<int> writes_seen;
  auto note = [&](const std::string& who) {
    return [&, who] {
      std::lock_guard<std::mutex> l(mu);
      order.push_back(who);
      writes_seen.push_back(store.writes_.load());
    };
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  using OnConflict = GroupCommitter<Book>::OnConflict;
  std::string a, b, c;
  absl::Status sa, sb, sc;
  std::jthread first([&] { sa = committer.Run(pool_name_, Allocate("a", 5, &a), deadline, OnConflict::kRetry, note("a")); });
  store.entered_.WaitForNotification();  // a's write is on its way: b and c queue for the next batch
  // c's pool is 1 IP, which a holds: c fails, and its callback must not run.
  std::jthread second([&] { sb = committer.Run(pool_name_, Allocate("b", 5, &b), deadline, OnConflict::kRetry, note("b")); });
  std::jthread third([&] { sc = committer.Run(pool_name_, Allocate("c", 1, &c), deadline, OnConflict::kRetry, note("c")); });
  absl::SleepFor(absl::Milliseconds(200));  // let b and c join the queue
  store.release_.Notify();
  first.join();
  second.join();
  third.join();
  EXPECT_TRUE(sa.ok()) << sa;
  EXPECT_TRUE(sb.ok()) << sb;
  EXPECT_TRUE(absl::IsResourceExhausted(sc)) << sc;
  std::lock_guard<std::mutex> l(mu);
  ASSERT_EQ(order, (std::vector<std::string>{"a", "b"}));
  // a's callback ran before b's batch was written (only a's write had been issued).
  EXPECT_EQ(writes_seen[0], 1);
  EXPECT_EQ(writes_seen[1], 2);
}

// Every mutation's `prepare` runs on an attempt's state before any mutation of the batch is
// applied: the first mutation of a batch sees what the others prepared (NodeBlocks' top-up in
// an ADD's write counts only the ADDs written with it). Mutations of other batches are not in it.
TEST_F(CommitterTest, EveryPrepareOfABatchRunsBeforeItsFirstMutation) {
  KubePoolStore kube_store(cluster_->rest());
  HoldFirstWrite store(&kube_store);
  GroupCommitter<Book> committer(&store, BookHooks());
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  using OnConflict = GroupCommitter<Book>::OnConflict;
  std::mutex mu;
  std::map<std::string, std::set<std::string>> seen;  // mutation -> prepared when it ran
  auto run = [&](const std::string& who, std::string* ip) {
    GroupCommitter<Book>::Mutation allocate = Allocate(who, 5, ip);
    return committer.Run(
        pool_name_,
        [&, who, allocate](Book& book) {
          {
            std::lock_guard<std::mutex> l(mu);
            seen[who] = book.prepared;
          }
          return allocate(book);
        },
        deadline, OnConflict::kRetry, nullptr, [who](Book& book) { book.prepared.insert(who); });
  };
  std::string a, b, c;
  absl::Status sa, sb, sc;
  std::jthread first([&] { sa = run("a", &a); });
  store.entered_.WaitForNotification();  // a's write is on its way: b and c queue behind it
  std::jthread second([&] { sb = run("b", &b); });
  std::jthread third([&] { sc = run("c", &c); });
  absl::SleepFor(absl::Milliseconds(200));  // let b and c join the queue
  store.release_.Notify();
  first.join();
  second.join();
  third.join();
  ASSERT_TRUE(sa.ok() && sb.ok() && sc.ok()) << sa << " " << sb << " " << sc;
  EXPECT_EQ(store.writes_.load(), 2) << "b and c in one batch";
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(seen["a"], (std::set<std::string>{"a"}));
  EXPECT_EQ(seen["b"], (std::set<std::string>{"b", "c"}));
  EXPECT_EQ(seen["c"], (std::set<std::string>{"b", "c"}));
}

TEST_F(CommitterTest, MissingPoolIsNotFound) {
  KubePoolStore store(cluster_->rest());
  GroupCommitter<Book> committer(&store, BookHooks());
  std::string ip;
  absl::Status s = committer.Run("no-such-pool-" + cluster_->ns(), Allocate("p1", 5, &ip),
                                 absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("no-such-pool"), absl::string_view::npos);
}

TEST_F(CommitterTest, GivesUpAtTheDeadlineWithTheLastError) {
  if (cluster_->loopback() == nullptr) GTEST_SKIP() << "needs fault injection";
  cluster_->loopback()->FailNext(1000000, 500, {.verb = "update", .resource = "spiderippools/status"});
  KubePoolStore store(cluster_->rest());
  GroupCommitter<Book> committer(&store, BookHooks());
  std::string ip;
  absl::Status s = committer.Run(pool_name_, Allocate("p1", 5, &ip), absl::Now() + absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_NE(s.message().find(pool_name_), absl::string_view::npos) << s;
  cluster_->loopback()->ClearFaults();
  EXPECT_TRUE(Records().empty()) << "a timed-out allocation must leave no record";
}

// A metadata watch has seen a newer version than the copy at hand: the committer reads the pool
// before it writes, instead of writing against the old copy and meeting a 409.
TEST_F(CommitterTest, AStartCopyOlderThanTheLatestVersionIsReadAgainFirst) {
  auto before = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
  ASSERT_TRUE(before.ok()) << before.status();
  std::string latest;
  {
    KubePoolStore store(cluster_->rest());
    GroupCommitter<Book> other(&store, BookHooks());
    std::string ip;
    ASSERT_TRUE(other.Run(pool_name_, Allocate("pod-a", 5, &ip), absl::Now() + absl::Seconds(10)).ok());
    auto now = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
    ASSERT_TRUE(now.ok());
    latest = now->metadata.resource_version;
  }
  KubePoolStore store(cluster_->rest());
  GroupCommitter<Book>::Hooks hooks = BookHooks();
  hooks.cached = [&](const std::string&) -> std::optional<api::SpiderIPPool> { return *before; };
  hooks.latest_version = [&](const std::string&) -> std::optional<std::string> { return latest; };
  GroupCommitter<Book> committer(&store, hooks);
  std::string ip;
  ASSERT_TRUE(committer.Run(pool_name_, Allocate("pod-b", 5, &ip), absl::Now() + absl::Seconds(10)).ok());
  EXPECT_EQ(ip, "10.9.0.2");
  EXPECT_EQ(committer.stats().conflicts, 0) << "wrote against the copy it knew was old";
}

// Another agent's write lands while a batch is being built, and the metadata watch says so
// (latest_version): the batch is not sent to meet a 409 (a whole pool's decode on the server).
// Background work steps back as after a 409; a waiting ADD re-reads and lands.
TEST_F(CommitterTest, ABatchOvertakenWhileBuiltIsNotSent) {
  using OnConflict = GroupCommitter<Book>::OnConflict;
  std::string latest;  // what the "metadata watch" has seen
  KubePoolStore store(cluster_->rest());
  GroupCommitter<Book>::Hooks hooks = BookHooks();
  hooks.latest_version = [&](const std::string&) -> std::optional<std::string> {
    if (latest.empty()) return std::nullopt;
    return latest;
  };
  GroupCommitter<Book> committer(&store, hooks);
  KubePoolStore other_store(cluster_->rest());
  GroupCommitter<Book> other(&other_store, BookHooks());
  // The first time the mutation runs, another agent's write lands and is seen.
  auto overtaken = [&](std::string uid, std::string* got) {
    return [&, uid, mutation = Allocate(uid, 5, got), first = true](Book& book) mutable {
      if (first) {
        first = false;
        std::string ip;
        EXPECT_TRUE(other.Run(pool_name_, Allocate("other-" + uid, 5, &ip),
                              absl::Now() + absl::Seconds(10)).ok());
        auto now = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
        EXPECT_TRUE(now.ok()) << now.status();
        if (now.ok()) latest = now->metadata.resource_version;
      }
      return mutation(book);
    };
  };

  std::string bg;
  absl::Status yielded = committer.Run(pool_name_, overtaken("bg", &bg),
                                       absl::Now() + absl::Seconds(10), OnConflict::kYield);
  EXPECT_TRUE(absl::IsAborted(yielded)) << yielded;
  EXPECT_EQ(Records().size(), 1u) << "the yielded batch was written";
  EXPECT_EQ(committer.stats().conflicts, 0) << "the stale batch was sent";
  EXPECT_EQ(committer.stats().stale_skipped, 1);

  std::string add;
  ASSERT_TRUE(committer.Run(pool_name_, overtaken("add", &add),
                            absl::Now() + absl::Seconds(10)).ok());
  EXPECT_EQ(add, "10.9.0.3") << "not applied to the other agent's write";
  EXPECT_EQ(Records().size(), 3u);
  EXPECT_EQ(committer.stats().conflicts, 0) << "the stale batch was sent";
  EXPECT_EQ(committer.stats().stale_skipped, 2);
}

// A mutation that needs a record another agent wrote a moment ago (a KubeVirt live migration
// moves the VM's records to the target node) must not fail on a cache that lags behind: it is
// re-applied to a fresh read once. A precondition that fails on the fresh read fails.
TEST_F(CommitterTest, AFailedPreconditionOnACachedCopyIsRetriedOnAFreshRead) {
  // The copy a lagging informer still holds: before the record was written.
  auto before = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
  ASSERT_TRUE(before.ok()) << before.status();
  {
    KubePoolStore store(cluster_->rest());
    GroupCommitter<Book> other(&store, BookHooks());
    std::string ip;
    ASSERT_TRUE(other.Run(pool_name_, Allocate("vm-pod-a", 5, &ip), absl::Now() + absl::Seconds(10)).ok());
    ASSERT_EQ(ip, "10.9.0.1");
  }
  class CountingStore : public KubePoolStore {
   public:
    using KubePoolStore::KubePoolStore;
    absl::StatusOr<api::SpiderIPPool> Get(const std::string& name) override {
      ++gets;
      return KubePoolStore::Get(name);
    }
    std::atomic<int> gets{0};
  };
  CountingStore store(cluster_->rest());
  GroupCommitter<Book>::Hooks hooks = BookHooks();
  hooks.cached = [&](const std::string&) -> std::optional<api::SpiderIPPool> { return *before; };
  GroupCommitter<Book> committer(&store, hooks);
  // Moves the record of `from` to `to`; FailedPrecondition if the pool has no record of `from`.
  auto move = [](std::string from, std::string to) {
    return [from, to](Book& book) -> absl::Status {
      for (auto& [ip, rec] : book.records) {
        if (rec.pod_uid != from) continue;
        rec = api::PoolIPAllocation{.pod = "ns/" + to, .pod_uid = to};
        book.dirty = true;
        return absl::OkStatus();
      }
      return absl::FailedPreconditionError("no record of " + from);
    };
  };
  absl::Status s = committer.Run(pool_name_, move("vm-pod-a", "vm-pod-b"), absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(store.gets.load(), 1);
  api::PoolIPAllocations records = Records();
  ASSERT_EQ(records.count("10.9.0.1"), 1u);
  EXPECT_EQ(records["10.9.0.1"].pod_uid, "vm-pod-b");

  store.gets = 0;
  s = committer.Run(pool_name_, move("nobody", "vm-pod-c"), absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(store.gets.load(), 1) << "one fresh read, then the mutation's own error";
}

constexpr absl::Duration kPacingRoundTrip = absl::Milliseconds(40);

// A clock that moves only by the store's round trips and the waits, which it records.
class SteppingClock : public base::Clock {
 public:
  absl::Time Now() const override { return now_; }
  bool SleepUntil(absl::Time deadline, std::stop_token) override {
    wait_starts.push_back(now_);
    waits.push_back(deadline - now_);
    now_ = std::max(now_, deadline);
    return true;
  }
  void Advance(absl::Duration d) { now_ += d; }
  std::vector<absl::Duration> waits;
  std::vector<absl::Time> wait_starts;

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
};

// One pool in memory; each write takes kPacingRoundTrip, the first `conflicts` answer 409.
class ConflictingStore : public PoolStore {
 public:
  ConflictingStore(SteppingClock* clock, int conflicts,
                   absl::Duration round_trip = kPacingRoundTrip)
      : clock_(clock), conflicts_(conflicts), round_trip_(round_trip) {
    pool_.metadata.name = "busy";
    pool_.metadata.resource_version = "1";
  }
  absl::StatusOr<api::SpiderIPPool> Get(const std::string&) override { return pool_; }
  absl::StatusOr<api::SpiderIPPool> UpdateStatus(const api::SpiderIPPool& pool) override {
    clock_->Advance(round_trip_);
    if (conflicts_-- > 0) {
      pool_.metadata.resource_version = std::to_string(std::stoi(pool_.metadata.resource_version) + 1);
      return kube::MakeApiError(409, kube::reason::kConflict, "the object has been modified");
    }
    pool_ = pool;
    return pool_;
  }
 private:
  SteppingClock* clock_;
  int conflicts_;
  absl::Duration round_trip_;
  api::SpiderIPPool pool_;
};

// A pool that many agents write: the waits after repeated 409s are spread over a window that
// grows with each conflict and scales with the measured write round trip, drawn from 0 (full
// jitter). Steps of a fixed millisecond size, capped, made every agent retry in lockstep.
TEST(CommitterPacing, WaitsAfterConflictsSpreadOverRoundTrips) {
  constexpr int kConflicts = 12;
  SteppingClock clock;
  ConflictingStore store(&clock, kConflicts);
  GroupCommitter<Book> committer(&store, BookHooks(), &clock);
  std::string ip;
  ASSERT_TRUE(committer.Run("busy", Allocate("p1", 5, &ip), clock.Now() + absl::Hours(1)).ok());
  EXPECT_EQ(committer.stats().conflicts, kConflicts);
  // The first conflict is retried at once with the winner's version; then one wait per conflict.
  ASSERT_EQ(clock.waits.size(), static_cast<size_t>(kConflicts - 1));
  std::set<int64_t> distinct;
  absl::Duration longest;
  for (size_t i = 0; i < clock.waits.size(); ++i) {
    const int k = static_cast<int>(i) + 2;  // the conflict in a row this wait follows
    const absl::Duration window =
        std::min(absl::Seconds(1), kPacingRoundTrip / 2 * static_cast<double>(1 << (k - 2)));
    EXPECT_GE(clock.waits[i], absl::ZeroDuration());
    EXPECT_LT(clock.waits[i], window) << "wait after conflict " << k;
    distinct.insert(absl::ToInt64Microseconds(clock.waits[i]));
    longest = std::max(longest, clock.waits[i]);
  }
  EXPECT_GT(longest, absl::Milliseconds(200)) << "the window must grow past a fixed small cap";
  EXPECT_GE(distinct.size(), 8u) << "waits must be jittered, not in lockstep";
}

// Checks that the wait after the k-th conflict in a row lies in its window, [0, min(cap,
// half a round trip × 2^(k−2))), the cap being `cap_round_trips` round trips; returns the
// longest wait.
absl::Duration LongestWaitWithinWindows(const std::vector<absl::Duration>& waits,
                                        absl::Duration round_trip, int64_t cap_round_trips) {
  absl::Duration longest;
  for (size_t i = 0; i < waits.size(); ++i) {
    const int k = static_cast<int>(i) + 2;
    const absl::Duration window = std::min(round_trip * cap_round_trips,
                                           round_trip / 2 * static_cast<double>(1 << (k - 2)));
    EXPECT_LT(waits[i], window) << "wait after conflict " << k;
    longest = std::max(longest, waits[i]);
  }
  return longest;
}

// A slow round trip (a 5000-IP pool on a busy server, 50 agents writing it): 1 s holds too few
// of them to spread the agents, so the window's cap becomes 16 round trips.
TEST(CommitterPacing, OnSlowRoundTripsTheWindowIsCappedAtSixteenOfThem) {
  constexpr int kConflicts = 12;
  constexpr absl::Duration kSlow = absl::Milliseconds(250);
  SteppingClock clock;
  ConflictingStore store(&clock, kConflicts, kSlow);
  GroupCommitter<Book> committer(&store, BookHooks(), &clock);
  std::string ip;
  ASSERT_TRUE(committer.Run("busy", Allocate("p1", 5, &ip), clock.Now() + absl::Hours(1)).ok());
  ASSERT_EQ(clock.waits.size(), static_cast<size_t>(kConflicts - 1));
  EXPECT_GT(LongestWaitWithinWindows(clock.waits, kSlow, 16), absl::Seconds(1))
      << "capped at 1 s although a round trip is 250 ms";
}

// The waits of one mutation that meets `conflicts` 409s in a row on pool "busy", which
// `writers` agents write, each write taking `round_trip`.
std::vector<absl::Duration> WaitsWithWriters(int conflicts, absl::Duration round_trip,
                                             int64_t writers) {
  SteppingClock clock;
  ConflictingStore store(&clock, conflicts, round_trip);
  GroupCommitter<Book>::Hooks hooks = BookHooks();
  hooks.writers = [writers](const std::string& name) { return name == "busy" ? writers : 0; };
  GroupCommitter<Book> committer(&store, hooks, &clock);
  std::string ip;
  EXPECT_TRUE(committer.Run("busy", Allocate("p1", 5, &ip), clock.Now() + absl::Hours(1)).ok());
  EXPECT_EQ(clock.waits.size(), static_cast<size_t>(conflicts - 1));
  return clock.waits;
}

// A pool that more agents write than 16: the cap is one round trip per writer (Hooks::writers).
TEST(CommitterPacing, TheWindowGrowsToOneRoundTripPerWriterOfThePool) {
  constexpr absl::Duration kSlow = absl::Milliseconds(250);
  // 16 conflicts: 9 draws from windows over 4 s, all under it ~1e-5.
  EXPECT_GT(LongestWaitWithinWindows(WaitsWithWriters(16, kSlow, 64), kSlow, 64), kSlow * 16)
      << "capped at 16 round trips although 64 agents write the pool";
}

// An ADD that keeps losing in a pool 50 agents write pauses at most half the time it has left:
// a pause ending at its deadline is a failure without another try (without the cap, windows
// of up to 50 round trips, 2 s here, against 1 s left: its last pause ran into the deadline).
TEST(CommitterPacing, AWaitingBatchPausesAtMostHalfTheTimeItHasLeft) {
  SteppingClock clock;
  ConflictingStore store(&clock, /*conflicts=*/1000);
  GroupCommitter<Book>::Hooks hooks = BookHooks();
  hooks.writers = [](const std::string&) -> int64_t { return 50; };
  GroupCommitter<Book> committer(&store, hooks, &clock);
  const absl::Time deadline = clock.Now() + absl::Seconds(1);
  std::string ip;
  absl::Status s = committer.Run("busy", Allocate("p1", 5, &ip), deadline);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  ASSERT_FALSE(clock.waits.empty());
  for (size_t i = 0; i < clock.waits.size(); ++i) {
    EXPECT_LE(clock.waits[i], (deadline - clock.wait_starts[i]) / 2)
        << "pause " << i << " of " << clock.waits.size();
  }
}

// A pool that few agents write (fewer than 16): the cap is one slot (half a round trip) per
// writer, not 1 s or 16 round trips. With 10 nodes a node that had lost a few races in a row
// waited up to 1 s each time while the others kept writing (ipam_e2e, pods created as they
// start: that node's ADDs 1.5-3 s behind).
TEST(CommitterPacing, WithFewWritersTheWindowIsCappedAtASlotPerWriter) {
  constexpr absl::Duration kSlow = absl::Milliseconds(250);
  // 10 slots of 125 ms: 5 round trips (the cap without writers would be 16 of them, 4 s).
  EXPECT_GT(LongestWaitWithinWindows(WaitsWithWriters(12, kSlow, 10), kSlow, 5), kSlow)
      << "the window must still grow to its cap";
}

}  // namespace
}  // namespace spiderpool::agent::ipam
