#include "agent/ipam/caches.h"

#include "base/strings.h"
#include "ipam/selection.h"

namespace spiderpool::agent::ipam {
Caches::Caches(std::shared_ptr<kube::RestClient> rest, const CachesOptions& options)
    : pods(rest, {.field_selector = base::StrCat("spec.nodeName=", options.node_name),
                  .registry = options.registry}),
      namespaces(rest, {.registry = options.registry}),
      node(rest, {.field_selector = base::StrCat("metadata.name=", options.node_name),
                  .registry = options.registry}),
      // The status of the pools this node may use; the others' only on spec changes.
      pools(rest, {.registry = options.registry,
                   .follow_status =
                       [this, node = options.node_name](const api::SpiderIPPool& pool) {
                         return ::spiderpool::ipam::PoolAdmitsNode(
                             pool, {.name = node, .labels = NodeLabels()});
                       }}),
      reserved_ips(rest, {.registry = options.registry}),
      // This node's endpoints only (the CRD's selectableFields; every endpoint on an API
      // server without them).
      endpoints(rest, {.field_selector = base::StrCat(api::kSpiderEndpointNodeField, "=",
                                                      options.node_name),
                       .field_selector_fallback = true,
                       .registry = options.registry}),
      coordinator(rest, {.field_selector = base::StrCat("metadata.name=", options.coordinator_name),
                         .registry = options.registry}) {}

std::vector<std::unique_ptr<kube::Runnable>> Caches::Runnables() {
  std::vector<std::unique_ptr<kube::Runnable>> out;
  out.push_back(kube::InformerRunnable(&pods));
  out.push_back(kube::InformerRunnable(&namespaces));
  out.push_back(kube::InformerRunnable(&node));
  for (auto& r : pools.Runnables()) out.push_back(std::move(r));
  out.push_back(kube::InformerRunnable(&reserved_ips));
  out.push_back(kube::InformerRunnable(&endpoints));
  out.push_back(kube::InformerRunnable(&coordinator));
  return out;
}

bool Caches::IpamSynced() const {
  return pods.HasSynced() && namespaces.HasSynced() && node.HasSynced() && pools.HasSynced() &&
         reserved_ips.HasSynced() && endpoints.HasSynced();
}

api::Labels Caches::NodeLabels() const {
  std::vector<std::shared_ptr<const api::Node>> nodes = node.store().List();  // this node only
  return nodes.empty() ? api::Labels{} : nodes.front()->metadata.labels;
}

}  // namespace spiderpool::agent::ipam
