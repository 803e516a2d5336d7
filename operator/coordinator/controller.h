#pragma once
// The SpiderCoordinator status controller of spiderpool-controller (reference
// docs/reference/spiderpool.md §1.6; upstream pkg/coordinatormanager). Leader only.
//
// Reconcile(<name>) keeps status.{phase, reason, overlayPodCIDR, serviceCIDR} of the
// cluster-scoped SpiderCoordinator <name> current:
//   overlayPodCIDR, by spec.podCIDRType:
//     cluster  --cluster-cidr of a kube-controller-manager pod (system namespace, label
//              component=kube-controller-manager; command and args), else
//              kubeadm-config data.ClusterConfiguration networking.podSubnet;
//     calico   spec.cidr of the Calico IPPools (crd.projectcalico.org/v1 ippools) that are
//              not disabled;
//     cilium   cilium-config cluster-pool-ipv4-cidr / cluster-pool-ipv6-cidr (ipam
//              cluster-pool, the default), or the cluster source for ipam=kubernetes;
//     auto     calico if any Calico IPPool exists, else cilium if cilium-config exists, else
//              cluster;
//     none     [] (always Synced).
//   serviceCIDR: spec.cidrs of the networking.k8s.io/v1 ServiceCIDRs (v1beta1 if v1 is not
//     served); when that API is not served (404), not readable (403) or has no objects:
//     --service-cluster-ip-range of a kube-apiserver pod (label component=kube-apiserver),
//     then of a kube-controller-manager pod, then kubeadm-config networking.serviceSubnet.
//     Best effort: it does not decide the phase (as upstream); [] when nothing has it.
//   phase: Synced when the pod CIDRs of the type could be determined; else NotReady, with
//     status.reason saying what is missing, and both CIDR lists empty (as upstream).
// The status is written with PUT .../status on the cached resourceVersion, only when it
// differs. A 409 Conflict is not an error: the key goes back to the queue (rate limited) and
// the next run reads the cache again. A transient API error is returned (queue backoff).
// Every successful run requeues the key after `resync` (ServiceCIDRs and Calico IPPools are
// not watched). A coordinator being deleted is left alone.
//
// Watches: SpiderCoordinators (add/update -> that name); the control-plane pods and the two
// ConfigMaps (add/update/delete -> every cached coordinator).

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/clock.h"
#include "kube/controller/controller.h"
#include "kube/controller/manager.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"

namespace spiderpool::op::coordinator {

// Work queue / controller name (logs, metrics) and the Runnable's Name().
inline constexpr char kControllerName[] = "spidercoordinator";

inline constexpr char kKubeadmConfigName[] = "kubeadm-config";
inline constexpr char kCiliumConfigName[] = "cilium-config";
inline constexpr char kComponentLabel[] = "component";
inline constexpr char kKubeAPIServer[] = "kube-apiserver";
inline constexpr char kKubeControllerManager[] = "kube-controller-manager";

// Resources read with plain LISTs (not watched).
const api::ResourceInfo& ServiceCIDRResource(std::string_view version);  // "v1" / "v1beta1"
const api::ResourceInfo& CalicoIPPoolResource();  // crd.projectcalico.org/v1 ippools

struct ControllerOptions {
  // Where the control plane keeps its pods, kubeadm-config and cilium-config. Tests use their
  // own namespace.
  std::string system_namespace = "kube-system";
  // Label selector of the SpiderCoordinator informer; "" = every coordinator (production).
  std::string coordinator_selector;
  // Label selector for the Calico IPPool and ServiceCIDR lists; "" = all (production). Tests
  // on a shared cluster use it to see only what they created.
  std::string source_selector;
  // Re-reads the unwatched sources this often (upstream's coordinator resync is 60 s).
  absl::Duration resync = absl::Minutes(1);
  int workers = 1;
  base::Clock* clock = nullptr;                 // nullptr = RealClock (work queue delays)
  kube::metrics::Registry* registry = nullptr;  // nullptr = Registry::Default()
};

// The informers the controller reads; owned and run by the caller (non-leader runnables).
struct Informers {
  kube::Informer<api::SpiderCoordinator>* coordinators = nullptr;
  // Pods of system_namespace labelled component in (kube-apiserver, kube-controller-manager).
  kube::Informer<api::Pod>* control_plane_pods = nullptr;
  // system_namespace ConfigMaps, fieldSelector metadata.name=kubeadm-config / cilium-config.
  kube::Informer<api::ConfigMap>* kubeadm_config = nullptr;
  kube::Informer<api::ConfigMap>* cilium_config = nullptr;
};

// The informer options AddToManager uses, for callers that build the informers themselves.
kube::InformerOptions ControlPlanePodsInformerOptions(const ControllerOptions& options);
kube::InformerOptions ConfigMapInformerOptions(const ControllerOptions& options,
                                               std::string_view name);

class CoordinatorController : public kube::Runnable, public kube::Reconciler {
 public:
  // Adds the event handlers to `informers`: construct before they run.
  CoordinatorController(ControllerOptions options, std::shared_ptr<kube::RestClient> rest,
                        Informers informers);
  ~CoordinatorController() override;
  CoordinatorController(const CoordinatorController&) = delete;
  CoordinatorController& operator=(const CoordinatorController&) = delete;

