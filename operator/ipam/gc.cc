#include "operator/ipam/gc.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "api/kubevirt.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/errors.h"
#include "operator/ipam/counts.h"

namespace spiderpool::op::ipam {

namespace {

// A StatefulSet scale-down enqueues at most this many ordinals (a guard against absurd specs).
constexpr int64_t kMaxOrdinalsPerEvent = 100000;
// first_terminal_ is dropped whole beyond this (it is only a fallback for pods without
// container finish times).
constexpr size_t kMaxFirstTerminal = 100000;

kube::metrics::Registry& Reg(kube::metrics::Registry* r) {
  return r != nullptr ? *r : kube::metrics::Registry::Default();
}

bool Dying(const api::Pod& pod) {
  return pod.metadata.IsDeleting() || pod.status.phase == api::kPodSucceeded ||
         pod.status.phase == api::kPodFailed;
}

// "ns/name" -> {ns, name}; nullopt unless both parts are non-empty.
std::optional<std::pair<std::string, std::string>> SplitKey(const std::string& key) {
  size_t slash = key.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == key.size() ||
      key.find('/', slash + 1) != std::string::npos) {
    return std::nullopt;
  }
  return std::make_pair(key.substr(0, slash), key.substr(slash + 1));
}

template <typename T>
absl::StatusOr<std::shared_ptr<const T>> GetOrNull(const kube::Client<T>& client,
                                                   const std::string& ns,
                                                   const std::string& name) {
  auto got = client.Get(ns, name);
  if (got.ok()) return std::make_shared<const T>(std::move(*got));
  if (kube::IsNotFound(got.status())) return std::shared_ptr<const T>();
  return got.status();
}

bool IsKubevirtEndpoint(const api::SpiderEndpoint* ep) {
  return ep != nullptr && ep->status.has_value() &&
         ep->status->owner_controller_type == "VirtualMachineInstance";
}

std::vector<int64_t> OrdinalsLeaving(const api::StatefulSet& old_sts,
                                     const api::StatefulSet* new_sts) {
  std::vector<int64_t> out;
  const int64_t start = api::StatefulSetOrdinalStart(old_sts);
  const int64_t n = std::min<int64_t>(api::StatefulSetReplicas(old_sts), kMaxOrdinalsPerEvent);
  for (int64_t o = start; o < start + n; ++o) {
    if (new_sts == nullptr || !api::StatefulSetCoversOrdinal(*new_sts, o)) out.push_back(o);
  }
  return out;
}

}  // namespace

