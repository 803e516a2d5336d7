#pragma once
// GET /v1/coordinator/config (reference §3.1, §1.6): the settings the `coordinator` CNI plugin
// uses where its own netconf leaves a key unset, read from this agent's informer cache of the
// SpiderCoordinator `default` and, for the pod's `ipam.spidernet.io/default-route-nic`
// annotation, from the IPAM service's cache of this node's pods.
//
//   CoordinatorConfigSource coordinator(rest, {.cached_pod = ..., .pods_synced = ...});
//   coordinator.Start();
//   IpamServer::Start(options, &service, &coordinator);
//
// The answer is the spec with the webhook's defaults applied here too (mode auto,
// tunePodRoutes true, hostRuleTable 500, podRPFilter 0, txQueueLen 0, vethMTU 1500), bare IPs
// in hijackCIDR / policyRoutes[].dst as /32 or /128, the status' overlayPodCIDR/serviceCIDR,
// and mode `disabled` sent as `disable` (the plugin knows only that word). A SpiderCoordinator
// that is missing, or whose status.phase is not Synced, is FailedPrecondition: HTTP 500 with a
// message naming the object, its phase and reason (upstream answers 500 then too).

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/ipam/server.h"
#include "agent/ipamapi/ipamapi.h"
#include "api/core.h"
#include "api/spider.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/client.h"

namespace spiderpool::agent::ipam {

// The wire answer for `coord` (nullptr: missing) and the requesting pod (nullptr: not known).
// Pure; the SpiderCoordinator `name` only goes into error messages.
absl::StatusOr<ipamapi::CoordinatorConfig> CoordinatorConfigFor(const api::SpiderCoordinator* coord,
                                                                const api::Pod* pod,
                                                                const std::string& name);

struct CoordinatorSourceOptions {
  // The SpiderCoordinator to serve (upstream: the single instance `default`).
  std::string name = std::string(api::kDefaultCoordinatorName);
  // This node's pod cache (IpamService::CachedPod): nullptr when the pod is not in it, which
  // only means no annotation override. Unset: no override at all.
  std::function<std::shared_ptr<const api::Pod>(const std::string& ns, const std::string& name)>
      cached_pod;
  // Whether that cache has synced (IpamService::PodsSynced); unset = always.
  std::function<bool()> pods_synced;
  kube::metrics::Registry* registry = nullptr;
};

class CoordinatorConfigSource : public CoordinatorBackend {
 public:
  CoordinatorConfigSource(std::shared_ptr<kube::RestClient> rest, CoordinatorSourceOptions options);
  ~CoordinatorConfigSource() override;  // Stop()

  void Start();  // the SpiderCoordinator informer (one watch, on the one object)
  void Stop();
  bool WaitForSync(absl::Duration timeout);

  bool Ready() const override;
  absl::StatusOr<ipamapi::CoordinatorConfig> GetCoordinatorConfig(
      const ipamapi::GetCoordinatorArgs& args) override;

 private:
  CoordinatorSourceOptions options_;
  kube::Informer<api::SpiderCoordinator> informer_;
  std::jthread thread_;
};

}  // namespace spiderpool::agent::ipam
