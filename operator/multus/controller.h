#pragma once
// The SpiderMultusConfig -> NetworkAttachmentDefinition controller of spiderpool-controller
// (reference docs/reference/spiderpool.md §4; upstream pkg/multuscniconfig). Leader only.
//
// Reconcile(<ns>/<smc>), reading both informer caches:
//   - SMC gone: every NAD whose controller ownerReference is a SpiderMultusConfig named <smc>
//     in <ns> is deleted once a live GET confirms that owner (that uid) is gone. Kubernetes'
//     garbage collector would do the same on a real cluster; doing it here is harmless there
//     and needed where there is none (the loopback API server). Deletes carry uid and
//     resourceVersion preconditions, so a NAD changed meanwhile (e.g. taken over) survives.
//   - SMC being deleted (deletionTimestamp): nothing (the deletion event finishes the job).
//   - SMC present: desired = multus::BuildDesiredNAD(smc) (name = cr-name annotation or the SMC
//     name, same namespace, controller ownerReference to the SMC):
//       NAD missing                                   -> Create;
//       NAD controlled by this SMC (uid)              -> repair drift (config compared as JSON,
//                                                        our annotations, owner) with
//                                                        multus::ApplyDesiredNAD + Update;
//       NAD with no Spider controller reference, or
//       controlled by a SpiderMultusConfig that no
//       longer exists (live GET: NotFound / new uid)  -> take it over (controller reference to
//                                                        this SMC) and repair;
//       NAD controlled by another, existing Spider
//       object                                         -> never touched; Warning Event
//                                                        kReasonNADOwnedByOther on the SMC;
//     then NADs this SMC (uid) controls under another name (the cr-name annotation changed)
//     are deleted. Updates retry on 409 with a fresh GET (re-checking the owner each time).
//     A generation error (an invalid SMC, normally rejected by the webhook): Warning Event
//     kReasonGenerateFailed, logged, not requeued (the next SMC change or resync retries).
//     The same for a NAD the API server refuses as Invalid (e.g. a cr-name that is no DNS
//     subdomain): Warning Event kReasonNADRejected, no requeue.
//   - API errors: returned, so the work queue retries with backoff.
//
// Watches: the SMC informer (add/update/delete/resync -> that SMC) and the NAD informer
// (add/update/delete -> the SMC of its controller reference, old and new; the SMC with the
// NAD's name; every SMC whose NADName() is the NAD's name), so a deleted NAD is recreated, an
// edited one repaired, and a freed name taken over.
//
// Metrics: the controller's controller_runtime_* / workqueue_* series (name kControllerName).

#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/nad.h"
#include "api/spider.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "kube/controller/controller.h"
#include "kube/controller/manager.h"
#include "kube/events/recorder.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"
#include "multus/generate.h"