IPGarbageCollector::IPGarbageCollector(GCOptions options, std::shared_ptr<kube::RestClient> rest,
                                       const Caches& caches)
    : options_(std::move(options)),
      policy_{.additional_grace_delay = options_.additional_grace_delay,
              .enable_statefulset = options_.enable_statefulset,
              .gc_terminating_pod_on_ready_node = options_.gc_terminating_pod_on_ready_node,
              .gc_terminating_pod_on_not_ready_node =
                  options_.gc_terminating_pod_on_not_ready_node,
              .enable_kubevirt_static_ip = options_.enable_kubevirt_static_ip},
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()),
      rest_(std::move(rest)),
      caches_(caches),
      pools_(rest_),
      endpoints_(rest_),
      pods_(rest_),
      nodes_(rest_),
      statefulsets_(rest_),
      gc_counts_(Reg(options_.registry)
                     .AddCounter("spiderpool_ip_gc_counts_total",
                                 "IPs released by the IP garbage collector")
                     .WithLabels()),
      gc_failures_(Reg(options_.registry)
                       .AddCounter("spiderpool_ip_gc_failure_counts_total",
                                   "IP releases of the IP garbage collector that failed")
                       .WithLabels()),
      gc_by_reason_(Reg(options_.registry)
                        .AddCounter("spiderpool_ip_gc_total",
                                    "IPs released by the IP garbage collector, by reason")),
      endpoint_gc_(Reg(options_.registry)
                       .AddCounter("spiderpool_endpoint_gc_total",
                                   "SpiderEndpoints deleted by the IP garbage collector, by "
                                   "reason")),
      scans_total_(Reg(options_.registry)
                       .AddCounter("spiderpool_ip_gc_scans_total",
                                   "Full scans of every SpiderIPPool by the IP garbage collector")
                       .WithLabels()) {
  for (GCReason r : {GCReason::kPodMissing, GCReason::kPodUIDMismatch, GCReason::kNodeMissing,
                     GCReason::kPodTerminated, GCReason::kPodTerminating,
                     GCReason::kKubevirtVMGone}) {
    gc_by_reason_.WithLabels({{"reason", std::string(GCReasonName(r))}});
    endpoint_gc_.WithLabels({{"reason", std::string(GCReasonName(r))}});
  }
  reconciler_ = std::make_unique<kube::FuncReconciler>(
      [this](const kube::ReconcileRequest& r, std::stop_token stop) {
        return ReconcilePod(r.namespace_, r.name, stop);
      });
  kube::ControllerOptions co;
  co.name = "spiderpool-ip-gc";
  co.workers = options_.workers;
  co.clock = options_.clock;
  co.registry = options_.registry;
  co.cache_synced = {[this] { return CachesSynced(); }};
  ctrl_ = std::make_unique<kube::Controller>(std::move(co), reconciler_.get());

  caches_.pools->AddIndexer(kPoolPodIndex, [](const api::SpiderIPPool& pool) {
    std::vector<std::string> keys;
    auto records = pool.AllocatedIPs();
    if (!records.ok()) return keys;
    std::set<std::string> unique;
    for (const auto& [ip, rec] : *records) {
      if (!api::IsNodeReservation(rec)) unique.insert(rec.pod);
    }
    keys.assign(unique.begin(), unique.end());
    return keys;
  });
  RegisterHandlers();
}

IPGarbageCollector::~IPGarbageCollector() = default;

bool IPGarbageCollector::CachesSynced() const {
  return caches_.pools->HasSynced() && caches_.endpoints->HasSynced() &&
         caches_.pods->HasSynced() && caches_.nodes->HasSynced() &&
         (caches_.statefulsets == nullptr || caches_.statefulsets->HasSynced());
}

void IPGarbageCollector::Enqueue(const std::string& key) {
  if (running_.load()) ctrl_->EnqueueKey(key);
}

void IPGarbageCollector::RegisterHandlers() {
  caches_.pods->AddHandlers(
      {.on_add =
           [this](const api::Pod& p) {
             if (Dying(p)) Enqueue(p.metadata.Key());
           },
       .on_update =
           [this](const api::Pod&, const api::Pod& p) {
             if (Dying(p)) Enqueue(p.metadata.Key());
           },
       .on_delete =
           [this](const api::Pod& p) {
             {
               std::lock_guard<std::mutex> l(mu_);
               first_terminal_.erase(p.metadata.uid);
             }
             Enqueue(p.metadata.Key());
             // A VM's pod: its IPs are kept under the VMI's name; look at them now (the VM
             // may be being deleted) rather than at the next full scan.
             for (const api::OwnerReference& r : p.metadata.owner_references) {
               if (r.controller.value_or(false) &&
                   api::kubevirt::IsVMIOwner(r.api_version, r.kind)) {
                 Enqueue(base::StrCat(p.metadata.namespace_, "/", r.name));
               }
             }
           }});
  caches_.nodes->AddHandlers({.on_delete = [this](const api::Node& n) {
    if (!running_.load()) return;
    for (const auto& pod : caches_.pods->store().List()) {
      if (pod->spec.node_name == n.metadata.name) Enqueue(pod->metadata.Key());
    }
  }});
  auto check_endpoint = [this](const api::SpiderEndpoint& ep) {
    if (!running_.load()) return;
    auto pod = caches_.pods->store().Get(ep.metadata.Key());
    const std::string uid = ep.status.has_value() ? ep.status->current.uid : "";
    if (pod == nullptr || pod->metadata.uid != uid || Dying(*pod)) Enqueue(ep.metadata.Key());
  };
  caches_.endpoints->AddHandlers(
      {.on_add = check_endpoint,
       .on_update = [check_endpoint](const api::SpiderEndpoint&,
                                     const api::SpiderEndpoint& ep) { check_endpoint(ep); }});
  if (caches_.statefulsets != nullptr && options_.enable_statefulset) {
    auto leaving = [this](const api::StatefulSet& old_sts, const api::StatefulSet* new_sts) {
      if (!running_.load()) return;
      for (int64_t o : OrdinalsLeaving(old_sts, new_sts)) {
        Enqueue(base::StrCat(old_sts.metadata.namespace_, "/", old_sts.metadata.name, "-", o));
      }
    };
    caches_.statefulsets->AddHandlers(
        {.on_update =
             [leaving](const api::StatefulSet& old_sts, const api::StatefulSet& sts) {
               leaving(old_sts, sts.metadata.IsDeleting() ? nullptr : &sts);
             },
         .on_delete = [leaving](const api::StatefulSet& sts) { leaving(sts, nullptr); }});
  }
}

