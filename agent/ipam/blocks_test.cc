// NodeBlocks against the loopback API server (or a real cluster through
// SPIDERPOOL_TEST_KUBECONFIG): the invariants that keep a give-back of this node's reservations
// from producing a duplicate IP.
#include "agent/ipam/blocks.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "base/strings.h"
#include "base/testing/wait.h"
#include "gtest/gtest.h"
#include "kube/rest/client.h"
#include "kube/testing/spider_cluster.h"

namespace spiderpool::agent::ipam {
namespace {

namespace sp = ::spiderpool::ipam;

constexpr char kNode[] = "node-a";

// The pool through the REST client; once armed, the next status write waits until released.
class HeldStore : public PoolStore {
 public:
  explicit HeldStore(std::shared_ptr<kube::RestClient> rest) : pools_(std::move(rest)) {}
  absl::StatusOr<api::SpiderIPPool> Get(const std::string& name) override {
    return pools_.Get("", name);
  }
  absl::StatusOr<api::SpiderIPPool> UpdateStatus(const api::SpiderIPPool& pool) override {
    if (armed_.exchange(false)) {
      entered_.Notify();
      release_.WaitForNotification();
    }
    if (conflict_once_.exchange(false)) {  // another writer lands first: this write gets 409
      absl::StatusOr<api::SpiderIPPool> other = pools_.Patch(
          "", pool.metadata.name, kube::PatchType::kMerge,
          {{"metadata", {{"labels", {{"blocks-test/bumped", "true"}}}}}});
      if (!other.ok()) return other.status();
    }
    return pools_.UpdateStatus(pool);
  }
  std::atomic<bool> armed_{false};
  std::atomic<bool> conflict_once_{false};
  absl::Notification entered_, release_;

 private:
  kube::Client<api::SpiderIPPool> pools_;
};

absl::StatusOr<sp::PoolState> Build(const api::SpiderIPPool& pool) {
  return sp::PoolState::Build(pool, {});
}

// A node on which `n` pods wait (no pool cached, so the keeper takes every pool for one with
// no unreserved IP left; no endpoints); `wanted_by` names the node that asks for reservations.
NodeBlocks::Hooks Waiting(int n, std::function<std::string(const std::string&)> wanted_by) {
  return {.cached_pool = [](const std::string&) { return nullptr; },
          .endpoint_ips = [](const std::string&) {
            return std::map<base::IPAddress, sp::AllocationRequest>{};
          },
          .build = Build,
          .waiting_pods = [n] {
            std::set<std::string> uids;
            for (int i = 0; i < n; ++i) uids.insert(base::StrCat("wait-", i));
            return uids;
          },
          .wanted_by = std::move(wanted_by)};
}
NodeBlocks::Hooks EighteenWaiting(std::function<std::string(const std::string&)> wanted_by) {
  return Waiting(18, std::move(wanted_by));
}
// A node on which `*n` pods wait (the count may change), in a pool whose cached status shows
// `free_ips` unreserved IPs; nobody asks for reservations.
NodeBlocks::Hooks WaitingInAPoolShowing(std::shared_ptr<std::atomic<int>> n, int64_t free_ips) {
  NodeBlocks::Hooks hooks = Waiting(0, [](const std::string&) { return std::string(); });
  auto pool = std::make_shared<api::SpiderIPPool>();
  pool->status.free_ip_count = free_ips;
  hooks.cached_pool = [pool](const std::string&) {
    return std::shared_ptr<const api::SpiderIPPool>(pool);
  };
  hooks.waiting_pods = [n] {
    std::set<std::string> uids;
    for (int i = 0; i < *n; ++i) uids.insert(base::StrCat("wait-", i));
    return uids;
  };
  return hooks;
}

class BlocksTest : public kube::testing::SpiderClusterTest {
 protected:
  void SetUp() override {
    SpiderClusterTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<std::string> pool =
        CreatePool("blocks", "10.9.0.0/24", {"10.9.0.1-10.9.0.20"});
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_name_ = *pool;
    store_ = std::make_unique<HeldStore>(cluster_->rest());
    committer_ = std::make_unique<PoolCommitter>(
        store_.get(),
        PoolCommitter::Hooks{
            .load = [](const api::SpiderIPPool& p) -> absl::StatusOr<PoolBook> {
              absl::StatusOr<sp::PoolState> st = Build(p);
              if (!st.ok()) return st.status();
              return PoolBook{*std::move(st), false};
            },
            .dirty = [](const PoolBook& b) { return b.dirty; },
            .store = [](const PoolBook& b, api::SpiderIPPool* p) { b.state.WriteStatus(p); }});
  }
  void TearDown() override {
    blocks_.reset();
    SpiderClusterTest::TearDown();
  }

  std::vector<base::IPAddress> ReservedInPool() {
    auto pool = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
    EXPECT_TRUE(pool.ok()) << pool.status();
    if (!pool.ok()) return {};
    absl::StatusOr<sp::PoolState> st = Build(*pool);
    EXPECT_TRUE(st.ok()) << st.status();
    return st.ok() ? st->ReservedFor(kNode) : std::vector<base::IPAddress>{};
  }

