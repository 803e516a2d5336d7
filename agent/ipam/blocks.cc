#include "agent/ipam/blocks.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

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

std::optional<ReservationsWanted> ParseReservationsWanted(const api::ObjectMeta& pool) {
  auto it = pool.annotations.find(kAnnotationReservationsWanted);
  if (it == pool.annotations.end()) return std::nullopt;
  std::vector<std::string> parts = absl::StrSplit(it->second, ' ');
  int64_t at_ms = 0;
  if (parts.size() != 2 || parts[0].empty() || !absl::SimpleAtoi(parts[1], &at_ms)) {
    return std::nullopt;
  }
  return ReservationsWanted{.node = parts[0], .at = absl::FromUnixMillis(at_ms)};
}

bool AskIsDue(const api::ObjectMeta* pool, absl::Time now, absl::Duration every) {
  if (pool == nullptr) return true;
  const std::optional<ReservationsWanted> wanted = ParseReservationsWanted(*pool);
  return !wanted.has_value() || !wanted->FreshAt(now, every);
}

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
    if (absl::Status s = Sync(pool, {.flush = true, .free_records = true, .release = true,
                                     .release_untracked = true},
                              deadline);
        !s.ok()) {
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
  if (!b.loaded) {
    b.pool = pool;
    LoadLocked(pool, b);
  }
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
  b.prewarm_done = b.prewarm_done || b.prewarm_at == absl::InfiniteFuture();  // an ADD came first
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
    if (b.releasing.count(*it)) {  // a bug if it happens; handing it out would duplicate it
      SP_LOG(Error).Msg("an IP being given back is in the free set; not handing it out")
          .KV("pool", pool).KV("ip", it->ToString());
      continue;
    }
    const base::IPAddress ip = *it;
    b.free.erase(it);
    b.assigned.emplace(ip, request);
    const absl::Time now = clock_->Now();
    b.last_take = now;
    b.taken_since_prewarm = true;
    b.ever_used = true;
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
  // Served already: handed out here (its endpoint may not be cached yet), being allocated, or
  // by a slow-path write of its own.
  for (const auto& [ip, req] : b.assigned) uids.erase(req.pod_uid);
  uids.erase(allocating_uid);
  for (const std::string& uid : b.slow_writing) uids.erase(uid);
  for (const auto& [uid, at] : b.slow_wrote) uids.erase(uid);
  // A pod predicted to use other pools only is not this pool's demand: a node whose pods
  // attach to two networks reserved for all of them in both.
  // (A loop, not a lambda: the thread-safety analysis does not see mu_ held inside one.)
  int64_t waiting = 0;
  for (const std::string& uid : uids) {
    auto it = predicted_.find(uid);
    waiting += it == predicted_.end() ||
               std::find(it->second.begin(), it->second.end(), b.pool) != it->second.end();
  }
  return waiting;
}

void NodeBlocks::NoteFairPartLocked(Block& b, const sp::PoolState& state,
                                    const std::string& asker) {
  const std::map<std::string, sp::PoolState::NodeHolding, std::less<>> held = state.HoldingsByNode();
  std::set<std::string, std::less<>> nodes;
  for (const auto& [node, h] : held) nodes.insert(node);
  nodes.insert(node_);
  if (!asker.empty()) nodes.insert(asker);
  const absl::uint128 usable = state.allocator().FreeCount() + state.record_count();
  const int64_t ips = static_cast<int64_t>(
      std::min<absl::uint128>(usable, static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 2)));
  const auto n = static_cast<int64_t>(nodes.size());
  const int64_t fair = (ips + n - 1) / n;
  auto mine = held.find(node_);
  const int64_t pods_here = mine == held.end() ? 0 : mine->second.pods;
  // Handed out here and not written yet: reservations in `state`, pods' IPs in truth. (Those
  // this very write records are pod records in `state` already: not counted twice.)
  int64_t handed_out = 0;
  for (const auto& [ip, req] : b.assigned) {
    const api::PoolIPAllocation* rec = state.RecordOf(ip);
    if (rec != nullptr && api::IsNodeReservation(*rec)) ++handed_out;
  }
  b.fair_keep = std::max<int64_t>(0, fair - pods_here - handed_out);
  b.pool_nodes = n;
}