size_t IPGarbageCollector::TriggerScan() {
  if (!running_.load()) return 0;
  std::set<std::string> keys;
  // pool -> node -> IPs: node reservations (api::IsNodeReservation) of nodes not in the cache.
  std::map<std::string, std::map<std::string, std::vector<std::string>>> gone;
  for (const auto& pool : caches_.pools->store().List()) {
    auto records = pool->AllocatedIPs();
    if (!records.ok()) {
      SP_LOG(Warning).Msg("IP GC: skipping a pool whose allocatedIPs do not parse")
          .KV("pool", pool->metadata.name).KV("err", records.status());
      continue;
    }
    for (const auto& [ip, rec] : *records) {
      if (!api::IsNodeReservation(rec)) {
        keys.insert(rec.pod);
      } else if (caches_.nodes->store().Get(*rec.node) == nullptr) {
        gone[pool->metadata.name][*rec.node].push_back(ip);
      }
    }
  }
  for (const auto& [pool, by_node] : gone) {
    for (const auto& [node, ips] : by_node) ReleaseReservationsOfGoneNode(pool, node, ips);
  }
  for (const std::string& key : caches_.endpoints->store().Keys()) keys.insert(key);
  for (const std::string& key : keys) ctrl_->EnqueueKey(key);
  scans_total_.Inc();
  scans_.fetch_add(1);
  SP_VLOG(1).Msg("IP GC scan enqueued pods").KV("pods", keys.size());
  return keys.size();
}

absl::Status IPGarbageCollector::Run(std::stop_token stop) {
  running_.store(true);
  absl::Status worker_status;
  std::jthread workers([this, stop, &worker_status] { worker_status = ctrl_->Run(stop); });
  while (!CachesSynced()) {
    if (!base::RealClock::Get().SleepFor(absl::Milliseconds(20), stop)) break;
  }
  SP_LOG(Info).Msg("IP GC started")
      .KV("interval", absl::FormatDuration(options_.interval))
      .KV("additional_grace_delay", absl::FormatDuration(options_.additional_grace_delay))
      .KV("statefulset", options_.enable_statefulset ? "on" : "off");
  while (!stop.stop_requested()) {
    const absl::Time started = clock_.Now();
    TriggerScan();
    if (!clock_.SleepUntil(started + options_.interval, stop)) break;
  }
  workers.join();
  running_.store(false);
  return worker_status;
}

std::vector<IPGarbageCollector::Record> IPGarbageCollector::CachedRecords(
    const std::string& key) const {
  std::vector<Record> out;
  for (const auto& pool : caches_.pools->store().ByIndex(kPoolPodIndex, key)) {
    auto records = pool->AllocatedIPs();
    if (!records.ok()) continue;
    for (const auto& [ip, rec] : *records) {
      if (rec.pod == key) out.push_back({pool->metadata.name, ip, rec.pod_uid});
    }
  }
  return out;
}

