#include "agent/ipam/blocks.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

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
    b.last_handout = now;
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
  return hooks_.waiting_pods ? CountWaitingLocked(b, hooks_.waiting_pods(), allocating_uid) : 0;
}

int64_t NodeBlocks::CountWaitingLocked(const Block& b, std::set<std::string> uids,
                                       const std::string& allocating_uid,
                                       const std::set<std::string>* batch_adds) const {
  // Served already: handed out here (its endpoint may not be cached yet), being allocated, or
  // by a slow-path write of its own (this one, when the batch is known: the others queued
  // behind it take from the block once it has landed).
  for (const auto& [ip, req] : b.assigned) uids.erase(req.pod_uid);
  uids.erase(allocating_uid);
  for (const std::string& uid : b.slow_writing) {
    if (batch_adds == nullptr || batch_adds->count(uid)) uids.erase(uid);
  }
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

void NodeBlocks::NoteArrivalsLocked(Block& b, absl::Time now, std::set<std::string> waiting) {
  bool arrived = false;
  if (b.waiting_looked) {
    arrived = std::any_of(waiting.begin(), waiting.end(),
                          [&](const std::string& uid) { return !b.waiting_seen.count(uid); });
  }
  // Handed an IP without ever being seen waiting (a standing block's first batch).
  for (const auto& [ip, req] : b.assigned) {
    if (!b.waiting_seen.count(req.pod_uid) && !waiting.count(req.pod_uid)) arrived = true;
  }
  if (arrived) b.last_arrival = now;
  // Seen from now on: the pods waiting, and those handed out and not flushed yet (a pod leaves
  // the waiting ones once its endpoint is cached; it must not count as new after that).
  for (const auto& [ip, req] : b.assigned) waiting.insert(req.pod_uid);
  b.waiting_seen = std::move(waiting);
  b.waiting_looked = true;
}

bool NodeBlocks::DemandCoveredLocked(Block& b, absl::Time now) {
  if (!hooks_.waiting_pods) return false;
  std::set<std::string> waiting = hooks_.waiting_pods();
  NoteArrivalsLocked(b, now, waiting);
  if (now - b.last_arrival < kArrivalWindow) return false;
  return static_cast<int64_t>(b.free.size()) >= CountWaitingLocked(b, std::move(waiting), "");
}

int64_t NodeBlocks::BusyHoldLocked(const Block& b) const {
  // fair_keep is unknown (no limit) until this agent has written the pool.
  return b.pool_nodes > 0 ? b.fair_keep : KeepForWaitingLocked(b);
}

void NodeBlocks::TopUp(const std::string& pool, sp::PoolState& state,
                       std::vector<base::IPAddress>* reserved, bool* dirty,
                       const std::string& allocating_uid,
                       const std::set<std::string>* batch_adds) {
  reserved->clear();
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  Block& b = BlockLocked(pool);
  const absl::Time now = clock_->Now();
  b.last_take = now;
  if (!allocating_uid.empty()) {
    b.prewarm_done = true;  // an ADD's own write reserves now
    b.ever_used = true;
  }
  // Reservations of ours in this (newest) state that we do not track: reserved by an earlier
  // attempt whose write was reported failed but landed. They are ours and unused: adopt them.
  const int64_t unused = static_cast<int64_t>(UnusedLocked(b, state).size());
  *reserved = UntrackedLocked(b, state);
  // The batch-mates on the slow path take their IPs from the pool after this (or did: then
  // one too few is reserved, harmless); theirs are not this top-up's. With the batch known,
  // only those in it: the ADDs queued behind this write take from the block it fills (an
  // ipam_e2e node whose queued ADDs did so came out 5-7 IPs short; its last pods then wrote
  // the pool themselves, 32 s behind 50 nodes' first writes).
  int64_t batch_mates = 0;
  for (const std::string& uid : b.slow_writing) {
    batch_mates += uid != allocating_uid && (batch_adds == nullptr || batch_adds->count(uid));
  }
  const int64_t free = std::max<int64_t>(
      0, static_cast<int64_t>(std::min<absl::uint128>(
             state.allocator().FreeCount(),
             static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) -
             batch_mates);
  const int64_t nodes = static_cast<int64_t>(state.reserving_nodes()) +
                        (state.ReservedFor(node_).empty() ? 1 : 0);
  const std::string asker = hooks_.wanted_by ? hooks_.wanted_by(pool) : std::string();
  NoteFairPartLocked(b, state, asker);
  // Demand known (pods waiting here): exactly that, so that a pool of "IPs = pods" is shared
  // out in one write per node instead of ever smaller halves; unknown: a fair part, half of
  // what is free per node. While this node's pods are starting (it handed an IP out within
  // `flush_after`) and more are still being created (a Deployment landing: one kubelet batch
  // in sight at a time; not pods that all waited already, whose demand is known), what is
  // left of its fair part of the whole pool (point 6) when that is more, a block at most:
  // halves shrink with every node's write, and in a pool of exactly as many IPs as pods ten
  // such nodes needed ~9 writes each, the last ones an ADD's own, 8 409s deep (ipam_e2e
  // --pod-lead-ms=0: wave 3.5-4.3 s, ADD p99 1.3-1.6 s, 170-190 409s).
  const int64_t half = std::min(free / (2 * nodes), options_.max_block);
  // One read of the waiting pods for both uses (this runs inside the pool write's mutation,
  // again on each retry).
  std::set<std::string> waiting_uids;
  if (hooks_.waiting_pods) {
    waiting_uids = hooks_.waiting_pods();
    NoteArrivalsLocked(b, now, waiting_uids);
  }
  const bool starting = now - b.last_handout < options_.flush_after &&
                        now - b.last_arrival < kArrivalWindow;
  const int64_t fair =
      starting ? std::min({std::max(half, b.fair_keep), options_.max_block, free}) : half;
  const int64_t waiting =
      hooks_.waiting_pods
          ? CountWaitingLocked(b, std::move(waiting_uids), allocating_uid, batch_adds)
          : 0;
  const int64_t demand = std::min({waiting, options_.max_block * kDemandBlocks, free});
  const bool prewarm = !b.prewarm_done && b.prewarm_at != absl::InfiniteFuture();
  // A prewarm reserves what the waiting pods need (one kubelet batch at most when none is
  // known), not a fair part of the pool: it holds the block longer than an ADD's top-up. So
  // does a standing block (point 8), `standing` IPs at most.
  const int64_t share =
      prewarm           ? (waiting > 0 ? demand : std::min(half, kPrewarmWithoutDemand))
      : b.standing_topup ? std::max(std::min(half, options_.standing), demand)
                         : std::max(fair, demand);
  // A pool that cannot serve every node (this write would leave no unreserved IP, or another
  // node asks): no more than this node's fair part (point 6).
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

bool NodeBlocks::HasFree(const std::string& pool,
                         const std::function<bool(const base::IPAddress&)>& usable) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return false;
  return std::any_of(it->second.free.begin(), it->second.free.end(),
                     [&](const base::IPAddress& ip) { return !usable || usable(ip); });
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

int64_t NodeBlocks::Crowd(const std::string& pool) {
  return CrowdOf(PoolNodes(pool));
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

void NodeBlocks::NoteChanged(const std::string& pool) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it != blocks_.end()) it->second.last_change = clock_->Now();
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

std::vector<base::IPAddress> NodeBlocks::UnusedLocked(const Block& b,
                                                     const sp::PoolState& state) const {
  std::vector<base::IPAddress> out;
  for (const base::IPAddress& ip : state.ReservedFor(node_)) {
    if (!b.assigned.count(ip) && !b.releasing.count(ip)) out.push_back(ip);
  }
  return out;
}

std::vector<base::IPAddress> NodeBlocks::UntrackedLocked(const Block& b,
                                                        const sp::PoolState& state) const {
  std::vector<base::IPAddress> out = UnusedLocked(b, state);
  std::erase_if(out, [&b](const base::IPAddress& ip) { return b.free.count(ip) > 0; });
  return out;
}

void NodeBlocks::AdoptUntracked(const std::string& pool, const sp::PoolState& state,
                                std::vector<base::IPAddress>* adopted, bool* dirty) {
  adopted->clear();
  if (!enabled()) return;
  absl::MutexLock l(&mu_);
  *adopted = UntrackedLocked(BlockLocked(pool), state);
  if (!adopted->empty()) *dirty = true;
}

std::string NodeBlocks::Describe(const std::string& pool, const sp::PoolState& state) {
  absl::MutexLock l(&mu_);
  auto it = blocks_.find(pool);
  if (it == blocks_.end()) return "no block";
  const Block& b = it->second;
  return base::StrCat("free=", b.free.size(), " handed_out=", b.assigned.size(),
                      " releasing=", b.releasing.size(),
                      " untracked=", UntrackedLocked(b, state).size());
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

}  // namespace spiderpool::agent::ipam
