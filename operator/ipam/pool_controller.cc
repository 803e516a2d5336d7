#include "operator/ipam/pool_controller.h"

#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "api/apps.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/errors.h"
#include "operator/ipam/counts.h"

namespace spiderpool::op::ipam {

namespace {

kube::metrics::Registry& Reg(kube::metrics::Registry* r) {
  return r != nullptr ? *r : kube::metrics::Registry::Default();
}

bool SameCounts(const std::optional<int64_t>& total, const std::optional<int64_t>& allocated,
                const std::optional<int64_t>& free, const IPCounts& c) {
  return total == c.total && allocated == c.allocated && free == c.free;
}

// Pools that name `subnet` as their owner.
bool OwnedBy(const api::SpiderIPPool& pool, const std::string& subnet) {
  auto it = pool.metadata.labels.find(std::string(api::kLabelOwnerSpiderSubnet));
  return it != pool.metadata.labels.end() && it->second == subnet;
}

bool IsAutoPool(const api::SpiderIPPool& pool) {
  return pool.metadata.labels.count(std::string(api::kLabelOwnerApplicationName)) > 0;
}

}  // namespace

PoolController::PoolController(PoolControllerOptions options,
                               std::shared_ptr<kube::RestClient> rest, const Caches& caches)
    : options_(std::move(options)),
      rest_(std::move(rest)),
      caches_(caches),
      pools_(rest_),
      subnets_(rest_),
      registry_(Reg(options_.registry)) {
  pool_reconciler_ = std::make_unique<kube::FuncReconciler>(
      [this](const kube::ReconcileRequest& r, std::stop_token s) {
        return ReconcilePool(r.name, s);
      });
  kube::ControllerOptions po;
  po.name = "spiderippool-status";
  po.workers = options_.pool_workers;
  po.clock = options_.clock;
  po.registry = options_.registry;
  po.cache_synced = {[this] { return caches_.pools->HasSynced(); },
                     [this] { return caches_.reserved_ips->HasSynced(); }};
  pool_ctrl_ = std::make_unique<kube::Controller>(std::move(po), pool_reconciler_.get());

  if (caches_.subnets != nullptr) {
    subnet_reconciler_ = std::make_unique<kube::FuncReconciler>(
        [this](const kube::ReconcileRequest& r, std::stop_token s) {
          return ReconcileSubnet(r.name, s);
        });
    kube::ControllerOptions so;
    so.name = "spidersubnet-status";
    so.workers = options_.subnet_workers;
    so.clock = options_.clock;
    so.registry = options_.registry;
    so.cache_synced = {[this] { return caches_.subnets->HasSynced(); },
                       [this] { return caches_.pools->HasSynced(); },
                       [this] { return caches_.reserved_ips->HasSynced(); }};
    subnet_ctrl_ = std::make_unique<kube::Controller>(std::move(so), subnet_reconciler_.get());
  }

  auto& pool_gauge = registry_
                         .AddGauge("spiderpool_total_ippool_counts",
                                   "The number of SpiderIPPools in the cluster")
                         .WithLabels();
  kube::metrics::Gauge* subnet_gauge =
      caches_.subnets == nullptr
          ? nullptr
          : &registry_
                 .AddGauge("spiderpool_total_subnet_counts",
                           "The number of SpiderSubnets in the cluster")
                 .WithLabels();
  // Per pool (upstream's debug-level names, always on here): status.totalIPCount and what is
  // free for the next pod (status.freeIPCount), for the chart's "pool nearly exhausted" alert.
  auto& pool_total = registry_.AddGauge("spiderpool_debug_ippool_total_ip_counts",
                                        "status.totalIPCount of each SpiderIPPool");
  auto& pool_free = registry_.AddGauge("spiderpool_debug_ippool_available_ip_counts",
                                       "status.freeIPCount of each SpiderIPPool");
  // Hooks run one at a time (the registry holds the hook's lock): `exposed` needs no lock.
  hook_ = registry_.AddCollectHook([this, &pool_gauge, subnet_gauge, &pool_total, &pool_free,
                                    exposed = std::set<std::string>()]() mutable {
    pool_gauge.Set(static_cast<double>(caches_.pools->store().Size()));
    if (subnet_gauge != nullptr) {
      subnet_gauge->Set(static_cast<double>(caches_.subnets->store().Size()));
    }
    std::set<std::string> now;
    for (const auto& p : caches_.pools->store().List()) {
      if (!p->status.total_ip_count || !p->status.free_ip_count) continue;  // not counted yet
      const kube::metrics::Labels l{{"ippool", p->metadata.name}};
      pool_total.WithLabels(l).Set(static_cast<double>(*p->status.total_ip_count));
      pool_free.WithLabels(l).Set(static_cast<double>(*p->status.free_ip_count));
      now.insert(p->metadata.name);
    }
    for (const std::string& gone : exposed) {
      if (now.count(gone) > 0) continue;
      pool_total.Remove({{"ippool", gone}});
      pool_free.Remove({{"ippool", gone}});
    }
    exposed = std::move(now);
  });
  RegisterHandlers();
}

PoolController::~PoolController() { registry_.RemoveCollectHook(hook_); }

void PoolController::RegisterHandlers() {
  caches_.pools->AddHandlers(
      {.on_add =
           [this](const api::SpiderIPPool& p) {
             pool_ctrl_->EnqueueKey(p.metadata.name);
             EnqueueSubnetsOfPool(p, /*search=*/true);
           },
       .on_update =
           [this](const api::SpiderIPPool&, const api::SpiderIPPool& p) {
             // Every allocation updates its pool: only the label is looked at here.
             pool_ctrl_->EnqueueKey(p.metadata.name);
             EnqueueSubnetsOfPool(p, /*search=*/false);
           },
       .on_delete =
           [this](const api::SpiderIPPool& p) { EnqueueSubnetsOfPool(p, /*search=*/true); }});
  caches_.reserved_ips->AddHandlers(
      {.on_add = [this](const api::SpiderReservedIP& r) { EnqueueReservedChange(r); },
       .on_update =
           [this](const api::SpiderReservedIP& old_r, const api::SpiderReservedIP& r) {
             if (old_r.spec.ips == r.spec.ips) return;
             EnqueueReservedChange(old_r);
             EnqueueReservedChange(r);
           },
       .on_delete = [this](const api::SpiderReservedIP& r) { EnqueueReservedChange(r); }});
  if (caches_.subnets != nullptr) {
    auto enqueue_subnet = [this](const api::SpiderSubnet& s) {
      subnet_ctrl_->EnqueueKey(s.metadata.name);
    };
    caches_.subnets->AddHandlers(
        {.on_add = enqueue_subnet,
         .on_update = [enqueue_subnet](const api::SpiderSubnet&,
                                       const api::SpiderSubnet& s) { enqueue_subnet(s); }});
  }
}

void PoolController::EnqueueReservedChange(const api::SpiderReservedIP& r) {
  std::vector<base::IPRange> ranges;
  for (const std::string& text : r.spec.ips) {
    auto range = base::IPRange::Parse(text);
    if (range.ok()) ranges.push_back(*range);
  }
  if (ranges.empty()) return;
  for (const auto& pool : caches_.pools->store().List()) {
    if (PoolOverlaps(*pool, ranges)) pool_ctrl_->EnqueueKey(pool->metadata.name);
  }
  if (caches_.subnets == nullptr) return;
  for (const auto& subnet : caches_.subnets->store().List()) {
    if (SubnetOverlaps(*subnet, ranges)) subnet_ctrl_->EnqueueKey(subnet->metadata.name);
  }
}

void PoolController::EnqueueSubnetsOfPool(const api::SpiderIPPool& pool, bool search) {
  if (caches_.subnets == nullptr) return;
  auto it = pool.metadata.labels.find(std::string(api::kLabelOwnerSpiderSubnet));
  if (it != pool.metadata.labels.end()) {
    subnet_ctrl_->EnqueueKey(it->second);
    return;
  }
  if (!search) return;
  // Unlabelled pools may still be named in a subnet's controlledIPPools (auto pools written
  // before their label): look them up. Subnets are few.
  for (const auto& subnet : caches_.subnets->store().List()) {
    auto controlled = subnet->ControlledIPPools();
    if (controlled.ok() && controlled->count(pool.metadata.name) > 0) {
      subnet_ctrl_->EnqueueKey(subnet->metadata.name);
    }
  }
}

std::vector<base::IPRange> PoolController::Reserved() const {
  return ReservedRanges(caches_.reserved_ips->store().List());
}

absl::Status PoolController::Run(std::stop_token stop) {
  SP_LOG(Info).Msg("starting IP pool status controllers")
      .KV("subnets", caches_.subnets != nullptr ? "on" : "off");
  absl::Status subnet_status;
  std::jthread subnet_thread;
  if (subnet_ctrl_ != nullptr) {
    subnet_thread = std::jthread([this, stop, &subnet_status] {
      subnet_status = subnet_ctrl_->Run(stop);
    });
  }
  absl::Status pool_status = pool_ctrl_->Run(stop);
  if (subnet_thread.joinable()) subnet_thread.join();
  SP_RETURN_IF_ERROR(pool_status);
  return subnet_status;
}

// ---- SpiderIPPool --------------------------------------------------------------------------

absl::StatusOr<kube::ReconcileResult> PoolController::ReconcilePool(const std::string& name,
                                                                    std::stop_token) {
  auto cached = caches_.pools->store().Get(name);
  if (cached == nullptr) return kube::ReconcileResult{};
  const std::vector<base::IPRange> reserved = Reserved();

  std::optional<api::SpiderIPPool> pool = *cached;
  bool first = true;
  bool finalizer_removed = false;
  absl::Status s = kube::RetryOnConflict(
      options_.conflict_retry,
      [&]() -> absl::Status {
        if (!first) {
          auto live = pools_.Get("", name);
          if (!live.ok()) {
            if (kube::IsNotFound(live.status())) {
              pool.reset();
              return absl::OkStatus();
            }
            return live.status();
          }
          pool = std::move(*live);
        }
        first = false;
        auto records = pool->AllocatedIPs();
        if (!records.ok()) {
          // Nothing sensible to count; the agent's next write (or a human) must fix it.
          SP_LOG(Error).Msg("SpiderIPPool status.allocatedIPs does not parse")
              .KV("pool", name).KV("err", records.status());
          return absl::OkStatus();
        }
        if (pool->metadata.IsDeleting() && records->empty()) {
          if (!pool->metadata.HasFinalizer(api::kSpiderFinalizer)) return absl::OkStatus();
          pool->metadata.RemoveFinalizer(api::kSpiderFinalizer);
          auto out = pools_.Update(*pool);
          if (!out.ok() && kube::IsNotFound(out.status())) return absl::OkStatus();
          if (out.ok()) finalizer_removed = true;
          return out.status();
        }
        auto counts = ComputePoolCounts(*pool, reserved);
        if (!counts.ok()) {
          SP_LOG(Error).Msg("cannot count the IPs of SpiderIPPool")
              .KV("pool", name).KV("err", counts.status());
          return absl::OkStatus();
        }
        if (api::HasPoolIPCounts(pool->status, *counts)) return absl::OkStatus();
        SP_VLOG(1).Msg("updating SpiderIPPool counts").KV("pool", name)
            .KV("total", counts->total).KV("allocated", counts->allocated)
            .KV("reserved", counts->reserved).KV("free", counts->free);
        api::SetPoolIPCounts(*counts, &pool->status);
        auto out = pools_.UpdateStatus(*pool);
        if (!out.ok() && kube::IsNotFound(out.status())) return absl::OkStatus();
        return out.status();
      });
  if (finalizer_removed) {
    SP_LOG(Info).Msg("removed the finalizer of an empty SpiderIPPool being deleted")
        .KV("pool", name);
  }
  if (!s.ok()) return kube::WithContext(s, base::StrCat("SpiderIPPool ", name));
  return kube::ReconcileResult{};
}

// ---- SpiderSubnet --------------------------------------------------------------------------

absl::StatusOr<bool> PoolController::ApplicationExists(const std::string& application) const {
  std::vector<std::string> parts = absl::StrSplit(base::ToAbsl(application), '_');
  std::string group, version, kind, ns, name;
  if (parts.size() == 4) {
    version = parts[0], kind = parts[1], ns = parts[2], name = parts[3];
  } else if (parts.size() == 5) {
    group = parts[0], version = parts[1], kind = parts[2], ns = parts[3], name = parts[4];
  } else {
    return false;
  }
  auto exists = [&](auto client) -> absl::StatusOr<bool> {
    auto got = client.Get(ns, name);
    if (got.ok()) return true;
    if (kube::IsNotFound(got.status())) return false;
    return got.status();
  };
  if (version != "v1") return true;  // not a kind we can check
  if (group.empty() && kind == "Pod") return exists(kube::Client<api::Pod>(rest_));
  if (group == "apps" && kind == "Deployment") return exists(kube::Client<api::Deployment>(rest_));
  if (group == "apps" && kind == "ReplicaSet") return exists(kube::Client<api::ReplicaSet>(rest_));
  if (group == "apps" && kind == "StatefulSet") {
    return exists(kube::Client<api::StatefulSet>(rest_));
  }
  if (group == "apps" && kind == "DaemonSet") return exists(kube::Client<api::DaemonSet>(rest_));
  if (group == "batch" && kind == "Job") return exists(kube::Client<api::Job>(rest_));
  if (group == "batch" && kind == "CronJob") return exists(kube::Client<api::CronJob>(rest_));
  return true;  // third-party controller: keep
}

absl::StatusOr<kube::ReconcileResult> PoolController::ReconcileSubnet(const std::string& name,
                                                                      std::stop_token) {
  if (caches_.subnets == nullptr) return kube::ReconcileResult{};
  auto cached = caches_.subnets->store().Get(name);
  if (cached == nullptr) return kube::ReconcileResult{};
  const std::vector<base::IPRange> reserved = Reserved();
  const auto pools = caches_.pools->store().List();

  std::optional<api::SpiderSubnet> subnet = *cached;
  bool first = true;
  bool finalizer_removed = false;
  absl::Status s = kube::RetryOnConflict(options_.conflict_retry, [&]() -> absl::Status {
    if (!first) {
      auto live = subnets_.Get("", name);
      if (!live.ok()) {
        if (kube::IsNotFound(live.status())) return absl::OkStatus();
        return live.status();
      }
      subnet = std::move(*live);
    }
    first = false;
    auto current = subnet->ControlledIPPools();
    const bool unparsable = !current.ok();
    if (unparsable) {
      SP_LOG(Error).Msg("SpiderSubnet status.controlledIPPools does not parse")
          .KV("subnet", name).KV("err", current.status());
      current = api::PoolIPPreAllocations{};  // rebuilt from scratch below
    }
    const auto family = FamilyOf(subnet->spec.ip_version, subnet->spec.subnet);
    auto subnet_usable =
        UsableRanges(subnet->spec.ips, subnet->spec.exclude_ips, family);
    if (!subnet_usable.ok()) {
      SP_LOG(Error).Msg("cannot count the IPs of SpiderSubnet")
          .KV("subnet", name).KV("err", subnet_usable.status());
      return absl::OkStatus();
    }

    // Rebuild controlledIPPools (see the header).
    std::set<std::string> pool_names;
    for (const auto& p : pools) pool_names.insert(p->metadata.name);
    api::PoolIPPreAllocations want;
    for (const auto& [key, entry] : *current) {
      if (!entry.application.has_value()) continue;  // manual pools: rebuilt below
      // Keys are pool names; operator/subnet also writes "<pool>/releasing".
      const std::string pool = key.substr(0, key.find('/'));
      if (pool_names.count(pool) == 0) {
        // Dropped only when no pool can list these IPs any more (checked live: our cache may
        // not have a pool created a moment ago) and no application will claim them.
        SP_ASSIGN_OR_RETURN(bool app, ApplicationExists(*entry.application));
        bool pool_exists = false;
        if (!app) {
          auto live = pools_.Get("", pool);
          if (!live.ok() && !kube::IsNotFound(live.status())) return live.status();
          pool_exists = live.ok();
        }
        if (!app && !pool_exists) {
          SP_LOG(Info).Msg("dropping the pre-allocation of a deleted application's pool")
              .KV("subnet", name).KV("entry", key).KV("application", *entry.application);
          continue;
        }
      }
      want[key] = entry;
    }
    for (const auto& p : pools) {
      if (!OwnedBy(*p, name) || IsAutoPool(*p) || want.count(p->metadata.name) > 0) continue;
      auto usable = UsableRanges(p->spec.ips, p->spec.exclude_ips, family);
      if (!usable.ok()) continue;
      // usable ∩ subnet = usable - (usable - subnet)
      std::vector<base::IPRange> outside = base::SubtractIPRanges(*usable, *subnet_usable);
      std::vector<base::IPRange> inside = base::SubtractIPRanges(*usable, outside);
      if (inside.empty()) continue;
      want[p->metadata.name] = api::PoolIPPreAllocation{.ips = base::FormatIPRanges(inside)};
    }

    if (subnet->metadata.IsDeleting() && want.empty()) {
      if (!subnet->metadata.HasFinalizer(api::kSpiderFinalizer)) return absl::OkStatus();
      subnet->metadata.RemoveFinalizer(api::kSpiderFinalizer);
      auto out = subnets_.Update(*subnet);
      if (!out.ok() && kube::IsNotFound(out.status())) return absl::OkStatus();
      if (out.ok()) finalizer_removed = true;
      return out.status();
    }

    auto counts = ComputeSubnetCounts(*subnet, want, reserved);
    if (!counts.ok()) return absl::OkStatus();  // usable parsed above; cannot happen
    const auto& st = subnet->status;
    const bool same_pools = !unparsable && *current == want;
    if (same_pools &&
        SameCounts(st.total_ip_count, st.allocated_ip_count, st.free_ip_count, *counts)) {
      return absl::OkStatus();
    }
    subnet->SetControlledIPPools(want);
    subnet->status.total_ip_count = counts->total;
    subnet->status.allocated_ip_count = counts->allocated;
    subnet->status.free_ip_count = counts->free;
    auto out = subnets_.UpdateStatus(*subnet);
    if (!out.ok() && kube::IsNotFound(out.status())) return absl::OkStatus();
    return out.status();
  });
  if (finalizer_removed) {
    SP_LOG(Info).Msg("removed the finalizer of a SpiderSubnet being deleted").KV("subnet", name);
  }
  if (!s.ok()) return kube::WithContext(s, base::StrCat("SpiderSubnet ", name));
  return kube::ReconcileResult{};
}

}  // namespace spiderpool::op::ipam