absl::StatusOr<std::vector<IPGarbageCollector::Record>> IPGarbageCollector::LiveRecords(
    const std::string& key, const std::vector<Record>& cached,
    const api::SpiderEndpoint* endpoint) const {
  std::set<std::string> pools;
  for (const Record& r : cached) pools.insert(r.pool);
  if (endpoint != nullptr && endpoint->status.has_value()) {
    for (const api::IPAllocationDetail& d : endpoint->status->current.ips) {
      if (d.ipv4_pool.has_value()) pools.insert(*d.ipv4_pool);
      if (d.ipv6_pool.has_value()) pools.insert(*d.ipv6_pool);
    }
  }
  std::vector<Record> out;
  for (const std::string& name : pools) {
    SP_ASSIGN_OR_RETURN(auto pool, GetOrNull(pools_, "", name));
    if (pool == nullptr) continue;
    auto records = pool->AllocatedIPs();
    if (!records.ok()) continue;  // TriggerScan logs pools whose records do not parse
    for (const auto& [ip, rec] : *records) {
      if (rec.pod == key) out.push_back({name, ip, rec.pod_uid});
    }
  }
  return out;
}

PodFacts IPGarbageCollector::CachedFacts(const std::string& ns, const std::string& name) const {
  const std::string key = ns + "/" + name;
  PodFacts f;
  f.pod = caches_.pods->store().Get(key);
  f.endpoint = caches_.endpoints->store().Get(key);
  f.kubevirt_vm = IsKubevirtEndpoint(f.endpoint.get());
  if (f.kubevirt_vm && options_.enable_kubevirt_static_ip) {
    // KubeVirt objects are not cached (KubeVirt may not even be installed): ask. On an error
    // the VM is assumed to want its IPs; nothing is reclaimed on a guess.
    absl::StatusOr<bool> wants = VMWantsItsIPs(ns, name);
    f.kubevirt_vm_wants_ips = !wants.ok() || *wants;
  }
  if (f.pod != nullptr && !f.pod->spec.node_name.empty()) {
    auto node = caches_.nodes->store().Get(f.pod->spec.node_name);
    f.node_exists = node != nullptr;
    f.node_ready = node != nullptr && api::NodeIsReady(*node);
  }
  if (options_.enable_statefulset && caches_.statefulsets != nullptr) {
    if (auto ref = StatefulSetOwnerOf(name, f.pod.get(), f.endpoint.get())) {
      auto sts = caches_.statefulsets->store().Get(ns + "/" + ref->statefulset);
      f.valid_statefulset_pod = IsValidStatefulSetPod(*ref, sts.get());
    }
  }
  return f;
}

absl::StatusOr<PodFacts> IPGarbageCollector::LiveFacts(const std::string& ns,
                                                       const std::string& name) const {
  PodFacts f;
  SP_ASSIGN_OR_RETURN(f.pod, GetOrNull(pods_, ns, name));
  SP_ASSIGN_OR_RETURN(f.endpoint, GetOrNull(endpoints_, ns, name));
  f.kubevirt_vm = IsKubevirtEndpoint(f.endpoint.get());
  if (f.kubevirt_vm && options_.enable_kubevirt_static_ip) {
    SP_ASSIGN_OR_RETURN(f.kubevirt_vm_wants_ips, VMWantsItsIPs(ns, name));
  }
  if (f.pod != nullptr && !f.pod->spec.node_name.empty()) {
    SP_ASSIGN_OR_RETURN(auto node, GetOrNull(nodes_, "", f.pod->spec.node_name));
    f.node_exists = node != nullptr;
    f.node_ready = node != nullptr && api::NodeIsReady(*node);
  }
  if (options_.enable_statefulset) {
    if (auto ref = StatefulSetOwnerOf(name, f.pod.get(), f.endpoint.get())) {
      SP_ASSIGN_OR_RETURN(auto sts, GetOrNull(statefulsets_, ns, ref->statefulset));
      f.valid_statefulset_pod = IsValidStatefulSetPod(*ref, sts.get());
    }
  }
  return f;
}

