#include "agent/ipam/blocks.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/cleanup/cleanup.h"

#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::ipam {
namespace {

namespace sp = ::spiderpool::ipam;

bool SameNic(const sp::AllocationRequest& a, const sp::AllocationRequest& b) {
  return a.pod_uid == b.pod_uid &&
         (a.interface_.empty() || b.interface_.empty() || a.interface_ == b.interface_);
}

}  // namespace

NodeBlocks::NodeBlocks(std::string node, BlockOptions options, PoolCommitter* committer,
                       Hooks hooks, base::Clock* clock)
    : node_(std::move(node)), options_(options), committer_(committer),
      hooks_(std::move(hooks)), clock_(clock ? clock : &base::RealClock::Get()),
      rng_(static_cast<std::minstd_rand::result_type>(std::hash<std::string>{}(node_))) {}

NodeBlocks::~NodeBlocks() { Stop(); }

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
    if (absl::Status s = Sync(pool, {.flush = true, .release = true}, deadline); !s.ok()) {
      SP_LOG(Warning).Msg("leaving this node's reservations to the next agent").KV("pool", pool)
          .KV("error", s.ToString());
    }
  }
}

NodeBlocks::Stats NodeBlocks::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

NodeBlocks::Block& NodeBlocks::BlockLocked(const std::string& pool) {
  Block& b = blocks_[pool];
  if (!b.loaded) LoadLocked(pool, b);
  return b;
}

// What survives from an earlier run of the agent: this node's reservations in the pool, split
// into those a SpiderEndpoint of this node holds (handed out, not yet written as pod records)
// and the rest (free).
void NodeBlocks::LoadLocked(const std::string& pool, Block& b) {
  b.loaded = true;
  std::shared_ptr<const api::SpiderIPPool> cached = hooks_.cached_pool(pool);
  if (cached == nullptr) return;
  absl::StatusOr<sp::PoolState> st = hooks_.build(*cached);
  if (!st.ok()) return;  // the slow path reports the pool's problem
  const std::vector<base::IPAddress> mine = st->ReservedFor(node_);
  if (mine.empty()) return;
  const std::map<base::IPAddress, sp::AllocationRequest> held = hooks_.endpoint_ips(pool);
  for (const base::IPAddress& ip : mine) {
    auto it = held.find(ip);
    if (it != held.end()) {
      b.assigned.emplace(ip, it->second);
      b.first_unflushed = std::min(b.first_unflushed, clock_->Now());
    } else {
      b.free.insert(ip);
    }
  }
  b.last_take = clock_->Now();  // give the recovered block the normal idle time
  SP_LOG(Info).Msg("recovered this node's IP reservations").KV("pool", pool)
      .KV("free", b.free.size()).KV("handed_out", b.assigned.size());
  wake_.SignalAll();
}

bool NodeBlocks::Low(const Block& b) const {
  return b.share > 0 && static_cast<int64_t>(b.free.size()) * 2 < b.share;
}

std::optional<base::IPAddress> NodeBlocks::Take(
    const std::string& pool, const sp::AllocationRequest& request,
    const std::function<bool(const base::IPAddress&)>& usable, absl::Time deadline) {
  if (!enabled()) return std::nullopt;
  absl::MutexLock l(&mu_);
  if (written_.count(request.pod_uid)) return std::nullopt;
  Block& b = BlockLocked(pool);
  // Dry, but the background top-up is on its way: waiting for it costs less than a write of
  // our own (which would queue behind it on the same pool anyway).
  const absl::Time wait_until = std::min(deadline, absl::Now() + absl::Seconds(2));
  while (b.free.empty() && b.topups_in_flight > 0) {
    if (topped_up_.WaitWithDeadline(&mu_, wait_until)) break;
  }
  for (auto& [ip, req] : b.assigned) {
    if (SameNic(req, request)) {
      // A repeated ADD (or a new sandbox) before the flush: the record will name this
      // container, so a late DEL of the old sandbox cannot free it.
      if (!request.container_id.empty()) req.container_id = request.container_id;
      return ip;
    }
  }
  for (auto it = b.free.begin(); it != b.free.end(); ++it) {
    if (!usable(*it)) continue;  // reserved by a SpiderReservedIP meanwhile: idle release
    const base::IPAddress ip = *it;
    b.free.erase(it);
    b.assigned.emplace(ip, request);
    const absl::Time now = clock_->Now();
    b.last_take = now;
    b.first_unflushed = std::min(b.first_unflushed, now);
    ++stats_.taken;
    if (Low(b)) wake_.SignalAll();  // top up ahead of demand
    return ip;
  }
  return std::nullopt;
}