int64_t NodeBlocks::KeepForWaitingLocked(const Block& b) const {
  if (!hooks_.waiting_pods) return 0;
  return std::min(WaitingLocked(b), b.fair_keep);
}

void NodeBlocks::TopUp(const std::string& pool, sp::PoolState& state,
                       std::vector<base::IPAddress>* reserved, bool* dirty,
                       const std::string& allocating_uid) {
  reserved->clear();
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  Block& b = BlockLocked(pool);
  b.last_take = clock_->Now();
  if (!allocating_uid.empty()) {
    b.prewarm_done = true;  // an ADD's own write reserves now
    b.ever_used = true;
  }
  // Reservations of ours in this (newest) state that we do not track: reserved by an earlier
  // attempt whose write was reported failed but landed. They are ours and unused: adopt them.
  const std::vector<base::IPAddress> unused_ips = UnusedLocked(b, state);
  const int64_t unused = static_cast<int64_t>(unused_ips.size());
  for (const base::IPAddress& ip : unused_ips) {
    if (!b.free.count(ip)) reserved->push_back(ip);
  }
  // The batch-mates on the slow path take their IPs after this (or did: then one too few is
  // reserved, harmless); theirs are not this top-up's.
  const int64_t batch_mates = static_cast<int64_t>(b.slow_writing.size()) -
                              (b.slow_writing.count(allocating_uid) ? 1 : 0);
  const int64_t free = std::max<int64_t>(
      0, static_cast<int64_t>(std::min<absl::uint128>(
             state.allocator().FreeCount(),
             static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) -
             batch_mates);
  const int64_t nodes = static_cast<int64_t>(state.reserving_nodes()) +
                        (state.ReservedFor(node_).empty() ? 1 : 0);
  // Demand known (pods waiting here): exactly that, so that a pool of "IPs = pods" is shared
  // out in one write per node instead of ever smaller halves; unknown: a fair part.
  const int64_t fair = std::min(free / (2 * nodes), options_.max_block);
  const int64_t waiting = WaitingLocked(b, allocating_uid);
  const int64_t demand = std::min({waiting, options_.max_block * kDemandBlocks, free});
  const bool prewarm = !b.prewarm_done && b.prewarm_at != absl::InfiniteFuture();
  // A prewarm reserves what the waiting pods need (one kubelet batch at most when none is
  // known), not a fair part of the pool: it holds the block longer than an ADD's top-up. So
  // does a standing block (point 8), `standing` IPs at most.
  const int64_t share =
      prewarm           ? (waiting > 0 ? demand : std::min(fair, kPrewarmWithoutDemand))
      : b.standing_topup ? std::max(std::min(fair, options_.standing), demand)
                         : std::max(fair, demand);
  // A pool that cannot serve every node (this write would leave no unreserved IP, or another
  // node asks): no more than this node's fair part (point 6).
  const std::string asker = hooks_.wanted_by ? hooks_.wanted_by(pool) : std::string();
  NoteFairPartLocked(b, state, asker);
  const int64_t capped =
      (share - unused >= free || !asker.empty()) ? std::min(share, b.fair_keep) : share;
  b.share = capped;
  const int64_t want = capped - unused;
  if (want <= 0) return;
  absl::StatusOr<std::vector<base::IPAddress>> got = state.Reserve(node_, want);
  if (!got.ok() || got->empty()) return;
  // An IP still marked as being given back that the pool hands us again: that release landed
  // (its write was reported failed, e.g. a timeout, but committed). It is a fresh reservation
  // now; the retried release must not take it away again once a pod holds it.
  for (const base::IPAddress& ip : *got) b.releasing.erase(ip);
  reserved->insert(reserved->end(), got->begin(), got->end());
  *dirty = true;
}

void NodeBlocks::AddReserved(const std::string& pool, const std::vector<base::IPAddress>& ips) {
  if (ips.empty()) return;
  absl::MutexLock l(&mu_);
  Block& b = BlockLocked(pool);
  for (const base::IPAddress& ip : ips) {
    // An IP being given back stays out of use even when a write reported it ours: that write's
    // TopUp ran before the give-back started (two ADDs of one batch both see a fresh
    // reservation, the later one calls this after the keeper moved it to `releasing`). Handing
    // it out would let the give-back unreserve an IP a pod holds: a duplicate IP. If the pool
    // still shows it ours after the give-back, a later TopUp adopts it.
    if (b.releasing.count(ip) || b.assigned.count(ip)) continue;
    if (b.free.insert(ip).second) ++stats_.reserved;
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

bool NodeBlocks::HasFree(const std::string& pool) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  return it != blocks_.end() && !it->second.free.empty();
}

void NodeBlocks::SlowPathBegin(const std::string& pool, const std::string& uid) {
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  Block& b = BlockLocked(pool);
  b.slow_writing.insert(uid);
}

void NodeBlocks::SlowPathEnd(const std::string& pool, const std::string& uid, bool wrote) {
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return;
  Block& b = it->second;
  b.slow_writing.erase(uid);
  if (!wrote) return;  // still waiting
  const absl::Time now = clock_->Now();
  if (b.slow_wrote.size() > 1024) {  // bounded: a minute after its write a pod's endpoint is cached
    std::erase_if(b.slow_wrote, [&](const auto& kv) { return now - kv.second > absl::Minutes(1); });
  }
  b.slow_wrote[uid] = now;
}

int64_t NodeBlocks::PoolNodes(const std::string& pool) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  return it == blocks_.end() ? 0 : it->second.pool_nodes;
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
  if (was_flushing || b.flushing.count(ip) || b.maybe_written.erase(ip) > 0) {
    // That write failed, but may have landed (a 500 after the commit): never hand the IP out
    // again; the caller releases a record that landed, the next release pass the reservation.
    b.releasing.insert(ip);
    return false;
  }
  b.free.insert(ip);
  return true;
}

bool NodeBlocks::Release(const std::string& pool, const std::string& uid,
                         const std::string& container_id) {
  if (!keeper_.joinable()) return false;
  absl::MutexLock l(&mu_);
  Block& b = BlockLocked(pool);
  // Handed out and not flushed: back into the block, unless a write turning it into the pod's
  // record is on its way (then the record, once there, is freed like any other).
  for (auto it = b.assigned.begin(); it != b.assigned.end();) {
    const bool mine = it->second.pod_uid == uid &&
                      (container_id.empty() || it->second.container_id.empty() ||
                       it->second.container_id == container_id);
    // Also when an earlier write of it failed in a way that may have landed (maybe_written):
    // the keeper's next write records it (a no-op if it landed) and frees it with the rest.
    if (!mine || b.flushing.count(it->first) || b.maybe_written.count(it->first)) {
      ++it;
      continue;
    }
    b.free.insert(it->first);
    it = b.assigned.erase(it);
  }
  if (b.assigned.empty()) b.first_unflushed = absl::InfiniteFuture();
  b.pending_releases.emplace(uid, container_id);
  b.first_pending = std::min(b.first_pending, clock_->Now());
  written_.erase(uid);
  wake_.SignalAll();
  return true;
}

bool NodeBlocks::HandedToOtherContainer(const std::string& pool, const std::string& uid,
                                        const std::string& container_id) const {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return false;
  for (const auto& [ip, req] : it->second.assigned) {
    if (req.pod_uid == uid && !req.container_id.empty() && !container_id.empty() &&
        req.container_id != container_id) {
      return true;
    }
  }
  return false;
}

void NodeBlocks::Wake() {
  absl::MutexLock l(&mu_);
  wake_.SignalAll();
}

void NodeBlocks::Poke() {
  absl::MutexLock l(&mu_);
  poked_ = true;
  wake_.SignalAll();
}

int64_t NodeBlocks::PendingReleases() const {
  absl::MutexLock l(&mu_);
  int64_t n = 0;
  for (const auto& [pool, b] : blocks_) n += static_cast<int64_t>(b.pending_releases.size());
  return n;
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

std::vector<base::IPAddress> NodeBlocks::UnusedLocked(const Block& b,
                                                     const sp::PoolState& state) const {
  std::vector<base::IPAddress> out;
  for (const base::IPAddress& ip : state.ReservedFor(node_)) {
    if (!b.assigned.count(ip) && !b.releasing.count(ip)) out.push_back(ip);
  }
  return out;
}

void NodeBlocks::AdoptUntracked(const std::string& pool, const sp::PoolState& state,
                                std::vector<base::IPAddress>* adopted, bool* dirty) {
  adopted->clear();
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  const Block& b = BlockLocked(pool);
  for (const base::IPAddress& ip : UnusedLocked(b, state)) {
    if (!b.free.count(ip)) adopted->push_back(ip);
  }
  if (!adopted->empty()) *dirty = true;
}

std::string NodeBlocks::Describe(const std::string& pool, const sp::PoolState& state) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return "no block";
  const Block& b = it->second;
  int64_t untracked = 0;
  for (const base::IPAddress& ip : UnusedLocked(b, state)) untracked += b.free.count(ip) == 0;
  return base::StrCat("free=", b.free.size(), " handed_out=", b.assigned.size(),
                      " releasing=", b.releasing.size(), " untracked=", untracked);
}

int64_t NodeBlocks::Waitable(const std::string& pool, const sp::PoolState& state) {
  int64_t n = static_cast<int64_t>(state.reservation_count());
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return n;
  for (const base::IPAddress& ip : state.ReservedFor(node_)) {
    // Ours being given back count: once that write lands they are free for the next attempt.
    n -= it->second.assigned.count(ip);
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
            lost_why[ip] = a.ToString();
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
        if (what.topup) TopUp(pool, book.state, &topped_up, &book.dirty);
        return absl::OkStatus();
      },
      deadline, on_conflict, [&] { Landed(); });
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
        const int64_t crowd = std::max<int64_t>(1, b.pool_nodes / kNodesPerFlushWindow);
        if (!b.assigned.empty()) {
          const absl::Time at = std::min(b.last_take + options_.flush_after * crowd,
                                         b.first_unflushed + options_.max_flush_delay * crowd);
          if (now >= at) what.flush = true; else next = std::min(next, at);
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
        // Ahead of demand: pods are being started here and the block runs low.
        if (now - b.last_take < options_.flush_after && Low(b)) {
          what.topup = true;
          what.flush = !b.assigned.empty();  // the same write records what was handed out
        }
        const bool wanted_here = wanted.count(pool) && wanted[pool];
        std::shared_ptr<const api::SpiderIPPool> cached = hooks_.cached_pool(pool);
        // No unreserved IP left: other nodes may be waiting for one.
        const bool tight = cached == nullptr || cached->status.free_ip_count.value_or(1) == 0;
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
          if (now >= b.standing_at) {
            what.topup = true;
            b.standing_topup = true;
          } else {
            next = std::min(next, b.standing_at);
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
          const absl::Time idle_at = b.last_take + options_.idle_release;
          const int64_t hold =
              std::max(keep, tight && now < idle_at ? KeepForWaitingLocked(b) : 0);
          if (hold > keep && now >= at) next = std::min(next, idle_at);
          if (now >= at && hold == 0) {
            what.release = true;
          } else if (now >= at) {  // down to the standing block or the waiting pods' need
            what.release_some = std::max<int64_t>(0, static_cast<int64_t>(b.free.size()) - hold);
            what.give_back = !b.releasing.empty();
          } else {
            next = std::min(next, at);
            // The pool has no unreserved IP left and other nodes may be waiting for one: what
            // the pods waiting here will not need goes back now, not when this node is idle.
            const int64_t surplus =
                static_cast<int64_t>(b.free.size()) - KeepForWaitingLocked(b);
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
