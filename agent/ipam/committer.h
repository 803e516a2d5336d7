#pragma once
// Group commit of IP bookkeeping, one queue per SpiderIPPool.
//
// Every allocation or release is a small mutation of a pool's records (status.allocatedIPs),
// and each write of that status is one optimistic-concurrency round trip to the API server.
// Upstream Spiderpool does one GET + one status update per pod and gives up after 5 conflicts,
// so a busy pool fails pods. Here concurrent requests for the same pool are coalesced: the first
// caller becomes the committer, takes every mutation queued for that pool, applies all of them to
// one working copy and writes the status ONCE; callers arriving meanwhile wait for the next
// batch. On 409 Conflict the committer re-reads the pool and re-applies the whole batch (every
// mutation is a pure function of the state, so re-running is safe); on 429 / 5xx / timeouts it
// backs off and retries; each mutation has its own deadline and fails alone when it passes.
// A mutation that fails (pool full, disabled) fails alone and must leave the state unchanged.
// One that fails with FailedPrecondition on a cache's copy (a record it needs is not there yet)
// is first re-applied, with its batch, to a fresh read.
//
// Correctness does not rest on this queue: the API server's resourceVersion check is what makes
// two agents (or the controller's GC) unable to hand out the same IP. The queue only turns N
// conflicting writers into one.
//
// `State` is the working copy (ipam::PoolState in production, something trivial in tests):
//   Hooks::load  builds it from a pool object,
//   Hooks::dirty says whether the batch changed it,
//   Hooks::store writes it back into the pool object's status.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/spider_ippool.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/strings.h"
#include "kube/rest/errors.h"

namespace spiderpool::agent::ipam {

// resourceVersions are opaque to clients, but every API server we know uses integers (etcd
// revisions); when both parse, the larger is newer. Otherwise: not newer.
inline bool ResourceVersionNewer(const std::string& a, const std::string& b) {
  uint64_t x = 0, y = 0;
  return absl::SimpleAtoi(a, &x) && absl::SimpleAtoi(b, &y) && x > y;
}

// Where pools are read and written (kube::Client<api::SpiderIPPool> in production).
class PoolStore {
 public:
  virtual ~PoolStore() = default;
  // A fresh read (not from a cache).
  virtual absl::StatusOr<api::SpiderIPPool> Get(const std::string& name) = 0;
  // Writes the status subresource; fails with 409 Conflict when the resourceVersion is stale.
  virtual absl::StatusOr<api::SpiderIPPool> UpdateStatus(const api::SpiderIPPool& pool) = 0;
};

struct CommitterStats {
  int64_t writes = 0;     // status updates that succeeded
  int64_t conflicts = 0;  // 409s retried
  // Writes not sent: the metadata watch had seen a newer version while the batch was built.
  int64_t stale_skipped = 0;
  int64_t retries = 0;    // 429 / 5xx / timeouts retried
  int64_t batches = 0;
  int64_t mutations = 0;  // mutations committed (or answered without a write)
};

template <typename State>
class GroupCommitter {
 public:
  using Mutation = std::function<absl::Status(State& state)>;
  struct Hooks {
    std::function<absl::StatusOr<State>(const api::SpiderIPPool& pool)> load;
    std::function<bool(const State& state)> dirty;
    std::function<void(const State& state, api::SpiderIPPool* pool)> store;
    // Optional: the newest copy of a pool the caller knows of (a cache), used before
    // the committer has written the pool itself. nullopt = read it from the store.
    std::function<std::optional<api::SpiderIPPool>(const std::string& name)> cached;
    // Optional: the newest resourceVersion of the pool the caller has heard of (a metadata
    // watch). A start copy older than that is not written against (it would only meet a 409):
    // the pool is read from the store first.
    std::function<std::optional<std::string>(const std::string& name)> latest_version;
    // Optional: how many agents write the pool (the nodes its records name; 0 = unknown).
    // The pacing window's cap is at least that many round trips: one write lands per round
    // trip, so N racing agents need N of them or they keep colliding.
    std::function<int64_t(const std::string& name)> writers;
  };

