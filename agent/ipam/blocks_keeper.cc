// NodeBlocks' keeper (blocks.h): the background thread that decides, pool by pool, what is
// due (flush what was handed out, top up, prewarm, give back, free DELs' records) and the one
// pool write that does it (Sync); Start/Stop and the explicit flushes. The request side (Take,
// TopUp inside an ADD's write, Release) and the block state are in blocks.cc.
#include <algorithm>
#include <limits>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "agent/ipam/blocks.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::ipam {

namespace sp = ::spiderpool::ipam;

void NodeBlocks::Start() {
  if (!enabled() || keeper_.joinable()) return;
  keeper_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

void NodeBlocks::Stop() {
  if (!keeper_.joinable()) return;
  keeper_.request_stop();
  {
    absl::MutexLock l(&mu_);
    wake_.SignalAll();
  }
  keeper_.join();
  // Best effort, bounded: record what was handed out and give the rest back, so the pools are
  // exact while no agent runs here (a new agent would recover them anyway).
  std::vector<std::string> pools;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [pool, b] : blocks_) pools.push_back(pool);
  }
  const absl::Time deadline = clock_->Now() + absl::Seconds(3);
  for (const std::string& pool : pools) {
    if (absl::Status s = Sync(pool, {.flush = true, .free_records = true, .release = true,
                                     .release_untracked = true},
                              deadline);
        !s.ok()) {
      SP_LOG(Warning).Msg("leaving this node's reservations to the next agent").KV("pool", pool)
          .KV("error", s);
    }
  }
}

absl::Status NodeBlocks::Flush(const std::string& pool, absl::Time deadline) {
  return Sync(pool, {.flush = true}, deadline);
}

absl::Status NodeBlocks::FlushAll(absl::Time deadline) {
  std::vector<std::string> pools;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [pool, b] : blocks_) {
      if (!b.assigned.empty() || !b.pending_releases.empty()) pools.push_back(pool);
    }
  }
  for (const std::string& pool : pools) {
    SP_RETURN_IF_ERROR(Sync(pool, {.flush = true, .free_records = true}, deadline));
  }
  return absl::OkStatus();
}

