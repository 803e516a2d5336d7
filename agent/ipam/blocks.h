#pragma once
// NodeBlocks: IPs a node's agent holds in advance ("node reservations", api::IsNodeReservation),
// so that most ADDs do not write the contended SpiderIPPool at all.
//
// Why: every record of a pool lives in ONE status string. With many nodes starting pods from
// one pool, each allocation written there before the ADD returns means one optimistic write
// per batch, and the writers keep losing 409s to each other (the tail latency of upstream and
// of our plain group commit). Calico solves the same problem with per-node blocks; this is the
// same idea inside upstream's status format:
//
//   1. When the agent writes a pool anyway (an ADD found no reserved IP), the same write also
//      reserves a few more IPs for this node: records {"pod":"","podUid":"","node":"<node>"}.
//      How many: what the pods scheduled to this node and still waiting for their ADD need
//      (Hooks::waiting_pods), capped at kDemandBlocks x `max_block` (one write for a whole
//      Deployment's pods on the node) and at the pool's unreserved free IPs; at
//      least half of those free IPs shared among the reserving nodes (capped at `max_block`)
//      when the demand is not known, or, while pods are still being created for this node
//      and it hands IPs out (only one kubelet batch of them in sight), what is left of its
//      fair part of the pool (point 6; capped at `max_block`). None when the pool is full
//      (then every IP goes straight to a pod, as before). ADDs of this node queued behind
//      that write are part of that demand and take from the block once it has landed, not
//      from the pool in a write of their own (the ADDs the write itself carries are not:
//      PoolBook::slow_adds). While pods keep starting and the block is half used, the background thread
//      tops it up ahead of demand (in the same write as the records of step 3), unless the
//      pool has no unreserved IP left, or no pod has arrived lately and the block covers the
//      pods still waiting (the top-up would reserve nothing).
//   2. The next ADDs on this node take the lowest reserved IP locally. The pod's SpiderEndpoint
//      (written before the ADD returns, by the service) is the durable record of the pod↔IP
//      pairing meanwhile; no other node can take the IP, since the pool says it is this
//      node's.
//   3. In the background the reservation is turned into the pod's record (one write for every
//      assignment made meanwhile, after `flush_after` without new ones, at most
//      `max_flush_delay` after the first; both longer in a pool shared by more than
//      kNodesPerFlushWindow nodes, where the write also waits, up to the longer
//      `max_flush_delay`, while pods still wait here for their IP: the node's burst goes on),
//      and reservations unused for `idle_release` go back
//      to the pool (after `tight_idle_release` when the pool has no unreserved IP left, so that
//      other nodes waiting for one get it quickly; then also at once, while busy, whatever is
//      beyond the node's fair part, point 6). These background writes step back for a random
//      moment when they lose a 409 race (GroupCommitter::OnConflict::kYield) instead of
//      retrying together with the other losers; ADDs never do.
//   4. Ahead of the first pod: once the caches have synced, the keeper reserves a block in
//      every pool of Hooks::prewarm_pools (the pools this node's pods are expected to use) that
//      holds none of ours yet, each after a random pause of up to `prewarm_stagger` so that the
//      agents of many nodes started together do not all write one pool at the same moment.
//      Which pools: those the pool selection picks for the pods already scheduled here and
//      still waiting for their ADD (the service's prediction); so an agent whose node has no
//      pod coming reserves nothing. A prewarmed block that no pod has used yet stays for
//      `prewarm_hold` (not `idle_release`) while those pods wait, unless another node asks
//      for IPs; in a pool with no unreserved IP left only what those pods need (up to the
//      node's fair part, point 6) stays, for `prewarm_hold` after the node's last reservation
//      or hand-out there.
//   5. A DEL does not wait for a pool write either (Release): an IP still unflushed goes back
//      into the block at once; a pod record already in the pool is queued and freed by the
//      keeper's next write, batched with everything else due for that pool (after
//      `flush_after`). The caller deletes the pod's SpiderEndpoint before it returns: that is
//      the durable sign that the records are free. If the agent dies before the write, the
//      records of a pod that is gone are freed by the controller's GC; those of a pod that
//      still exists (a sandbox re-created) are its own again at its next ADD.
//   6. Exhaustion is global: an ADD that finds the pool full while other nodes hold idle
//      reservations asks for them (the service marks the pool, kAnnotationReservationsWanted);
//      every keeper that sees a fresh mark from another node gives back at once the free
//      reservations that the pods waiting on its own node will not need (all of them when that
//      demand is unknown), and the ADD waits (bounded by its deadline) until it can take one.
//      Fair parts: in a pool that cannot serve every node (a write that would leave no
//      unreserved IP, or another node asking), a node reserves for its waiting pods, and keeps,
//      no more than its fair part: the pool's IPs shared equally among the nodes its records
//      name and the asking node, less what its own pods hold. Without it the nodes that
//      reserved first kept a tight pool's IPs for their own next pods while other nodes' pods
//      waited (bench/chaos_test: ADD p99 ~30 s).
//   7. A restarted agent rebuilds its state from the pool (its reservations) and this node's
//      SpiderEndpoints (which reservations are pods'), so nothing handed out is lost; a
//      deleted node's reservations are freed by the controller's GC. The keeper does this for
//      every pool of Hooks::pools as soon as the caches have synced, so what no pod holds goes
//      back after `idle_release` even if no pod starts here (found by bench/chaos).
//   8. Standing reservations: with `standing` > 0 a node keeps that many IPs reserved, with no
//      pod waiting, in the pools a pod of this node is expected to use — those the selection
//      picks for a pod without annotations here (Hooks::forecast: the cluster's default pools
//      and the NAD defaults of the last ADD) and those this node's ADDs have drawn from — so
//      that the first pods of a Deployment that lands later need no pool write either. The
//      first such write comes after a random pause of up to `prewarm_stagger` (agents started
//      together do not collide), a refill at most every kStandingRefill and, of a block this
//      node's pods have used, only once the pool has been quiet for kQuietBeforeRefill (other
//      nodes may still be reserving for their pods). An idle block is given
//      back down to `standing`, not to nothing; in a pool with no unreserved IP left, or when
//      another node asks (point 6), nothing is kept, nor beyond the node's fair part of the
//      pool (point 6: a node whose pods hold their share keeps none), nor in a pool that is not
//      roomy (fewer unreserved IPs than 2 x `standing` per node it is shared among: there
//      standing blocks would only move IPs back and forth between idle nodes and busy ones).
//      It never takes more than a fair part of the pool's free IPs (TopUp's halving), so
//      standing blocks alone never fill a pool; and it is refilled only while no pod waits
//      here (the prewarm and the top-ups serve those).
//
// Every change of the pool status still goes through the GroupCommitter (and therefore the
// API server's resourceVersion check): reservations only move WHEN the write happens.
//
// No duplicate IP, whatever the interleaving of ADDs, DELs and the keeper:
//   - the block follows the pool in the order this agent's writes landed: what a write did to
//     the block is applied by the committer's on_landed callback, before the pool's next batch;
//   - an IP being given back (`releasing`) is never in `free` and never handed out; a write that
//     reports it ours after the give-back started (AddReserved) does not bring it back;
//   - a give-back never unreserves an IP in `free` or `assigned`;
//   - an IP whose write failed in a way that may have landed (maybe_written) never goes back to
//     `free` on a DEL or an undo.
// bench ipam_e2e found the first of these broken (two ADDs of one batch both reported the same
// fresh reservations; the later report put them back after the keeper had started giving them
// back; pods got them; the give-back landed): blocks_test reproduces it.
// Thread-safe.

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/ipam/committer.h"
#include "api/spider_ippool.h"
#include "base/clock.h"
#include "base/ip.h"
#include "ipam/pool.h"