  // How a batch that lost a 409 race waits before its next try (see PaceAfterConflict).
  struct ConflictPacing {
    // The smallest slot: the window's unit is half this committer's measured write round
    // trip (a 409 or a landed write), never less than this.
    absl::Duration min_slot = absl::Milliseconds(2);
    // The largest window: the wait is drawn uniformly from [0, window). ipam_e2e: 500 ms
    // measured 1.4x the 409s of 1 s at 30 nodes, 2 s a slower first batch at 10 nodes.
    absl::Duration max_window = absl::Seconds(1);
    // ... unless the round trip is so slow (a big pool on a busy server) that 1 s holds fewer
    // than this many of them (or than Hooks::writers): then the cap is that many round trips.
    // With fewer writers than this the cap is one slot per writer (at least 4).
    int max_window_round_trips = 16;
  };

  // Conflicts are retried at once with the winner's version, then after a wait drawn from a
  // window that doubles with each further conflict in a row (see PaceAfterConflict); the
  // winner waits the write window before its next batch; 429 / 5xx / timeouts back off longer
  // (`retry`).
  GroupCommitter(PoolStore* store, Hooks hooks, base::Clock* clock = nullptr,
                 ConflictPacing pacing = {},
                 base::BackoffPolicy retry = {.initial = absl::Milliseconds(50),
                                              .max = absl::Seconds(2),
                                              .factor = 2.0,
                                              .jitter = 0.5})
      : store_(store), hooks_(std::move(hooks)),
        clock_(clock ? clock : &base::RealClock::Get()), pacing_(pacing), retry_(retry) {}

  // How a mutation meets a 409 Conflict.
  enum class OnConflict {
    kRetry,  // re-read and re-apply at once (a caller is waiting: an ADD or DEL)
    // Give up with kAborted when every mutation of the batch says so: background work that
    // can come back later. Agents that lost the same race and retried together would collide
    // again (a herd); one that yields leaves the pool to the others and returns at a moment
    // of its own choosing.
    kYield,
  };

  // Applies `mutation` to pool `pool` and persists it, together with whatever else is queued
  // for that pool. Returns the mutation's own status, or the error that stopped the write.
  //
  // `on_landed` (optional) runs once the mutation succeeded and its state is persisted, on the
  // committing thread, before the pool's next batch starts: callbacks of one pool run in the
  // order their writes landed (a caller's own code after Run returns does not: another batch
  // may land and be acted upon first). Keep it short; it must not call Run.
  //
  // `prepare` (optional) runs on each attempt's fresh state before any mutation of the batch
  // is applied, for every mutation of the batch: what one mutation must know about the others
  // written with it (the ADDs of a batch, for a top-up in the same write). It must not change
  // what the pool will hold.
  absl::Status Run(const std::string& pool, Mutation mutation, absl::Time deadline,
                   OnConflict on_conflict = OnConflict::kRetry,
                   std::function<void()> on_landed = nullptr,
                   std::function<void(State& state)> prepare = nullptr) {
    Slot* slot = SlotFor(pool);
    Pending pending{std::move(mutation), deadline, on_conflict, std::move(on_landed),
                    std::move(prepare)};
    absl::MutexLock lock(&slot->mu);
    slot->queue.push_back(&pending);
    while (!pending.finished) {
      if (!slot->committing) {
        slot->committing = true;
        // Fairness across agents: right after this agent wrote the pool it holds the newest
        // version and would win the next race too, starving the others. Hold the next batch
        // until the write window has passed (it collects more mutations meanwhile).
        const absl::Time not_before = slot->last_commit + write_window_;
        if (clock_->Now() < not_before) {
          slot->mu.Unlock();
          clock_->SleepUntil(not_before);
          slot->mu.Lock();
        }
        std::vector<Pending*> batch(slot->queue.begin(), slot->queue.end());
        slot->queue.clear();
        slot->mu.Unlock();
        Commit(pool, slot, batch);
        slot->mu.Lock();
        slot->last_commit = clock_->Now();
        slot->committing = false;
        slot->cv.SignalAll();
      } else {
        slot->cv.Wait(&slot->mu);
      }
    }
    return pending.result;
  }