// One pool write for whatever is due: handed-out IPs become pod records (`flush`), the block is
// topped up ahead of demand (`topup`), free reservations go back (`release`: they leave `free`
// first so that no Take can hand them out while the write is on its way, and if the write fails
// they are NOT taken back into use — it may have landed; the next pass tries again).
absl::Status NodeBlocks::Sync(const std::string& pool, SyncWhat what, absl::Time deadline,
                              PoolCommitter::OnConflict on_conflict) {
  std::map<base::IPAddress, sp::AllocationRequest> batch;
  std::vector<base::IPAddress> releasing;
  std::set<std::pair<std::string, std::string>> frees;
  {
    absl::MutexLock l(&mu_);
    auto it = blocks_.find(pool);
    if (it == blocks_.end()) return absl::OkStatus();
    Block& b = it->second;
    if (what.flush) batch = b.assigned;
    if (what.free_records) frees = b.pending_releases;
    for (const auto& [ip, req] : batch) ++b.flushing[ip];
    if (what.release) {
      b.releasing.insert(b.free.begin(), b.free.end());
      b.free.clear();
    }
    for (int64_t i = 0; i < what.release_some && !b.free.empty(); ++i) {
      b.releasing.insert(*b.free.rbegin());
      b.free.erase(std::prev(b.free.end()));
    }
    releasing.assign(b.releasing.begin(), b.releasing.end());
  }
  if (batch.empty() && releasing.empty() && frees.empty() && !what.topup &&
      !what.release_untracked) {
    return absl::OkStatus();
  }
  if (what.topup) {
    absl::MutexLock l(&mu_);
    ++blocks_[pool].topups_in_flight;
  }
  absl::Cleanup done = [&] {
    absl::MutexLock l(&mu_);
    Block& b = blocks_[pool];
    for (const auto& [ip, req] : batch) {
      if (--b.flushing[ip] == 0) b.flushing.erase(ip);
    }
    if (!batch.empty()) flushed_.SignalAll();
    if (!what.topup) return;
    --b.topups_in_flight;
    topped_up_.SignalAll();
  };
  std::vector<base::IPAddress> lost, repaired, topped_up;
  std::map<base::IPAddress, std::string> lost_why;
  int64_t freed = 0;
  // The block follows the pool in the order the writes landed (GroupCommitter on_landed):
  // IPs a later write gives back cannot be put into `free` after it by this earlier one.
  auto Landed = [&] {
    AddReserved(pool, topped_up);
    absl::MutexLock l(&mu_);
    Block& b = blocks_[pool];
    for (const auto& [ip, req] : batch) {
      b.maybe_written.erase(ip);
      auto a = b.assigned.find(ip);
      if (a != b.assigned.end() && a->second.pod_uid == req.pod_uid) b.assigned.erase(a);
    }
    if (b.assigned.empty()) b.first_unflushed = absl::InfiniteFuture();
    for (const base::IPAddress& ip : releasing) b.releasing.erase(ip);
    for (const auto& f : frees) b.pending_releases.erase(f);
    if (b.pending_releases.empty()) b.first_pending = absl::InfiniteFuture();
    stats_.released_in_background += freed;
    stats_.flushed += static_cast<int64_t>(batch.size() - lost.size());
    stats_.lost += static_cast<int64_t>(lost.size());
    stats_.released += static_cast<int64_t>(releasing.size());
  };
  absl::Status s = committer_->Run(
      pool,
      [&](PoolBook& book) {
        lost.clear();
        repaired.clear();
        lost_why.clear();
        freed = 0;
        for (const auto& [ip, req] : batch) {
          const api::PoolIPAllocation* before = book.state.RecordOf(ip);
          const bool was_reservation = before != nullptr && api::IsNodeReservation(*before);
          absl::Status a = book.state.AssignReserved(ip, node_, req);
          if (!a.ok() && before == nullptr && book.state.AssignFree(ip, req).ok()) {
            // Our reservation is gone but nobody holds the IP: record it for the pod that has
            // it (a bug upstream of here, logged; this keeps it from becoming a duplicate).
            repaired.push_back(ip);
            book.dirty = true;
          } else if (!a.ok()) {
            lost.push_back(ip);
            lost_why[ip] = base::StatusText(a);
          } else if (was_reservation) {
            book.dirty = true;
          }
        }
        // After the assignments: a record this write just made for a pod whose DEL came
        // meanwhile goes in the same write.
        for (const auto& [uid, container] : frees) {
          const size_t n = book.state.ReleasePod(uid, {.container_id = container}).size();
          freed += static_cast<int64_t>(n);
          if (n > 0) book.dirty = true;
        }
        {
          // Only what is still being given back (TopUp may have taken an IP back into use
          // after an earlier release of it landed).
          absl::MutexLock l(&mu_);
          Block& b = blocks_[pool];
          if (!what.topup) {  // (TopUp does it)
            NoteFairPartLocked(b, book.state, hooks_.wanted_by ? hooks_.wanted_by(pool) : "");
          }
          for (const base::IPAddress& ip : releasing) {
            // Never one a pod holds or may be handed (free): the invariant that makes a
            // give-back unable to produce a duplicate IP, whatever the interleaving.
            if (b.releasing.count(ip) && !b.free.count(ip) && !b.assigned.count(ip) &&
                book.state.Unreserve(ip, node_)) {
              book.dirty = true;
            }
          }
          if (what.release_untracked) {
            for (const base::IPAddress& ip : book.state.ReservedFor(node_)) {
              if (!b.free.count(ip) && !b.assigned.count(ip) && book.state.Unreserve(ip, node_)) {
                book.dirty = true;
              }
            }
          }
        }
        if (what.topup) TopUp(pool, book.state, &topped_up, &book.dirty, "", &book.slow_adds);
        return absl::OkStatus();
      },
      deadline, on_conflict, [&] { Landed(); });
  SP_LOG(Debug).Msg("node reservations written").KV("pool", pool).KV("flushed", batch.size())
      .KV("freed", freed).KV("gave_back", releasing.size()).KV("reserved", topped_up.size())
      .KV("topup", what.topup).KV("asked", what.asked).KV("status", s);
  // A pool that is gone took its records and reservations with it.
  const bool gone = absl::IsNotFound(s) && (!releasing.empty() || !frees.empty());
  if (!s.ok() && !gone) {
    // Lost a 409 race (kAborted): nothing landed. Anything else may have landed after all.
    if (!absl::IsAborted(s) && !batch.empty()) {
      absl::MutexLock l(&mu_);
      Block& b = blocks_[pool];
      for (const auto& [ip, req] : batch) {
        if (b.assigned.count(ip)) b.maybe_written.insert(ip);
      }
    }
    return s;
  }
  if (gone) Landed();
  for (const base::IPAddress& ip : repaired) {
    SP_LOG(Error).Msg("an IP handed out from this node's reservation was no longer reserved; "
                      "recorded for its pod, since nobody else held it")
        .KV("pool", pool).KV("ip", ip.ToString()).KV("pod", batch[ip].pod);
  }
  for (const base::IPAddress& ip : lost) {
    SP_LOG(Error).Msg("an IP handed out from this node's reservation is no longer reserved")
        .KV("pool", pool).KV("ip", ip.ToString()).KV("pod", batch[ip].pod).KV("why", lost_why[ip]);
  }
  return absl::OkStatus();
}