absl::StatusOr<bool> IPGarbageCollector::VMWantsItsIPs(const std::string& ns,
                                                       const std::string& vmi) const {
  return api::kubevirt::VMWantsItsIPs([&](const api::ResourceInfo& r) {
    return kube::DynamicClient(rest_, r).GetMetadata(ns, vmi);
  });
}

void IPGarbageCollector::NoteTerminal(PodFacts* facts, absl::Time now) {
  if (facts->pod == nullptr) return;
  const api::Pod& pod = *facts->pod;
  if (pod.status.phase != api::kPodSucceeded && pod.status.phase != api::kPodFailed) return;
  std::lock_guard<std::mutex> l(mu_);
  if (first_terminal_.size() >= kMaxFirstTerminal) first_terminal_.clear();
  auto [it, inserted] = first_terminal_.emplace(pod.metadata.uid, now);
  facts->first_seen_terminal = it->second;
}

absl::StatusOr<kube::ReconcileResult> IPGarbageCollector::ReconcilePod(const std::string& ns,
                                                                       const std::string& name,
                                                                       std::stop_token) {
  const std::string key = ns + "/" + name;
  if (!SplitKey(key).has_value()) {
    SP_LOG(Warning).Msg("IP GC: ignoring a record whose pod is not \"ns/name\"").KV("pod", key);
    return kube::ReconcileResult{};
  }
  const absl::Time now = clock_.Now();
  std::vector<Record> records = CachedRecords(key);
  PodFacts facts = CachedFacts(ns, name);
  NoteTerminal(&facts, now);

  auto endpoint_uid = [](const PodFacts& f) -> std::optional<std::string> {
    if (f.endpoint == nullptr || !f.endpoint->status.has_value()) return std::nullopt;
    return f.endpoint->status->current.uid;
  };
  auto any_reclaim = [&](const PodFacts& f) {
    for (const Record& r : records) {
      if (Decide(policy_, f, r.uid, r.ip, now).action == Verdict::Action::kReclaim) return true;
    }
    auto uid = endpoint_uid(f);
    return uid.has_value() &&
           Decide(policy_, f, *uid, "", now).action == Verdict::Action::kReclaim;
  };
  if (records.empty() && facts.endpoint == nullptr) return kube::ReconcileResult{};
  if (any_reclaim(facts)) {
    // The caches may lag behind (a pod created a moment ago, a StatefulSet scaled back up, a
    // record rewritten for a VM's new pod): never reclaim on cached evidence alone. A stale
    // record would be released by nobody (removal requires its UID) and no later event points
    // here. Records are read before the facts: a pod of that name created in between has a
    // UID that none of these records holds, so its IPs are not touched.
    SP_ASSIGN_OR_RETURN(records, LiveRecords(key, records, facts.endpoint.get()));
    SP_ASSIGN_OR_RETURN(facts, LiveFacts(ns, name));
    NoteTerminal(&facts, now);
  }

  absl::Time wait_until = absl::InfiniteFuture();
  std::map<std::string, std::map<std::string, std::string>> release;  // pool -> ip -> uid
  std::map<std::string, GCReason> reasons;                            // ip -> reason
  std::map<std::string, std::string> details;                         // ip -> why
  for (const Record& r : records) {
    Verdict v = Decide(policy_, facts, r.uid, r.ip, now);
    if (v.action == Verdict::Action::kWait) {
      wait_until = std::min(wait_until, v.deadline);
    } else if (v.action == Verdict::Action::kReclaim) {
      release[r.pool][r.ip] = r.uid;
      reasons[r.ip] = v.reason;
      details[r.ip] = std::move(v.detail);
    } else {
      SP_VLOG(2).Msg("IP GC: keeping").KV("ip", r.ip).KV("pod", key).KV("why", v.detail);
    }
  }

  absl::Status first_error;
  std::set<std::string> failed_uids;
  for (const auto& [pool, ips] : release) {
    auto released = ReleaseFromPool(pool, key, ips);
    if (!released.ok()) {
      gc_failures_.Inc(static_cast<double>(ips.size()));
      for (const auto& [ip, uid] : ips) failed_uids.insert(uid);
      SP_LOG(Error).Msg("IP GC: releasing from pool failed").KV("pool", pool).KV("pod", key)
          .KV("err", released.status());
      if (first_error.ok()) first_error = released.status();
      continue;
    }
    for (const std::string& ip : *released) {
      SP_LOG(Info).Msg("IP GC: released").KV("pool", pool).KV("ip", ip).KV("pod", key)
          .KV("podUid", ips.at(ip)).KV("reason", GCReasonName(reasons[ip]))
          .KV("why", details[ip]);
      gc_counts_.Inc();
      gc_by_reason_.WithLabels({{"reason", std::string(GCReasonName(reasons[ip]))}}).Inc();
    }
  }

  if (auto uid = endpoint_uid(facts); uid.has_value() && failed_uids.count(*uid) == 0) {
    Verdict v = Decide(policy_, facts, *uid, "", now);
    if (v.action == Verdict::Action::kReclaim) {
      auto deleted = DeleteEndpoint(ns, name, *uid);
      if (!deleted.ok()) {
        SP_LOG(Error).Msg("IP GC: deleting the SpiderEndpoint failed").KV("endpoint", key)
            .KV("err", deleted.status());
        if (first_error.ok()) first_error = deleted.status();
      } else if (*deleted) {
        endpoint_gc_.WithLabels({{"reason", std::string(GCReasonName(v.reason))}}).Inc();
        SP_LOG(Info).Msg("IP GC: deleted SpiderEndpoint").KV("endpoint", key)
            .KV("uid", *uid).KV("reason", GCReasonName(v.reason));
      }
    } else if (v.action == Verdict::Action::kWait) {
      wait_until = std::min(wait_until, v.deadline);
    }
  }
  if (facts.pod == nullptr) {
    std::lock_guard<std::mutex> l(mu_);
    for (const Record& r : records) first_terminal_.erase(r.uid);
  }

  if (!first_error.ok()) return first_error;
  if (wait_until != absl::InfiniteFuture()) {
    return kube::ReconcileResult{
        .requeue_after = std::max(wait_until - now, absl::Milliseconds(1))};
  }
  return kube::ReconcileResult{};
}