  // Minimum time between two batches of one pool from this committer (see Run).
  void set_write_window(absl::Duration d) { write_window_ = d; }

  // The measured write round trip (a moving average; zero before the first write).
  absl::Duration round_trip() const {
    absl::MutexLock lock(&stats_mu_);
    return round_trip_;
  }

  CommitterStats stats() const {
    absl::MutexLock lock(&stats_mu_);
    return stats_;
  }

 private:
  struct Pending {
    Mutation mutation;
    absl::Time deadline;
    OnConflict on_conflict = OnConflict::kRetry;
    std::function<void()> on_landed;
    std::function<void(State& state)> prepare;
    absl::Status result;
    bool finished = false;  // guarded by the slot's mu
  };
  struct Slot {
    absl::Mutex mu;
    absl::CondVar cv;
    std::deque<Pending*> queue;
    bool committing = false;
    absl::Time last_commit = absl::InfinitePast();
    // The pool as we last wrote or read it; only the committer touches it.
    std::optional<api::SpiderIPPool> last;
  };

  Slot* SlotFor(const std::string& pool) {
    absl::MutexLock lock(&slots_mu_);
    std::unique_ptr<Slot>& slot = slots_[pool];
    if (slot == nullptr) slot = std::make_unique<Slot>();
    return slot.get();
  }

  static bool Retriable(const absl::Status& s) {
    return kube::IsTooManyRequests(s) || kube::IsServerError(s) || kube::IsTimeout(s) ||
           absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
  }