int64_t NodeBlocks::WaitingLocked(const Block& b, const std::string& allocating_uid) const {
  if (!hooks_.waiting_pods) return 0;
  std::set<std::string> uids = hooks_.waiting_pods();
  // Served already: handed out here (its endpoint may not be cached yet), or being allocated.
  for (const auto& [ip, req] : b.assigned) uids.erase(req.pod_uid);
  uids.erase(allocating_uid);
  return static_cast<int64_t>(uids.size());
}

void NodeBlocks::TopUp(const std::string& pool, sp::PoolState& state,
                       std::vector<base::IPAddress>* reserved, bool* dirty,
                       const std::string& allocating_uid) {
  reserved->clear();
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  Block& b = BlockLocked(pool);
  b.last_take = clock_->Now();
  // Reservations of ours in this (newest) state that we do not track: reserved by an earlier
  // attempt whose write was reported failed but landed. They are ours and unused: adopt them.
  int64_t unused = 0;
  for (const base::IPAddress& ip : state.ReservedFor(node_)) {
    if (b.assigned.count(ip) || b.releasing.count(ip)) continue;
    ++unused;
    if (!b.free.count(ip)) reserved->push_back(ip);
  }
  const int64_t free = static_cast<int64_t>(
      std::min<absl::uint128>(state.allocator().FreeCount(), static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
  const int64_t nodes = static_cast<int64_t>(state.reserving_nodes()) +
                        (state.ReservedFor(node_).empty() ? 1 : 0);
  // Demand known (pods waiting here): exactly that, so that a pool of "IPs = pods" is shared
  // out in one write per node instead of ever smaller halves; unknown: a fair part.
  const int64_t fair = std::min(free / (2 * nodes), options_.max_block);
  const int64_t waiting = WaitingLocked(b, allocating_uid);
  const int64_t share = std::max(fair, std::min({waiting, options_.max_block, free}));
  b.share = share;
  const int64_t want = share - unused;
  if (want <= 0) return;
  absl::StatusOr<std::vector<base::IPAddress>> got = state.Reserve(node_, want);
  if (!got.ok() || got->empty()) return;
  reserved->insert(reserved->end(), got->begin(), got->end());
  *dirty = true;
}

void NodeBlocks::AddReserved(const std::string& pool, const std::vector<base::IPAddress>& ips) {
  if (ips.empty()) return;
  absl::MutexLock l(&mu_);
  Block& b = BlockLocked(pool);
  for (const base::IPAddress& ip : ips) {
    if (!b.assigned.count(ip) && b.free.insert(ip).second) ++stats_.reserved;
  }
  wake_.SignalAll();
}

void NodeBlocks::NoteWritten(const std::string& uid) {
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  const absl::Time now = clock_->Now();
  if (written_.size() > 4096) {  // bounded: entries older than a minute are of no use
    std::erase_if(written_, [&](const auto& kv) { return now - kv.second > absl::Minutes(1); });
  }
  written_[uid] = now;
}

void NodeBlocks::Forget(const std::string& uid) {
  absl::MutexLock l(&mu_);
  written_.erase(uid);
}

bool NodeBlocks::HasUnflushed(const std::string& pool, const std::string& uid) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return false;
  for (const auto& [ip, req] : it->second.assigned) {
    if (req.pod_uid == uid) return true;
  }
  return false;
}

std::set<base::IPAddress> NodeBlocks::HandedOut(const std::string& pool) const {
  absl::MutexLock l(&mu_);
  std::set<base::IPAddress> out;
  if (auto it = blocks_.find(pool); it != blocks_.end()) {
    for (const auto& entry : it->second.assigned) out.insert(entry.first);
  }
  return out;
}

std::vector<std::string> NodeBlocks::PoolsWithUnflushed(const std::string& uid) {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& [pool, b] : blocks_) {
    for (const auto& [ip, req] : b.assigned) {
      if (req.pod_uid == uid) {
        out.push_back(pool);
        break;
      }
    }
  }
  return out;
}

