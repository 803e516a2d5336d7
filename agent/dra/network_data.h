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
// endpoint goes (CNI DEL released the IPs). A periodic resync repairs missed events.
//
//   NetworkDataReporter r(rest, &net_driver, {.node_name = node}, [&] { return devices(); });
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
  NetworkDataReporter(std::shared_ptr<kube::RestClient> rest,
                      ::spiderpool::dra::driver::NetDriver* driver, NetworkDataOptions options,
                      DevicesFn devices);
  ~NetworkDataReporter();  // Stop()

  void Start();
  void Stop();

  // One pass for pod <ns>/<name> (tests call it directly): reads the endpoint and the
  // namespace's claims, writes what differs. Errors: the first failed read or write.
  absl::Status Reconcile(const std::string& ns, const std::string& pod);

 private:
  std::shared_ptr<kube::RestClient> rest_;
  ::spiderpool::dra::driver::NetDriver* driver_;
  NetworkDataOptions options_;
  DevicesFn devices_;
  std::unique_ptr<kube::Informer<api::SpiderEndpoint>> endpoints_;
  std::unique_ptr<kube::workqueue::WorkQueue> queue_;
  std::jthread informer_thread_;
  std::jthread worker_thread_;
};

}  // namespace spiderpool::agent::dra