absl::Time NodeBlocks::StaggeredLocked(absl::Time now) {
  const int64_t stagger_ms = absl::ToInt64Milliseconds(options_.prewarm_stagger);
  return now + absl::Milliseconds(
      stagger_ms > 0 ? std::uniform_int_distribution<int64_t>(0, stagger_ms)(rng_) : 0);
}

absl::Duration NodeBlocks::YieldPause(const Block& b) {
  const absl::Duration span = std::max(
      absl::Milliseconds(200), committer_->round_trip() * std::max<int64_t>(1, b.pool_nodes));
  return absl::Milliseconds(std::uniform_int_distribution<int64_t>(
      20, std::max<int64_t>(20, absl::ToInt64Milliseconds(span)))(rng_));
}

void NodeBlocks::PlanPrewarm(const std::vector<std::string>& pools) {
  const absl::Time now = clock_->Now();
  for (const std::string& pool : pools) {
    Block& b = BlockLocked(pool);
    if (b.prewarm_done || b.prewarm_at != absl::InfiniteFuture()) continue;
    if (!b.free.empty() || !b.assigned.empty()) {
      b.prewarm_done = true;  // recovered from an earlier run, or an ADD came first
      continue;
    }
    b.prewarm_at = StaggeredLocked(now);
  }
}