bool NodeBlocks::Unassign(const std::string& pool, const base::IPAddress& ip,
                          const std::string& uid) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return false;
  Block& b = it->second;
  // A write turning it into the pod's record is on its way: wait for its outcome.
  bool was_flushing = false;
  const absl::Time until = absl::Now() + absl::Seconds(30);  // real time: a real write
  while (b.flushing.count(ip) && absl::Now() < until) {
    was_flushing = true;
    flushed_.WaitWithDeadline(&mu_, until);
  }
  auto a = b.assigned.find(ip);
  if (a == b.assigned.end() || a->second.pod_uid != uid) return false;  // written
  b.assigned.erase(a);
  if (b.assigned.empty()) b.first_unflushed = absl::InfiniteFuture();
  if (was_flushing || b.flushing.count(ip)) {
    // That write failed, but may have landed (a 500 after the commit): never hand the IP out
    // again; the caller releases a record that landed, the next release pass the reservation.
    b.releasing.insert(ip);
    return false;
  }
  b.free.insert(ip);
  return true;
}

absl::Status NodeBlocks::Flush(const std::string& pool, absl::Time deadline) {
  return Sync(pool, {.flush = true}, deadline);
}

absl::Status NodeBlocks::FlushAll(absl::Time deadline) {
  std::vector<std::string> pools;
  {
    absl::MutexLock l(&mu_);
    for (const auto& [pool, b] : blocks_) {
      if (!b.assigned.empty()) pools.push_back(pool);
    }
  }
  for (const std::string& pool : pools) SP_RETURN_IF_ERROR(Flush(pool, deadline));
  return absl::OkStatus();
}

int64_t NodeBlocks::Waitable(const std::string& pool, const sp::PoolState& state) {
  int64_t n = static_cast<int64_t>(state.reservation_count());
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return n;
  for (const base::IPAddress& ip : state.ReservedFor(node_)) {
    n -= it->second.assigned.count(ip) + it->second.releasing.count(ip);
  }
  return n;
}

