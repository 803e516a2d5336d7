#pragma once
// Tests: an IpamService on caches of its own whose informers run on threads (agent/main.cc
// runs them as runnables of its Manager), stopped before the service goes.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/ipam/caches.h"
#include "agent/ipam/service.h"

namespace spiderpool::agent::ipam {

struct TestAgent {
  TestAgent(std::shared_ptr<kube::RestClient> rest, ServiceOptions options,
            std::string coordinator_name = std::string(api::kDefaultCoordinatorName))
      : caches(rest, {.node_name = options.node_name,
                      .coordinator_name = std::move(coordinator_name),
                      .registry = options.registry}),
        service(rest, std::move(options), caches) {
    for (std::unique_ptr<kube::Runnable>& r : caches.Runnables()) {
      informers.emplace_back([r = std::shared_ptr<kube::Runnable>(std::move(r))](
                                 std::stop_token stop) { (void)r->Run(stop); });
    }
    service.Start();
  }

  Caches caches;
  IpamService service;
  std::vector<std::jthread> informers;  // last: stopped and joined first
};

}  // namespace spiderpool::agent::ipam
