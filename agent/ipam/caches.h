#pragma once
// The agent's informer caches, built once (agent/main.cc) and shared read-only by everything
// that reads the cluster: the IPAM service and its pool writer (service.h), the coordinator
// config source (coordinator.h) and, in spiderpool-agent-dra, the node's devices and the
// claims' networkData (agent/dra/compose.h). Consumers register their handlers and indexers in
// their constructors, before the informers run; the binary runs each informer as a runnable of
// its kube::Manager (Runnables(), started before and stopped after their readers).
//
//   Caches caches(rest, {.node_name = node});
//   IpamService service(rest, options, caches);   // handlers on pools and pods
//   for (auto& r : caches.Runnables()) manager.Add(std::move(r));

#include <memory>
#include <string>
#include <vector>

#include "api/core.h"
#include "api/labels.h"
#include "agent/ipam/pool_cache.h"
#include "api/spider.h"
#include "kube/controller/manager.h"
#include "kube/informer/informer.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/rest_client.h"

namespace spiderpool::agent::ipam {

struct CachesOptions {
  std::string node_name;
  // The SpiderCoordinator served to the `coordinator` plugin (upstream: the single `default`).
  std::string coordinator_name = std::string(api::kDefaultCoordinatorName);
  kube::metrics::Registry* registry = nullptr;
};

struct Caches {
  Caches(std::shared_ptr<kube::RestClient> rest, const CachesOptions& options);
  Caches(const Caches&) = delete;
  Caches& operator=(const Caches&) = delete;

  // One runnable per informer ("informer/<resource>"), for the binary's Manager.
  std::vector<std::unique_ptr<kube::Runnable>> Runnables();
  // Every IPAM cache (all but the coordinator's) has synced.
  bool IpamSynced() const;
  // This node's labels (none while the node is not cached).
  api::Labels NodeLabels() const;

  kube::Informer<api::Pod> pods;              // this node's (spec.nodeName)
  kube::Informer<api::Namespace> namespaces;
  kube::Informer<api::Node> node;             // this node only (metadata.name)
  PoolCache pools;  // metadata watch + full copies read when needed (pool_cache.h)
  kube::Informer<api::SpiderReservedIP> reserved_ips;
  // This node's (status.current.node; every node's on an API server older than 1.31).
  kube::Informer<api::SpiderEndpoint> endpoints;
  kube::Informer<api::SpiderCoordinator> coordinator;  // the one of coordinator_name
};

}  // namespace spiderpool::agent::ipam