// One pool write for whatever is due: handed-out IPs become pod records (`flush`), the block is
// topped up ahead of demand (`topup`), free reservations go back (`release`: they leave `free`
// first so that no Take can hand them out while the write is on its way, and if the write fails
// they are NOT taken back into use — it may have landed; the next pass tries again).
absl::Status NodeBlocks::Sync(const std::string& pool, SyncWhat what, absl::Time deadline,
                              PoolCommitter::OnConflict on_conflict) {
  std::map<base::IPAddress, sp::AllocationRequest> batch;
  std::vector<base::IPAddress> releasing;
  {
    absl::MutexLock l(&mu_);
    auto it = blocks_.find(pool);
    if (it == blocks_.end()) return absl::OkStatus();
    Block& b = it->second;
    if (what.flush) batch = b.assigned;
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
  if (batch.empty() && releasing.empty() && !what.topup) return absl::OkStatus();
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
  std::vector<base::IPAddress> lost, topped_up;
  absl::Status s = committer_->Run(
      pool,
      [&](PoolBook& book) {
        lost.clear();
        for (const auto& [ip, req] : batch) {
          const api::PoolIPAllocation* before = book.state.RecordOf(ip);
          const bool was_reservation = before != nullptr && api::IsNodeReservation(*before);
          absl::Status a = book.state.AssignReserved(ip, node_, req);
          if (!a.ok()) {
            lost.push_back(ip);
          } else if (was_reservation) {
            book.dirty = true;
          }
        }
        for (const base::IPAddress& ip : releasing) book.dirty |= book.state.Unreserve(ip, node_);
        if (what.topup) TopUp(pool, book.state, &topped_up, &book.dirty);
        return absl::OkStatus();
      },
      deadline, on_conflict);
  if (!s.ok() && !(absl::IsNotFound(s) && !releasing.empty())) return s;
  for (const base::IPAddress& ip : lost) {
    SP_LOG(Error).Msg("an IP handed out from this node's reservation is no longer reserved")
        .KV("pool", pool).KV("ip", ip.ToString()).KV("pod", batch[ip].pod);
  }
  AddReserved(pool, topped_up);
  absl::MutexLock l(&mu_);
  Block& b = blocks_[pool];
  for (const auto& [ip, req] : batch) {
    auto a = b.assigned.find(ip);
    if (a != b.assigned.end() && a->second.pod_uid == req.pod_uid) b.assigned.erase(a);
  }
  if (b.assigned.empty()) b.first_unflushed = absl::InfiniteFuture();
  for (const base::IPAddress& ip : releasing) b.releasing.erase(ip);
  stats_.flushed += static_cast<int64_t>(batch.size() - lost.size());
  stats_.lost += static_cast<int64_t>(lost.size());
  stats_.released += static_cast<int64_t>(releasing.size());
  return absl::OkStatus();
}

absl::Duration NodeBlocks::YieldPause() {
  return absl::Milliseconds(std::uniform_int_distribution<int>(20, 200)(rng_));
}

void NodeBlocks::Loop(std::stop_token stop) {
  absl::Time next_recovery = absl::InfinitePast();
  while (!stop.stop_requested()) {
    std::vector<std::pair<std::string, SyncWhat>> due;
    absl::Time next = absl::InfiniteFuture();
    // Pools to recover without waiting for an ADD (a restarted agent's reservations).
    std::vector<std::string> known;
    if (hooks_.pools && clock_->Now() >= next_recovery) {
      known = hooks_.pools();
      next_recovery = clock_->Now() + absl::Seconds(1);
    }
    {
      absl::MutexLock l(&mu_);
      for (const std::string& pool : known) {
        if (!blocks_.count(pool)) BlockLocked(pool);
      }
      if (hooks_.pools && known.empty()) next = next_recovery;  // caches not synced yet
      const absl::Time now = clock_->Now();
      for (auto& [pool, b] : blocks_) {
        if (now < b.retry_at) {  // stepped back after a lost race
          next = std::min(next, b.retry_at);
          continue;
        }
        SyncWhat what;
        if (!b.assigned.empty()) {
          const absl::Time at = std::min(b.last_take + options_.flush_after,
                                         b.first_unflushed + options_.max_flush_delay);
          if (now >= at) what.flush = true; else next = std::min(next, at);
        }
        // Ahead of demand: pods are being started here and the block runs low.
        if (now - b.last_take < options_.flush_after && Low(b)) {
          what.topup = true;
          what.flush = !b.assigned.empty();  // the same write records what was handed out
        }
        if (!what.topup && (!b.free.empty() || !b.releasing.empty())) {
          std::shared_ptr<const api::SpiderIPPool> cached = hooks_.cached_pool(pool);
          const bool tight = cached == nullptr || cached->status.free_ip_count.value_or(1) == 0;
          const absl::Time at =
              b.last_take + (tight ? options_.tight_idle_release : options_.idle_release);
          if (now >= at) {
            what.release = true;
          } else {
            next = std::min(next, at);
            // The pool has no unreserved IP left and other nodes may be waiting for one: what
            // the pods waiting here will not need goes back now, not when this node is idle.
            const int64_t surplus =
                static_cast<int64_t>(b.free.size()) - (hooks_.waiting_pods ? WaitingLocked(b) : 0);
            if (tight && hooks_.waiting_pods && surplus > 0) what.release_some = surplus;
          }
        }
        if (what.flush || what.topup || what.release || what.release_some > 0) {
          due.emplace_back(pool, what);
        }
      }
    }
    bool failed = false;
    for (const auto& [pool, what] : due) {
      // These writes wait for nobody: on a 409 they step back for a random moment instead of
      // joining the other losers' immediate retry, unless they have lost too often in a row.
      // Nor does a top-up of a block about to run dry: ADDs would soon wait for it.
      bool urgent = false;
      {
        absl::MutexLock l(&mu_);
        const Block& b = blocks_[pool];
        urgent = b.yields_in_a_row >= kMaxYields ||
                 (what.topup && static_cast<int64_t>(b.free.size()) * 4 < b.share);
      }
      const auto on_conflict =
          urgent ? PoolCommitter::OnConflict::kRetry : PoolCommitter::OnConflict::kYield;
      absl::Status s = Sync(pool, what, clock_->Now() + absl::Seconds(30), on_conflict);
      absl::MutexLock l(&mu_);
      Block& b = blocks_[pool];
      if (absl::IsAborted(s)) {
        ++b.yields_in_a_row;
        b.retry_at = clock_->Now() + YieldPause();
        continue;
      }
      b.yields_in_a_row = 0;
      if (!s.ok()) {
        SP_LOG(Warning).Msg("writing this node's reservations failed; will retry")
            .KV("pool", pool).KV("error", s.ToString());
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
