#include "agent/ipam/service.h"

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/kubevirt.h"
#include "api/spider.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "ipam/result.h"

namespace spiderpool::agent::ipam {
namespace sp = ::spiderpool::ipam;

namespace {

std::string Key(std::string_view ns, std::string_view name) { return base::StrCat(ns, "/", name); }

// The StatefulSet ordinal of `pod_name` ("web-3" -> 3), if the name has the sts shape.
std::optional<int64_t> Ordinal(std::string_view pod_name, std::string_view sts_name) {
  if (pod_name.size() <= sts_name.size() + 1 || pod_name.substr(0, sts_name.size()) != sts_name ||
      pod_name[sts_name.size()] != '-') {
    return std::nullopt;
  }
  int64_t n = 0;
  for (char c : pod_name.substr(sts_name.size() + 1)) {
    if (c < '0' || c > '9' || n > (int64_t{1} << 40)) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

api::ResourceInfo ResourceOf(std::string group, std::string kind, std::string plural) {
  return api::ResourceInfo{.group = std::move(group), .version = "v1", .kind = std::move(kind),
                           .plural = std::move(plural), .namespaced = true};
}

std::optional<int64_t> IntAt(const base::Json& j, std::initializer_list<const char*> path) {
  const base::Json* cur = &j;
  for (const char* p : path) {
    if (!cur->is_object() || !cur->contains(p)) return std::nullopt;
    cur = &(*cur)[p];
  }
  if (!cur->is_number_integer()) return std::nullopt;
  return cur->get<int64_t>();
}

}  // namespace

// ---- per-pod serialisation ------------------------------------------------------------------

class IpamService::PodLock {
 public:
  PodLock(IpamService* s, std::string key) : s_(s), key_(std::move(key)) {
    {
      absl::MutexLock l(&s_->locks_mu_);
      auto& entry = s_->pod_locks_[key_];
      if (entry.first == nullptr) entry.first = std::make_unique<absl::Mutex>();
      ++entry.second;
      mu_ = entry.first.get();
    }
    mu_->Lock();
  }
  ~PodLock() {
    mu_->Unlock();
    absl::MutexLock l(&s_->locks_mu_);
    auto it = s_->pod_locks_.find(key_);
    if (--it->second.second == 0) s_->pod_locks_.erase(it);
  }

 private:
  IpamService* s_;
  std::string key_;
  absl::Mutex* mu_;
};

// ---- lifecycle ------------------------------------------------------------------------------

IpamService::IpamService(std::shared_ptr<kube::RestClient> rest, ServiceOptions options,
                         Caches& caches)
    : rest_(rest),
      options_(std::move(options)),
      clock_(options_.clock ? options_.clock : &base::RealClock::Get()),
      pods_(rest),
      endpoints_(rest),
      nads_(rest),
      caches_(caches),
      writer_(rest,
              {.node_name = options_.node_name,
               .block_size = options_.config.node_ip_block_size,
               .max_allocated_ips_per_pool = options_.config.max_allocated_ips_per_pool,
               .clock = clock_,
               .block_standing = options_.config.node_ip_block_standing,
               .prewarm_stagger = options_.prewarm_stagger,
               .forecast = [this] { return Forecast(); }},
              {.pools = &caches_.pools,
               .endpoints = &caches_.endpoints.store(),
               .reserved = &caches_.reserved_ips.store(),
               .pods = &caches_.pods.store(),
               .synced = [this] { return Ready(); }}) {
  if (options_.registry != nullptr) RegisterMetrics(*options_.registry);
  // The pool writer acts on pool metadata changes (another node's ask for reservations) and
  // on pods scheduled here (the prewarm).
  caches_.pools.metadata().AddHandlers(
      {.on_add = [this](const PoolMeta& p) { writer_.OnPoolChanged(nullptr, p.metadata); },
       .on_update = [this](const PoolMeta& before, const PoolMeta& after) {
         writer_.OnPoolChanged(&before.metadata, after.metadata);
       }});
  caches_.pods.AddHandlers({.on_add = [this](const api::Pod&) { writer_.OnPodAdded(); }});
}

IpamService::~IpamService() {
  Stop();
  if (registry_ != nullptr) registry_->RemoveCollectHook(collect_hook_);
}

void IpamService::RegisterMetrics(kube::metrics::Registry& registry) {
  // Names as upstream's agent exposes them (reference §8), plus the group-commit counters.
  registry_ = &registry;
  auto counter = [&registry](const char* name, const char* help) -> kube::metrics::Counter& {
    return registry.AddCounter(name, help).WithLabels();
  };
  metrics_.allocations = &counter("spiderpool_ipam_allocation_counts_total", "IPAM ADD requests");
  metrics_.allocation_failures =
      &counter("spiderpool_ipam_allocation_failure_counts_total", "failed IPAM ADD requests");
  metrics_.allocation_seconds =
      &registry.AddHistogram("spiderpool_ipam_allocation_duration_seconds", "IPAM ADD duration")
           .WithLabels();
  metrics_.releases = &counter("spiderpool_ipam_release_counts_total", "IPAM DEL requests");
  metrics_.release_failures =
      &counter("spiderpool_ipam_release_failure_counts_total", "failed IPAM DEL requests");
  metrics_.release_seconds =
      &registry.AddHistogram("spiderpool_ipam_release_duration_seconds", "IPAM DEL duration")
           .WithLabels();
  auto& conflicts = counter("spiderpool_ipam_allocation_update_ippool_conflict_counts_total",
                            "SpiderIPPool status writes that met a 409 Conflict");
  auto& skipped = counter("spiderpool_ipam_ippool_status_writes_skipped_total",
                          "SpiderIPPool status writes not sent: the pool changed while they "
                          "were built (they would have met a 409 Conflict)");
  auto& writes = counter("spiderpool_ipam_ippool_status_writes_total",
                         "SpiderIPPool status writes (each may carry many allocations)");
  auto& retries = counter("spiderpool_ipam_ippool_write_retries_total",
                          "SpiderIPPool reads/writes retried after 429/5xx/timeouts");
  auto& mutations = counter("spiderpool_ipam_ippool_mutations_total",
                            "allocations/releases applied to SpiderIPPool records");
  auto& handouts = counter("spiderpool_ipam_node_reservation_handouts_total",
                           "ADDs served from this node's reserved IPs (no pool write)");
  auto& reserved = counter("spiderpool_ipam_node_reservation_reserved_total",
                           "IPs this node reserved ahead in SpiderIPPools");
  auto& given_back = counter("spiderpool_ipam_node_reservation_released_total",
                             "unused reservations given back to their pools");
  auto& lost = counter("spiderpool_ipam_node_reservation_lost_total",
                       "handed-out IPs whose reservation had vanished (an error)");
  collect_hook_ = registry.AddCollectHook([this, &conflicts, &skipped, &writes, &retries,
                                           &mutations, &handouts, &reserved, &given_back, &lost] {
    const CommitterStats s = writer_.committer_stats();
    conflicts.Inc(static_cast<double>(s.conflicts) - conflicts.Value());
    skipped.Inc(static_cast<double>(s.stale_skipped) - skipped.Value());
    writes.Inc(static_cast<double>(s.writes) - writes.Value());
    retries.Inc(static_cast<double>(s.retries) - retries.Value());
    mutations.Inc(static_cast<double>(s.mutations) - mutations.Value());
    const NodeBlocks::Stats b = writer_.block_stats();
    handouts.Inc(static_cast<double>(b.taken) - handouts.Value());
    reserved.Inc(static_cast<double>(b.reserved) - reserved.Value());
    given_back.Inc(static_cast<double>(b.released) - given_back.Value());
    lost.Inc(static_cast<double>(b.lost) - lost.Value());
  });
}

void IpamService::Start() { writer_.Start(); }

void IpamService::Stop() { writer_.Stop(); }

bool IpamService::Ready() const { return caches_.IpamSynced(); }

bool IpamService::WaitForSync(absl::Duration timeout) {
  const absl::Time deadline = clock_->Now() + timeout;
  while (!Ready()) {
    if (clock_->Now() >= deadline) return false;
    base::RealClock::Get().SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// ---- lookups --------------------------------------------------------------------------------

absl::StatusOr<std::shared_ptr<const api::Pod>> IpamService::LivePod(const std::string& ns,
                                                                     const std::string& name,
                                                                     const std::string& uid) {
  std::shared_ptr<const api::Pod> pod = caches_.pods.store().Get(Key(ns, name));
  // A pod just scheduled may not have reached the cache; a cached pod with another UID may
  // have been re-created since: in both cases ask the API server.
  if (pod == nullptr || (!uid.empty() && pod->metadata.uid != uid)) {
    absl::StatusOr<api::Pod> fresh = pods_.Get(ns, name);
    if (!fresh.ok()) {
      if (kube::IsNotFound(fresh.status())) {
        return absl::NotFoundError(base::StrCat("pod ", ns, "/", name, " not found"));
      }
      return base::Annotate(fresh.status(), base::StrCat("getting pod ", ns, "/", name));
    }
    pod = std::make_shared<const api::Pod>(*std::move(fresh));
  }
  if (pod->spec.node_name != options_.node_name) {
    return absl::NotFoundError(base::StrCat("pod ", ns, "/", name, " is scheduled on node '",
                                            pod->spec.node_name, "', not on this node '",
                                            options_.node_name, "'"));
  }
  if (!uid.empty() && pod->metadata.uid != uid) {
    return absl::NotFoundError(base::StrCat("pod ", ns, "/", name, " has UID ",
                                            pod->metadata.uid, ", not ", uid,
                                            " (the runtime's pod was deleted and re-created)"));
  }
  if (!api::PodIsAlive(*pod)) {
    return absl::FailedPreconditionError(
        base::StrCat("pod ", ns, "/", name, " is terminating or finished; no IP is allocated"));
  }
  return pod;
}

absl::StatusOr<sp::PodOwner> IpamService::ResolveOwner(const api::Pod& pod) {
  sp::PodOwner owner{.api_version = "v1", .kind = "Pod", .namespace_ = pod.metadata.namespace_,
                     .name = pod.metadata.name, .uid = pod.metadata.uid};
  const api::OwnerReference* ref = pod.metadata.ControllerRef();
  if (ref == nullptr) return owner;
  owner = {.api_version = ref->api_version, .kind = ref->kind,
           .namespace_ = pod.metadata.namespace_, .name = ref->name, .uid = ref->uid};
  // ReplicaSet -> Deployment, Job -> CronJob: the top controller names the app (upstream
  // PodTopController). One GET; if it fails the direct owner is used.
  std::optional<api::ResourceInfo> parent_kind;
  if (ref->kind == "ReplicaSet" && ref->api_version == "apps/v1") {
    parent_kind = ResourceOf("apps", "ReplicaSet", "replicasets");
  } else if (ref->kind == "Job" && ref->api_version == "batch/v1") {
    parent_kind = ResourceOf("batch", "Job", "jobs");
  }
  if (parent_kind.has_value()) {
    // A ReplicaSet's or Job's controller never changes: remember it, so that a Deployment's
    // pods cost no extra GET on the IPAM path after the first.
    {
      absl::MutexLock lock(&owners_mu_);
      if (auto it = top_owners_.find(ref->uid); it != top_owners_.end()) return it->second;
    }
    absl::StatusOr<base::Json> obj =
        kube::DynamicClient(rest_, *parent_kind).Get(pod.metadata.namespace_, ref->name);
    if (obj.ok()) {
      api::DecodeErrors errs;
      api::ObjectMeta meta =
          api::DecodeInto<api::ObjectMeta>((*obj).value("metadata", base::Json::object()), &errs);
      if (const api::OwnerReference* top = meta.ControllerRef(); top != nullptr) {
        owner = {.api_version = top->api_version, .kind = top->kind,
                 .namespace_ = pod.metadata.namespace_, .name = top->name, .uid = top->uid};
        absl::MutexLock lock(&owners_mu_);
        if (top_owners_.size() >= kMaxCachedOwners) top_owners_.clear();
        top_owners_[ref->uid] = owner;
      } else {  // no parent: its replicas may change, so this answer is not cached
        owner.replicas = IntAt(*obj, {"spec", "replicas"});
      }
    }
  }
  return owner;
}

absl::StatusOr<std::optional<api::SpiderEndpoint>> IpamService::FindEndpoint(
    const std::string& ns, const std::string& name, bool cache_only) {
  if (auto cached = caches_.endpoints.store().Get(Key(ns, name)); cached != nullptr) {
    return std::optional<api::SpiderEndpoint>(*cached);
  }
  // ADD of a new pod (the common case) trusts the cache: an endpoint written a moment ago and
  // not yet cached (a second NIC's ADD) is harmless, because allocation is idempotent per pod
  // UID and NIC and the endpoint write falls back to an update when it already exists.
  if (cache_only) return std::optional<api::SpiderEndpoint>();
  // DEL must know the endpoint's pools: one GET settles it.
  return GetEndpoint(ns, name);
}

absl::StatusOr<std::optional<api::SpiderEndpoint>> IpamService::GetEndpoint(const std::string& ns,
                                                                            const std::string& name) {
  absl::StatusOr<api::SpiderEndpoint> fresh = endpoints_.Get(ns, name);
  if (fresh.ok()) return std::optional<api::SpiderEndpoint>(*std::move(fresh));
  if (kube::IsNotFound(fresh.status())) return std::optional<api::SpiderEndpoint>();
  return base::Annotate(fresh.status(), base::StrCat("getting SpiderEndpoint ", ns, "/", name));
}

void IpamService::NoteSandbox(const std::string& uid, const std::string& container_id) {
  absl::MutexLock l(&prewarm_mu_);
  if (sandboxes_.size() > 8192) sandboxes_.clear();  // bounded; the pool records are the fallback
  sandboxes_[uid] = container_id;
}

bool IpamService::NewerSandboxHolds(const std::vector<std::string>& pools, const std::string& uid,
                                    const std::string& container_id) {
  if (container_id.empty()) return false;  // a DEL without a container frees them all
  {
    absl::MutexLock l(&prewarm_mu_);
    auto it = sandboxes_.find(uid);
    if (it != sandboxes_.end()) {
      if (it->second != container_id) return true;
      sandboxes_.erase(it);
      return false;
    }
  }
  return writer_.OtherContainerHolds(pools, uid, container_id);  // not ADDed by this agent run
}

sp::SelectionConfig IpamService::SelectionConfigFor() const {
  return {.enable_ipv4 = options_.config.enable_ipv4,
          .enable_ipv6 = options_.config.enable_ipv6,
          .enable_spider_subnet = options_.config.enable_spider_subnet,
          .enable_auto_pool_for_application = options_.config.enable_auto_pool_for_application,
          .cluster_subnet_default_flexible_ip_number =
              options_.config.cluster_subnet_default_flexible_ip_number,
          .agent_namespace = options_.agent_namespace,
          .multus_cluster_network = options_.multus_cluster_network};
}

std::vector<const api::SpiderIPPool*> IpamService::PoolSnapshot(
    std::vector<std::shared_ptr<const api::SpiderIPPool>>* keep) const {
  *keep = caches_.pools.List();
  std::vector<const api::SpiderIPPool*> out;
  out.reserve(keep->size());
  for (const auto& p : *keep) out.push_back(p.get());
  return out;
}

absl::StatusOr<sp::SelectionRequest> IpamService::BuildSelectionRequest(
    const api::Pod& pod, const sp::PodOwner& owner, const ipamapi::IpamAddArgs& args) {
  sp::SelectionRequest req;
  req.pod = {.namespace_ = pod.metadata.namespace_, .name = pod.metadata.name,
             .uid = pod.metadata.uid, .labels = pod.metadata.labels,
             .annotations = pod.metadata.annotations, .owner = owner};
  if (auto ns = caches_.namespaces.store().Get(pod.metadata.namespace_); ns != nullptr) {
    req.namespace_ = {.labels = ns->metadata.labels, .annotations = ns->metadata.annotations};
  } else {
    return absl::NotFoundError(
        base::StrCat("namespace ", pod.metadata.namespace_, " of pod ", pod.metadata.name,
                     " is not in the agent's cache"));
  }
  req.node.name = options_.node_name;
  req.node.labels = caches_.NodeLabels();
  req.if_name = args.if_name;
  req.default_ipv4_pools = args.default_ipv4_ippool;
  req.default_ipv6_pools = args.default_ipv6_ippool;
  req.clean_gateway = args.clean_gateway;
  return req;
}

// ---- SpiderEndpoint -------------------------------------------------------------------------

std::vector<std::string> IpamService::PoolsOf(const api::SpiderEndpoint& endpoint) const {
  std::set<std::string> pools;
  if (endpoint.status.has_value()) {
    for (const api::IPAllocationDetail& d : endpoint.status->current.ips) {
      if (d.ipv4_pool) pools.insert(*d.ipv4_pool);
      if (d.ipv6_pool) pools.insert(*d.ipv6_pool);
    }
  }
  return {pools.begin(), pools.end()};
}

absl::Status IpamService::WriteEndpoint(const std::optional<api::SpiderEndpoint>& old,
                                        const api::Pod& pod, const sp::PodOwner& owner,
                                        std::vector<api::IPAllocationDetail> details) {
  api::SpiderEndpoint ep;
  if (old.has_value()) ep = *old;
  ep.metadata.name = EndpointName(pod, owner);
  ep.metadata.namespace_ = pod.metadata.namespace_;
  if (std::find(ep.metadata.finalizers.begin(), ep.metadata.finalizers.end(),
                api::kSpiderFinalizer) == ep.metadata.finalizers.end()) {
    ep.metadata.finalizers.push_back(std::string(api::kSpiderFinalizer));
  }
  // StatefulSet (and KubeVirt) endpoints outlive their pod: no ownerReference (reference §1.4).
  ep.metadata.owner_references.clear();
  if (owner.kind != "StatefulSet" && !KubevirtStaticIP(owner)) {
    ep.metadata.owner_references.push_back(api::MakeOwnerReference(pod, /*controller=*/false));
  }
  ep.status = api::WorkloadEndpointStatus{
      .current = {.uid = pod.metadata.uid, .node = options_.node_name, .ips = std::move(details)},
      .owner_controller_type = owner.kind,
      .owner_controller_name = owner.name};
  absl::StatusOr<api::SpiderEndpoint> written =
      old.has_value() ? endpoints_.Update(ep) : endpoints_.Create(ep);
  if (!written.ok() && !old.has_value() && kube::IsAlreadyExists(written.status())) {
    // Created by an earlier attempt we did not see: overwrite it (its pod is this one).
    absl::StatusOr<api::SpiderEndpoint> cur = endpoints_.Get(ep.metadata.namespace_, ep.metadata.name);
    if (!cur.ok()) return cur.status();
    ep.metadata.resource_version = cur->metadata.resource_version;
    written = endpoints_.Update(ep);
  }
  if (!written.ok()) {
    return base::Annotate(written.status(), base::StrCat("writing SpiderEndpoint ",
                                                         Key(ep.metadata.namespace_, ep.metadata.name)));
  }
  return absl::OkStatus();
}

absl::Status IpamService::DeleteEndpoint(const api::SpiderEndpoint& endpoint) {
  const std::string& ns = endpoint.metadata.namespace_;
  const std::string& name = endpoint.metadata.name;
  // Drop our finalizer (only if the object is still the one we looked at), then delete.
  absl::StatusOr<api::SpiderEndpoint> patched = endpoints_.Patch(
      ns, name, kube::PatchType::kJson,
      base::Json::array({base::Json{{"op", "test"}, {"path", "/metadata/uid"}, {"value", endpoint.metadata.uid}},
                         base::Json{{"op", "remove"}, {"path", "/metadata/finalizers"}}}));
  if (!patched.ok() && !kube::IsNotFound(patched.status()) && !kube::IsInvalid(patched.status()) &&
      !kube::IsBadRequest(patched.status())) {
    return base::Annotate(patched.status(), base::StrCat("removing the finalizer of SpiderEndpoint ", ns, "/", name));
  }
  absl::Status s = endpoints_.Delete(ns, name, {.precondition_uid = endpoint.metadata.uid});
  if (!s.ok() && !kube::IsNotFound(s) && !kube::IsConflict(s)) {
    return base::Annotate(s, base::StrCat("deleting SpiderEndpoint ", ns, "/", name));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> IpamService::ValidStatefulSetPod(const std::string& ns,
                                                      const std::string& pod_name,
                                                      const std::string& sts_name) {
  absl::StatusOr<base::Json> sts =
      kube::DynamicClient(rest_, ResourceOf("apps", "StatefulSet", "statefulsets")).Get(ns, sts_name);
  if (!sts.ok()) {
    if (kube::IsNotFound(sts.status())) return false;
    return sts.status();
  }
  if ((*sts).contains("metadata") && (*sts)["metadata"].contains("deletionTimestamp")) return false;
  const std::optional<int64_t> ordinal = Ordinal(pod_name, sts_name);
  if (!ordinal.has_value()) return false;
  const int64_t replicas = IntAt(*sts, {"spec", "replicas"}).value_or(1);
  const int64_t start = IntAt(*sts, {"spec", "ordinals", "start"}).value_or(0);
  return *ordinal >= start && *ordinal < start + replicas;
}

IpamService::UidRecords IpamService::RecordsOf(const std::string& uid) const {
  UidRecords out;
  for (const auto& cached : caches_.pools.List()) {
    // The newest status: records written since the copy was read count.
    const std::shared_ptr<const api::SpiderIPPool> p =
        caches_.pools.FreshOrCached(cached->metadata.name);
    if (p == nullptr) continue;  // deleted meanwhile
    absl::StatusOr<api::PoolIPAllocations> recs = p->AllocatedIPs();
    if (!recs.ok()) continue;
    bool holds = false;
    for (const auto& [ip, rec] : *recs) {
      if (rec.pod_uid != uid) continue;
      holds = true;
      out.owners.insert(rec.pod);
    }
    if (holds) out.pools.push_back(p->metadata.name);
  }
  return out;
}

// ---- wire -----------------------------------------------------------------------------------

ipamapi::IpamAddResponse IpamService::ToWire(const std::vector<api::IPAllocationDetail>& details,
                                             bool conflict_detection) const {
  const sp::Reply reply = sp::ReplyFromDetails(details);
  ipamapi::IpamAddResponse out;
  for (const sp::ReplyIP& ip : reply.ips) {
    out.ips.push_back({.version = ip.version, .address = ip.address, .ip_pool = ip.pool,
                       .gateway = ip.gateway, .nic = ip.nic, .vlan = ip.vlan,
                       .enable_gateway_detection = options_.config.enable_gateway_detection,
                       .enable_ip_conflict_detection = conflict_detection});
  }
  for (const sp::ReplyRoute& r : reply.routes) {
    out.routes.push_back({.if_name = r.if_name, .dst = r.dst, .gw = r.gw});
  }
  return out;
}

// ---- ADD ------------------------------------------------------------------------------------

absl::StatusOr<ipamapi::IpamAddResponse> IpamService::Allocate(const ipamapi::IpamAddArgs& args,
                                                               absl::Time deadline) {
  const absl::Time start = clock_->Now();
  AddFailure failure;
  absl::StatusOr<ipamapi::IpamAddResponse> out = DoAllocate(args, deadline, &failure);
  if (metrics_.allocations != nullptr) {
    metrics_.allocations->Inc();
    if (!out.ok()) metrics_.allocation_failures->Inc();
    metrics_.allocation_seconds->Observe(absl::ToDoubleSeconds(clock_->Now() - start));
  }
  if (!out.ok()) {
    SP_LOG(Warning).Msg("IPAM ADD failed").KV("pod", Key(args.pod_namespace, args.pod_name))
        .KV("nic", args.if_name).KV("error", out.status());
    RecordAddFailure(args, failure, out.status());
  } else if (const absl::Duration took = clock_->Now() - start; took > absl::Seconds(1)) {
    SP_LOG(Warning).Msg("slow IPAM ADD").KV("pod", Key(args.pod_namespace, args.pod_name))
        .KV("nic", args.if_name).KV("took_ms", absl::ToInt64Milliseconds(took));
  }
  return out;
}

void IpamService::RecordAddFailure(const ipamapi::IpamAddArgs& args, const AddFailure& failure,
                                   const absl::Status& error) {
  // A pod that does not exist (or not here, or is going away) has nobody to tell.
  if (options_.recorder == nullptr || failure.pod == nullptr) return;
  const char* reason = absl::IsResourceExhausted(error) ? kEventReasonIPPoolExhausted
                                                         : kEventReasonAllocationFailed;
  std::string pools = absl::StrJoin(failure.pools, ", ");
  if (pools.empty()) pools = "none selected";
  options_.recorder->Event(
      api::MakeObjectReference(*failure.pod), "Warning", reason,
      base::StrCat("IPAM ADD for NIC ", args.if_name, " failed (candidate IPPools: ", pools,
                   "): ", base::FromAbsl(error.message())));
}

absl::StatusOr<ipamapi::IpamAddResponse> IpamService::DoAllocate(const ipamapi::IpamAddArgs& args,
                                                                 absl::Time deadline,
                                                                 AddFailure* failure) {
  PodLock lock(this, Key(args.pod_namespace, args.pod_name));
  SP_ASSIGN_OR_RETURN(std::shared_ptr<const api::Pod> pod,
                      LivePod(args.pod_namespace, args.pod_name, args.pod_uid));
  failure->pod = pod;
  SP_ASSIGN_OR_RETURN(sp::PodOwner owner, ResolveOwner(*pod));
  // A KubeVirt VM's IPs live under its VMI's name (reference §2.1 step 3).
  const bool vm_pod = KubevirtStaticIP(owner);
  // A VM's endpoint is also written by the agent of another node (the VM restarted there, or
  // a live migration): read it live, never from a cache that may be behind.
  // A StatefulSet pod re-created a moment after its predecessor's DEL may find the cache
  // behind: a miss is confirmed with a GET, or it would lose its IP to a fresh allocation.
  const bool sts_pod = options_.config.enable_stateful_set && owner.kind == "StatefulSet";
  SP_ASSIGN_OR_RETURN(std::optional<api::SpiderEndpoint> endpoint,
                      vm_pod ? GetEndpoint(args.pod_namespace, EndpointName(*pod, owner))
                             : FindEndpoint(args.pod_namespace, args.pod_name,
                                            /*cache_only=*/!sts_pod));
  if (endpoint.has_value() && !endpoint->status.has_value()) endpoint.reset();

  if (endpoint.has_value()) {
    std::vector<api::IPAllocationDetail>& details = endpoint->status->current.ips;
    const bool same_pod = endpoint->status->current.uid == pod->metadata.uid;
    // StatefulSet pods and KubeVirt VMs keep their IPs across pods (reference §2.6): the
    // records move to the new pod.
    const bool sts = (options_.config.enable_stateful_set && owner.kind == "StatefulSet" &&
                      endpoint->status->owner_controller_type == "StatefulSet") ||
                     (vm_pod && endpoint->status->owner_controller_type == api::kubevirt::kKindVMI);
    auto has_nic = [&] {
      return std::any_of(details.begin(), details.end(),
                         [&](const api::IPAllocationDetail& d) { return d.interface_ == args.if_name; });
    };
    // Multi-NIC without names: later NICs were stored with interface "" (reference §2.2).
    auto claim_unnamed = [&] {
      if (has_nic()) return false;
      for (api::IPAllocationDetail& d : details) {
        if (d.interface_.empty()) {
          d.interface_ = args.if_name;
          return true;
        }
      }
      return false;
    };
    if (same_pod || sts) {
      const bool named_now = claim_unnamed();
      if (has_nic()) {
        // Same pod (a repeated ADD or a new sandbox) or a re-created StatefulSet pod: the
        // records move to this UID / container; nothing new is allocated.
        // The records' owner is the endpoint's name: the pod's, or its VMI's (KubeVirt).
        absl::Status moved = writer_.ReassignRecords(
            *endpoint,
            {.pod = Key(endpoint->metadata.namespace_, endpoint->metadata.name),
             .pod_uid = pod->metadata.uid, .node = options_.node_name,
             .container_id = args.container_id},
            deadline);
        if (absl::IsFailedPrecondition(moved) && same_pod && !sts) {
          // The endpoint names IPs the pool (read fresh) no longer holds for this pod: an
          // earlier DEL freed them and the endpoint's delete did not land. The pool is the
          // truth: the stale endpoint goes, and the pod gets IPs anew (retrying would fail
          // the same way for ever: bench/chaos found a pod never addressed after 30 ADDs).
          SP_LOG(Warning).Msg("the pod's SpiderEndpoint names IPs its pool no longer holds for it; allocating anew")
              .KV("pod", Key(args.pod_namespace, args.pod_name)).KV("error", moved);
          bool all = false;
          SP_RETURN_IF_ERROR(writer_.ReleasePodRecords(PoolsOf(*endpoint), pod->metadata.uid, "",
                                                       deadline, &all));
          SP_RETURN_IF_ERROR(DeleteEndpoint(*endpoint));
          return AllocateFresh(args, *pod, owner, std::nullopt, deadline, &failure->pools);
        }
        SP_RETURN_IF_ERROR(moved);
        if (!same_pod || named_now || endpoint->status->current.node != options_.node_name) {
          SP_RETURN_IF_ERROR(WriteEndpoint(endpoint, *pod, owner, details));
        }
        NoteSandbox(pod->metadata.uid, args.container_id);
        return ToWire(details, ConflictDetectionFor(*pod, owner));
      }
    }
    if (!same_pod && !sts) {
      // The endpoint belongs to an earlier pod of this name: free what it still holds.
      bool all = false;
      SP_RETURN_IF_ERROR(writer_.ReleasePodRecords(PoolsOf(*endpoint), endpoint->status->current.uid, "",
                                           deadline, &all));
      SP_RETURN_IF_ERROR(DeleteEndpoint(*endpoint));
      endpoint.reset();
    }
  }
  return AllocateFresh(args, *pod, owner, endpoint, deadline, &failure->pools);
}

absl::StatusOr<ipamapi::IpamAddResponse> IpamService::AllocateFresh(
    const ipamapi::IpamAddArgs& args, const api::Pod& pod, const sp::PodOwner& owner,
    const std::optional<api::SpiderEndpoint>& old, absl::Time deadline,
    std::vector<std::string>* candidate_pools) {
  SP_ASSIGN_OR_RETURN(sp::SelectionRequest req, BuildSelectionRequest(pod, owner, args));
  const sp::SelectionConfig config = SelectionConfigFor();

  // Auto pools (SpiderSubnet) are made by the controller; wait (bounded) until they exist.
  const absl::Time wait_until =
      std::min(deadline, clock_->Now() + absl::Seconds(options_.config.wait_auto_pool_seconds));
  absl::StatusOr<sp::Selection> selection;
  while (true) {
    std::vector<std::shared_ptr<const api::SpiderIPPool>> keep;
    selection = sp::SelectPools(req, config, PoolSnapshot(&keep));
    if (selection.ok() || !absl::IsUnavailable(selection.status()) || clock_->Now() >= wait_until) {
      break;
    }
    clock_->SleepUntil(std::min(wait_until, clock_->Now() + absl::Milliseconds(200)));
  }
  if (!selection.ok()) return selection.status();
  for (const sp::NicCandidates& nic : selection->nics) {
    for (const std::vector<std::string>* pools : {&nic.ipv4_pools, &nic.ipv6_pools}) {
      for (const std::string& p : *pools) {
        if (std::find(candidate_pools->begin(), candidate_pools->end(), p) ==
            candidate_pools->end()) {
          candidate_pools->push_back(p);
        }
      }
    }
  }

  SP_ASSIGN_OR_RETURN(std::vector<api::Route> custom_routes,
                      sp::ParsePodRoutesAnnotation(pod.metadata.annotations));

  // The records' owner: the pod, or the VMI whose name the endpoint carries.
  const std::string pod_key = Key(pod.metadata.namespace_, EndpointName(pod, owner));
  std::vector<PoolWriter::Taken> taken;
  std::vector<sp::NicAllocation> nics;
  absl::Status failed;
  for (const sp::NicCandidates& nic : selection->nics) {
    std::string if_name = nic.if_name;
    if (selection->multiple_nic_no_name && if_name == "0") if_name = std::string(sp::kDefaultInterface);
    sp::NicAllocation out{.if_name = nic.if_name, .clean_gateway = nic.clean_gateway};
    const sp::AllocationRequest request{.pod = pod_key, .pod_uid = pod.metadata.uid,
                                        .node = options_.node_name,
                                        .container_id = args.container_id, .interface_ = if_name};
    for (int version : {4, 6}) {
      const std::vector<std::string>& pools = version == 4 ? nic.ipv4_pools : nic.ipv6_pools;
      if (pools.empty()) continue;
      absl::StatusOr<PoolWriter::Taken> t = writer_.TakeOne(pools, version, request, deadline);
      if (!t.ok()) {
        failed = t.status();
        break;
      }
      taken.push_back(*t);
      (version == 4 ? out.ipv4 : out.ipv6) = t->family;
    }
    if (!failed.ok()) break;
    nics.push_back(std::move(out));
  }
  if (failed.ok() && taken.empty()) {
    failed = absl::FailedPreconditionError(base::StrCat(
        "no IP family is enabled for pod ", pod_key, " NIC ", args.if_name,
        " (enableIPv4/enableIPv6 and the candidate pools leave nothing to allocate)"));
  }
  if (!failed.ok()) {
    writer_.Undo(taken, pod.metadata.uid, deadline);
    return failed;
  }
  const sp::AllocationResult result =
      sp::BuildAllocationResult(std::move(nics), custom_routes, selection->multiple_nic_no_name);
  for (const api::Route& r : result.unattached_routes) {
    SP_LOG(Warning).Msg("custom route matches no allocated subnet; dropped").KV("pod", pod_key)
        .KV("dst", r.dst).KV("gw", r.gw);
  }
  std::vector<api::IPAllocationDetail> stored =
      sp::EndpointDetails(result, selection->multiple_nic_no_name);
  if (absl::Status s = WriteEndpoint(old, pod, owner, stored); !s.ok()) {
    writer_.Undo(taken, pod.metadata.uid, deadline);
    return s;
  }
  {
    // What the prewarm predicts the next pods' pools with (their NIC and the NAD's defaults).
    absl::MutexLock l(&prewarm_mu_);
    add_template_ = {.if_name = args.if_name,
                     .default_ipv4_ippool = args.default_ipv4_ippool,
                     .default_ipv6_ippool = args.default_ipv6_ippool,
                     .clean_gateway = args.clean_gateway};
  }
  SP_LOG(Info).Msg("allocated").KV("pod", pod_key).KV("nic", args.if_name)
      .KV("container", args.container_id).KV("ips", taken.size());
  NoteSandbox(pod.metadata.uid, args.container_id);
  return ToWire(result.details, ConflictDetectionFor(pod, owner));
}

// ---- DEL ------------------------------------------------------------------------------------

absl::Status IpamService::Release(const ipamapi::IpamDelArgs& args, absl::Time deadline) {
  const absl::Time start = clock_->Now();
  absl::Status out = DoRelease(args, deadline);
  if (metrics_.releases != nullptr) {
    metrics_.releases->Inc();
    if (!out.ok()) metrics_.release_failures->Inc();
    metrics_.release_seconds->Observe(absl::ToDoubleSeconds(clock_->Now() - start));
  }
  if (!out.ok()) {
    SP_LOG(Warning).Msg("IPAM DEL failed").KV("pod", Key(args.pod_namespace, args.pod_name))
        .KV("container", args.container_id).KV("error", out);
  }
  return out;
}

absl::Status IpamService::DoRelease(const ipamapi::IpamDelArgs& args, absl::Time deadline) {
  PodLock lock(this, Key(args.pod_namespace, args.pod_name));
  SP_ASSIGN_OR_RETURN(std::optional<api::SpiderEndpoint> endpoint,
                      FindEndpoint(args.pod_namespace, args.pod_name, /*cache_only=*/false));
  if (endpoint.has_value() && endpoint->status.has_value() && !args.pod_uid.empty() &&
      endpoint->status->current.uid != args.pod_uid) {
    // The cache may not have this pod's own endpoint write yet (a StatefulSet pod re-created
    // under the same name moves the endpoint to its UID at ADD): read it live, or the DEL
    // would take the endpoint for an earlier pod's and leave it behind.
    SP_ASSIGN_OR_RETURN(endpoint, GetEndpoint(args.pod_namespace, args.pod_name));
  }
  if (endpoint.has_value() && !endpoint->status.has_value()) endpoint.reset();
  std::string uid = args.pod_uid;
  if (uid.empty() && endpoint.has_value()) uid = endpoint->status->current.uid;
  if (uid.empty()) {
    // No UID from the runtime and no endpoint: the pod's current UID, if it still exists.
    absl::StatusOr<api::Pod> pod = pods_.Get(args.pod_namespace, args.pod_name);
    if (pod.ok()) uid = pod->metadata.uid;
  }
  if (uid.empty()) return absl::OkStatus();  // nothing of this pod is known anywhere

  // Without an endpoint of this UID the pool records (their newest status) tell what it holds.
  std::optional<UidRecords> records;
  if (!(endpoint.has_value() && endpoint->status->current.uid == uid)) {
    records = RecordsOf(uid);
  }
  // A KubeVirt VM's pod: its IPs are kept under the VMI's name while the VM wants them.
  if (options_.config.enable_kubevirt_static_ip && records.has_value()) {
    if (std::optional<std::string> vmi =
            VMIOfPod(args.pod_namespace, args.pod_name, uid, *records)) {
      SP_ASSIGN_OR_RETURN(std::optional<api::SpiderEndpoint> vm_endpoint,
                          GetEndpoint(args.pod_namespace, *vmi));
      if (vm_endpoint.has_value() && vm_endpoint->status.has_value() &&
          vm_endpoint->status->owner_controller_type == api::kubevirt::kKindVMI) {
        if (vm_endpoint->status->current.uid != uid) {
          // A later pod of the VM (a restart or the target of a live migration) holds them.
          SP_LOG(Info).Msg("the VM's IPs belong to its newer pod; nothing to release")
              .KV("pod", Key(args.pod_namespace, args.pod_name)).KV("vmi", *vmi);
          return absl::OkStatus();
        }
        SP_ASSIGN_OR_RETURN(bool wanted, VMWantsItsIPs(args.pod_namespace, *vmi));
        if (wanted) {
          SP_LOG(Info).Msg("keeping the IPs of a KubeVirt VM")
              .KV("pod", Key(args.pod_namespace, args.pod_name)).KV("vmi", *vmi);
          return absl::OkStatus();
        }
        endpoint = std::move(vm_endpoint);
      }
    }
  }

  if (endpoint.has_value() && endpoint->status->current.uid == uid &&
      options_.config.enable_stateful_set &&
      endpoint->status->owner_controller_type == "StatefulSet") {
    SP_ASSIGN_OR_RETURN(bool valid, ValidStatefulSetPod(args.pod_namespace, args.pod_name,
                                                        endpoint->status->owner_controller_name));
    if (valid) {
      SP_LOG(Info).Msg("keeping the IPs of a StatefulSet pod").KV("pod", Key(args.pod_namespace, args.pod_name));
      return absl::OkStatus();
    }
  }

  std::vector<std::string> pools;
  if (endpoint.has_value() && endpoint->status->current.uid == uid) {
    pools = PoolsOf(*endpoint);
  } else {
    // No endpoint for this UID (the write failed, or it was deleted): the pools holding
    // records of the UID, written or still in this node's reservations.
    pools = writer_.PoolsWithUnflushed(uid);
    if (records.has_value()) pools.insert(pools.end(), records->pools.begin(), records->pools.end());
  }
  const bool own_endpoint = endpoint.has_value() && endpoint->status->current.uid == uid;
  if (writer_.reservations_enabled()) {
    // Without waiting for a pool write (blocks.h point 5): the endpoint goes first (the durable
    // sign that the records are free), unless a newer sandbox of the pod holds IPs too; the
    // records are freed by the node reservations' keeper.
    if (own_endpoint && !NewerSandboxHolds(pools, uid, args.container_id)) {
      SP_RETURN_IF_ERROR(DeleteEndpoint(*endpoint));
    }
    if (writer_.ReleaseInBackground(pools, uid, args.container_id)) {
      SP_LOG(Info).Msg("released").KV("pod", Key(args.pod_namespace, args.pod_name))
          .KV("container", args.container_id).KV("pools", pools.size()).KV("records", "background");
      return absl::OkStatus();
    }
  }
  bool all_released = true;
  SP_RETURN_IF_ERROR(writer_.ReleasePodRecords(pools, uid, args.container_id, deadline, &all_released));
  if (own_endpoint && all_released) SP_RETURN_IF_ERROR(DeleteEndpoint(*endpoint));
  SP_LOG(Info).Msg("released").KV("pod", Key(args.pod_namespace, args.pod_name))
      .KV("container", args.container_id).KV("pools", pools.size());
  return absl::OkStatus();
}

}  // namespace spiderpool::agent::ipam