  // ReserveTenTakeFour; then node-c asks (`asked`, shared with the hook: the keeper's Stop in
  // TearDown still asks it) and the flush writes the 4 as pod records. Fair part with node-c: 20 / 3 nodes = 7, less this node's 4 pods:
  // 3 of the 6 left stay for the 14 pods still waiting, 3 are to go back.
  void ReserveTakeFourThenNodeCAsks(std::shared_ptr<std::atomic<bool>> asked) {
    ReserveTenTakeFour(BlockOptions{.max_block = 16, .idle_release = absl::Hours(1),
                                    .tight_idle_release = absl::Hours(1)},
                       [asked](const std::string&) {
                         return *asked ? std::string("node-c") : std::string();
                       });
    if (HasFatalFailure()) return;
    *asked = true;
    ASSERT_TRUE(blocks_->Flush(pool_name_, absl::Now() + absl::Seconds(30)).ok());
    ASSERT_EQ(ReservedInPool().size(), 6u);
  }

  // node-b's 2 pods hold 2 of the 20 IPs; this node (18 pods waiting) reserves its fair part,
  // 20 / 2 nodes = 10, and 4 of its pods get an IP from the block.
  void ReserveTenTakeFour(BlockOptions options,
                          std::function<std::string(const std::string&)> wanted_by) {
    blocks_ = std::make_unique<NodeBlocks>(kNode, options, committer_.get(),
                                           EighteenWaiting(std::move(wanted_by)), nullptr);
    ASSERT_EQ(NodeBPodsThenTopUp(2).size(), 10u);
    Take(4, "wait-");
  }

  // ReserveTenTakeFour in a pool that looks tight, nobody asking; then the keeper runs, and the
  // node turns idle 50 ms after its last take.
  void ReserveTenTakeFourThenIdle(absl::Duration prewarm_hold) {
    ReserveTenTakeFour(BlockOptions{.max_block = 16, .flush_after = absl::Milliseconds(10),
                                    .idle_release = absl::Milliseconds(50),
                                    .tight_idle_release = absl::ZeroDuration(),
                                    .prewarm_hold = prewarm_hold},
                       [](const std::string&) { return std::string(); });
    if (HasFatalFailure()) return;
    blocks_->Start();
  }

  // A pool 2 × kNodesPerFlushWindow nodes share (19 other nodes' pods, and this node's
  // reservations), one IP of it handed out here to pod uid-p; then the keeper runs.
  struct HandedOut {
    std::string pool;
    base::IPAddress ip;
    absl::Time taken;
  };
  HandedOut HandOutInACrowdedPool(BlockOptions options, NodeBlocks::Hooks hooks) {
    HandedOut h;
    blocks_ = std::make_unique<NodeBlocks>(kNode, options, committer_.get(), std::move(hooks),
                                           nullptr);
    absl::StatusOr<std::string> crowded =
        CreatePool("crowded", "10.10.0.0/24", {"10.10.0.1-10.10.0.100"});
    EXPECT_TRUE(crowded.ok()) << crowded.status();
    if (!crowded.ok()) return h;
    h.pool = *crowded;
    std::vector<base::IPAddress> reserved;
    EXPECT_TRUE(committer_
                    ->Run(h.pool,
                          [&](PoolBook& book) {
                            for (int i = 0; i < 2 * NodeBlocks::kNodesPerFlushWindow - 1; ++i) {
                              const std::string n = base::StrCat(i);
                              absl::Status s = book.state.Allocate({.pod = "ns/o" + n,
                                                                    .pod_uid = "o" + n,
                                                                    .node = "node-o" + n})
                                                   .status();
                              if (!s.ok()) return s;
                            }
                            book.dirty = true;
                            blocks_->TopUp(h.pool, book.state, &reserved, &book.dirty, "uid-0");
                            return absl::OkStatus();
                          },
                          absl::Now() + absl::Seconds(30), PoolCommitter::OnConflict::kRetry,
                          [&] { blocks_->AddReserved(h.pool, reserved); })
                    .ok());
    EXPECT_FALSE(reserved.empty());
    h.taken = absl::Now();
    std::optional<base::IPAddress> ip =
        blocks_->Take(h.pool, {.pod = "ns/p", .pod_uid = "uid-p", .node = kNode},
                      [](const base::IPAddress&) { return true; }, absl::Now() + absl::Seconds(1));
    EXPECT_TRUE(ip.has_value());
    if (ip.has_value()) h.ip = *ip;
    blocks_->Start();
    return h;
  }
  // Whether the pool records h.ip as pod uid-p's.
  bool Recorded(const HandedOut& h) {
    auto got = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", h.pool);
    if (!got.ok()) return false;
    absl::StatusOr<sp::PoolState> st = Build(*got);
    const api::PoolIPAllocation* rec = st.ok() ? st->RecordOf(h.ip) : nullptr;
    return rec != nullptr && rec->pod_uid == "uid-p";
  }

  // One write of the pool: node-b's `pods` pods, then this node's TopUp. Returns what it
  // reserved (in the block once the write landed).
  std::vector<base::IPAddress> NodeBPodsThenTopUp(int pods) {
    std::vector<base::IPAddress> reserved;
    EXPECT_TRUE(committer_
                    ->Run(pool_name_,
                          [&](PoolBook& book) {
                            for (int i = 0; i < pods; ++i) {
                              const std::string uid = base::StrCat("b", i);
                              absl::Status s = book.state.Allocate(
                                  {.pod = "ns/" + uid, .pod_uid = uid, .node = "node-b"})
                                                   .status();
                              if (!s.ok()) return s;
                            }
                            book.dirty = true;
                            blocks_->TopUp(pool_name_, book.state, &reserved, &book.dirty);
                            return absl::OkStatus();
                          },
                          absl::Now() + absl::Seconds(30), PoolCommitter::OnConflict::kRetry,
                          [&] { blocks_->AddReserved(pool_name_, reserved); })
                    .ok());
    return reserved;
  }

