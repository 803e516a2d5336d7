#pragma once
// The Pod mutating webhook (upstream podmanager's PWebhook, `/mutate--v1-pod`, CREATE only, when
// podResourceInject.enabled): resource injection from the annotations
// cni.spidernet.io/rdma-resource-inject and cni.spidernet.io/network-resource-inject.
//
//   value   the pod's annotation, else its namespace's (rdma-resource-inject is looked up first,
//           on pod then namespace; the first one found is the only one used, as upstream)
//   SMCs    every SpiderMultusConfig (any namespace) labelled `<annotation key>: <value>` (the
//           SMC webhook copies the annotation into that label); none: denied with
//           "no spidermultusconfigs with annotation: <key>:<value> found"
//   order   by master (macvlan/ipvlan/vlan; the bond name with >= 2 masters) or sriov
//           resourceName, then "<ns>/<name>"
//   writes  k8s.v1.cni.cncf.io/networks = "<ns>/<name>,..." (replaces any value), and every
//           distinct resource (rdmaResourceName of macvlan/ipvlan/vlan, resourceName of
//           sriov/ib-sriov) as limits[<resource>] = "1" on the first container unless some
//           container already has a limit for it (upstream sets the limit only; the API server
//           defaults the request of an extended resource to its limit)
//   errors  cniType ovs/custom: "RDMA resource injection does not support cniType: <type>";
//           an SMC without a resource or pools (ValidateRdmaResouce, see the .cc)
// Excluded namespaces are left to the webhook's namespaceSelector (configurations.h).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/spider.h"
#include "base/json.h"

namespace spiderpool::op::webhook {

inline constexpr std::string_view kPodMutatePath = "/mutate--v1-pod";

// The mutated pod JSON, or nullopt when neither annotation applies. An error is the message
// the request is denied with (403, as controller-runtime answers a defaulter error).
absl::StatusOr<std::optional<base::Json>> InjectPodResources(
    const base::Json& pod, const std::map<std::string, std::string>& namespace_annotations,
    const std::vector<std::shared_ptr<const api::SpiderMultusConfig>>& multus_configs);

// The sort key of an SMC (upstream getMultusConfigSortKey).
std::string MultusConfigSortKey(const api::SpiderMultusConfig& smc);
// The resource an SMC injects ("" = none).
std::string MultusConfigResourceName(const api::SpiderMultusConfig& smc);

}  // namespace spiderpool::op::webhook
