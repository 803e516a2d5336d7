#pragma once
// status.devices[].networkData of the claims prepared on this node, from our IPAM results
// (issue 15 point 4): a converging reconciler, not a hook in the IPAM request path. It watches
// the SpiderEndpoints (the IPAM's record of a pod's interfaces and addresses) and, for each pod
// on this node, writes on every claim of the pod's namespace that is reserved for the pod and
// has devices of our driver in this node's pool:
//   networkData {interfaceName, ips (CIDR, with prefix length), hardwareAddress}
// — the endpoint's interface whose pool serves the device (the device carries that pool's
// attribute, dra/resourceslice PoolAttributeName), or the pod's only interface. Written when
// the endpoint appears (CNI ADD done), rewritten when it changes (re-ADD), removed when the
// endpoint goes (CNI DEL released the IPs). A periodic resync repairs missed events. The
// SpiderEndpoints come from the agent's shared cache (agent/ipam/caches.h); the reporter only
// registers its handlers on it (in the constructor: before the cache runs).
//
//   NetworkDataReporter r(rest, &net_driver, {.node_name = node}, [&] { return devices(); },
//                         &caches.endpoints);
//   r.Start();  ...  r.Stop();

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/resource_claim.h"
#include "api/resource_slice.h"
#include "api/spider_endpoint.h"
#include "dra/driver/driver.h"
#include "kube/informer/informer.h"
#include "kube/rest/rest_client.h"
#include "kube/workqueue/workqueue.h"

namespace spiderpool::agent::dra {

struct NetworkDataOptions {
  std::string node_name;
  std::string driver = "netresources.spidernet.io";
  absl::Duration resync = absl::Minutes(1);
};

// The networkData one allocated device should carry: nullopt = none (no endpoint on this node,
// or no interface of it matches). `device` = this node's published device (its attributes), may
// be null (then only the pod's only interface matches).
std::optional<::spiderpool::dra::driver::NetworkData> NetworkDataFor(
    const std::optional<api::SpiderEndpoint>& endpoint, const std::string& pod_uid,
    const std::string& node_name, const api::Device* device);

class NetworkDataReporter {
 public:
  using DevicesFn = std::function<std::vector<api::Device>()>;
  // `endpoints` (outlives the reporter) may be null: then only Reconcile (tests).
  NetworkDataReporter(std::shared_ptr<kube::RestClient> rest,
                      ::spiderpool::dra::driver::NetDriver* driver, NetworkDataOptions options,
                      DevicesFn devices, kube::Informer<api::SpiderEndpoint>* endpoints);
  ~NetworkDataReporter();  // Stop()

  // The worker and the resync; once (a stopped reporter does not start again).
  void Start();
  void Stop();

  // One pass for pod <ns>/<name> (tests call it directly): reads the endpoint and the
  // namespace's claims, writes what differs. Errors: the first failed read or write.
  absl::Status Reconcile(const std::string& ns, const std::string& pod);

 private:
  void Enqueue(const api::SpiderEndpoint& e);

  std::shared_ptr<kube::RestClient> rest_;
  ::spiderpool::dra::driver::NetDriver* driver_;
  NetworkDataOptions options_;
  DevicesFn devices_;
  kube::Informer<api::SpiderEndpoint>* endpoints_;
  kube::workqueue::WorkQueue queue_;
  std::jthread resync_thread_;
  std::jthread worker_thread_;
};

}  // namespace spiderpool::agent::dra