  // `n` pods of this node (UIDs `prefix`0, 1, ...) get an IP of `pool` (default: the
  // fixture's) from the block.
  void Take(int n, const std::string& prefix, std::string pool = "") {
    if (pool.empty()) pool = pool_name_;
    for (int i = 0; i < n; ++i) {
      const std::string uid = base::StrCat(prefix, i);
      ASSERT_TRUE(blocks_
                      ->Take(pool, {.pod = "ns/" + uid, .pod_uid = uid, .node = kNode},
                             [](const base::IPAddress&) { return true; },
                             absl::Now() + absl::Seconds(1))
                      .has_value());
    }
  }

  // Pool `name` (200 IPs in `net`.0.0/24) as this node first finds it: four other nodes hold
  // standing blocks of 8. This node tops up, `taken` of its pods (UIDs `prefix`0, 1, ...) get
  // an IP from the block, and it tops up again. Returns what each top-up reserved.
  std::pair<size_t, size_t> TopUpTakeTopUp(const std::string& name, const std::string& net,
                                           int taken, const std::string& prefix) {
    absl::StatusOr<std::string> pool_name =
        CreatePool(name, net + ".0.0/24", {net + ".0.1-" + net + ".0.200"});
    EXPECT_TRUE(pool_name.ok()) << pool_name.status();
    if (!pool_name.ok()) return {0, 0};
    auto pool = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", *pool_name);
    EXPECT_TRUE(pool.ok()) << pool.status();
    if (!pool.ok()) return {0, 0};
    absl::StatusOr<sp::PoolState> st = Build(*pool);
    EXPECT_TRUE(st.ok()) << st.status();
    if (!st.ok()) return {0, 0};
    for (int n = 0; n < 4; ++n) EXPECT_TRUE(st->Reserve(base::StrCat("node-o", n), 8).ok());
    std::vector<base::IPAddress> reserved;
    bool dirty = false;
    blocks_->TopUp(*pool_name, *st, &reserved, &dirty);
    const size_t first = reserved.size();
    blocks_->AddReserved(*pool_name, reserved);
    Take(taken, prefix, *pool_name);
    blocks_->TopUp(*pool_name, *st, &reserved, &dirty);
    return {first, reserved.size()};
  }

