#include "operator/subnet/controller.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "ipam/selection.h"
#include "kube/rest/errors.h"
#include "operator/ipam/counts.h"

namespace spiderpool::op::subnet {

namespace {

namespace dipam = ::spiderpool::ipam;
namespace counts = ::spiderpool::op::ipam;
using base::IPRange;
using base::StrCat;

constexpr std::string_view kKinds[] = {"Deployment", "ReplicaSet", "StatefulSet",
                                       "DaemonSet",  "Job",        "CronJob"};

// apiVersion of one of our kinds, "" for others.
std::string ApiVersionOfKind(std::string_view kind) {
  if (kind == "Job" || kind == "CronJob") return "batch/v1";
  for (std::string_view k : kKinds) {
    if (k == kind) return "apps/v1";
  }
  return "";
}

struct AppKeyParts {
  std::string api_version;  // "" for our kinds (ApiVersionOfKind)
  std::string kind, ns, name;
};
std::optional<AppKeyParts> ParseAppKey(std::string_view key) {
  std::string api_version;
  // "apiVersion:Kind/ns/name" for a third-party application (no name or kind holds ':').
  if (const size_t colon = key.find(':'); colon != std::string_view::npos) {
    api_version = std::string(key.substr(0, colon));
    key.remove_prefix(colon + 1);
  }
  const size_t a = key.find('/');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = key.find('/', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  return AppKeyParts{std::move(api_version), std::string(key.substr(0, a)),
                     std::string(key.substr(a + 1, b - a - 1)), std::string(key.substr(b + 1))};
}
// The controller owner reference of a pod whose controller is not one of the kinds our
// workload informers see (a third-party controller: OpenKruise CloneSet, ...).
const api::OwnerReference* ThirdPartyControllerOf(const api::Pod& pod) {
  for (const api::OwnerReference& r : pod.metadata.owner_references) {
    if (!r.controller.value_or(false)) continue;
    if (r.api_version == "v1" || ApiVersionOfKind(r.kind) == r.api_version) return nullptr;
    return &r;
  }
  return nullptr;
}
// The inverse of ipam::ApplicationLabelGV ("apps.kruise.io_v1alpha1" -> "apps.kruise.io/v1alpha1";
// group names have no '_').
std::string ApiVersionOfLabelGV(std::string gv) {
  if (size_t pos = gv.find('_'); pos != std::string::npos) gv[pos] = '/';
  return gv;
}

bool ConflictLike(const absl::Status& s) { return kube::IsConflict(s) || kube::IsAlreadyExists(s); }

std::string Msg(const absl::Status& s) { return std::string(base::FromAbsl(s.message())); }

api::ObjectReference RefOf(const Application& app) {
  return api::ObjectReference{.kind = app.kind,
                              .namespace_ = app.namespace_,
                              .name = app.name,
                              .uid = app.uid,
                              .api_version = app.api_version};
}

std::vector<IPRange> Intersect(const std::vector<IPRange>& a, std::vector<IPRange> b) {
  return base::SubtractIPRanges(a, base::SubtractIPRanges(a, std::move(b)));
}

// The application strings a subnet's controlledIPPools names (for kSubnetAppIndex).
std::vector<std::string> ApplicationsOf(const api::SpiderSubnet& subnet) {
  std::set<std::string> apps;
  auto controlled = subnet.ControlledIPPools();
  if (controlled.ok()) {
    for (const auto& [pool, entry] : *controlled) {
      if (entry.application.has_value()) apps.insert(*entry.application);
    }
  }
  return {apps.begin(), apps.end()};
}

}  // namespace

std::string AutoPoolController::AppKey(std::string_view kind, std::string_view ns,
                                       std::string_view name) {
  return StrCat(kind, "/", ns, "/", name);
}

std::string AutoPoolController::ThirdPartyAppKey(std::string_view api_version,
                                                 std::string_view kind, std::string_view ns,
                                                 std::string_view name) {
  return StrCat(api_version, ":", kind, "/", ns, "/", name);
}

std::string AutoPoolController::KeyOf(const Application& app) const {
  if (ApiVersionOfKind(app.kind) == app.api_version) return AppKey(app.kind, app.namespace_, app.name);
  return ThirdPartyAppKey(app.api_version, app.kind, app.namespace_, app.name);
}

AutoPoolController::AutoPoolController(AutoPoolOptions options,
                                       std::shared_ptr<kube::RestClient> rest, Informers informers)
    : options_(std::move(options)),
      rest_(std::move(rest)),
      inf_(informers),
      pools_(rest_),
      subnets_(rest_) {
  auto make = [this](auto*& slot, auto& owned, bool namespaced) {
    using Inf = std::remove_reference_t<decltype(*slot)>;
    if (slot != nullptr) return;
    owned = std::make_unique<Inf>(
        rest_, kube::InformerOptions{.namespace_ = namespaced ? options_.namespace_ : "",
                                     .registry = options_.registry});
    slot = owned.get();
  };
  make(inf_.pools, own_pools_, false);
  make(inf_.subnets, own_subnets_, false);
  make(inf_.reserved_ips, own_reserved_, false);
  make(inf_.deployments, own_deployments_, true);
  make(inf_.replicasets, own_replicasets_, true);
  make(inf_.statefulsets, own_statefulsets_, true);
  make(inf_.daemonsets, own_daemonsets_, true);
  make(inf_.jobs, own_jobs_, true);
  make(inf_.cronjobs, own_cronjobs_, true);

  recorder_ = options_.recorder;
  if (recorder_ == nullptr) {
    own_recorder_ = std::make_unique<kube::EventRecorder>(
        rest_, kube::EventRecorderOptions{.component = "spiderpool-controller",
                                          .clock = options_.clock,
                                          .registry = options_.registry});
    recorder_ = own_recorder_.get();
  }

  reconciler_ = std::make_unique<kube::FuncReconciler>(
      [this](const kube::ReconcileRequest& r, std::stop_token) { return Reconcile(r.Key()); });
  kube::ControllerOptions co;
  co.name = "spidersubnet-application";
  co.workers = options_.workers;
  co.clock = options_.clock;
  co.registry = options_.registry;
  co.cache_synced = {[this] { return Synced(); }};
  ctrl_ = std::make_unique<kube::Controller>(std::move(co), reconciler_.get());

  inf_.pools->AddIndexer(kPoolAppIndex, [](const api::SpiderIPPool& p) {
    std::optional<PoolOwner> o = PoolOwnerOf(p);
    if (!o.has_value()) return std::vector<std::string>{};
    return std::vector<std::string>{IdentityKey(o->gv, o->kind, o->namespace_, o->name)};
  });
  inf_.subnets->AddIndexer(kSubnetAppIndex, ApplicationsOf);
  RegisterHandlers();
}

AutoPoolController::~AutoPoolController() = default;

bool AutoPoolController::InScope(std::string_view ns) const {
  return options_.namespace_.empty() || options_.namespace_ == ns;
}

bool AutoPoolController::Synced() const {
  return inf_.pools->HasSynced() && inf_.subnets->HasSynced() && inf_.reserved_ips->HasSynced() &&
         inf_.deployments->HasSynced() && inf_.replicasets->HasSynced() &&
         inf_.statefulsets->HasSynced() && inf_.daemonsets->HasSynced() && inf_.jobs->HasSynced() &&
         inf_.cronjobs->HasSynced() && (inf_.pods == nullptr || inf_.pods->HasSynced());
}

void AutoPoolController::EnqueueApp(const Application& app, bool deleted) {
  if (!InScope(app.namespace_)) return;
  // Interesting: apps that want auto pools, and any app that still owns some (annotation
  // removed, deleted, ...). ReplicaSets of Deployments and Jobs of CronJobs are skipped cheaply.
  bool relevant =
      HasSubnetAnnotation(app.pod_annotations) &&
      !((app.kind == "ReplicaSet" || app.kind == "Job") && !app.controller_kind.empty());
  if (!relevant || deleted) {
    relevant = relevant || !inf_.pools->store().ByIndex(kPoolAppIndex, IdentityKey(app)).empty();
  }
  if (relevant) ctrl_->EnqueueKey(KeyOf(app));
}

void AutoPoolController::EnqueuePool(const api::SpiderIPPool& pool) {
  std::optional<PoolOwner> o = PoolOwnerOf(pool);
  if (!o.has_value() || !InScope(o->namespace_)) return;
  const std::string api_version = ApiVersionOfKind(o->kind);
  if (!api_version.empty() && dipam::ApplicationLabelGV(api_version) == o->gv) {
    ctrl_->EnqueueKey(AppKey(o->kind, o->namespace_, o->name));
  } else if (inf_.pods != nullptr && o->gv.find('_') != std::string::npos) {
    ctrl_->EnqueueKey(ThirdPartyAppKey(ApiVersionOfLabelGV(o->gv), o->kind, o->namespace_, o->name));
  }
}

void AutoPoolController::AddWaiting(const std::string& subnet, const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  waiting_[subnet].insert(key);
}

void AutoPoolController::WakeWaiting(const std::string& subnet) {
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (subnet.empty()) {
      for (auto& [s, set] : waiting_) keys.insert(keys.end(), set.begin(), set.end());
      waiting_.clear();
    } else if (auto it = waiting_.find(subnet); it != waiting_.end()) {
      keys.assign(it->second.begin(), it->second.end());
      waiting_.erase(it);
    }
  }
  for (const std::string& k : keys) ctrl_->EnqueueKey(k);
}

void AutoPoolController::RegisterHandlers() {
  auto apps = [this](auto* informer) {
    using T =
        std::remove_const_t<typename std::remove_pointer_t<decltype(informer)>::Ptr::element_type>;
    informer->AddHandlers(kube::EventHandlers<T>{
        .on_add = [this](const T& o) { EnqueueApp(ApplicationOf(o), false); },
        .on_update =
            [this](const T& old_obj, const T& o) {
              Application app = ApplicationOf(o);
              // An annotation just removed: the pools (if any) are found by the index.
              EnqueueApp(app, !HasSubnetAnnotation(app.pod_annotations) &&
                                  HasSubnetAnnotation(ApplicationOf(old_obj).pod_annotations));
            },
        .on_delete = [this](const T& o) { EnqueueApp(ApplicationOf(o), true); }});
  };
  apps(inf_.deployments);
  apps(inf_.replicasets);
  apps(inf_.statefulsets);
  apps(inf_.daemonsets);
  apps(inf_.jobs);
  apps(inf_.cronjobs);
  if (inf_.pods != nullptr) {
    // Third-party applications are seen through their pods (reference §2.7: the pool's size
    // is the pods' fixed ippool-ip-number, so one pod tells all).
    auto on_pod = [this](const api::Pod& pod, bool deleted) {
      const api::OwnerReference* ref = ThirdPartyControllerOf(pod);
      if (ref == nullptr) return;
      Application app{.api_version = ref->api_version, .kind = ref->kind,
                      .namespace_ = pod.metadata.namespace_, .name = ref->name, .uid = ref->uid,
                      .pod_annotations = pod.metadata.annotations,
                      .host_network = pod.spec.host_network};
      EnqueueApp(app, deleted || pod.metadata.IsDeleting());
    };
    inf_.pods->AddHandlers(
        {.on_add = [on_pod](const api::Pod& p) { on_pod(p, false); },
         .on_update = [on_pod](const api::Pod&, const api::Pod& p) { on_pod(p, false); },
         .on_delete = [on_pod](const api::Pod& p) { on_pod(p, true); }});
  }

  inf_.pools->AddHandlers({.on_add = [this](const api::SpiderIPPool& p) { EnqueuePool(p); },
                           .on_update = [this](const api::SpiderIPPool&,
                                               const api::SpiderIPPool& p) { EnqueuePool(p); },
                           .on_delete = [this](const api::SpiderIPPool& p) { EnqueuePool(p); }});
  inf_.subnets->AddHandlers(
      {.on_add = [this](const api::SpiderSubnet& s) { WakeWaiting(s.metadata.name); },
       .on_update = [this](const api::SpiderSubnet&,
                           const api::SpiderSubnet& s) { WakeWaiting(s.metadata.name); }});
  inf_.reserved_ips->AddHandlers(
      {.on_add = [this](const api::SpiderReservedIP&) { WakeWaiting(""); },
       .on_update = [this](const api::SpiderReservedIP&,
                           const api::SpiderReservedIP&) { WakeWaiting(""); },
       .on_delete = [this](const api::SpiderReservedIP&) { WakeWaiting(""); }});
}

absl::Status AutoPoolController::Run(std::stop_token stop) {
  SP_LOG(Info)
      .Msg("starting the SpiderSubnet application controller")
      .KV("workers", options_.workers)
      .KV("namespace", options_.namespace_.empty() ? "*" : options_.namespace_);
  std::stop_source local;
  std::stop_callback forward(stop, [&local] { local.request_stop(); });
  std::vector<std::jthread> threads;
  auto run = [&](auto* owned) {
    if (owned == nullptr) return;
    threads.emplace_back([owned, token = local.get_token()] { owned->Run(token); });
  };
  run(own_pools_.get());
  run(own_subnets_.get());
  run(own_reserved_.get());
  run(own_deployments_.get());
  run(own_replicasets_.get());
  run(own_statefulsets_.get());
  run(own_daemonsets_.get());
  run(own_jobs_.get());
  run(own_cronjobs_.get());
  absl::Status s = ctrl_->Run(local.get_token());
  local.request_stop();
  for (std::jthread& t : threads) t.join();
  return s;
}

std::optional<Application> AutoPoolController::LookupThirdPartyApp(
    std::string_view api_version, std::string_view kind, std::string_view ns,
    std::string_view name, std::string* any_uid) const {
  any_uid->clear();
  if (inf_.pods == nullptr) return std::nullopt;
  std::shared_ptr<const api::Pod> newest;
  for (const std::shared_ptr<const api::Pod>& pod : inf_.pods->store().List()) {
    if (pod->metadata.namespace_ != ns) continue;
    const api::OwnerReference* ref = ThirdPartyControllerOf(*pod);
    if (ref == nullptr || ref->api_version != api_version || ref->kind != kind || ref->name != name) {
      continue;
    }
    if (any_uid->empty() || !pod->metadata.IsDeleting()) *any_uid = ref->uid;
    if (pod->metadata.IsDeleting() || !HasSubnetAnnotation(pod->metadata.annotations)) continue;
    auto created = [](const api::Pod& p) {
      return p.metadata.creation_timestamp.has_value() ? p.metadata.creation_timestamp->value
                                                       : absl::InfinitePast();
    };
    if (newest == nullptr || created(*newest) < created(*pod)) {
      newest = pod;
    }
  }
  if (newest == nullptr) return std::nullopt;
  const api::OwnerReference* ref = ThirdPartyControllerOf(*newest);
  return Application{.api_version = ref->api_version, .kind = ref->kind,
                     .namespace_ = newest->metadata.namespace_, .name = ref->name,
                     .uid = ref->uid, .pod_annotations = newest->metadata.annotations,
                     .host_network = newest->spec.host_network};
}

std::optional<Application> AutoPoolController::LookupApp(std::string_view kind, std::string_view ns,
                                                         std::string_view name) const {
  const std::string key = StrCat(ns, "/", name);
  auto get = [&](auto* informer) -> std::optional<Application> {
    auto obj = informer->store().Get(key);
    if (obj == nullptr) return std::nullopt;
    return ApplicationOf(*obj);
  };
  if (kind == "Deployment") return get(inf_.deployments);
  if (kind == "ReplicaSet") return get(inf_.replicasets);
  if (kind == "StatefulSet") return get(inf_.statefulsets);
  if (kind == "DaemonSet") return get(inf_.daemonsets);
  if (kind == "Job") return get(inf_.jobs);
  if (kind == "CronJob") return get(inf_.cronjobs);
  return std::nullopt;
}

std::vector<IPRange> AutoPoolController::Reserved(base::IPFamily family) const {
  std::vector<IPRange> out;
  for (const IPRange& r : counts::ReservedRanges(inf_.reserved_ips->store().List())) {
    if (r.family() == family) out.push_back(r);
  }
  return out;
}

void AutoPoolController::Warn(const Application& app, const std::string& reason,
                              const std::string& message) {
  SP_LOG(Warning)
      .Msg(message)
      .KV("reason", reason)
      .KV("application", StrCat(app.kind, "/", app.namespace_, "/", app.name));
  recorder_->Event(RefOf(app), "Warning", reason, message);
}

// ---- Reconcile ------------------------------------------------------------------------------

absl::StatusOr<kube::ReconcileResult> AutoPoolController::Reconcile(const std::string& key) {
  std::optional<AppKeyParts> k = ParseAppKey(key);
  if (!k.has_value()) return kube::ReconcileResult{};
  const bool third_party = !k->api_version.empty();
  const std::string api_version = third_party ? k->api_version : ApiVersionOfKind(k->kind);
  if (api_version.empty()) return kube::ReconcileResult{};
  // A third-party application's pools go when no pod of it is left (we cannot watch its kind).
  std::string third_party_uid;
  std::optional<Application> app =
      third_party ? LookupThirdPartyApp(api_version, k->kind, k->ns, k->name, &third_party_uid)
                  : LookupApp(k->kind, k->ns, k->name);
  const auto app_pools = inf_.pools->store().ByIndex(
      kPoolAppIndex, IdentityKey(dipam::ApplicationLabelGV(api_version), k->kind, k->ns, k->name));

  absl::Status first_error;
  auto note = [&first_error](const absl::Status& s) {
    if (!s.ok() && first_error.ok()) first_error = s;
  };

  std::vector<AutoPoolWant> wants;
  if (app.has_value() && !app->deleting && SkipReason(*app).empty()) {
    absl::StatusOr<std::vector<AutoPoolWant>> w =
        WantedAutoPools(*app, WantConfig{.enable_ipv4 = options_.enable_ipv4,
                                         .enable_ipv6 = options_.enable_ipv6,
                                         .cluster_subnet_default_flexible_ip_number =
                                             options_.cluster_subnet_default_flexible_ip_number});
    if (w.ok() && third_party &&
        std::any_of(w->begin(), w->end(),
                    [](const AutoPoolWant& want) { return want.ip_number_annotation.starts_with("+"); })) {
      // Upstream getAutoPoolIPNumber: the size of a third-party app is unknown to us.
      Warn(*app, "InvalidSubnetAnnotation",
           StrCat(app->kind, "/", app->namespace_, "/", app->name,
                  " only supports fixed auto-created IPPool IP Number"));
    } else if (w.ok()) {
      wants = *std::move(w);
    } else {
      Warn(*app, "InvalidSubnetAnnotation",
           StrCat("failed to get pod annotation subnet config, error: ", Msg(w.status())));
    }
  }

  // 1. Reclaim the pools of a deleted (or re-created) application.
  note(DeleteReclaimedPools(app_pools, app.has_value() ? app->uid : third_party_uid));

  // 2. Create / scale the wanted pools.
  bool waiting = false;
  std::set<std::string> keep;
  for (const AutoPoolWant& want : wants) {
    std::string pool_name;
    absl::StatusOr<Outcome> out = EnsurePool(*app, want, app_pools, key, &pool_name);
    if (!pool_name.empty()) keep.insert(pool_name);
    if (!out.ok()) {
      SP_LOG(Error)
          .Msg("failed to create or scale the auto-created IPPool")
          .KV("application", key)
          .KV("pool", pool_name)
          .KV("err", out.status());
      note(kube::WithContext(out.status(), StrCat("auto-created IPPool ", pool_name)));
    } else if (*out == Outcome::kWaiting) {
      waiting = true;
    }
  }

  // 3. Free the records of pools that are gone.
  note(FreeStaleRecords(ApplicationString(api_version, k->kind, k->ns, k->name), keep));

  if (!first_error.ok()) return first_error;
  if (waiting) return kube::ReconcileResult{.requeue_after = options_.wait_requeue};
  return kube::ReconcileResult{};
}

absl::Status AutoPoolController::DeleteReclaimedPools(
    const std::vector<std::shared_ptr<const api::SpiderIPPool>>& app_pools,
    const std::string& live_uid) {
  absl::Status first;
  for (const auto& p : app_pools) {
    std::optional<PoolOwner> o = PoolOwnerOf(*p);
    if (!o.has_value() || !o->reclaim || p->metadata.IsDeleting()) continue;
    if (!live_uid.empty() && o->uid == live_uid) continue;
    SP_LOG(Info)
        .Msg("deleting the auto-created IPPool of a deleted application")
        .KV("pool", p->metadata.name)
        .KV("application", StrCat(o->kind, "/", o->namespace_, "/", o->name))
        .KV("application_uid", o->uid);
    absl::Status s = pools_.Delete("", p->metadata.name,
                                   kube::DeleteOptions{.precondition_uid = p->metadata.uid});
    if (!s.ok() && !kube::IsNotFound(s) && !kube::IsConflict(s) && first.ok()) {
      first = kube::WithContext(s, StrCat("deleting SpiderIPPool ", p->metadata.name));
    }
  }
  return first;
}

absl::StatusOr<api::SpiderSubnet> AutoPoolController::WriteControlled(
    api::SpiderSubnet subnet, const api::PoolIPPreAllocations& controlled) {
  std::vector<IPRange> reserved = counts::ReservedRanges(inf_.reserved_ips->store().List());
  subnet.SetControlledIPPools(controlled);
  absl::StatusOr<counts::IPCounts> counts =
      counts::ComputeSubnetCounts(subnet, controlled, reserved);
  if (counts.ok()) {
    subnet.status.total_ip_count = counts->total;
    subnet.status.allocated_ip_count = counts->allocated;
    subnet.status.free_ip_count = counts->free;
  }
  return subnets_.UpdateStatus(subnet);
}

absl::Status AutoPoolController::EraseRecords(api::SpiderSubnet subnet,
                                              const std::set<std::string>& keys,
                                              const std::string& application) {
  if (keys.empty()) return absl::OkStatus();
  const std::string name = subnet.metadata.name;
  bool first = true;
  return kube::RetryOnConflict(options_.conflict_retry, [&]() -> absl::Status {
    if (!first) {
      absl::StatusOr<api::SpiderSubnet> live = subnets_.Get("", name);
      if (!live.ok()) return kube::IsNotFound(live.status()) ? absl::OkStatus() : live.status();
      subnet = *std::move(live);
    }
    first = false;
    absl::StatusOr<api::PoolIPPreAllocations> controlled = subnet.ControlledIPPools();
    if (!controlled.ok()) return controlled.status();
    api::PoolIPPreAllocations next = *controlled;
    std::vector<std::string> erased;
    for (const std::string& k : keys) {
      auto it = next.find(k);
      if (it == next.end() || it->second.application != application) continue;
      next.erase(it);
      erased.push_back(k);
    }
    if (erased.empty()) return absl::OkStatus();
    absl::StatusOr<api::SpiderSubnet> out = WriteControlled(std::move(subnet), next);
    if (!out.ok()) return out.status();
    SP_LOG(Info)
        .Msg("freed SpiderSubnet IPs of auto-created IPPools")
        .KV("subnet", name)
        .KV("records", absl::StrJoin(erased, ","));
    return absl::OkStatus();
  });
}

absl::Status AutoPoolController::FreeStaleRecords(const std::string& application,
                                                  const std::set<std::string>& keep_pools) {
  absl::Status first;
  for (const auto& subnet : inf_.subnets->store().ByIndex(kSubnetAppIndex, application)) {
    absl::StatusOr<api::PoolIPPreAllocations> controlled = subnet->ControlledIPPools();
    if (!controlled.ok()) continue;
    const std::optional<base::IPFamily> family =
        counts::FamilyOf(subnet->spec.ip_version, subnet->spec.subnet);
    std::set<std::string> stale;
    std::map<std::string, std::optional<api::SpiderIPPool>> live;  // pool -> live (nullopt: gone)
    for (const auto& [key, entry] : *controlled) {
      if (entry.application != application) continue;
      const std::string pool = PoolOfKey(key);
      if (keep_pools.count(pool) > 0) continue;
      const bool releasing = key != pool;
      const bool cached = inf_.pools->store().Get(pool) != nullptr;
      if (cached && !releasing) continue;  // the pool exists (kept, or terminating)
      if (live.count(pool) == 0) {
        absl::StatusOr<api::SpiderIPPool> got = pools_.Get("", pool);
        if (got.ok()) {
          live[pool] = *std::move(got);
        } else if (kube::IsNotFound(got.status())) {
          live[pool] = std::nullopt;
        } else {
          if (first.ok()) first = got.status();
          continue;
        }
      }
      const std::optional<api::SpiderIPPool>& p = live[pool];
      if (!p.has_value()) {
        stale.insert(key);  // the pool is gone: its record and releasing record are free
      } else if (releasing && family.has_value()) {
        // A releasing record of a pool that is no longer reconciled: free once not listed.
        auto listed = ParseMerged(p->spec.ips, *family, "spec.ips");
        auto held = ParseMerged(entry.ips, *family, "ips");
        if (listed.ok() && held.ok() && Intersect(*held, *listed).empty()) stale.insert(key);
      }
    }
    absl::Status s = EraseRecords(*subnet, stale, application);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

namespace {

// EnsurePool's steps that only read.

// The app's auto-created pools of `want`, by their labels (upstream's List by
// owner-spider-subnet, owner-application-*, ip-version, interface; a reclaimable pool of an
// earlier app of the same name is skipped), sorted by name.
std::vector<std::shared_ptr<const api::SpiderIPPool>> AutoPoolsOf(
    const Application& app, const AutoPoolWant& want,
    const std::vector<std::shared_ptr<const api::SpiderIPPool>>& app_pools) {
  const std::string version_label = want.ip_version == 4 ? "IPv4" : "IPv6";
  std::vector<std::shared_ptr<const api::SpiderIPPool>> found;
  for (const auto& p : app_pools) {
    std::optional<PoolOwner> o = PoolOwnerOf(*p);
    const auto& l = p->metadata.labels;
    auto label = [&l](std::string_view k) {
      auto it = l.find(std::string(k));
      return it == l.end() ? std::string() : it->second;
    };
    if (!o.has_value() || o->subnet != want.subnet ||
        label(api::kLabelIPPoolVersion) != version_label ||
        label(api::kLabelIPPoolInterface) != want.if_name) {
      continue;
    }
    if (o->reclaim && o->uid != app.uid) continue;
    found.push_back(p);
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a->metadata.name < b->metadata.name; });
  return found;
}

// What PlanPoolIPs needs for pool `name` of `subnet` (whose family matches `want`): the
// subnet's usable ranges, its records (this pool's, its releasing one, the others), the pool's
// listed and allocated IPs.
absl::StatusOr<PlanInput> PlanInputOf(const api::SpiderSubnet& subnet,
                                      const api::PoolIPPreAllocations& controlled,
                                      const std::optional<api::SpiderIPPool>& pool,
                                      const std::string& name, const AutoPoolWant& want,
                                      std::vector<IPRange> reserved) {
  const std::optional<base::IPFamily> family =
      counts::FamilyOf(subnet.spec.ip_version, subnet.spec.subnet);
  const std::string rel_key = ReleasingKey(name);
  PlanInput in;
  {
    absl::StatusOr<std::vector<IPRange>> usable =
        counts::UsableRanges(subnet.spec.ips, subnet.spec.exclude_ips, family);
    if (!usable.ok()) {
      return absl::FailedPreconditionError(
          StrCat("SpiderSubnet ", want.subnet, ": ", Msg(usable.status())));
    }
    in.subnet_usable = *std::move(usable);
  }
  in.reserved = std::move(reserved);
  std::vector<IPRange> others;
  for (const auto& [k, e] : controlled) {
    absl::StatusOr<std::vector<IPRange>> r =
        ParseMerged(e.ips, *family, StrCat("status.controlledIPPools[", k, "].ips"));
    if (!r.ok()) {
      return absl::FailedPreconditionError(
          StrCat("SpiderSubnet ", want.subnet, " ", Msg(r.status())));
    }
    if (k == name) {
      in.entry = *std::move(r);
    } else if (k == rel_key) {
      in.releasing = *std::move(r);
    } else {
      others.insert(others.end(), r->begin(), r->end());
    }
  }
  in.others = base::MergeIPRanges(std::move(others));
  if (pool.has_value()) {
    SP_ASSIGN_OR_RETURN(in.pool, ParseMerged(pool->spec.ips, *family, "spec.ips"));
    SP_ASSIGN_OR_RETURN(in.allocated, AllocatedRanges(*pool, *family));
  }
  in.desired = want.ip_number;
  return in;
}

}  // namespace

absl::StatusOr<AutoPoolController::Outcome> AutoPoolController::EnsurePool(
    const Application& app, const AutoPoolWant& want,
    const std::vector<std::shared_ptr<const api::SpiderIPPool>>& app_pools, const std::string& key,
    std::string* pool_name) {
  const base::IPFamily want_family =
      want.ip_version == 4 ? base::IPFamily::kV4 : base::IPFamily::kV6;

  std::vector<std::shared_ptr<const api::SpiderIPPool>> found =
      AutoPoolsOf(app, want, app_pools);
  if (found.size() > 1) {
    std::vector<std::string> names;
    for (const auto& p : found) names.push_back(p->metadata.name);
    *pool_name = names[0];
    Warn(app, "InvalidAutoPools",
         StrCat("it's invalid that SpiderSubnet '", want.subnet, "' owns multiple IPv",
                want.ip_version, " auto-created IPPools [", absl::StrJoin(names, ","),
                "] of interface ", want.if_name, " for one application"));
    return Outcome::kUserError;
  }
  std::shared_ptr<const api::SpiderIPPool> cached = found.empty() ? nullptr : found[0];
  const std::string name =
      cached != nullptr ? cached->metadata.name
                        : dipam::AutoPoolName(app.name, want.ip_version, want.if_name, app.uid);
  *pool_name = name;
  if (cached == nullptr) cached = inf_.pools->store().Get(name);
  const std::string application = ApplicationString(app);
  const std::string rel_key = ReleasingKey(name);

  Outcome outcome = Outcome::kDone;
  bool first = true;
  absl::Status s = kube::RetryOnError(options_.conflict_retry, ConflictLike, [&]() -> absl::Status {
    outcome = Outcome::kDone;
    // Fresh reads after a conflict; the caches first.
    std::optional<api::SpiderSubnet> subnet;
    if (first) {
      if (auto c = inf_.subnets->store().Get(want.subnet); c != nullptr) subnet = *c;
    }
    if (!subnet.has_value()) {
      absl::StatusOr<api::SpiderSubnet> live = subnets_.Get("", want.subnet);
      if (!live.ok()) {
        if (!kube::IsNotFound(live.status())) return live.status();
        outcome = Outcome::kWaiting;
        AddWaiting(want.subnet, key);
        Warn(app, "SubnetNotReady",
             StrCat("failed to get SpiderSubnet ", want.subnet, " for auto-created IPPool ", name,
                    ": spidersubnets.spiderpool.spidernet.io \"", want.subnet, "\" not found"));
        return absl::OkStatus();
      }
      subnet = *std::move(live);
    }
    std::optional<api::SpiderIPPool> pool;
    if (first) {
      if (cached != nullptr) pool = *cached;
    } else {
      absl::StatusOr<api::SpiderIPPool> live = pools_.Get("", name);
      if (live.ok()) {
        pool = *std::move(live);
      } else if (!kube::IsNotFound(live.status())) {
        return live.status();
      }
    }
    first = false;

    if (subnet->metadata.IsDeleting()) {
      outcome = Outcome::kWaiting;
      AddWaiting(want.subnet, key);
      Warn(app, "SubnetNotReady",
           StrCat("SpiderSubnet '", want.subnet,
                  "' is terminating, we can't reconcile an auto-created IPPool from it"));
      return absl::OkStatus();
    }
    const std::optional<base::IPFamily> family =
        counts::FamilyOf(subnet->spec.ip_version, subnet->spec.subnet);
    if (family != want_family) {
      outcome = Outcome::kUserError;
      Warn(app, "InvalidSubnetAnnotation",
           StrCat("SpiderSubnet '", want.subnet, "' (", subnet->spec.subnet, ") is not an IPv",
                  want.ip_version, " subnet, as the annotation of interface '", want.if_name,
                  "' wants"));
      return absl::OkStatus();
    }
    if (pool.has_value()) {
      std::optional<PoolOwner> o = PoolOwnerOf(*pool);
      if (!o.has_value() ||
          IdentityKey(o->gv, o->kind, o->namespace_, o->name) != IdentityKey(app)) {
        outcome = Outcome::kUserError;
        Warn(app, "InvalidAutoPools",
             StrCat("SpiderIPPool ", name,
                    " already exists and is not an auto-created IPPool of this application"));
        return absl::OkStatus();
      }
      if (pool->spec.subnet != subnet->spec.subnet || o->subnet != want.subnet) {
        outcome = Outcome::kUserError;
        Warn(app, "ApplicationSubnetChanged",
             StrCat("the corresponding application specified SpiderSubnet changed from ", o->subnet,
                    " to ", want.subnet));
        return absl::OkStatus();
      }
      if (pool->metadata.IsDeleting()) {
        // Made again once it is gone (its DELETE event requeues the app).
        outcome = Outcome::kWaiting;
        return absl::OkStatus();
      }
    }

    absl::StatusOr<api::PoolIPPreAllocations> controlled = subnet->ControlledIPPools();
    if (!controlled.ok()) return controlled.status();
    SP_ASSIGN_OR_RETURN(PlanInput in, PlanInputOf(*subnet, *controlled, pool, name, want,
                                                  Reserved(*family)));

    absl::StatusOr<Plan> plan = PlanPoolIPs(in);
    if (!plan.ok()) {
      if (plan.status().code() == absl::StatusCode::kResourceExhausted) {
        outcome = Outcome::kWaiting;
        AddWaiting(want.subnet, key);
        Warn(app, "InsufficientSubnetIPs",
             StrCat("failed to pre-allocate auto-create IPPool ", name, " IPs from SpiderSubnet ",
                    want.subnet, ": ", Msg(plan.status())));
        return absl::OkStatus();
      }
      Warn(app, "AutoPoolIPConflict",
           StrCat("auto-created IPPool ", name, ": ", Msg(plan.status())));
      return plan.status();
    }
    const std::vector<std::string> target = base::FormatIPRanges(plan->target);

    // a. The subnet record first (claims before the pool lists them; nothing freed yet).
    api::PoolIPPreAllocations next = *controlled;
    next[name] = api::PoolIPPreAllocation{.ips = target, .application = application};
    if (plan->releasing.empty()) {
      next.erase(rel_key);
    } else {
      next[rel_key] = api::PoolIPPreAllocation{.ips = base::FormatIPRanges(plan->releasing),
                                               .application = application};
    }
    if (next != *controlled) {
      absl::StatusOr<api::SpiderSubnet> written = WriteControlled(*subnet, next);
      if (!written.ok()) return written.status();
      subnet = *std::move(written);
      SP_LOG(Info)
          .Msg("recorded auto-created IPPool IPs in SpiderSubnet")
          .KV("subnet", want.subnet)
          .KV("pool", name)
          .KV("ips", absl::StrJoin(target, ","))
          .KV("claimed", absl::StrJoin(base::FormatIPRanges(plan->claimed), ","))
          .KV("releasing", absl::StrJoin(base::FormatIPRanges(plan->releasing), ","));
    }

    // b. The pool.
    std::optional<api::SpiderIPPool> written_pool;
    if (pool.has_value()) {
      api::SpiderIPPool update = *pool;
      if (RefreshAutoPool(&update, app, want, target)) {
        absl::StatusOr<api::SpiderIPPool> out = pools_.Update(update);
        if (!out.ok()) return out.status();
        written_pool = *std::move(out);
        SP_LOG(Info)
            .Msg("updated auto-created IPPool")
            .KV("pool", name)
            .KV("ips", absl::StrJoin(target, ","))
            .KV("desired", want.ip_number);
      }
    } else {
      absl::StatusOr<api::SpiderIPPool> fresh = NewAutoPool(name, app, want, *subnet, target);
      if (!fresh.ok()) return fresh.status();
      for (const auto& [k, v] : options_.extra_pool_labels) fresh->metadata.labels.emplace(k, v);
      absl::StatusOr<api::SpiderIPPool> out = pools_.Create(*fresh);
      if (!out.ok()) return out.status();
      written_pool = *std::move(out);
      SP_LOG(Info)
          .Msg("created auto-created IPPool")
          .KV("pool", name)
          .KV("subnet", want.subnet)
          .KV("ips", absl::StrJoin(target, ","))
          .KV("desired", want.ip_number);
    }
    if (plan->over_desired > 0) {
      SP_VLOG(1)
          .Msg("auto-created IPPool stays above its desired size: IPs are allocated")
          .KV("pool", name)
          .KV("over", plan->over_desired);
    }

    // c. Free the releasing record once the pool (read live) no longer lists those IPs.
    if (!plan->releasing.empty()) {
      std::optional<api::SpiderIPPool> live_pool = written_pool;
      if (!live_pool.has_value()) {
        absl::StatusOr<api::SpiderIPPool> got = pools_.Get("", name);
        if (got.ok()) {
          live_pool = *std::move(got);
        } else if (!kube::IsNotFound(got.status())) {
          return got.status();
        }
      }
      if (live_pool.has_value()) {
        SP_ASSIGN_OR_RETURN(std::vector<IPRange> listed,
                            ParseMerged(live_pool->spec.ips, *family, "spec.ips"));
        if (!Intersect(listed, plan->releasing).empty()) {
          // Our view of the pool was stale: start again from live reads.
          return absl::AbortedError(StrCat("SpiderIPPool ", name, " changed; re-planning"));
        }
      }
      SP_RETURN_IF_ERROR(EraseRecords(*subnet, {rel_key}, application));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return outcome;
}

// ---- AddToManager ---------------------------------------------------------------------------

absl::StatusOr<AutoPoolController*> AddToManager(kube::Manager* mgr,
                                                 std::shared_ptr<kube::RestClient> rest,
                                                 AutoPoolOptions options, Informers informers) {
  if (!options.enable_spider_subnet || !options.enable_auto_pool_for_application) {
    SP_LOG(Info)
        .Msg("SpiderSubnet auto-created IPPools are disabled")
        .KV("enable_spider_subnet", options.enable_spider_subnet)
        .KV("enable_auto_pool_for_application", options.enable_auto_pool_for_application);
    return nullptr;
  }
  if (options.cluster_subnet_default_flexible_ip_number < 0) {
    return absl::InvalidArgumentError(
        StrCat("clusterSubnetDefaultFlexibleIPNumber must be >= 0, got ",
               options.cluster_subnet_default_flexible_ip_number));
  }
  if (!options.enable_ipv4 && !options.enable_ipv6) {
    return absl::InvalidArgumentError("neither IPv4 nor IPv6 is enabled");
  }
  if (options.workers < 1) {
    return absl::InvalidArgumentError(StrCat("workers must be >= 1, got ", options.workers));
  }
  auto ctrl = std::make_unique<AutoPoolController>(std::move(options), std::move(rest), informers);
  AutoPoolController* raw = ctrl.get();
  mgr->Add(std::move(ctrl));
  return raw;
}

}  // namespace spiderpool::op::subnet