// An agent gives its idle reservations back itself and a restarted one recovers them; only a
// node that is gone leaves them behind for good.
void IPGarbageCollector::ReleaseReservationsOfGoneNode(const std::string& pool_name,
                                                       const std::string& node,
                                                       const std::vector<std::string>& ips) {
  absl::StatusOr<std::shared_ptr<const api::Node>> live = GetOrNull(nodes_, "", node);
  if (!live.ok() || *live != nullptr) return;  // unsure, or the cache lagged: keep them
  const std::set<std::string> wanted(ips.begin(), ips.end());
  absl::StatusOr<std::vector<std::string>> removed = RemoveRecords(
      pool_name, [&](const std::string& ip, const api::PoolIPAllocation& rec) {
        return wanted.count(ip) > 0 && api::IsNodeReservation(rec) && *rec.node == node;
      });
  const absl::Status s = removed.status();
  const size_t released = removed.ok() ? removed->size() : 0;
  if (!s.ok()) {
    SP_LOG(Error).Msg("IP GC: releasing the reservations of a deleted node failed")
        .KV("pool", pool_name).KV("node", node).KV("err", s);
    gc_failures_.Inc(static_cast<double>(ips.size()));
    return;
  }
  if (released == 0) return;
  SP_LOG(Info).Msg("IP GC: released the reservations of a deleted node").KV("pool", pool_name)
      .KV("node", node).KV("ips", released);
  gc_counts_.Inc(static_cast<double>(released));
  gc_by_reason_.WithLabels({{"reason", std::string(GCReasonName(GCReason::kNodeMissing))}})
      .Inc(static_cast<double>(released));
}

