#pragma once
// GET /v1/coordinator/config (reference §3.1, §1.6): the settings the `coordinator` CNI plugin
// uses where its own netconf leaves a key unset, read from the agent's informer cache of the
// SpiderCoordinator `default` and, for the pod's `ipam.spidernet.io/default-route-nic`
// annotation, from its cache of this node's pods (both in caches.h; read only).
//
//   CoordinatorConfigSource coordinator(&caches.coordinator, &caches.pods);
//   IpamServer::Start(options, &service, &coordinator);
//
// The answer is the spec with the webhook's defaults applied here too (mode auto,
// tunePodRoutes true, hostRuleTable 500, podRPFilter 0, txQueueLen 0, vethMTU 1500), bare IPs
// in hijackCIDR / policyRoutes[].dst as /32 or /128, the status' overlayPodCIDR/serviceCIDR,
// and mode `disabled` sent as `disable` (the plugin knows only that word). A SpiderCoordinator
// that is missing, or whose status.phase is not Synced, is FailedPrecondition: HTTP 500 with a
// message naming the object, its phase and reason (upstream answers 500 then too).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/ipam/server.h"
#include "agent/ipamapi/ipamapi.h"
#include "api/core.h"
#include "api/spider.h"
#include "kube/informer/informer.h"

namespace spiderpool::agent::ipam {

// The wire answer for `coord` (nullptr: missing) and the requesting pod (nullptr: not known).
// Pure; the SpiderCoordinator `name` only goes into error messages.
absl::StatusOr<ipamapi::CoordinatorConfig> CoordinatorConfigFor(const api::SpiderCoordinator* coord,
                                                                const api::Pod* pod,
                                                                const std::string& name);

class CoordinatorConfigSource : public CoordinatorBackend {
 public:
  // `coordinators`: the cache of the one SpiderCoordinator to serve (upstream: `default`),
  // watched by name. `pods`: this node's pods (a pod not in it only means no annotation
  // override); nullptr = no override at all. Both outlive the source.
  CoordinatorConfigSource(const kube::Informer<api::SpiderCoordinator>* coordinators,
                          const kube::Informer<api::Pod>* pods,
                          std::string name = std::string(api::kDefaultCoordinatorName));

  bool WaitForSync(absl::Duration timeout);

  bool Ready() const override;
  absl::StatusOr<ipamapi::CoordinatorConfig> GetCoordinatorConfig(
      const ipamapi::GetCoordinatorArgs& args) override;

 private:
  const kube::Informer<api::SpiderCoordinator>* coordinators_;
  const kube::Informer<api::Pod>* pods_;
  std::string name_;
};

}  // namespace spiderpool::agent::ipam
