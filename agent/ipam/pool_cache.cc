#include "agent/ipam/pool_cache.h"

#include <algorithm>
#include <stop_token>
#include <utility>

#include "agent/ipam/committer.h"
#include "base/log.h"
#include "kube/rest/errors.h"

namespace spiderpool::agent::ipam {

PoolCache::PoolCache(std::shared_ptr<kube::RestClient> rest, PoolCacheOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()),
      pools_(rest),
      meta_(std::move(rest), {.clock = options_.clock, .registry = options_.registry}) {
  auto wake = [this](const PoolMeta&) { Wake(); };
  meta_.AddHandlers({.on_add = wake,
                     .on_update = [this](const PoolMeta&, const PoolMeta&) { Wake(); },
                     .on_delete = wake});
}

std::shared_ptr<const api::SpiderIPPool> PoolCache::Get(const std::string& name) const {
  if (meta_.store().Get(name) == nullptr) return nullptr;  // deleted (or not listed yet)
  absl::MutexLock l(&mu_);
  auto it = copies_.find(name);
  return it == copies_.end() ? nullptr : it->second.pool;
}

std::vector<std::shared_ptr<const api::SpiderIPPool>> PoolCache::List() const {
  std::vector<std::shared_ptr<const api::SpiderIPPool>> out;
  const std::vector<std::shared_ptr<const PoolMeta>> metas = meta_.store().List();
  absl::MutexLock l(&mu_);
  for (const auto& m : metas) {
    auto it = copies_.find(m->metadata.name);
    if (it != copies_.end() && it->second.pool != nullptr) out.push_back(it->second.pool);
  }
  return out;
}

std::shared_ptr<const PoolMeta> PoolCache::Meta(const std::string& name) const {
  return meta_.store().Get(name);
}

absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> PoolCache::Fresh(
    const std::string& name) {
  std::shared_ptr<const PoolMeta> m = Meta(name);
  {
    absl::MutexLock l(&mu_);
    auto it = copies_.find(name);
    if (m != nullptr && it != copies_.end() && it->second.pool != nullptr &&
        !ResourceVersionNewer(m->metadata.resource_version,
                              it->second.pool->metadata.resource_version)) {
      return it->second.pool;
    }
  }
  absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> got = ReadAndKeep(name);
  if (!got.ok() && kube::IsNotFound(got.status())) {
    return std::shared_ptr<const api::SpiderIPPool>();  // gone
  }
  return got;
}

std::shared_ptr<const api::SpiderIPPool> PoolCache::FreshOrCached(const std::string& name) {
  absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> fresh = Fresh(name);
  return fresh.ok() ? *fresh : Get(name);
}

absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> PoolCache::ReadAndKeep(
    const std::string& name) {
  absl::StatusOr<api::SpiderIPPool> got = pools_.Get("", name);
  {
    absl::MutexLock l(&mu_);
    ++reads_;
  }
  if (!got.ok()) return got.status();
  auto pool = std::make_shared<const api::SpiderIPPool>(*std::move(got));
  Keep(pool);
  return pool;
}

void PoolCache::Remember(const api::SpiderIPPool& pool) {
  Keep(std::make_shared<const api::SpiderIPPool>(pool));
}

void PoolCache::Keep(const std::shared_ptr<const api::SpiderIPPool>& now) {
  std::shared_ptr<const api::SpiderIPPool> old;
  {
    absl::MutexLock l(&mu_);
    Copy& c = copies_[now->metadata.name];
    if (c.pool != nullptr && !ResourceVersionNewer(now->metadata.resource_version,
                                                   c.pool->metadata.resource_version)) {
      return;
    }
    old = std::exchange(c.pool, now);
    c.read_at = clock_.Now();
  }
  Deliver(old, now);
}

bool PoolCache::HasSynced() const {
  if (!meta_.HasSynced()) return false;
  absl::MutexLock l(&mu_);
  return refreshed_once_;
}

void PoolCache::AddHandlers(kube::EventHandlers<api::SpiderIPPool> handlers) {
  handlers_.push_back(std::move(handlers));
}

void PoolCache::SetRefreshFactor(RefreshFactor factor) {
  {
    absl::MutexLock l(&factor_mu_);
    refresh_factor_ = std::move(factor);
  }
  Wake();  // the refresher's next read may be due earlier now
}

std::vector<std::unique_ptr<kube::Runnable>> PoolCache::Runnables() {
  std::vector<std::unique_ptr<kube::Runnable>> out;
  out.push_back(kube::InformerRunnable(&meta_));
  out.push_back(std::make_unique<kube::FuncRunnable>(
      "spiderippools/refresher", /*needs_leader=*/false, [this](std::stop_token stop) {
        RunRefresher(stop);
        return absl::OkStatus();
      }));
  return out;
}

int64_t PoolCache::reads() const {
  absl::MutexLock l(&mu_);
  return reads_;
}

bool PoolCache::Read(const std::string& name) {
  absl::StatusOr<std::shared_ptr<const api::SpiderIPPool>> got = ReadAndKeep(name);
  if (got.ok()) return true;
  if (kube::IsNotFound(got.status())) return true;  // deleted meanwhile: the watch will say
  // A pool that does not decode is skipped (as an informer skips it) and read again later; one
  // that could not be read is retried soon, and the cache has not synced before it is read.
  const bool undecodable = absl::IsDataLoss(got.status());
  SP_LOG(Warning).Msg(undecodable ? "skipping a SpiderIPPool that does not decode"
                                  : "reading SpiderIPPool failed; will retry")
      .KV("pool", name).KV("err", got.status());
  absl::MutexLock l(&mu_);
  copies_[name].retry_at =
      clock_.Now() + (undecodable ? std::max(options_.status_refresh, options_.retry)
                                  : options_.retry);
  return undecodable;
}

absl::Time PoolCache::Refresh() {
  // Nothing before the metadata informer has listed every pool: then the first pass reads
  // them all at once (one LIST when they are many).
  if (!meta_.HasSynced()) return clock_.Now() + kSyncPoll;
  const std::vector<std::shared_ptr<const PoolMeta>> metas = meta_.store().List();
  std::map<std::string, int64_t> factors;
  {
    absl::ReaderMutexLock l(&factor_mu_);
    if (refresh_factor_) {
      for (const auto& m : metas) factors[m->metadata.name] = refresh_factor_(m->metadata.name);
    }
  }
  std::vector<std::string> due;
  absl::Time next = absl::InfiniteFuture();
  std::vector<std::shared_ptr<const api::SpiderIPPool>> gone;
  {
    absl::MutexLock l(&mu_);
    const absl::Time now = clock_.Now();
    std::map<std::string, Copy> kept;
    for (const auto& m : metas) {
      const std::string& name = m->metadata.name;
      auto it = copies_.find(name);
      Copy c = it == copies_.end() ? Copy{} : std::move(it->second);
      if (now >= c.retry_at) {
        // A new pool, a spec change, or a pool deleted and created again under its name
        // (generation 1 again) between two passes.
        const bool spec_changed = c.pool == nullptr ||
                                  c.pool->metadata.generation != m->metadata.generation ||
                                  c.pool->metadata.uid != m->metadata.uid;
        const bool status_changed =
            c.pool != nullptr && ResourceVersionNewer(m->metadata.resource_version,
                                                      c.pool->metadata.resource_version);
        if (spec_changed) {
          due.push_back(name);
        } else if (status_changed &&
                   (!options_.follow_status || options_.follow_status(*c.pool))) {
          auto f = factors.find(name);
          const absl::Time at =
              c.read_at + options_.status_refresh *
                              std::max<int64_t>(1, f == factors.end() ? 1 : f->second);
          if (now >= at) due.push_back(name); else next = std::min(next, at);
        }
      } else {
        next = std::min(next, c.retry_at);
      }
      kept.emplace(name, std::move(c));
    }
    for (auto& [name, c] : copies_) {
      if (!kept.count(name) && c.pool != nullptr) gone.push_back(c.pool);
    }
    copies_ = std::move(kept);
  }
  for (const auto& p : gone) {
    for (auto& h : handlers_) {
      if (h.on_delete) h.on_delete(*p);
    }
  }
  if (due.size() > kListAbove) {
    // Many pools to read at once (the first pass in a cluster of many pools): one paginated
    // LIST instead of a GET each; a LIST is a consistent read, so its copies are at least as
    // new as the metadata this pass saw.
    absl::StatusOr<api::List<api::SpiderIPPool>> all = pools_.ListAll("");
    {
      absl::MutexLock l(&mu_);
      ++reads_;
    }
    if (all.ok()) {
      for (const api::SpiderIPPool& p : all->items) Remember(p);
      std::vector<std::string> unlisted;  // created after the LIST's snapshot
      absl::MutexLock l(&mu_);
      for (const std::string& name : due) {
        auto it = copies_.find(name);
        if (it == copies_.end() || it->second.pool == nullptr) unlisted.push_back(name);
      }
      due = std::move(unlisted);
    } else {
      SP_LOG(Warning).Msg("listing SpiderIPPools failed; reading them one by one")
          .KV("err", all.status());
    }
  }
  bool all_read = true;
  for (const std::string& name : due) all_read = Read(name) && all_read;
  absl::MutexLock l(&mu_);
  if (all_read) refreshed_once_ = true;
  for (const auto& [name, c] : copies_) {
    if (c.retry_at > clock_.Now()) next = std::min(next, c.retry_at);
  }
  return next;
}

void PoolCache::RunRefresher(std::stop_token stop) {
  std::stop_callback on_stop(stop, [this] { Wake(); });
  while (!stop.stop_requested()) {
    const absl::Time next = Refresh();
    absl::MutexLock l(&mu_);
    // Real-time waits in slices, so that a simulated clock's time is noticed too.
    while (!woken_ && !stop.stop_requested() && clock_.Now() < next) {
      mu_.AwaitWithTimeout(absl::Condition(&woken_),
                           std::min(next - clock_.Now(), absl::Milliseconds(200)));
    }
    woken_ = false;
  }
}

void PoolCache::Wake() {
  absl::MutexLock l(&mu_);
  woken_ = true;
}

void PoolCache::Deliver(const std::shared_ptr<const api::SpiderIPPool>& old,
                        const std::shared_ptr<const api::SpiderIPPool>& now) {
  for (auto& h : handlers_) {
    if (old == nullptr) {
      if (h.on_add) h.on_add(*now);
    } else if (h.on_update) {
      h.on_update(*old, *now);
    }
  }
}

}  // namespace spiderpool::agent::ipam