namespace spiderpool::agent::ipam {

// The working copy the committer hands to mutations.
struct PoolBook {
  ::spiderpool::ipam::PoolState state;
  bool dirty = false;
  // The pods whose ADDs this write allocates for (their mutations' `prepare`): the slow-path
  // ADDs of this node NOT among them queue for a later batch and take from the block.
  std::set<std::string> slow_adds;
};
using PoolCommitter = GroupCommitter<PoolBook>;

// On a SpiderIPPool: "<node> <unix milliseconds>", written by an agent whose ADD found the pool
// full while other nodes held idle reservations in it (point 6 above).
inline constexpr char kAnnotationReservationsWanted[] =
    "ipam.spidernet.io/node-reservations-wanted";

// A parsed kAnnotationReservationsWanted value.
struct ReservationsWanted {
  std::string node;
  absl::Time at;
  // Written less than `within` before or after `now` (another node's clock may run ahead).
  bool FreshAt(absl::Time now, absl::Duration within) const {
    return now - at < within && at - now < within;
  }
};
// The ask a pool's metadata carries; nullopt: absent or malformed.
std::optional<ReservationsWanted> ParseReservationsWanted(const api::ObjectMeta& pool);

// Whether a node whose ADD found `pool` full should write its own ask now: not while any
// node's ask is younger than `every`. The owners of idle reservations answer whichever node
// asked; and each ask is a write of the pool object without a resourceVersion (it always
// lands), which makes every status update of the pool in flight fail with 409: N nodes asking
// at their own pace were N such writes a second.
bool AskIsDue(const api::ObjectMeta* pool, absl::Time now, absl::Duration every);

struct BlockOptions {
  int64_t max_block = 16;  // 0: off (every IP is written to the pool before the ADD returns)
  absl::Duration flush_after = absl::Milliseconds(300);
  absl::Duration max_flush_delay = absl::Seconds(10);
  absl::Duration idle_release = absl::Seconds(2);
  absl::Duration tight_idle_release = absl::Milliseconds(100);
  absl::Duration prewarm_stagger = absl::Seconds(1);
  absl::Duration prewarm_hold = absl::Seconds(60);
  int64_t standing = 0;  // point 8 (0: none)
};

// What the request flow expects this node's pods to use (points 4 and 8).
struct PoolForecast {
  std::vector<std::string> for_waiting_pods;  // the pools the waiting pods' selection picks
  // The same per waiting pod UID: a pod is demand only in the pools predicted for it (a pod
  // with no prediction, e.g. one the selection has not reached yet, counts in every pool).
  std::map<std::string, std::vector<std::string>> by_waiting_pod;
  std::vector<std::string> standing;          // a pod without annotations would get these here
};

class NodeBlocks {
 public:
  struct Hooks {
    // The cached copy of a pool (PoolCache::Get: its status may lag; nullptr: not known).
    std::function<std::shared_ptr<const api::SpiderIPPool>(const std::string& pool)> cached_pool;
    // The IPs of `pool` that this node's SpiderEndpoints hold, with their pods (recovery).
    std::function<std::map<base::IPAddress, ::spiderpool::ipam::AllocationRequest>(
        const std::string& pool)>
        endpoint_ips;
    // Builds a PoolState from a pool object (the service's reserved ranges and limits).
    std::function<absl::StatusOr<::spiderpool::ipam::PoolState>(const api::SpiderIPPool& pool)>
        build;
    // Optional demand hint: the UIDs of the pods scheduled to this node that have no
    // SpiderEndpoint yet (their ADD is still to come). nullptr: unknown.
    std::function<std::set<std::string>()> waiting_pods;
    // Optional: the pools whose reservations the keeper recovers without waiting for an ADD,
    // i.e. the names of the cached pools once every cache (endpoints included) has synced;
    // empty before. nullptr: a pool's reservations are recovered at its first ADD only, so a
    // restarted agent whose node starts no pod would keep them reserved for ever.
    std::function<std::vector<std::string>()> pools;
    // Optional: the pools to hold a block in before the first ADD (points 4 and 8); empty
    // until the caches have synced. nullptr: none.
    std::function<PoolForecast()> forecast;
    // Optional: the other node that asked for this pool's idle reservations recently (point
    // 6); empty: none.
    std::function<std::string(const std::string& pool)> wanted_by;
  };

