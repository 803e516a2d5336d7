#pragma once
// PoolCache: the agent's SpiderIPPools without decoding every write of every pool.
//
// Why (issue 17, bench/README "ipam_e2e"): all of a pool's records live in its status, so a pool
// of 5000 IPs is ~750 KB of JSON, and a plain informer makes every agent decode every write of
// every pool: N agents x pool size per write. At 100 nodes that alone saturated the machine
// (the 10,000-pod run collapsed); at 10 nodes it was a third of the agents' CPU.
//
// How: a metadata-only informer (client-go's metadata informer, PartialObjectMetadata) tells
// which pools exist and when each changed (resourceVersion, generation, annotations: another
// node's ask for reservations). The full objects are read (GET) only
//   - when a pool is first seen, or its generation changed (a spec change: selection must see
//     it at once; more than kListAbove such pools at once, as at start: one LIST),
//   - when a reader needs the newest status (Fresh: the committer before it writes, the rare
//     DEL paths that look for a pod's records),
//   - in the background, at most every `status_refresh` per pool that changed meanwhile (the
//     keeper's tightness, the DRA capacities: advisory, so a bounded staleness is fine), for
//     the pools `follow_status` picks (the agent's: those its node may use); times the pool's
//     refresh factor (SetRefreshFactor: the agent's grows with the nodes sharing the pool, as
//     its flush windows do, so that a pool gets about as many background reads from 50 nodes
//     as from 10),
//   - and this agent's own reads and writes of a pool are remembered (Remember).
// So another agent's write costs a metadata event here, not a decode of the whole pool.
//
// Get/List never block on the network; the handlers of AddHandlers see the full copies change;
// metadata() is the informer (its handlers see every change of a pool, at once).
// Thread-safe.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/meta.h"
#include "api/spider.h"
#include "base/clock.h"
#include "kube/controller/manager.h"
#include "kube/informer/informer.h"
#include "kube/rest/client.h"

namespace spiderpool::agent::ipam {

using PoolMeta = api::MetadataOnly<api::SpiderIPPool>;

struct PoolCacheOptions {
  // A pool whose status changed is read again at most this often in the background.
  absl::Duration status_refresh = absl::Seconds(5);
  // After a failed read.
  absl::Duration retry = absl::Seconds(1);
  base::Clock* clock = nullptr;
  kube::metrics::Registry* registry = nullptr;
  // The pools whose status changes the background refresh follows (nullptr: every pool). The
  // agent follows the pools its node may use (ipam::PoolAdmitsNode): another rack's pool is
  // read again only when its spec changes or a reader asks for Fresh. Without it every agent
  // re-read every busy pool of the cluster every `status_refresh`, thousands of records each.
  std::function<bool(const api::SpiderIPPool& pool)> follow_status;
};

class PoolCache {
 public:
  PoolCache(std::shared_ptr<kube::RestClient> rest, PoolCacheOptions options = {});
  PoolCache(const PoolCache&) = delete;
  PoolCache& operator=(const PoolCache&) = delete;

  // The newest full copy read (its spec current, its status possibly older than the pool's
  // by up to status_refresh); nullptr when the pool does not exist or was not read yet.
  std::shared_ptr<const api::SpiderIPPool> Get(const std::string& name) const;
  std::vector<std::shared_ptr<const api::SpiderIPPool>> List() const;
  // A copy at least as new as the newest resourceVersion the metadata watch has seen: read
  // (GET) when the copy is older. nullptr when the pool does not exist.
  absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> Fresh(const std::string& name);
  // Fresh, or the cached copy when the pool cannot be read now; nullptr when it is gone.
  std::shared_ptr<const api::SpiderIPPool> FreshOrCached(const std::string& name);
  // The pool's newest metadata (resourceVersion, annotations), nullptr if unknown.
  std::shared_ptr<const PoolMeta> Meta(const std::string& name) const;
  // Keeps `pool` when it is newer than the copy (this agent's reads and writes of it).
  void Remember(const api::SpiderIPPool& pool);

  // The metadata informer has synced and every pool it lists has been read once.
  bool HasSynced() const;
  // Before the runnables start. Called on the refresher's or a reader's thread.
  void AddHandlers(kube::EventHandlers<api::SpiderIPPool> handlers);
  // How many times `status_refresh` the background refresh of a pool waits (values below 1
  // count as 1; unset: 1). Called on the refresher's thread, without this cache's lock held;
  // once SetRefreshFactor returns, the factor it replaced is not called any more (its owner
  // unsets it before it goes away).
  using RefreshFactor = std::function<int64_t(const std::string& pool)>;
  void SetRefreshFactor(RefreshFactor factor);
  kube::Informer<PoolMeta>& metadata() { return meta_; }
  // The metadata informer and the refresher.
  std::vector<std::unique_ptr<kube::Runnable>> Runnables();

  int64_t reads() const;  // GETs made (tests, bench)

 private:
  struct Copy {
    std::shared_ptr<const api::SpiderIPPool> pool;
    absl::Time read_at = absl::InfinitePast();
    absl::Time retry_at = absl::InfinitePast();
  };
  // GETs `name` (counted in reads_) and keeps the answer if it is newer than the copy.
  absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> ReadAndKeep(const std::string& name);
  // Keeps `pool` when it is newer than the copy, and tells the handlers.
  void Keep(const std::shared_ptr<const api::SpiderIPPool>& pool);
  // The refresher's read of `name`; false on an error (then retried after options_.retry).
  bool Read(const std::string& name);
  // Until the metadata informer has synced (it says so after its first events, not with one).
  static constexpr absl::Duration kSyncPoll = absl::Milliseconds(20);
  // More pools than this to read in one pass: one LIST instead.
  static constexpr size_t kListAbove = 8;
  // One pass over the pools: reads what is due; returns when the next read is due.
  absl::Time Refresh();
  void RunRefresher(std::stop_token stop);
  void Wake();
  void Deliver(const std::shared_ptr<const api::SpiderIPPool>& old,
               const std::shared_ptr<const api::SpiderIPPool>& now);

  PoolCacheOptions options_;
  base::Clock& clock_;
  kube::Client<api::SpiderIPPool> pools_;
  kube::Informer<PoolMeta> meta_;
  std::vector<kube::EventHandlers<api::SpiderIPPool>> handlers_;

  mutable absl::Mutex mu_;
  std::map<std::string, Copy> copies_ ABSL_GUARDED_BY(mu_);
  bool refreshed_once_ ABSL_GUARDED_BY(mu_) = false;  // a pass after the informer synced
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  int64_t reads_ ABSL_GUARDED_BY(mu_) = 0;
  // Held while the factor is called (it takes its owner's locks, which call into this cache
  // under them: never under mu_).
  absl::Mutex factor_mu_;
  RefreshFactor refresh_factor_ ABSL_GUARDED_BY(factor_mu_);
};

}  // namespace spiderpool::agent::ipam