  std::string pool_name_;
  std::unique_ptr<HeldStore> store_;
  std::unique_ptr<PoolCommitter> committer_;
  std::unique_ptr<NodeBlocks> blocks_;
};

// Two ADDs of one batch both report the block their write reserved (the second adopts the
// first's fresh reservations). The keeper starts giving the block back before the second
// ADD's report arrives: that late report must not put the IPs back into use, or the give-back
// would unreserve IPs that pods hold (the duplicate IPs ipam_e2e found).
TEST_F(BlocksTest, ALateReportOfAReservationNeverUndoesAGiveBack) {
  blocks_ = std::make_unique<NodeBlocks>(
      kNode,
      // flush_after 0: no top-up ahead of demand (none is known here) after the give-back.
      BlockOptions{.max_block = 4, .flush_after = absl::ZeroDuration(),
                   .idle_release = absl::ZeroDuration(),
                   .tight_idle_release = absl::ZeroDuration()},
      committer_.get(),
      NodeBlocks::Hooks{.cached_pool = [](const std::string&) { return nullptr; },
                        .endpoint_ips = [](const std::string&) {
                          return std::map<base::IPAddress, sp::AllocationRequest>{};
                        },
                        .build = Build},
      nullptr);
  std::vector<base::IPAddress> first, second;
  ASSERT_TRUE(committer_
                  ->Run(pool_name_,
                        [&](PoolBook& book) {
                          blocks_->TopUp(pool_name_, book.state, &first, &book.dirty, "uid-1");
                          blocks_->TopUp(pool_name_, book.state, &second, &book.dirty, "uid-2");
                          return absl::OkStatus();
                        },
                        absl::Now() + absl::Seconds(30))
                  .ok());
  ASSERT_FALSE(first.empty());
  ASSERT_EQ(first, second) << "the second TopUp of the batch adopts the first's reservations";
  ASSERT_EQ(ReservedInPool(), first);

  // The first report arrives; the keeper gives the idle block back, and its write is held.
  store_->armed_ = true;
  blocks_->AddReserved(pool_name_, first);
  blocks_->Start();
  store_->entered_.WaitForNotification();

  // The second (late) report: nothing may be handed out from what is being given back.
  blocks_->AddReserved(pool_name_, second);
  const sp::AllocationRequest pod{.pod = "ns/p", .pod_uid = "uid-3", .node = kNode};
  EXPECT_EQ(blocks_->Take(pool_name_, pod, [](const base::IPAddress&) { return true; },
                          absl::Now() + absl::Seconds(1)),
            std::nullopt);
  store_->release_.Notify();
  EXPECT_TRUE(base::testing::WaitUntil([&] { return ReservedInPool().empty(); }, absl::Seconds(10)))
      << "the idle block was not given back";
  std::optional<base::IPAddress> after = blocks_->Take(
      pool_name_, pod, [](const base::IPAddress&) { return true; }, absl::Now() + absl::Seconds(1));
  if (after.has_value()) {
    const std::vector<base::IPAddress> reserved = ReservedInPool();
    EXPECT_NE(std::find(reserved.begin(), reserved.end(), *after), reserved.end())
        << after->ToString() << " was handed out but the pool does not reserve it for " << kNode;
  }
}

// The last line of defence: an IP handed out whose reservation vanished from the pool (a bug
// elsewhere) is recorded for its pod at the flush while nobody else holds it.
TEST_F(BlocksTest, AFlushRecordsAHandedOutIPWhoseReservationVanished) {
  blocks_ = std::make_unique<NodeBlocks>(
      kNode, BlockOptions{.max_block = 4}, committer_.get(),
      NodeBlocks::Hooks{.cached_pool = [](const std::string&) { return nullptr; },
                        .endpoint_ips = [](const std::string&) {
                          return std::map<base::IPAddress, sp::AllocationRequest>{};
                        },
                        .build = Build},
      nullptr);
  std::vector<base::IPAddress> reserved;
  ASSERT_TRUE(committer_
                  ->Run(pool_name_,
                        [&](PoolBook& book) {
                          blocks_->TopUp(pool_name_, book.state, &reserved, &book.dirty, "uid-1");
                          return absl::OkStatus();
                        },
                        absl::Now() + absl::Seconds(30), PoolCommitter::OnConflict::kRetry,
                        [&] { blocks_->AddReserved(pool_name_, reserved); })
                  .ok());
  const sp::AllocationRequest pod{.pod = "ns/p", .pod_uid = "uid-p", .node = kNode};
  std::optional<base::IPAddress> ip = blocks_->Take(
      pool_name_, pod, [](const base::IPAddress&) { return true; }, absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(ip.has_value());
  // Behind the block's back, the reservation disappears.
  ASSERT_TRUE(committer_
                  ->Run(pool_name_,
                        [&](PoolBook& book) {
                          book.dirty = book.state.Unreserve(*ip, kNode);
                          return absl::OkStatus();
                        },
                        absl::Now() + absl::Seconds(30))
                  .ok());
  ASSERT_TRUE(blocks_->FlushAll(absl::Now() + absl::Seconds(30)).ok());
  auto got = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<sp::PoolState> st = Build(*got);
  ASSERT_TRUE(st.ok()) << st.status();
  const api::PoolIPAllocation* rec = st->RecordOf(*ip);
  ASSERT_NE(rec, nullptr) << ip->ToString() << " is free in the pool while a pod holds it";
  EXPECT_EQ(rec->pod_uid, "uid-p");
  EXPECT_EQ(blocks_->stats().lost, 0);
}

// Point 6's fair parts: in a pool that cannot serve every node's waiting pods, a node reserves
// no more than its fair part (the pool's IPs shared among the nodes its records name and the
// node asking, less what its own pods hold), not every free IP. Found by bench/chaos_test: the
// nodes that reserved first kept a tight pool's IPs for their own next pods (ADD p99 ~30 s).
TEST_F(BlocksTest, ReservationsForWaitingPodsStopAtTheFairPartOfATightPool) {
  std::string asker;
  blocks_ = std::make_unique<NodeBlocks>(
      kNode, BlockOptions{.max_block = 16}, committer_.get(),
      EighteenWaiting([&](const std::string&) { return asker; }),
      nullptr);
  auto pool = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", pool_name_);
  ASSERT_TRUE(pool.ok()) << pool.status();
  auto reserve = [&](int other_pods) -> size_t {
    absl::StatusOr<sp::PoolState> st = Build(*pool);  // 20 IPs
    EXPECT_TRUE(st.ok()) << st.status();
    if (!st.ok()) return 0;
    for (int i = 0; i < other_pods; ++i) {
      const std::string n = base::StrCat(i);
      EXPECT_TRUE(st->Allocate({.pod = "ns/b" + n, .pod_uid = "b" + n, .node = "node-b"}).ok());
    }
    std::vector<base::IPAddress> reserved;
    bool dirty = false;
    blocks_->TopUp(pool_name_, *st, &reserved, &dirty);
    return reserved.size();
  };
  EXPECT_EQ(reserve(0), 18u) << "alone in a pool with room: what the waiting pods need";
  EXPECT_EQ(reserve(2), 10u) << "node-b holds 2 of 20 IPs: 20 / 2 nodes";
  asker = "node-c";
  EXPECT_EQ(reserve(2), 7u) << "and node-c asks: 20 / 3 nodes";
  asker = "";
  EXPECT_EQ(reserve(12), 8u) << "node-b's 12 pods leave 8, under the fair part: all of them";
}

// While a node's pods are starting and only one of them is in sight (pods created as they
// start: a Deployment landing), a top-up goes to what is left of the node's fair part of the
// pool, not to half of the free IPs per node: halves shrink with every node's write, and ten
// nodes sharing an exactly full pool needed ~9 writes each (ipam_e2e --pod-lead-ms=0).
TEST_F(BlocksTest, WhilePodsAreStartingATopUpGoesToTheFairPartNotHalfTheFree) {
  blocks_ = std::make_unique<NodeBlocks>(kNode, BlockOptions{.max_block = 64}, committer_.get(),
                                         Waiting(1, nullptr), nullptr);
  // 9 pods that were never seen waiting get an IP: pods created as they start.
  const auto [first, second] = TopUpTakeTopUp("wide", "10.11", 9, "p");
  EXPECT_EQ(first, 16u) << "no pod started here yet: half of 168 free over 5 nodes";
  // Its fair part: 200 IPs over 5 nodes = 40, less the 9 handed out = 31 to keep free; it
  // holds 7. (Half of the 152 free over 5 nodes would have been 15: 8 more.)
  EXPECT_EQ(second, 24u);
}

// Pods that all waited here before their ADDs (a Deployment created before the agent saw it,
// or pods scheduled ahead): their demand is known, so a top-up while they start reserves what
// they still need, not the node's fair part: the extra IPs were another node's, which then
// had to ask for them (ipam_e2e defaults).
TEST_F(BlocksTest, PodsKnownAheadGetWhatTheyNeedNotTheFairPart) {
  blocks_ = std::make_unique<NodeBlocks>(kNode, BlockOptions{.max_block = 64}, committer_.get(),
                                         Waiting(30, nullptr), nullptr);
  // 10 of the 30 waiting pods get an IP.
  const auto [first, second] = TopUpTakeTopUp("known", "10.12", 10, "wait-");
  EXPECT_EQ(first, 30u) << "the 30 waiting pods";
  // 20 still wait and 20 are free in the block: nothing more. (The fair part, 200 / 5 nodes
  // less the 10 handed out, would have been 30: 10 more.)
  EXPECT_EQ(second, 0u);
}

// In a pool with no unreserved IP left, a node whose pods are still coming keeps what they
// need (up to its fair part) after `tight_idle_release`: it gave all of it back, its next
// pods then waited for other nodes' give-backs and theirs for the next ones' (ipam_e2e, 100
// nodes). The keeper's flush of the 4 handed-out IPs and its idle decision come in one pass:
// once the records are in the pool, the 6 free reservations must still be there.
TEST_F(BlocksTest, ATightPoolKeepsWhatThePodsStillComingNeed) {
  ReserveTenTakeFour(BlockOptions{.max_block = 16, .flush_after = absl::Milliseconds(10),
                                  .idle_release = absl::Hours(1),
                                  .tight_idle_release = absl::ZeroDuration()},
                     [](const std::string&) { return std::string(); });
  if (HasFatalFailure()) return;
  blocks_->Start();
  kube::Client<api::SpiderIPPool> pools(cluster_->rest());
  int64_t pod_records = 0;
  for (int i = 0; i < 400 && pod_records < 6; ++i) {  // node-b's 2 and the 4 handed out
    absl::SleepFor(absl::Milliseconds(25));
    auto pool = pools.Get("", pool_name_);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pod_records = pool->status.allocated_ip_count.value_or(0);
  }
  ASSERT_EQ(pod_records, 6) << "the keeper never flushed";
  EXPECT_EQ(ReservedInPool().size(), 6u) << "the 14 pods still waiting here need the 6";
  EXPECT_EQ(blocks_->stats().released, 0);
}

// The same node after `idle_release` without a hand-out: its 14 waiting pods still need the 6
// (its fair part), and nobody asked for them, so they stay for `prewarm_hold`. It gave all of
// them back 2 s after it had reserved for pods whose ADDs had not begun; those then wrote the
// pool themselves among 50 nodes' writes (ipam_e2e, 100 nodes: a first batch of 21 s).
TEST_F(BlocksTest, ATightPoolKeepsWhatTheWaitingPodsNeedWhileTheNodeIsIdle) {
  ReserveTenTakeFourThenIdle(absl::Hours(1));
  if (HasFatalFailure()) return;
  kube::Client<api::SpiderIPPool> pools(cluster_->rest());
  ASSERT_TRUE(base::testing::WaitUntil([&] {
    auto pool = pools.Get("", pool_name_);
    return pool.ok() && pool->status.allocated_ip_count.value_or(0) == 6;  // node-b's 2, our 4
  })) << "the keeper never flushed";
  absl::SleepFor(absl::Milliseconds(500));  // 10 x idle_release: the keeper's idle passes
  EXPECT_EQ(ReservedInPool().size(), 6u);
  EXPECT_EQ(blocks_->stats().released, 0);
}

// ... but not for longer than `prewarm_hold`: pods that do not start are no reason to keep
// IPs of a full pool.
TEST_F(BlocksTest, WaitingPodsHoldATightPoolsIPsOnlyForThePrewarmHold) {
  ReserveTenTakeFourThenIdle(absl::Milliseconds(300));
  if (HasFatalFailure()) return;
  // The counter moves once the give-back's write has landed (a pool read may see it first).
  EXPECT_TRUE(base::testing::WaitUntil([&] { return blocks_->stats().released == 6; }))
      << "released: " << blocks_->stats().released;
  EXPECT_TRUE(ReservedInPool().empty());
}

// In a pool with no unreserved IP left, a node whose pods are still starting keeps its fair
// part even when only one more pod is in sight (pods created as they start: one kubelet batch
// at a time). It kept only what the visible pods needed: a node that had just reserved its
// part gave all but 8 back and wrote the pool again for its next batch (ipam_e2e
// --pod-lead-ms=0).
TEST_F(BlocksTest, ABusyNodeKeepsItsFairPartOfATightPool) {
  blocks_ = std::make_unique<NodeBlocks>(
      kNode,
      BlockOptions{.max_block = 16, .flush_after = absl::Milliseconds(10),
                   .idle_release = absl::Hours(1), .tight_idle_release = absl::ZeroDuration()},
      committer_.get(), Waiting(1, [](const std::string&) { return std::string(); }), nullptr);
  ASSERT_EQ(NodeBPodsThenTopUp(2).size(), 9u) << "demand unknown beyond 1 pod: half of 18 free";
  Take(4, "p");
  blocks_->Start();
  kube::Client<api::SpiderIPPool> pools(cluster_->rest());
  EXPECT_TRUE(base::testing::WaitUntil([&] {
    auto pool = pools.Get("", pool_name_);
    return pool.ok() && pool->status.allocated_ip_count.value_or(0) == 6;  // node-b's 2, our 4
  })) << "the keeper never flushed";
  // Fair part: 20 IPs / 2 nodes = 10, less this node's 4 pods: the 5 free ones stay.
  EXPECT_EQ(ReservedInPool().size(), 5u);
  EXPECT_EQ(blocks_->stats().released, 0);
}

// A block running low in a pool with no unreserved IP left is not topped up: that write
// reserved nothing, and it failed the writes of nodes that still had their fair part to
// reserve (ipam_e2e --pod-lead-ms=0: 2-4 409s each). What was handed out waits for its flush.
TEST_F(BlocksTest, NoTopUpInAPoolWithNoUnreservedIPLeft) {
  api::SpiderIPPool full;
  full.status.free_ip_count = 0;
  NodeBlocks::Hooks hooks = EighteenWaiting([](const std::string&) { return std::string(); });
  hooks.cached_pool = [&full](const std::string&) {
    return std::make_shared<const api::SpiderIPPool>(full);
  };
  blocks_ = std::make_unique<NodeBlocks>(
      kNode, BlockOptions{.max_block = 16, .flush_after = absl::Hours(1)}, committer_.get(),
      std::move(hooks), nullptr);
  ASSERT_EQ(NodeBPodsThenTopUp(10).size(), 10u) << "the rest of the pool";
  Take(6, "wait-");  // 4 of 10 left: below half of the block
  const int64_t writes = committer_->stats().writes;
  blocks_->Start();
  absl::SleepFor(absl::Milliseconds(500));  // the keeper's pass (a top-up would start at once)
  EXPECT_EQ(committer_->stats().writes, writes) << "a top-up wrote a pool it could not reserve in";
}

// A block running low while it still covers every pod waiting here, none other being
// created (they all waited before their ADDs), is not topped up: that write reserved nothing
// and failed the first writes of nodes whose pods had no IP yet (ipam_e2e, every pod created
// before the agents: a node lost 10 races in a row to such writes, 1.1 s). A pod that then
// arrives is demand nobody has seen: the top-up comes.
TEST_F(BlocksTest, ABlockThatCoversTheWaitingPodsIsNotToppedUp) {
  auto pods = std::make_shared<std::atomic<int>>(8);
  blocks_ = std::make_unique<NodeBlocks>(
      kNode, BlockOptions{.max_block = 16, .flush_after = absl::Hours(1)}, committer_.get(),
      WaitingInAPoolShowing(pods, 10), nullptr);
  ASSERT_EQ(NodeBPodsThenTopUp(0).size(), 10u) << "half of the 20 free: the 8 waiting and 2";
  // 3 of 10 left, below half: low, but the one pod still waiting has its IP. (Half of the
  // pool's 10 free would have topped the block up to 5.)
  Take(7, "wait-");
  const int64_t writes = committer_->stats().writes;
  blocks_->Start();
  absl::SleepFor(absl::Milliseconds(500));  // the keeper's pass (a top-up would start at once)
  EXPECT_EQ(committer_->stats().writes, writes) << "a top-up for demand the block covers";
  *pods = 9;  // a pod created now: more may come
  Take(1, "wait-8-");
  EXPECT_TRUE(base::testing::WaitUntil([&] { return committer_->stats().writes > writes; }))
      << "no top-up for pods still being created";
}

// A block this node's pods have used up is not refilled to `standing` while the pool keeps
// being written (other nodes still reserving for their pods: such refills, and the give-backs
// that followed, were a third of the pool writes of a 100-node start); once the pool has been
// quiet for kQuietBeforeRefill, it is.
TEST_F(BlocksTest, AUsedBlockIsRefilledOnlyOnceThePoolIsQuiet) {
  auto waiting = std::make_shared<std::atomic<int>>(10);
  blocks_ = std::make_unique<NodeBlocks>(
      kNode,
      BlockOptions{.max_block = 16, .flush_after = absl::Milliseconds(10),
                   .idle_release = absl::Hours(1), .standing = 4},
      committer_.get(), WaitingInAPoolShowing(waiting, 1000), nullptr);
  ASSERT_EQ(NodeBPodsThenTopUp(0).size(), 10u) << "the 10 waiting pods";
  Take(10, "wait-");  // used up by the pods it was reserved for: no top-up ahead of demand
  *waiting = 0;       // their endpoints exist: nothing waits here any more
  const int64_t reserved = blocks_->stats().reserved;
  blocks_->NoteChanged(pool_name_);
  blocks_->Start();
  // Another node writes the pool every 100 ms for 4 s (without the rule the refill comes
  // after ~2 s here).
  for (int i = 0; i < 40; ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    blocks_->NoteChanged(pool_name_);
  }
  EXPECT_EQ(blocks_->stats().reserved, reserved) << "refilled while the pool was being written";
  EXPECT_TRUE(base::testing::WaitUntil([&] { return blocks_->stats().reserved > reserved; }))
      << "not refilled once the pool was quiet";
}

// The fair part a flush computes counts this node's pods once: the IPs that very write turns
// from reservations into pod records were counted twice (as pods and as handed out), so when
// another node asked, the keeper gave back reservations its own waiting pods needed, and they
// came back through slow-path writes (ipam_e2e: ~52 pool writes instead of ~43).
TEST_F(BlocksTest, AFlushCountsThePodsItRecordsOnceInTheFairPart) {
  ReserveTakeFourThenNodeCAsks(std::make_shared<std::atomic<bool>>(false));
  if (HasFatalFailure()) return;
  blocks_->Start();
  EXPECT_TRUE(base::testing::WaitUntil([&] { return ReservedInPool().size() < 6; }, absl::Seconds(10)))
      << "node-c asked, but nothing was given back";
  EXPECT_EQ(ReservedInPool().size(), 3u)
      << "the keeper kept less than the fair part for this node's waiting pods";
}

// A give-back another node asked for is what that node's ADD waits for: on a 409 it retries
// at once like an ADD's write instead of stepping back (50 nodes writing one pool: the
// yielding give-backs lost race after race and the askers failed their pods, pool "full").
TEST_F(BlocksTest, AGiveBackAnotherNodeAskedForRetriesItsConflicts) {
  ReserveTakeFourThenNodeCAsks(std::make_shared<std::atomic<bool>>(false));
  if (HasFatalFailure()) return;
  store_->conflict_once_ = true;  // the give-back's first write loses a race
  blocks_->Start();
  EXPECT_TRUE(base::testing::WaitUntil([&] { return ReservedInPool().size() == 3u; },
                                       absl::Seconds(10)))
      << "node-c asked, but the surplus was not given back";
  EXPECT_FALSE(store_->conflict_once_) << "the give-back never met its 409";
  EXPECT_EQ(blocks_->stats().yielded, 0) << "the asked-for give-back stepped back after its 409";
}

// A pool that many nodes share gets fewer background writes from each: the flush windows
// grow with the nodes its records name (kNodesPerFlushWindow per window), so 50 nodes write
// a shared pool about as often as 10.
TEST_F(BlocksTest, AFlushWaitsLongerInAPoolManyNodesShare) {
  const HandedOut h = HandOutInACrowdedPool(
      BlockOptions{.max_block = 4, .flush_after = absl::Seconds(1),
                   .max_flush_delay = absl::Seconds(1), .idle_release = absl::Hours(1),
                   .tight_idle_release = absl::Hours(1)},
      Waiting(0, [](const std::string&) { return std::string(); }));
  if (HasFailure()) return;
  // Not after flush_after (1 s): after 2 × 1 s at the earliest.
  absl::SleepFor(h.taken + absl::Milliseconds(1500) - absl::Now());
  EXPECT_FALSE(Recorded(h)) << "flushed within the window of a pool of up to 10 nodes";
  EXPECT_TRUE(base::testing::WaitUntil([&] { return Recorded(h); }, absl::Seconds(20)))
      << "never flushed";
  EXPECT_GE(absl::Now() - h.taken, absl::Seconds(2));
}

// In a pool many nodes share, a node whose pods still wait for their IP is in its burst: its
// write waits for them, not for a pause in its hand-outs (100-node ipam_e2e: ~85 whole-pool
// writes inside the ADD wave, every one among the other nodes' ADDs).
TEST_F(BlocksTest, InACrowdedPoolTheFlushWaitsForTheNodesWaitingPods) {
  auto waiting = std::make_shared<std::atomic<int>>(3);
  NodeBlocks::Hooks hooks = Waiting(0, [](const std::string&) { return std::string(); });
  hooks.waiting_pods = [waiting] {
    std::set<std::string> uids;
    for (int i = 0; i < *waiting; ++i) uids.insert(base::StrCat("wait-", i));
    return uids;
  };
  const HandedOut h = HandOutInACrowdedPool(
      BlockOptions{.max_block = 8, .flush_after = absl::Milliseconds(200),
                   .max_flush_delay = absl::Hours(1), .idle_release = absl::Hours(1),
                   .tight_idle_release = absl::Hours(1)},
      std::move(hooks));
  if (HasFailure()) return;
  // Idle for 5 × the crowded window (2 × 200 ms), pods still waiting: no write.
  absl::SleepFor(h.taken + absl::Seconds(2) - absl::Now());
  EXPECT_FALSE(Recorded(h)) << "flushed while the node's pods still waited";
  *waiting = 0;  // the burst is over
  EXPECT_TRUE(base::testing::WaitUntil([&] { return Recorded(h); })) << "never flushed";
}

// Pods whose ADD writes its own record (the slow path: the first batch of a node, before it
// holds reservations) are no demand for the reservation that write makes: the first batch's 8
// ADDs reserved for 99 pods beside their own 8 records.
TEST_F(BlocksTest, PodsOnTheSlowPathAreNoDemandForReservations) {
  absl::StatusOr<std::string> big = CreatePool("big", "10.11.0.0/24", {"10.11.0.1-10.11.0.100"});
  ASSERT_TRUE(big.ok()) << big.status();
  blocks_ = std::make_unique<NodeBlocks>(
      kNode, BlockOptions{.max_block = 8}, committer_.get(),
      EighteenWaiting([](const std::string&) { return std::string(); }), nullptr);
  auto pool = kube::Client<api::SpiderIPPool>(cluster_->rest()).Get("", *big);
  ASSERT_TRUE(pool.ok()) << pool.status();
  auto reserve = [&]() -> size_t {
    absl::StatusOr<sp::PoolState> st = Build(*pool);  // 100 IPs, none reserved
    EXPECT_TRUE(st.ok()) << st.status();
    if (!st.ok()) return 0;
    std::vector<base::IPAddress> reserved;
    bool dirty = false;
    blocks_->TopUp(*big, *st, &reserved, &dirty, "wait-7");
    return reserved.size();
  };
  EXPECT_EQ(reserve(), 17u) << "18 waiting, this ADD's own pod aside";
  for (int i = 0; i < 7; ++i) blocks_->SlowPathBegin(*big, base::StrCat("wait-", i));
  EXPECT_EQ(reserve(), 10u) << "and the 7 batch-mates writing their own records";
  blocks_->SlowPathEnd(*big, "wait-0", /*wrote=*/false);
  EXPECT_EQ(reserve(), 11u) << "a slow path that failed: its pod waits again";
  blocks_->SlowPathEnd(*big, "wait-1", /*wrote=*/true);
  EXPECT_EQ(reserve(), 11u) << "one that wrote: its pod holds its record";

  // A nearly full pool: node-b's pods hold 90 IPs, 10 are free. The batch-mates still writing
  // (5 now) take 5 of them after this mutation: it reserves the other 5, not all 10.
  absl::StatusOr<sp::PoolState> st = Build(*pool);
  ASSERT_TRUE(st.ok()) << st.status();
  for (int i = 0; i < 90; ++i) {
    const std::string n = base::StrCat(i);
    ASSERT_TRUE(st->Allocate({.pod = "ns/b" + n, .pod_uid = "b" + n, .node = "node-b"}).ok());
  }
  std::vector<base::IPAddress> reserved;
  bool dirty = false;
  blocks_->TopUp(*big, *st, &reserved, &dirty, "wait-7");
  EXPECT_EQ(reserved.size(), 5u);
  for (int i = 2; i < 7; ++i) {
    const std::string uid = base::StrCat("wait-", i);
    EXPECT_TRUE(st->Allocate({.pod = "ns/" + uid, .pod_uid = uid, .node = kNode}).ok())
        << "batch-mate " << uid << " found the pool full";
  }
}

// Many nodes whose ADDs find a pool full: one fresh ask serves them all (the owners of idle
// reservations answer whichever node asked), so a node does not write its own ask, a write of
// the pool object that fails every status update in flight, while any node's is fresh.
TEST(ReservationsWanted, AnAskIsDueOnlyWhileNoNodesAskIsFresh) {
  const absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  const absl::Duration every = absl::Seconds(1);
  api::ObjectMeta pool;  // the pool's metadata
  EXPECT_TRUE(AskIsDue(nullptr, now, every)) << "pool not cached";
  EXPECT_TRUE(AskIsDue(&pool, now, every)) << "nobody asked";
  auto mark = [&](const std::string& value) {
    pool.annotations[kAnnotationReservationsWanted] = value;
  };
  auto at = [](absl::Time t) { return base::StrCat("node-c ", absl::ToUnixMillis(t)); };
  mark(at(now - absl::Milliseconds(300)));
  EXPECT_FALSE(AskIsDue(&pool, now, every)) << "node-c asked 300 ms ago";
  const std::optional<ReservationsWanted> parsed = ParseReservationsWanted(pool);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->node, "node-c");
  EXPECT_EQ(parsed->at, now - absl::Milliseconds(300));
  mark(at(now - absl::Milliseconds(1500)));
  EXPECT_TRUE(AskIsDue(&pool, now, every)) << "node-c's ask is 1.5 s old";
  mark(at(now + absl::Milliseconds(300)));
  EXPECT_FALSE(AskIsDue(&pool, now, every)) << "a clock 300 ms ahead of ours";
  mark(at(now + absl::Seconds(5)));
  EXPECT_TRUE(AskIsDue(&pool, now, every)) << "a clock far ahead does not silence us";
  for (const char* bad : {"node-c", "node-c soon", " 1700000000000", "a b c"}) {
    mark(bad);
    EXPECT_FALSE(ParseReservationsWanted(pool).has_value()) << bad;
    EXPECT_TRUE(AskIsDue(&pool, now, every)) << bad;
  }
}

}  // namespace
}  // namespace spiderpool::agent::ipam
