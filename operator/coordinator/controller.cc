#include "operator/coordinator/controller.h"


#include <algorithm>
#include <utility>

#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/errors.h"
#include "operator/coordinator/cidrs.h"

namespace spiderpool::op::coordinator {

namespace {

constexpr char kAuto[] = "auto";
constexpr char kCluster[] = "cluster";
constexpr char kCalico[] = "calico";
constexpr char kCilium[] = "cilium";
constexpr char kNone[] = "none";

bool SameStatus(const api::CoordinatorStatus& a, const api::CoordinatorStatus& b) {
  return a.phase == b.phase && a.reason == b.reason && a.overlay_pod_cidr == b.overlay_pod_cidr &&
         a.service_cidr == b.service_cidr;
}

// 404 (not served) and 403 (not allowed) mean "this source is not available", not a failure.
bool Unavailable(const absl::Status& s) { return kube::IsNotFound(s) || kube::IsForbidden(s); }

}  // namespace

const api::ResourceInfo& ServiceCIDRResource(std::string_view version) {
  static const api::ResourceInfo v1{.group = "networking.k8s.io",
                                    .version = "v1",
                                    .kind = "ServiceCIDR",
                                    .plural = "servicecidrs",
                                    .singular = "servicecidr",
                                    .namespaced = false,
                                    .has_status = true};
  static const api::ResourceInfo v1beta1 = [] {
    api::ResourceInfo r = v1;
    r.version = "v1beta1";
    return r;
  }();
  return version == "v1beta1" ? v1beta1 : v1;
}

const api::ResourceInfo& CalicoIPPoolResource() {
  static const api::ResourceInfo r{.group = "crd.projectcalico.org",
                                   .version = "v1",
                                   .kind = "IPPool",
                                   .plural = "ippools",
                                   .singular = "ippool",
                                   .namespaced = false};
  return r;
}

kube::InformerOptions ControlPlanePodsInformerOptions(const ControllerOptions& options) {
  return {.namespace_ = options.system_namespace,
          .label_selector = base::StrCat(kComponentLabel, " in (", kKubeAPIServer, ",",
                                         kKubeControllerManager, ")"),
          .registry = options.registry};
}

kube::InformerOptions ConfigMapInformerOptions(const ControllerOptions& options,
                                               std::string_view name) {
  return {.namespace_ = options.system_namespace,
          .field_selector = base::StrCat("metadata.name=", name),
          .registry = options.registry};
}

CoordinatorController::CoordinatorController(ControllerOptions options,
                                             std::shared_ptr<kube::RestClient> rest,
                                             Informers informers)
    : options_(std::move(options)),
      rest_(std::move(rest)),
      informers_(informers),
      coordinator_client_(rest_) {
  kube::ControllerOptions co;
  co.name = kControllerName;
  co.workers = options_.workers;
  co.clock = options_.clock;
  co.registry = options_.registry;
  co.cache_synced = {[this] { return informers_.coordinators->HasSynced(); },
                     [this] { return informers_.control_plane_pods->HasSynced(); },
                     [this] { return informers_.kubeadm_config->HasSynced(); },
                     [this] { return informers_.cilium_config->HasSynced(); }};
  controller_ = std::make_unique<kube::Controller>(std::move(co), this);
  RegisterHandlers();
}

CoordinatorController::~CoordinatorController() = default;

void CoordinatorController::RegisterHandlers() {
  auto enqueue = [this](const api::SpiderCoordinator& c) {
    controller_->Enqueue({"", c.metadata.name});
  };
  informers_.coordinators->AddHandlers(
      {.on_add = enqueue,
       .on_update = [enqueue](const api::SpiderCoordinator&, const api::SpiderCoordinator& c) {
         enqueue(c);
       }});
  informers_.control_plane_pods->AddHandlers(
      {.on_add = [this](const api::Pod&) { EnqueueAll(); },
       .on_update = [this](const api::Pod&, const api::Pod&) { EnqueueAll(); },
       .on_delete = [this](const api::Pod&) { EnqueueAll(); }});
  for (kube::Informer<api::ConfigMap>* cms :
       {informers_.kubeadm_config, informers_.cilium_config}) {
    cms->AddHandlers(
        {.on_add = [this](const api::ConfigMap&) { EnqueueAll(); },
         .on_update = [this](const api::ConfigMap&, const api::ConfigMap&) { EnqueueAll(); },
         .on_delete = [this](const api::ConfigMap&) { EnqueueAll(); }});
  }
}

void CoordinatorController::EnqueueAll() {
  for (const auto& c : informers_.coordinators->store().List()) {
    controller_->Enqueue({"", c->metadata.name});
  }
}

absl::Status CoordinatorController::Run(std::stop_token stop) {
  SP_LOG(Info)
      .Msg("starting SpiderCoordinator controller")
      .KV("system_namespace", options_.system_namespace)
      .KV("resync", absl::FormatDuration(options_.resync));
  return controller_->Run(stop);
}

absl::StatusOr<kube::ReconcileResult> CoordinatorController::Reconcile(
    const kube::ReconcileRequest& request, std::stop_token) {
  auto cached = informers_.coordinators->store().Get(request.name);
  if (cached == nullptr || cached->metadata.IsDeleting()) return kube::ReconcileResult{};
  const kube::ReconcileResult resync{.requeue_after = options_.resync};

  SP_ASSIGN_OR_RETURN(api::CoordinatorStatus desired, DesiredStatus(*cached));
  if (cached->status.has_value() && SameStatus(*cached->status, desired)) return resync;

  api::SpiderCoordinator update = *cached;  // carries the cached resourceVersion
  update.status = desired;
  auto written = coordinator_client_.UpdateStatus(update);
  if (kube::IsConflict(written.status())) {
    // Changed since the cache saw it: the queue brings the key back, and the next run reads
    // the (then newer) cache again.
    SP_LOG(Info)
        .Msg("SpiderCoordinator changed meanwhile; retrying its status update")
        .KV("controller", kControllerName)
        .KV("coordinator", request.name);
    return kube::ReconcileResult{.requeue = true};
  }
  if (kube::IsNotFound(written.status())) return kube::ReconcileResult{};  // deleted meanwhile
  if (!written.ok()) {
    return base::Annotate(written.status(),
                          base::StrCat("updating the status of SpiderCoordinator ", request.name));
  }
  auto log = SP_LOG(Info);
  log.Msg("SpiderCoordinator status updated")
      .KV("controller", kControllerName)
      .KV("coordinator", request.name)
      .KV("phase", desired.phase)
      .KV("overlayPodCIDR", absl::StrJoin(desired.overlay_pod_cidr, ","))
      .KV("serviceCIDR", absl::StrJoin(desired.service_cidr, ","));
  if (!desired.reason.empty()) log.KV("reason", desired.reason);
  return resync;
}

absl::StatusOr<api::CoordinatorStatus> CoordinatorController::DesiredStatus(
    const api::SpiderCoordinator& coordinator) {
  api::CoordinatorStatus out;
  const std::optional<std::string>& type = coordinator.spec.pod_cidr_type;
  if (!type.has_value() || type->empty()) {
    out.phase = std::string(api::kCoordinatorPhaseNotReady);
    out.reason = "spec.podCIDRType is not set (auto, cluster, calico, cilium or none)";
    return out;
  }
  SP_ASSIGN_OR_RETURN(Found pod, PodCIDRs(*type));
  if (!pod.ok) {
    // As upstream: a coordinator that is not ready publishes no CIDRs at all.
    out.phase = std::string(api::kCoordinatorPhaseNotReady);
    out.reason = pod.missing;
    return out;
  }
  SP_ASSIGN_OR_RETURN(Found svc, ServiceCIDRs());
  if (!svc.ok) {
    SP_LOG(Warning)
        .Msg("the service CIDRs of the cluster could not be determined")
        .KV("controller", kControllerName)
        .KV("coordinator", coordinator.metadata.name)
        .KV("missing", svc.missing);
  }
  out.phase = std::string(api::kCoordinatorPhaseSynced);
  out.overlay_pod_cidr = std::move(pod.cidrs);
  out.service_cidr = std::move(svc.cidrs);
  return out;
}

absl::StatusOr<CoordinatorController::Found> CoordinatorController::PodCIDRs(
    const std::string& type) {
  if (type == kNone) return Found{.ok = true};
  if (type == kCluster) return ClusterPodCIDRs();
  if (type == kCalico) return CalicoPodCIDRs();
  if (type == kCilium) return CiliumPodCIDRs();
  if (type != kAuto) {
    return Found{.missing = base::StrCat("spec.podCIDRType \"", type,
                                         "\" is none of auto, cluster, calico, cilium, none")};
  }
  // auto: Calico if it has IPPools, else Cilium if it has its ConfigMap, else the cluster's.
  SP_ASSIGN_OR_RETURN(std::optional<base::Json> pools, ListCalicoPools());
  Found found;
  std::string resolved;
  if (pools.has_value() && HasLiveItems(*pools)) {
    resolved = kCalico;
    SP_ASSIGN_OR_RETURN(found, CalicoPodCIDRs());
  } else if (CiliumConfig() != nullptr) {
    resolved = kCilium;
    found = CiliumPodCIDRs();
  } else {
    resolved = kCluster;
    found = ClusterPodCIDRs();
  }
  if (!found.ok) {
    found.missing = base::StrCat("podCIDRType auto resolved to ", resolved, ": ", found.missing);
  }
  return found;
}

CoordinatorController::Found CoordinatorController::ClusterPodCIDRs() {
  const std::string& ns = options_.system_namespace;
  if (auto kcm = ControlPlaneFlag(kKubeControllerManager, "cluster-cidr");
      kcm.has_value() && !kcm->empty()) {
    return Found{.ok = true, .cidrs = std::move(*kcm)};
  }
  std::string kubeadm_problem;
  if (auto cm = KubeadmConfig(); cm == nullptr) {
    kubeadm_problem = base::StrCat("ConfigMap ", ns, "/", kKubeadmConfigName, " not found");
  } else if (auto cidrs = KubeadmNetworkingCIDRs(*cm, "podSubnet");
             cidrs.has_value() && !cidrs->empty()) {
    return Found{.ok = true, .cidrs = std::move(*cidrs)};
  } else {
    kubeadm_problem = base::StrCat("ConfigMap ", ns, "/", kKubeadmConfigName,
                                   " has no CIDR in ClusterConfiguration networking.podSubnet");
  }
  return Found{.missing = base::StrCat(
                   "cannot determine the cluster pod CIDRs: no kube-controller-manager pod in ", ns,
                   " (label ", kComponentLabel, "=", kKubeControllerManager,
                   ") with a CIDR in --cluster-cidr, and ", kubeadm_problem)};
}

absl::StatusOr<std::optional<base::Json>> CoordinatorController::ListCalicoPools() {
  kube::DynamicClient pools(rest_, CalicoIPPoolResource());
  auto list = pools.ListAll("", {.label_selector = options_.source_selector});
  if (Unavailable(list.status())) return std::optional<base::Json>();
  if (!list.ok()) return base::Annotate(list.status(), "listing Calico IPPools");
  return std::optional<base::Json>(std::move(*list));
}

absl::StatusOr<CoordinatorController::Found> CoordinatorController::CalicoPodCIDRs() {
  SP_ASSIGN_OR_RETURN(std::optional<base::Json> pools, ListCalicoPools());
  if (!pools.has_value()) {
    return Found{.missing =
                     "Calico IPPools (crd.projectcalico.org/v1 ippools) cannot be read: the "
                     "resource is not served (is Calico installed?) or not allowed"};
  }
  std::vector<std::string> cidrs = CalicoPoolCIDRs(*pools);
  if (cidrs.empty()) {
    return Found{.missing =
                     "no enabled Calico IPPool (crd.projectcalico.org/v1 ippools) with a "
                     "spec.cidr"};
  }
  return Found{.ok = true, .cidrs = std::move(cidrs)};
}

CoordinatorController::Found CoordinatorController::CiliumPodCIDRs() {
  const std::string where =
      base::StrCat("ConfigMap ", options_.system_namespace, "/", kCiliumConfigName);
  auto cm = CiliumConfig();
  if (cm == nullptr) return Found{.missing = base::StrCat(where, " not found")};
  CiliumConfigCIDRs cilium = CiliumClusterPoolCIDRs(*cm);
  if (cilium.ipam_mode == "kubernetes") {
    Found cluster = ClusterPodCIDRs();
    if (!cluster.ok) {
      cluster.missing = base::StrCat(where, " has ipam=kubernetes; ", cluster.missing);
    }
    return cluster;
  }
  if (!CiliumUsesClusterPool(cilium.ipam_mode)) {
    return Found{.missing = base::StrCat(where, ": Cilium IPAM mode \"", cilium.ipam_mode,
                                         "\" is not supported (cluster-pool or kubernetes)")};
  }
  if (!cilium.invalid.empty()) {
    return Found{.missing = base::StrCat(where, ": \"", cilium.invalid.front(),
                                         "\" in cluster-pool-ipv4-cidr/cluster-pool-ipv6-cidr "
                                         "is not a CIDR")};
  }
  if (cilium.cidrs.empty()) {
    return Found{.missing = base::StrCat(where,
                                         " has no CIDR in cluster-pool-ipv4-cidr or "
                                         "cluster-pool-ipv6-cidr")};
  }
  return Found{.ok = true, .cidrs = std::move(cilium.cidrs)};
}

absl::StatusOr<CoordinatorController::Found> CoordinatorController::ServiceCIDRs() {
  // The ServiceCIDR API (k8s >= 1.29; v1 since 1.33, v1beta1 in 1.31-1.32).
  std::string api_problem;
  for (std::string_view version : {"v1", "v1beta1"}) {
    kube::DynamicClient client(rest_, ServiceCIDRResource(version));
    auto list = client.ListAll("", {.label_selector = options_.source_selector});
    if (Unavailable(list.status())) {
      if (api_problem.empty()) {
        api_problem = base::StrCat("networking.k8s.io/", version,
                                   " servicecidrs: ", base::FromAbsl(list.status().message()));
      }
      if (kube::IsForbidden(list.status())) break;
      continue;
    }
    if (!list.ok()) return base::Annotate(list.status(), "listing ServiceCIDRs");
    std::vector<std::string> cidrs = ServiceCIDRObjectCIDRs(*list);
    if (!cidrs.empty()) return Found{.ok = true, .cidrs = std::move(cidrs)};
    api_problem = base::StrCat("no ServiceCIDR object (networking.k8s.io/", version, ")");
    break;
  }
  // Fallbacks: the flags of the control plane, then kubeadm-config.
  if (auto flag = ControlPlaneFlag(kKubeAPIServer, "service-cluster-ip-range");
      flag.has_value() && !flag->empty()) {
    return Found{.ok = true, .cidrs = std::move(*flag)};
  }
  if (auto flag = ControlPlaneFlag(kKubeControllerManager, "service-cluster-ip-range");
      flag.has_value() && !flag->empty()) {
    return Found{.ok = true, .cidrs = std::move(*flag)};
  }
  if (auto cm = KubeadmConfig(); cm != nullptr) {
    if (auto cidrs = KubeadmNetworkingCIDRs(*cm, "serviceSubnet");
        cidrs.has_value() && !cidrs->empty()) {
      return Found{.ok = true, .cidrs = std::move(*cidrs)};
    }
  }
  return Found{.missing = base::StrCat(api_problem,
                                       "; no --service-cluster-ip-range on a kube-apiserver or "
                                       "kube-controller-manager pod in ",
                                       options_.system_namespace,
                                       "; no networking.serviceSubnet in ConfigMap ",
                                       options_.system_namespace, "/", kKubeadmConfigName)};
}

std::optional<std::vector<std::string>> CoordinatorController::ControlPlaneFlag(
    std::string_view component, std::string_view flag) const {
  auto pods = informers_.control_plane_pods->store().List();
  std::sort(pods.begin(), pods.end(),
            [](const auto& a, const auto& b) { return a->metadata.name < b->metadata.name; });
  std::optional<std::vector<std::string>> out;
  for (const auto& pod : pods) {
    if (pod->metadata.IsDeleting()) continue;
    auto it = pod->metadata.labels.find(kComponentLabel);
    if (it == pod->metadata.labels.end() || it->second != component) continue;
    auto cidrs = FlagCIDRs(*pod, flag);
    if (!cidrs.has_value()) continue;
    if (!cidrs->empty()) return cidrs;
    out = std::move(cidrs);
  }
  return out;
}

std::shared_ptr<const api::ConfigMap> CoordinatorController::KubeadmConfig() const {
  return informers_.kubeadm_config->store().Get(
      base::StrCat(options_.system_namespace, "/", kKubeadmConfigName));
}

std::shared_ptr<const api::ConfigMap> CoordinatorController::CiliumConfig() const {
  return informers_.cilium_config->store().Get(
      base::StrCat(options_.system_namespace, "/", kCiliumConfigName));
}

// ---- AddToManager --------------------------------------------------------------------------

namespace {

// Everything AddToManager creates, shared by the runnables it adds (members are destroyed in
// reverse order: the controller before the informers it reads).
struct Bundle {
  std::unique_ptr<kube::Informer<api::SpiderCoordinator>> coordinators;
  std::unique_ptr<kube::Informer<api::Pod>> pods;
  std::unique_ptr<kube::Informer<api::ConfigMap>> kubeadm;
  std::unique_ptr<kube::Informer<api::ConfigMap>> cilium;
  std::unique_ptr<CoordinatorController> controller;
};


template <typename T>
std::unique_ptr<kube::Runnable> InformerRunnable(std::string name, std::shared_ptr<Bundle> b,
                                                 kube::Informer<T>* informer) {
  return std::make_unique<kube::FuncRunnable>(std::move(name), /*needs_leader=*/false,
                                              [b = std::move(b), informer](std::stop_token s) {
                                                informer->Run(s);
                                                return absl::OkStatus();
                                              });
}

}  // namespace

absl::StatusOr<CoordinatorController*> AddToManager(kube::Manager* manager,
                                                    std::shared_ptr<kube::RestClient> rest,
                                                    ControllerOptions options) {
  if (manager == nullptr || rest == nullptr) {
    return absl::InvalidArgumentError("AddToManager: manager and rest must be set");
  }
  if (options.system_namespace.empty()) {
    return absl::InvalidArgumentError("AddToManager: system_namespace must be set");
  }
  if (options.resync <= absl::ZeroDuration() || options.workers < 1) {
    return absl::InvalidArgumentError("AddToManager: resync must be > 0 and workers >= 1");
  }
  auto b = std::make_shared<Bundle>();
  b->coordinators = std::make_unique<kube::Informer<api::SpiderCoordinator>>(
      rest, kube::InformerOptions{.label_selector = options.coordinator_selector,
                                  .registry = options.registry});
  b->pods =
      std::make_unique<kube::Informer<api::Pod>>(rest, ControlPlanePodsInformerOptions(options));
  b->kubeadm = std::make_unique<kube::Informer<api::ConfigMap>>(
      rest, ConfigMapInformerOptions(options, kKubeadmConfigName));
  b->cilium = std::make_unique<kube::Informer<api::ConfigMap>>(
      rest, ConfigMapInformerOptions(options, kCiliumConfigName));
  b->controller =
      std::make_unique<CoordinatorController>(std::move(options), std::move(rest),
                                              Informers{.coordinators = b->coordinators.get(),
                                                        .control_plane_pods = b->pods.get(),
                                                        .kubeadm_config = b->kubeadm.get(),
                                                        .cilium_config = b->cilium.get()});
  CoordinatorController* out = b->controller.get();
  manager->Add(InformerRunnable("spidercoordinator-informer", b, b->coordinators.get()));
  manager->Add(InformerRunnable("spidercoordinator-control-plane-pod-informer", b, b->pods.get()));
  manager->Add(InformerRunnable("spidercoordinator-kubeadm-config-informer", b, b->kubeadm.get()));
  manager->Add(InformerRunnable("spidercoordinator-cilium-config-informer", b, b->cilium.get()));
  // The controller runs on the leader only; the runnable keeps the whole bundle alive.
  manager->Add(std::make_unique<kube::FuncRunnable>(
      b->controller->Name(), /*needs_leader=*/true,
      [b](std::stop_token stop) { return b->controller->Run(stop); }));
  return out;
}

}  // namespace spiderpool::op::coordinator