absl::StatusOr<std::vector<std::string>> IPGarbageCollector::ReleaseFromPool(
    const std::string& pool_name, const std::string& key,
    const std::map<std::string, std::string>& ip_to_uid) {
  return RemoveRecords(pool_name, [&](const std::string& ip, const api::PoolIPAllocation& rec) {
    auto want = ip_to_uid.find(ip);
    return want != ip_to_uid.end() && rec.pod == key && rec.pod_uid == want->second;
  });
}

absl::StatusOr<std::vector<std::string>> IPGarbageCollector::RemoveRecords(
    const std::string& pool_name,
    const std::function<bool(const std::string& ip, const api::PoolIPAllocation& rec)>& remove) {
  std::vector<std::string> released;
  absl::Status s = kube::RetryOnConflict(options_.conflict_retry, [&]() -> absl::Status {
    released.clear();
    // Always the live object: a cached one would only earn a 409.
    auto pool = pools_.Get("", pool_name);
    if (!pool.ok()) {
      return kube::IsNotFound(pool.status()) ? absl::OkStatus() : pool.status();
    }
    auto records = pool->AllocatedIPs();
    if (!records.ok()) return records.status();
    for (auto it = records->begin(); it != records->end();) {
      if (remove(it->first, it->second)) {
        released.push_back(it->first);
        it = records->erase(it);
      } else {
        ++it;
      }
    }
    if (released.empty()) return absl::OkStatus();
    pool->SetAllocatedIPs(*records);
    if (caches_.reserved_ips != nullptr) {
      // Keep the counts as PoolController computes them, so it has nothing to rewrite.
      auto counts = ComputePoolCounts(*pool, ReservedRanges(caches_.reserved_ips->store().List()));
      if (counts.ok()) api::SetPoolIPCounts(*counts, &pool->status);
    }
    auto out = pools_.UpdateStatus(*pool);
    if (!out.ok() && kube::IsNotFound(out.status())) {
      released.clear();
      return absl::OkStatus();
    }
    return out.status();
  });
  if (!s.ok()) return kube::WithContext(s, base::StrCat("SpiderIPPool ", pool_name));
  return released;
}

absl::StatusOr<bool> IPGarbageCollector::DeleteEndpoint(const std::string& ns,
                                                        const std::string& name,
                                                        const std::string& uid) {
  bool deleted = false;
  absl::Status s = kube::RetryOnConflict(options_.conflict_retry, [&]() -> absl::Status {
    deleted = false;
    auto ep = endpoints_.Get(ns, name);
    if (!ep.ok()) return kube::IsNotFound(ep.status()) ? absl::OkStatus() : ep.status();
    if (!ep->status.has_value() || ep->status->current.uid != uid) {
      return absl::OkStatus();  // taken over by a new pod of that name meanwhile
    }
    if (ep->metadata.HasFinalizer(api::kSpiderFinalizer)) {
      ep->metadata.RemoveFinalizer(api::kSpiderFinalizer);
      auto out = endpoints_.Update(*ep);
      if (!out.ok()) {
        if (kube::IsNotFound(out.status())) {
          deleted = true;  // it was being deleted: our finalizer was the last one
          return absl::OkStatus();
        }
        return out.status();
      }
      ep = std::move(out);
    }
    kube::DeleteOptions opts;
    opts.precondition_uid = ep->metadata.uid;
    opts.precondition_resource_version = ep->metadata.resource_version;
    absl::Status del = endpoints_.Delete(ns, name, opts);
    if (del.ok() || kube::IsNotFound(del)) {
      deleted = true;
      return absl::OkStatus();
    }
    return del;
  });
  if (!s.ok()) return kube::WithContext(s, base::StrCat("SpiderEndpoint ", ns, "/", name));
  return deleted;
}

}  // namespace spiderpool::op::ipam