  NodeBlocks(std::string node, BlockOptions options, PoolCommitter* committer, Hooks hooks,
             base::Clock* clock);
  ~NodeBlocks();  // Stop()

  bool enabled() const { return options_.max_block > 0; }
  // Starts / stops the background flush + release thread.
  void Start();
  void Stop();

  // Hands `request` a reserved IP of `pool`: the one it already got (a repeated ADD), else the
  // lowest free reservation that `usable` accepts. nullopt: none here (take the slow path).
  // When the block is dry while a background top-up is on its way, waits for it (bounded).
  std::optional<base::IPAddress> Take(const std::string& pool,
                                      const ::spiderpool::ipam::AllocationRequest& request,
                                      const std::function<bool(const base::IPAddress&)>& usable,
                                      absl::Time deadline);

  // For a slow-path mutation (inside the committer, on `state`): reserves more IPs for this
  // node if its block is short. `*reserved` receives what this run reserved (reset on each
  // run; the committer may re-run a batch) — hand it to AddReserved() once the write is done.
  // `allocating_uid`: the pod the same write allocates for (it waits no more).
  // `batch_adds`: the pods of the ADDs this write allocates for (PoolBook::slow_adds); this
  // node's other slow-path ADDs, queued behind it, are demand for the block. nullptr: every
  // slow-path ADD is taken to be in this write.
  void TopUp(const std::string& pool, ::spiderpool::ipam::PoolState& state,
             std::vector<base::IPAddress>* reserved, bool* dirty,
             const std::string& allocating_uid = "",
             const std::set<std::string>* batch_adds = nullptr);
  void AddReserved(const std::string& pool, const std::vector<base::IPAddress>& ips);