  // The batch's state is persisted (written, or nothing to write): in batch order, the
  // callbacks of the mutations that succeeded.
  static void Landed(const std::vector<Pending*>& batch, const std::vector<absl::Status>& results) {
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i] != nullptr && results[i].ok() && batch[i]->on_landed) batch[i]->on_landed();
    }
  }

  void Finish(Slot* slot, const std::vector<Pending*>& batch, const std::vector<absl::Status>& results) {
    absl::MutexLock lock(&slot->mu);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i] == nullptr) continue;
      batch[i]->result = results[i];
      batch[i]->finished = true;
    }
    slot->cv.SignalAll();
  }

  void FailAll(Slot* slot, const std::vector<Pending*>& batch, const absl::Status& status) {
    Finish(slot, batch, std::vector<absl::Status>(batch.size(), status));
  }

  // Runs outside slot->mu; `slot->last` belongs to the committer while committing is true.
  void Commit(const std::string& name, Slot* slot, std::vector<Pending*> batch) {
    {
      absl::MutexLock lock(&stats_mu_);
      ++stats_.batches;
    }
    // Start from the newest copy we know: our own last write, or the cache's if it has
    // seen a later one (another agent's write); a start the caller knows is stale
    // (latest_version) is read again first, any other stale start costs one 409.
    std::optional<api::SpiderIPPool> current = slot->last;
    if (hooks_.cached) {
      std::optional<api::SpiderIPPool> cached = hooks_.cached(name);
      if (cached.has_value() &&
          (!current.has_value() || ResourceVersionNewer(cached->metadata.resource_version,
                                                        current->metadata.resource_version))) {
        current = std::move(cached);
      }
    }
    if (current.has_value() && KnownStale(name, *current)) current.reset();
    const uint64_t seed = std::hash<std::string>{}(name) ^ reinterpret_cast<uintptr_t>(&batch);
    std::mt19937_64 rng(seed);
    base::Backoff backoff(retry_, seed + 1);
    absl::Status last_error;
    int conflicts_in_a_row = 0;
    int conflicts = 0;
    int attempts = 0;
    bool current_is_fresh = false;  // `current` is a GET of this batch, not a cache's copy
    const absl::Time started = clock_->Now();
    absl::Cleanup slow = [&] {
      const absl::Duration took = clock_->Now() - started;
      const bool is_slow = took >= absl::Seconds(1);
      (is_slow ? SP_LOG(Warning) : SP_LOG(Debug))
          .Msg(is_slow ? "slow SpiderIPPool write" : "SpiderIPPool write").KV("pool", name)
          .KV("took_ms", absl::ToInt64Milliseconds(took)).KV("attempts", attempts)
          .KV("conflicts", conflicts).KV("mutations", batch.size())
          .KV("last_error", last_error.ok() ? std::string() : base::StatusText(last_error));
    };
    for (int attempt = 0;; ++attempt) {
      attempts = attempt + 1;
      // Mutations whose caller gave up are dropped before each attempt (they were never
      // persisted: nothing was written yet in this batch).
      const absl::Time now = clock_->Now();
      std::vector<Pending*> expired(batch.size(), nullptr);
      bool any_live = false;
      for (size_t i = 0; i < batch.size(); ++i) {
        if (batch[i] == nullptr) continue;
        if (now >= batch[i]->deadline) {
          expired[i] = batch[i];
          batch[i] = nullptr;
        } else {
          any_live = true;
        }
      }
      if (std::any_of(expired.begin(), expired.end(), [](Pending* p) { return p != nullptr; })) {
        FailAll(slot, expired,
                absl::DeadlineExceededError(base::StrCat(
                    "timed out writing SpiderIPPool ", name, " after ", attempt, " attempts",
                    last_error.ok() ? "" : base::StrCat("; last error: ",
                                                         base::FromAbsl(last_error.message())))));
      }
      if (!any_live) return;

      if (!current.has_value()) {
        absl::StatusOr<api::SpiderIPPool> fresh = store_->Get(name);
        if (!fresh.ok()) {
          if (kube::IsNotFound(fresh.status())) {
            FailAll(slot, batch, absl::NotFoundError(base::StrCat("SpiderIPPool ", name, " does not exist")));
            return;
          }
          if (Retriable(fresh.status())) {
            last_error = fresh.status();
            CountRetry();
            SleepBackoff(backoff, batch);
            continue;
          }
          FailAll(slot, batch, fresh.status());
          return;
        }
        current = std::move(*fresh);
        current_is_fresh = true;
      }

      absl::StatusOr<State> state = hooks_.load(*current);
      if (!state.ok()) {
        slot->last.reset();
        FailAll(slot, batch, state.status());
        return;
      }
      for (Pending* p : batch) {
        if (p != nullptr && p->prepare) p->prepare(*state);
      }
      std::vector<absl::Status> results(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        if (batch[i] != nullptr) results[i] = batch[i]->mutation(*state);
      }
      // A mutation that finds the pool not as it expects (FailedPrecondition: e.g. another
      // node's record it moves, written a moment ago) may have seen a lagging cache: once, the
      // batch is re-applied to a fresh read before anything fails.
      if (!current_is_fresh &&
          std::any_of(results.begin(), results.end(), [](const absl::Status& r) {
            return absl::IsFailedPrecondition(r);
          })) {
        current.reset();
        AdoptQueued(slot, batch);
        continue;
      }
      if (!hooks_.dirty(*state)) {
        slot->last = std::move(current);
        CountCommitted(batch, false);
        Landed(batch, results);
        Finish(slot, batch, results);
        return;
      }
      // Another write landed while this batch was built (the metadata watch saw it): the
      // write would only meet a 409, which costs the server the whole pool's decode and this
      // agent its encode (100-node ipam_e2e: 2-3 409s per landed write). Background work
      // steps back as after a 409; the rest re-reads.
      if (KnownStale(name, *current)) {
        CountStaleBeforeWrite();
        if (LostRace(slot, batch, name, "", &conflicts_in_a_row, rng)) return;
        current.reset();
        continue;
      }
      api::SpiderIPPool updated = *current;
      hooks_.store(*state, &updated);
      const absl::Time sent = clock_->Now();
      absl::StatusOr<api::SpiderIPPool> written = store_->UpdateStatus(updated);
      NoteRoundTrip(clock_->Now() - sent);
      if (written.ok()) {
        slot->last = std::move(*written);
        CountCommitted(batch, true);
        Landed(batch, results);
        Finish(slot, batch, results);
        return;
      }
      last_error = written.status();
      if (kube::IsConflict(written.status())) {
        // Somebody else wrote the pool: re-read it and re-apply the whole batch at once (no
        // wait first: the fresh read is the useful work; the pacing only kicks in from the
        // second conflict in a row, to spread agents that keep colliding).
        CountConflict();
        ++conflicts;
        if (LostRace(slot, batch, name, " (409 Conflict)", &conflicts_in_a_row, rng)) return;
        current.reset();  // the next attempt reads the winner's version from the store
        continue;
      }
      if (kube::IsNotFound(written.status())) {
        slot->last.reset();
        FailAll(slot, batch, absl::NotFoundError(base::StrCat("SpiderIPPool ", name, " does not exist")));
        return;
      }
      if (Retriable(written.status())) {
        // The write may or may not have been applied (a 500 after etcd committed): re-read.
        // Re-applying is safe because mutations are idempotent per pod.
        CountRetry();
        current.reset();
        SleepBackoff(backoff, batch);
        AdoptQueued(slot, batch);
        continue;
      }
      slot->last.reset();
      FailAll(slot, batch, written.status());
      return;
    }
  }

  // The caller has heard of a newer version of the pool than `copy` (Hooks::latest_version).
  bool KnownStale(const std::string& name, const api::SpiderIPPool& copy) const {
    if (!hooks_.latest_version) return false;
    const std::optional<std::string> latest = hooks_.latest_version(name);
    return latest.has_value() && ResourceVersionNewer(*latest, copy.metadata.resource_version);
  }
  // Every mutation of the batch is background work (OnConflict::kYield).
  static bool AllYieldable(const std::vector<Pending*>& batch) {
    return std::all_of(batch.begin(), batch.end(), [](const Pending* p) {
      return p == nullptr || p->on_conflict == OnConflict::kYield;
    });
  }
  // A batch that lost the race for the pool (a 409, or overtaken before it was sent): when
  // every mutation is background work it yields (true: the batch is finished); otherwise
  // mutations queued meanwhile join it for the next attempt, which waits from the second
  // loss in a row (PaceAfterConflict) so that a pool other agents keep writing is not
  // re-read in a loop.
  bool LostRace(Slot* slot, std::vector<Pending*>& batch, const std::string& name,
                std::string_view how, int* in_a_row, std::mt19937_64& rng) {
    if (AllYieldable(batch)) {
      FailAll(slot, batch, absl::AbortedError(base::StrCat("SpiderIPPool ", name,
                                                           " was written meanwhile", how)));
      return true;
    }
    if (++*in_a_row > 1) PaceAfterConflict(name, *in_a_row, rng, batch);
    AdoptQueued(slot, batch);
    return false;
  }

  // Nothing of a batch is persisted before its write lands: mutations queued while it was being
  // retried join it now instead of waiting for all its retries to end (an ADD queued behind a
  // background write that keeps losing 409 races would otherwise wait for all of them).
  static void AdoptQueued(Slot* slot, std::vector<Pending*>& batch) {
    absl::MutexLock lock(&slot->mu);
    batch.insert(batch.end(), slot->queue.begin(), slot->queue.end());
    slot->queue.clear();
  }

  // After the k-th conflict in a row (k >= 2) a batch waits a time drawn uniformly from
  // [0, slot * 2^(k-2)), capped at max_window (1 s; or 16 round trips when those are longer:
  // 50 agents on a 5000-IP pool at 100 nodes; or as many round trips as the pool has
  // writers, Hooks::writers, when that is more); slot is half the measured write round trip
  // (a whole one measured a little slower at 10 agents, the same at 30). With
  // N agents racing for one pool only one write per round trip can land, so the losers must
  // spread over about N round trips or they collide again: the window doubles until it is
  // wide enough (binary exponential backoff), and being uniform from 0 (full jitter) it
  // never lines agents up. A fixed millisecond-scale step does not scale with the server's
  // speed: on a loaded API server 30 agents at a 64 ms cap retried in lockstep. A batch that
  // someone waits for never pauses more than half the time left before its deadline.
  void PaceAfterConflict(const std::string& name, int k, std::mt19937_64& rng,
                         const std::vector<Pending*>& batch) {
    const int64_t writers = hooks_.writers ? hooks_.writers(name) : 0;
    const int64_t round_trips = std::max<int64_t>(pacing_.max_window_round_trips, writers);
    absl::Duration slot, cap;
    {
      absl::MutexLock lock(&stats_mu_);
      slot = std::max(pacing_.min_slot, round_trip_ / 2);
      cap = std::max(pacing_.max_window, round_trip_ * round_trips);
    }
    // Fewer writers than max_window_round_trips: a window of one slot per writer spreads them
    // (at least 4 slots). The 1 s / 16 round-trip cap made a node that lost a few races in a
    // row wait up to 1 s each time while the winners kept writing (the capture effect of
    // binary exponential backoff): ipam_e2e with pods created as they start, 10 nodes, one
    // node's batch of ADDs 1.5-3 s behind the others'.
    if (writers > 0 && writers < pacing_.max_window_round_trips) {
      cap = std::min(cap, slot * static_cast<double>(std::max<int64_t>(writers, 4)));
    }
    absl::Duration window = slot * static_cast<double>(uint64_t{1} << std::min(k - 2, 20));
    window = std::min(window, cap);
    // A batch someone waits for (an ADD, a DEL) pauses at most half the time it has left: a
    // pause that ends at its deadline is a failure without another try. The oldest waiters
    // thus try more often as their deadlines near, instead of drawing from the widest
    // windows while new writers get in (100-node ipam_e2e with every pod before the agents:
    // ADDs timed out "after 9 attempts", 50 nodes writing each pool).
    if (!AllYieldable(batch)) {
      window = std::min(window,
                        std::max(absl::ZeroDuration(), (LatestDeadline(batch) - clock_->Now()) / 2));
    }
    std::uniform_real_distribution<double> share(0.0, 1.0);
    SleepFor(window * share(rng), batch);
  }

  // A moving average of the write round trip (1/8 weight to the newest).
  void NoteRoundTrip(absl::Duration took) {
    absl::MutexLock lock(&stats_mu_);
    round_trip_ = round_trip_ == absl::ZeroDuration() ? took : round_trip_ + (took - round_trip_) / 8;
  }

  static absl::Time LatestDeadline(const std::vector<Pending*>& batch) {
    absl::Time latest = absl::InfinitePast();
    for (const Pending* p : batch) {
      if (p != nullptr) latest = std::max(latest, p->deadline);
    }
    return latest;
  }

  // Sleeps `d`, but not past the latest deadline of the batch.
  void SleepFor(absl::Duration d, const std::vector<Pending*>& batch) {
    clock_->SleepUntil(std::min(LatestDeadline(batch), clock_->Now() + d));
  }

  void SleepBackoff(base::Backoff& backoff, const std::vector<Pending*>& batch) {
    absl::Duration d = backoff.Next();
    if (d == absl::InfiniteDuration()) {
      backoff.Reset();
      d = backoff.Next();
    }
    SleepFor(d, batch);
  }

  void CountConflict() {
    absl::MutexLock lock(&stats_mu_);
    ++stats_.conflicts;
  }
  void CountStaleBeforeWrite() {
    absl::MutexLock lock(&stats_mu_);
    ++stats_.stale_skipped;
  }
  void CountRetry() {
    absl::MutexLock lock(&stats_mu_);
    ++stats_.retries;
  }
  void CountCommitted(const std::vector<Pending*>& batch, bool wrote) {
    absl::MutexLock lock(&stats_mu_);
    if (wrote) ++stats_.writes;
    for (Pending* p : batch) stats_.mutations += p != nullptr;
  }

  PoolStore* store_;
  Hooks hooks_;
  base::Clock* clock_;
  ConflictPacing pacing_;
  base::BackoffPolicy retry_;
  absl::Duration write_window_ = absl::Milliseconds(10);
  absl::Mutex slots_mu_;
  std::map<std::string, std::unique_ptr<Slot>> slots_;
  mutable absl::Mutex stats_mu_;
  CommitterStats stats_;
  absl::Duration round_trip_;  // guarded by stats_mu_; zero until the first write
};

}  // namespace spiderpool::agent::ipam