namespace spiderpool::op::multus {

// Work queue / controller name (logs, metrics) and the Runnable's Name().
inline constexpr char kControllerName[] = "spidermultusconfig";

// Index on the NAD informer: "<ns>/<name>" of the SpiderMultusConfig named by the NAD's
// controller ownerReference (kind SpiderMultusConfig, group spiderpool.spidernet.io).
inline constexpr char kIndexNADByControllerSMC[] = "controller-spidermultusconfig";
// Index on the SMC informer: "<ns>/<multus::NADName(smc)>", the NAD the SMC wants.
inline constexpr char kIndexSMCByNADName[] = "net-attach-def-name";

// Warning Event reasons, recorded on the SpiderMultusConfig.
inline constexpr char kReasonGenerateFailed[] = "GenerateNetAttachDefFailed";
inline constexpr char kReasonNADOwnedByOther[] = "NetAttachDefOwnedByOther";
inline constexpr char kReasonNADRejected[] = "NetAttachDefRejected";

struct ControllerOptions {
  // Namespace of the informers AddToManager creates; "" = all namespaces (production). Tests
  // set their namespace so a real cluster's own SMCs are never touched.
  std::string namespace_;
  int workers = 3;  // upstream runs 1
  // SMC informer resync (SPIDERPOOL_MULTUS_CONFIG_INFORMER_RESYNC_PERIOD, upstream 60s); zero
  // disables. Only used by AddToManager.
  absl::Duration resync_period = absl::Seconds(60);
  base::Clock* clock = nullptr;                 // nullptr = RealClock (work queue delays)
  kube::metrics::Registry* registry = nullptr;  // nullptr = Registry::Default()
  // nullptr: AddToManager creates one (component "spiderpool-controller", host event_host).
  kube::EventRecorder* recorder = nullptr;
  std::string event_host;
  spiderpool::multus::Options generate;
  // Retries of one NAD update on 409 (re-reading in between); sleeps use the real clock.
  base::BackoffPolicy conflict_retry = {.initial = absl::Milliseconds(5),
                                        .max = absl::Milliseconds(200),
                                        .factor = 2.0,
                                        .jitter = 0.2,
                                        .steps = 10};
};

// The informers the controller reads; owned and run by the caller (as non-leader runnables).
struct Informers {
  kube::Informer<api::SpiderMultusConfig>* smcs = nullptr;
  kube::Informer<api::NetworkAttachmentDefinition>* nads = nullptr;
};

class MultusConfigController : public kube::Runnable, public kube::Reconciler {
 public:
  // Adds the two indexes and the event handlers to `informers`: construct before they run.
  // `recorder` must not be null and must outlive the controller.
  MultusConfigController(ControllerOptions options, std::shared_ptr<kube::RestClient> rest,
                         Informers informers, kube::EventRecorder* recorder);
  ~MultusConfigController() override;
  MultusConfigController(const MultusConfigController&) = delete;
  MultusConfigController& operator=(const MultusConfigController&) = delete;

  // kube::Runnable: waits for both caches, runs the workers until `stop`.
  std::string Name() const override { return kControllerName; }
  bool NeedsLeaderElection() const override { return true; }
  absl::Status Run(std::stop_token stop) override;

  // kube::Reconciler: one reconciliation of the SMC request.namespace_/request.name.
  absl::StatusOr<kube::ReconcileResult> Reconcile(const kube::ReconcileRequest& request,
                                                  std::stop_token stop) override;

  kube::Controller& controller() { return *controller_; }

 private:
  void RegisterHandlers();
  void EnqueueForNAD(const api::NetworkAttachmentDefinition& nad);
  absl::StatusOr<kube::ReconcileResult> ReconcilePresent(const api::SpiderMultusConfig& smc);
  // Deletes the NADs controlled by a SpiderMultusConfig named <ns>/<name> that are stale:
  // their owner (uid) is gone, or they are `current`'s but not named NADName(*current) (the
  // cr-name changed). The NAD `current` wants is left to Sync.
  absl::Status DeleteStale(const std::string& ns, const std::string& name,
                           const api::SpiderMultusConfig* current);
  // Creates or repairs `desired` for `smc`.
  absl::Status Sync(const api::SpiderMultusConfig& smc,
                    const api::NetworkAttachmentDefinition& desired);
  // Whether the SMC <ns>/<name> with `uid` still exists (cache, then a live GET).
  absl::StatusOr<bool> OwnerAlive(const std::string& ns, const api::OwnerReference& ref) const;

  ControllerOptions options_;
  std::shared_ptr<kube::RestClient> rest_;
  Informers informers_;
  kube::EventRecorder* recorder_;
  kube::Client<api::SpiderMultusConfig> smc_client_;
  kube::Client<api::NetworkAttachmentDefinition> nad_client_;
  std::unique_ptr<kube::Controller> controller_;
};

// The one call for the controller binary: creates the SMC and NAD informers (all namespaces,
// or options.namespace_) and adds them to `manager` as runnables that run on every replica,
// creates an EventRecorder unless options.recorder is set, and adds the controller (leader
// only). Before manager->Run only. Everything is owned by the manager's runnables; the
// returned pointer stays valid until the manager is destroyed.
absl::StatusOr<MultusConfigController*> AddToManager(kube::Manager* manager,
                                                     std::shared_ptr<kube::RestClient> rest,
                                                     ControllerOptions options = {});

}  // namespace spiderpool::op::multus