  // The slow path wrote a pod record for `uid`: until the endpoint cache surely shows it, a
  // repeated ADD of that pod must go the slow path too (its idempotency reads the status).
  void NoteWritten(const std::string& uid);
  // `uid`'s records were released: forget what NoteWritten noted.
  void Forget(const std::string& uid);

  // `uid` has IPs of `pool` that are still reservations in the pool status.
  bool HasUnflushed(const std::string& pool, const std::string& uid);
  // Whether this node holds a reservation in `pool` that Take could hand out (one that
  // `usable`, when set, accepts: not covered by a SpiderReservedIP).
  bool HasFree(const std::string& pool,
               const std::function<bool(const base::IPAddress&)>& usable = nullptr);
  // An ADD's slow path (a pool write of its own record) starts / ended for pod `uid`: while it
  // runs and after it wrote, the pod is no demand for this node's reservations, and while it
  // runs a top-up leaves it a free IP. A node's first batch of 8 ADDs is one write: the first
  // mutation's top-up reserved for every waiting pod, the batch-mates included, up to the
  // last free IP, and in a nearly full pool the batch-mates then failed "all IP addresses
  // used out" with their own node holding 83 reservations (ipam_e2e, 100 nodes).
  void SlowPathBegin(const std::string& pool, const std::string& uid);
  void SlowPathEnd(const std::string& pool, const std::string& uid, bool wrote);
  // The nodes `pool`'s records named at this node's last write of it (0: not written yet).
  int64_t PoolNodes(const std::string& pool);
  // How many times its flush windows `pool` waits: the nodes sharing it per
  // kNodesPerFlushWindow, at least 1. The agent's pool cache reads the pool's status in the
  // background that much less often too.
  int64_t Crowd(const std::string& pool);
  // The IPs of `pool` handed to pods that the pool status may still show as this node's
  // reservations (not yet written as pod records).
  std::set<base::IPAddress> HandedOut(const std::string& pool) const;
  // Pools where `uid` has unflushed IPs.
  std::vector<std::string> PoolsWithUnflushed(const std::string& uid);
  // Writes every unflushed assignment of `pool` into the pool status now.
  absl::Status Flush(const std::string& pool, absl::Time deadline);
  // Flush() for every pool, and the releases queued by Release() (tests that read the pools).
  absl::Status FlushAll(absl::Time deadline);
  // For a slow-path mutation whose pool is full: reservations in `state` that may still come
  // to us (other nodes' — they give idle ones back — and ours not handed out yet).
  int64_t Waitable(const std::string& pool, const ::spiderpool::ipam::PoolState& state);
  // For logs: what this node's block of `pool` holds against what `state` names as its
  // reservations ("free=N handed_out=N releasing=N untracked=N").
  std::string Describe(const std::string& pool, const ::spiderpool::ipam::PoolState& state);
  // For a slow-path mutation whose pool is full: this node's reservations in `state` that the
  // block does not track (a batch-mate's top-up in this very write, or a write reported
  // failed that landed) go to `*adopted`, for AddReserved once the write landed, as TopUp's
  // do. Marks the state dirty when there are any: the write (a no-op one is answered without
  // a new version) proves `state` current before they are handed out. Without this an ADD
  // waited its whole 30 s for IPs its own node held (ipam_e2e, 50 nodes: "all IP addresses
  // used out ... (node-11: 92, ...)" on node-11).
  void AdoptUntracked(const std::string& pool, const ::spiderpool::ipam::PoolState& state,
                      std::vector<base::IPAddress>* adopted, bool* dirty);
  // A DEL (point 5): every IP of `pool` that `uid` holds through this node — handed out from the
  // block (back into it at once) or written as its record (freed by the keeper's next write;
  // only records of `container_id`, or of no container, when it is set). Never blocks on a
  // pool write. False when the keeper is not running (the caller writes the release itself).
  bool Release(const std::string& pool, const std::string& uid, const std::string& container_id);
  // Something the prewarm depends on changed (a pod scheduled here): re-read the hooks now.
  void Poke();
  // The metadata watch saw `pool` written (by any node; see kQuietBeforeRefill).
  void NoteChanged(const std::string& pool);
  // A pool changed in a way the keeper acts on (another node asks for reservations).
  void Wake();
  // `uid` has an IP of `pool` handed out here to a container other than `container_id`.
  bool HandedToOtherContainer(const std::string& pool, const std::string& uid,
                              const std::string& container_id) const;
  // Releases queued by Release() and not written yet.
  int64_t PendingReleases() const;
  // Gives `ip` (handed to `uid` by Take and not yet flushed) back to the block. False if it was
  // not such an IP: it is (or may be) a pod record now — release it through the committer.
  // When a background write of it is on its way, waits for that write first (bounded).
  bool Unassign(const std::string& pool, const base::IPAddress& ip, const std::string& uid);