  // kube::Runnable: waits for the caches, runs the workers until `stop`.
  std::string Name() const override { return kControllerName; }
  bool NeedsLeaderElection() const override { return true; }
  absl::Status Run(std::stop_token stop) override;

  // kube::Reconciler: one reconciliation of the coordinator request.name.
  absl::StatusOr<kube::ReconcileResult> Reconcile(const kube::ReconcileRequest& request,
                                                  std::stop_token stop) override;

  // The status `coordinator` should have now (reads the caches and, for ServiceCIDRs and
  // Calico IPPools, the API server). An error only for a failed API call other than 404/403.
  absl::StatusOr<api::CoordinatorStatus> DesiredStatus(const api::SpiderCoordinator& coordinator);

  kube::Controller& controller() { return *controller_; }

 private:
  // CIDRs found (ok), or what is missing.
  struct Found {
    bool ok = false;
    std::vector<std::string> cidrs;
    std::string missing;
  };

  void RegisterHandlers();
  void EnqueueAll();
  absl::StatusOr<Found> PodCIDRs(const std::string& type);
  Found ClusterPodCIDRs();
  absl::StatusOr<Found> CalicoPodCIDRs();
  Found CiliumPodCIDRs();
  absl::StatusOr<Found> ServiceCIDRs();
  // Lists Calico IPPools; nullopt when the resource is not served (404).
  absl::StatusOr<std::optional<base::Json>> ListCalicoPools();
  // The first control-plane pod (by name) of `component` that carries `--flag`.
  std::optional<std::vector<std::string>> ControlPlaneFlag(std::string_view component,
                                                           std::string_view flag) const;
  std::shared_ptr<const api::ConfigMap> KubeadmConfig() const;
  std::shared_ptr<const api::ConfigMap> CiliumConfig() const;

  ControllerOptions options_;
  std::shared_ptr<kube::RestClient> rest_;
  Informers informers_;
  kube::Client<api::SpiderCoordinator> coordinator_client_;
  std::unique_ptr<kube::Controller> controller_;
};

// The one call for the controller binary: creates the SpiderCoordinator informer, the
// control-plane pod informer and the two ConfigMap informers (non-leader runnables, so every
// replica keeps warm caches), and the controller (leader only). Before manager->Run only. The
// returned pointer stays valid until the manager is destroyed.
absl::StatusOr<CoordinatorController*> AddToManager(kube::Manager* manager,
                                                    std::shared_ptr<kube::RestClient> rest,
                                                    ControllerOptions options = {});

}  // namespace spiderpool::op::coordinator