void NodeBlocks::Loop(std::stop_token stop) {
  absl::Time next_recovery = absl::InfinitePast();
  while (!stop.stop_requested()) {
    std::vector<std::pair<std::string, SyncWhat>> due;
    absl::Time next = absl::InfiniteFuture();
    // Pools to recover without waiting for an ADD (a restarted agent's reservations), and the
    // pools to hold a block in before the first ADD.
    std::vector<std::string> known;
    PoolForecast forecast;
    bool forecast_read = false;
    std::map<std::string, bool> wanted;
    bool poked = false;
    {
      absl::MutexLock l(&mu_);
      std::swap(poked, poked_);
    }
    if (hooks_.pools && (poked || clock_->Now() >= next_recovery)) {
      known = hooks_.pools();
      if (hooks_.forecast) {
        forecast = hooks_.forecast();
        forecast_read = true;
      }
      next_recovery = clock_->Now() + absl::Seconds(1);
    }
    if (hooks_.wanted_by) {
      std::vector<std::string> pools;
      {
        absl::MutexLock l(&mu_);
        for (const auto& [pool, b] : blocks_) {
          if (!b.free.empty() || b.ever_used || standing_pools_.count(pool)) pools.push_back(pool);
        }
      }
      for (const std::string& pool : pools) wanted[pool] = !hooks_.wanted_by(pool).empty();
    }
    {
      absl::MutexLock l(&mu_);
      for (const std::string& pool : known) {
        if (!blocks_.count(pool)) BlockLocked(pool);
      }
      PlanPrewarm(forecast.for_waiting_pods);
      if (forecast_read) {
        predicted_ = std::move(forecast.by_waiting_pod);
        standing_pools_ = {forecast.standing.begin(), forecast.standing.end()};
        for (const std::string& pool : standing_pools_) BlockLocked(pool);
      }
      if (hooks_.pools && known.empty()) next = next_recovery;  // caches not synced yet
      const absl::Time now = clock_->Now();
      for (auto& [pool, b] : blocks_) {
        if (now < b.retry_at) {  // stepped back after a lost race
          next = std::min(next, b.retry_at);
          continue;
        }
        SyncWhat what;
        // A pool that many nodes write gets fewer background writes from each: every one
        // rewrites all of its records and fails the other nodes' writes in flight with 409.
        const int64_t crowd = CrowdOf(b.pool_nodes);
        if (!b.assigned.empty()) {
          // In a crowded pool, while pods still wait here for their IP the node's burst goes
          // on, however long its ADDs take: a pause in its hand-outs is not its end. Every
          // node written mid-burst rewrote the whole pool among the others' ADDs (100-node
          // ipam_e2e: ~85 pool writes inside the ADD wave); the write comes once the last
          // waiting pod has its IP (checked every window), or at the longest delay.
          const bool burst_on = crowd > 1 && WaitingLocked(b) > 0;
          const absl::Time idle_at = b.last_take + options_.flush_after * crowd;
          const absl::Time at =
              std::min(burst_on ? absl::InfiniteFuture() : idle_at,
                       b.first_unflushed + options_.max_flush_delay * crowd);
          if (now >= at) {
            what.flush = true;
          } else {
            next = std::min(next, at);
            if (burst_on) next = std::min(next, std::max(idle_at, now + options_.flush_after));
          }
        }
        // Records of DELs that returned already: batched over `flush_after`.
        if (!b.pending_releases.empty()) {
          const absl::Time at = b.first_pending + options_.flush_after * crowd;
          if (now >= at || what.flush) what.free_records = true; else next = std::min(next, at);
        }
        if (what.free_records && !b.assigned.empty()) what.flush = true;
        // Before the first ADD (point 4), at the planned moment.
        if (!b.prewarm_done && b.prewarm_at != absl::InfiniteFuture()) {
          if (now >= b.prewarm_at) what.topup = true; else next = std::min(next, b.prewarm_at);
        }
        const bool wanted_here = wanted.count(pool) && wanted[pool];
        std::shared_ptr<const api::SpiderIPPool> cached = hooks_.cached_pool(pool);
        // No unreserved IP left: other nodes may be waiting for one.
        const bool tight = cached == nullptr || cached->status.free_ip_count.value_or(1) == 0;
        // Ahead of demand: pods are being started here and the block runs low. Not in a pool
        // with no unreserved IP left: such a top-up reserves nothing, and its write only
        // failed the writes of nodes that still had their fair part to reserve (ipam_e2e,
        // pods created at their ADD: 2-4 409s each). Nor when the block covers every pod
        // waiting here and no other is being created: ipam_e2e, every pod waiting before the
        // agents started: each node that had reserved for all its pods wrote the pool again
        // (reserving nothing) once half were served, while a node whose pods still waited for
        // their first IP lost 10 races in a row (1.1 s).
        if (now - b.last_take < options_.flush_after && Low(b) && !tight &&
            !DemandCoveredLocked(b, now)) {
          what.topup = true;
          what.flush = !b.assigned.empty();  // the same write records what was handed out
        }
        // Point 8: what this node keeps reserved here with no pod waiting: only in a roomy pool
        // (the free count is unknown before the controller or a write sets it), never beyond
        // its fair part of the pool (a node whose pods hold their share of a pool keeps none).
        const bool roomy =
            !tight && cached->status.free_ip_count.value_or(std::numeric_limits<int64_t>::max()) >=
                          2 * options_.standing * std::max<int64_t>(1, b.pool_nodes);
        const int64_t keep = options_.standing > 0 && (b.ever_used || standing_pools_.count(pool)) &&
                                     roomy && !wanted_here
                                 ? std::min(options_.standing, b.fair_keep)
                                 : 0;
        if (keep > 0 && !what.topup && b.topups_in_flight == 0 &&
            static_cast<int64_t>(b.free.size()) < keep &&
            now - b.last_take >= options_.flush_after &&
            // For idle nodes: pods waiting here are the prewarm's and the top-ups' business.
            WaitingLocked(b) == 0) {
          if (b.standing_at == absl::InfiniteFuture()) b.standing_at = StaggeredLocked(now);
          const absl::Time quiet_at =
              b.ever_used ? b.last_change + kQuietBeforeRefill : absl::InfinitePast();
          if (now >= b.standing_at && now >= quiet_at) {
            what.topup = true;
            b.standing_topup = true;
          } else {
            next = std::min(next, std::max(b.standing_at, quiet_at));
          }
        }
        // Another node's ADD found the pool full: what the pods waiting here will not need
        // goes back now (all of it when the demand is unknown); their own ADDs keep the rest.
        const int64_t wanted_surplus =
            wanted_here ? static_cast<int64_t>(b.free.size()) - KeepForWaitingLocked(b) : 0;
        if (wanted_surplus > 0) {
          what.release_some = wanted_surplus;
          what.asked = true;
          what.topup = false;
        } else if (!what.topup && (!b.free.empty() || !b.releasing.empty())) {
          absl::Time at =
              b.last_take + (tight ? options_.tight_idle_release : options_.idle_release);
          // A prewarmed block no pod has used yet waits longer for the pods it was made for
          // (while they are still waiting here).
          if (!tight && b.prewarmed_at != absl::InfinitePast() && !b.taken_since_prewarm &&
              WaitingLocked(b) > 0) {
            at = std::max(at, b.prewarmed_at + options_.prewarm_hold);
          }
          // In a tight pool, while this node's pods are still coming (a take within
          // `idle_release`), what its waiting pods need stays (up to its fair part): with 50
          // nodes sharing an exactly full pool, a node whose next ADDs came more than
          // `tight_idle_release` apart gave back the IPs of its last 25 pods, which then waited
          // for other nodes' give-backs, and those nodes' pods for the next ones' (ipam_e2e,
          // 100 nodes: waves of 50-300 s, up to 1447 failed ADDs). Pods that do not come
          // within `idle_release` are no reason to keep IPs other nodes' ADDs wait for.
          // While they keep coming, that is the node's fair part (point 6), not only the pods
          // already waiting: when pods are created as they start (a Deployment landing), a
          // node sees one kubelet batch waiting at a time, and a node that had just reserved
          // its fair part gave all but 8 back and wrote the pool again for its next batch.
          const absl::Time idle_at = b.last_take + options_.idle_release;
          const int64_t busy_hold = BusyHoldLocked(b);
          int64_t hold = keep;
          absl::Time hold_shrinks_at = absl::InfiniteFuture();
          if (tight && now < idle_at && busy_hold > hold) {
            hold = busy_hold;
            hold_shrinks_at = idle_at;
          }
          // And, while no other node asks, for `prewarm_hold` after this node last reserved or
          // handed out here, what the pods still waiting here need (up to its fair part), as
          // a prewarmed block waits for its pods in a roomy pool: nobody wants those IPs (once
          // a node asks, it gets everything beyond that need at once, above, and the rest when
          // this node turns idle, as before). ipam_e2e, 100 nodes, every pod waiting before
          // the agents, two exactly full pools: each node reserved for its 100 pods, the pool
          // turned tight as the last node's write landed, and 2 s later a node whose ADDs had
          // not begun gave all 100 back; its first batch then wrote the pool itself among 50
          // nodes' writes (21 s, the wave's max).
          const absl::Time waiting_until = b.last_take + options_.prewarm_hold;
          if (tight && !wanted_here && now < waiting_until) {
            const int64_t for_waiting = KeepForWaitingLocked(b);
            if (for_waiting > keep) {
              hold = std::max(hold, for_waiting);
              hold_shrinks_at = std::min(hold_shrinks_at, waiting_until);
            }
          }
          if (hold > keep && now >= at) next = std::min(next, hold_shrinks_at);
          if (now >= at && hold == 0) {
            what.release = true;
          } else if (now >= at) {  // down to the standing block or the waiting pods' need
            what.release_some = std::max<int64_t>(0, static_cast<int64_t>(b.free.size()) - hold);
            what.give_back = !b.releasing.empty();
          } else {
            next = std::min(next, at);
            // The pool has no unreserved IP left and other nodes may be waiting for one: what
            // the pods waiting here will not need goes back now, not when this node is idle.
            const int64_t surplus = static_cast<int64_t>(b.free.size()) - busy_hold;
            if (tight && hooks_.waiting_pods && surplus > 0) what.release_some = surplus;
          }
        }
        // Give-backs of an earlier write that stepped back after a 409 or failed: again now,
        // not when this node next turns idle. Meanwhile nobody can use those IPs (out of the
        // block, still reserved in the pool): an asked-for give-back that yielded while this
        // node kept serving ADDs stayed stuck there, and the asker failed the pool as full.
        if (!b.releasing.empty()) what.give_back = true;
        if (what.flush || what.topup || what.release || what.release_some > 0 ||
            what.give_back || what.free_records) {
          due.emplace_back(pool, what);
        }
      }
    }
    bool failed = false;
    for (const auto& [pool, what] : due) {
      // These writes wait for nobody: on a 409 they step back for a random moment instead of
      // joining the other losers' immediate retry, unless they have lost too often in a row.
      // Nor does a top-up of a block about to run dry (ADDs would soon wait for it), nor a
      // give-back another node asked for (its ADD waits for it: with 50 nodes writing one
      // pool, a yielding give-back lost every race and the asker failed the pool as full).
      bool urgent = false;
      bool prewarming = false;
      {
        absl::MutexLock l(&mu_);
        const Block& b = blocks_[pool];
        prewarming = !b.prewarm_done && b.prewarm_at != absl::InfiniteFuture() && what.topup;
        urgent = b.yields_in_a_row >= kMaxYields || what.asked ||
                 (what.topup && !prewarming && static_cast<int64_t>(b.free.size()) * 4 < b.share);
      }
      const auto on_conflict =
          urgent ? PoolCommitter::OnConflict::kRetry : PoolCommitter::OnConflict::kYield;
      absl::Status s = Sync(pool, what, clock_->Now() + absl::Seconds(30), on_conflict);
      absl::MutexLock l(&mu_);
      Block& b = blocks_[pool];
      if (b.standing_topup) {
        b.standing_topup = false;
        b.standing_at = clock_->Now() + kStandingRefill;
      }
      if (absl::IsAborted(s)) {
        ++stats_.yielded;
        ++b.yields_in_a_row;
        b.retry_at = clock_->Now() + YieldPause(b);
        continue;
      }
      b.yields_in_a_row = 0;
      if (prewarming) {
        if (s.ok()) {
          b.prewarm_done = true;
          b.prewarmed_at = clock_->Now();
          if (!b.free.empty()) ++stats_.prewarmed;
        } else {
          b.prewarm_at = clock_->Now() + absl::Seconds(1);
        }
      }
      if (!s.ok()) {
        SP_LOG(Warning).Msg("writing this node's reservations failed; will retry")
            .KV("pool", pool).KV("error", s);
        failed = true;
      }
    }
    if (!due.empty() && !failed) continue;  // re-evaluate at once: the writes took time
    if (failed) next = std::min(next, clock_->Now() + absl::Seconds(1));
    absl::MutexLock l(&mu_);
    if (stop.stop_requested()) break;
    const absl::Duration wait = next == absl::InfiniteFuture()
                                    ? absl::Seconds(5)
                                    : std::max(absl::Milliseconds(1), next - clock_->Now());
    wake_.WaitWithTimeout(&mu_, wait);
  }
}

}  // namespace spiderpool::agent::ipam