  struct Stats {
    int64_t taken = 0;       // ADDs served from a block
    int64_t reserved = 0;    // IPs reserved
    int64_t released = 0;    // reservations given back
    int64_t flushed = 0;     // assignments written as pod records
    int64_t lost = 0;        // assignments whose reservation had vanished (logged)
    int64_t prewarmed = 0;   // blocks reserved before the pool's first ADD here
    int64_t released_in_background = 0;  // pod records freed after their DEL returned
    int64_t yielded = 0;     // background writes that stepped back after a 409
  };
  Stats stats() const;

  // The flush windows (`flush_after`, `max_flush_delay`) are for a pool shared by up to this
  // many nodes; they grow with the nodes beyond, so that the pool gets about as many
  // background writes a second from 50 nodes as from 10 (each one O(the pool's records), and
  // a 409 for every other write in flight): 50 nodes sharing a pool flush every 50 s at most
  // while ADDs keep coming, and 1.5 s after the last ADD or DEL.
  static constexpr int64_t kNodesPerFlushWindow = 10;
  static int64_t CrowdOf(int64_t pool_nodes) {
    return std::max<int64_t>(1, pool_nodes / kNodesPerFlushWindow);
  }

 private:
  struct Block {
    std::string pool;  // its name
    bool loaded = false;
    std::set<base::IPAddress> free;
    std::map<base::IPAddress, ::spiderpool::ipam::AllocationRequest> assigned;
    std::set<base::IPAddress> releasing;  // being given back: never handed out again
    std::map<base::IPAddress, int> flushing;  // assignments a write is turning into records
    // Assignments whose last write failed in a way that may have landed (not a 409): a DEL or
    // an undo never puts them back into `free` (the pool may hold them as pod records).
    std::set<base::IPAddress> maybe_written;
    int64_t share = 0;  // the block size last computed by TopUp
    int topups_in_flight = 0;
    int yields_in_a_row = 0;  // background writes that lost a 409 race and stepped back
    absl::Time retry_at = absl::InfinitePast();  // after a yield
    absl::Time last_take = absl::InfinitePast();     // a hand-out or a top-up
    absl::Time last_change = absl::InfinitePast();   // the pool's last write seen (NoteChanged)
    absl::Time last_handout = absl::InfinitePast();  // Take handed an IP out
    // The pods waiting here at TopUp's last look, and when the last look found a pod that the
    // one before had not seen (a pod created since, or handed an IP without ever being seen
    // waiting): pods still being created for this node, so the waiting ones are not all of
    // its demand.
    std::set<std::string> waiting_seen;
    bool waiting_looked = false;
    absl::Time last_arrival = absl::InfinitePast();
    absl::Time first_unflushed = absl::InfiniteFuture();
    // Point 4: when the prewarm write is due (InfiniteFuture: none planned), and when it landed.
    absl::Time prewarm_at = absl::InfiniteFuture();
    absl::Time prewarmed_at = absl::InfinitePast();
    bool prewarm_done = false;
    bool taken_since_prewarm = false;
    // Point 8: an ADD of this node drew from this pool; the next standing top-up (after the
    // first one's random pause, then at most every kStandingRefill); whether the write in
    // flight is one (TopUp sizes it).
    bool ever_used = false;
    absl::Time standing_at = absl::InfiniteFuture();
    bool standing_topup = false;
    // Point 6: the most free reservations this node may keep when the pool cannot serve every
    // node (its fair part less its pods'), as of this agent's last write; unknown: no limit.
    int64_t fair_keep = std::numeric_limits<int64_t>::max();
    int64_t pool_nodes = 0;  // the nodes that part was shared among (0: unknown)
    // Pods whose slow-path ADD is writing their record here, and those that wrote it (when):
    // served outside the block, so not part of the demand a top-up reserves for; and the IPs
    // the ones still writing will take are not the top-up's to reserve (SlowPath*).
    std::set<std::string> slow_writing;
    std::map<std::string, absl::Time> slow_wrote;
    // Point 5: pod records to free (uid, container), since `first_pending`.
    std::set<std::pair<std::string, std::string>> pending_releases;
    absl::Time first_pending = absl::InfiniteFuture();
  };

  Block& BlockLocked(const std::string& pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Below half of its block: time to top up ahead of demand.
  bool Low(const Block& b) const;
  void LoadLocked(const std::string& pool, Block& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pods waiting on this node that `b` has not served yet and that are not predicted to use
  // other pools only (the demand hint, 0 if unknown).
  int64_t WaitingLocked(const Block& b, const std::string& allocating_uid = "") const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for `uids`, the pods Hooks::waiting_pods returned; with `batch_adds` (see TopUp)
  // only the slow-path ADDs among them are served already.
  int64_t CountWaitingLocked(const Block& b, std::set<std::string> uids,
                             const std::string& allocating_uid,
                             const std::set<std::string>* batch_adds = nullptr) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Point 6's fair part for `b` in `state` (sets b.fair_keep) and how many free reservations
  // to keep for the waiting pods when the pool cannot serve every node.
  void NoteFairPartLocked(Block& b, const ::spiderpool::ipam::PoolState& state,
                          const std::string& asker) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t KeepForWaitingLocked(const Block& b) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A look at the pods waiting here (`waiting`, from Hooks::waiting_pods; TopUp's and the
  // keeper's): sets b.last_arrival when pods are still being created for this node (see
  // Block::waiting_seen).
  void NoteArrivalsLocked(Block& b, absl::Time now, std::set<std::string> waiting)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The keeper's look before a top-up ahead of demand: no pod has arrived here within
  // kArrivalWindow (every one was seen waiting before it got its IP) and the block's free IPs
  // cover the pods still waiting. Such a top-up reserves nothing, and its write fails the
  // writes of other nodes whose pods wait for their first IPs.
  bool DemandCoveredLocked(Block& b, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How recent a pod's arrival makes this node's demand "still being created" for TopUp.
  static constexpr absl::Duration kArrivalWindow = absl::Seconds(1);
  // What a node whose pods are still starting keeps of its free reservations in a pool with
  // no unreserved IP left: its fair part less its pods' (before its first write of the pool,
  // when that is not known: what its waiting pods need).
  int64_t BusyHoldLocked(const Block& b) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // This node's reservations in `state` that no pod holds through the block and that are not
  // being given back (the free ones and the untracked ones).
  std::vector<base::IPAddress> UnusedLocked(const Block& b,
                                            const ::spiderpool::ipam::PoolState& state) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Of those, the ones not in `free` either: reservations the block does not track yet.
  std::vector<base::IPAddress> UntrackedLocked(const Block& b,
                                               const ::spiderpool::ipam::PoolState& state) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct SyncWhat {
    bool flush = false;
    bool free_records = false;  // the pending releases
    bool topup = false;
    bool release = false;       // every free reservation
    int64_t release_some = 0;   // or only this many (the highest)
    bool give_back = false;     // only the give-backs of an earlier write that failed
    // Stop(): also this node's reservations the block does not track (a write reported failed
    // that landed; TopUp would have adopted them), unless handed out.
    bool release_untracked = false;
    // Another node's ADD asked for idle reservations (the pool's wanted mark): it waits for
    // this give-back, so the write retries its 409s like an ADD's instead of yielding.
    bool asked = false;
  };
  absl::Status Sync(const std::string& pool, SyncWhat what, absl::Time deadline,
                    PoolCommitter::OnConflict on_conflict = PoolCommitter::OnConflict::kRetry);
  void Loop(std::stop_token stop);
  // Plans the prewarm of the pools of Hooks::prewarm_pools that have no block yet.
  void PlanPrewarm(const std::vector<std::string>& pools) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The size of a prewarmed block when no pod waits on this node yet: one kubelet batch.
  static constexpr int64_t kPrewarmWithoutDemand = 8;
  // Standing blocks (point 8) are refilled at most this often per pool.
  static constexpr absl::Duration kStandingRefill = absl::Seconds(5);
  // A block this node's pods have used is refilled to `standing` only once the pool has not
  // been written for this long: while other nodes still reserve for their pods, a refill takes
  // IPs they need and its write fails theirs (ipam_e2e, 100 nodes, every pod waiting before the
  // agents: 75 refills of nodes that were done, then as many give-backs, ~1/3 of all pool
  // writes, and nodes whose first write came last found the pool full).
  static constexpr absl::Duration kQuietBeforeRefill = absl::Seconds(2);
  // Pods known to be waiting on this node get their IPs reserved in one write, up to this many
  // blocks (`max_block` each): a Deployment landing 100 pods on a node costs one write, not two.
  static constexpr int64_t kDemandBlocks = 4;
  // Background writes that lost a 409 race step back this many times in a row, then retry at
  // once like an ADD's write (so that a busy pool cannot starve them).
  static constexpr int kMaxYields = 3;
  // How long a background write steps back: random, so that the losers spread out.
  // How long a background write that lost a 409 race steps back: a random moment in
  // [20 ms, max(200 ms, one write round trip per node writing the pool)); with 50 nodes on a
  // pool a retry within 200 ms met the next winner's write (two thirds of the keepers'
  // writes at 50 nodes were such lost retries, each a rebuild of every record).
  absl::Duration YieldPause(const Block& b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `now` plus a random pause of up to `prewarm_stagger`: the first write of agents started
  // together (prewarm, standing blocks) spread out.
  absl::Time StaggeredLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string node_;
  const BlockOptions options_;
  PoolCommitter* committer_;
  Hooks hooks_;
  base::Clock* clock_;

  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  absl::CondVar topped_up_;
  absl::CondVar flushed_;
  std::map<std::string, Block> blocks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> written_ ABSL_GUARDED_BY(mu_);  // uid -> noted at
  bool poked_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> standing_pools_ ABSL_GUARDED_BY(mu_);  // the last forecast's (point 8)
  // The last forecast's pools per waiting pod UID (WaitingLocked).
  std::map<std::string, std::vector<std::string>> predicted_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::minstd_rand rng_ ABSL_GUARDED_BY(mu_);
  std::jthread keeper_;
};

}  // namespace spiderpool::agent::ipam
