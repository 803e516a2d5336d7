#pragma once
// The informer caches the IPAM controllers of spiderpool-controller read. The caller (the
// binary's composition root) owns the informers and runs them as non-leader Manager runnables;
// the controllers register their event handlers and indexers in their constructors, so they
// must be constructed BEFORE the informers run, and destroyed only after the informers stopped.

#include "api/apps.h"
#include "api/core.h"
#include "api/spider.h"
#include "kube/informer/informer.h"

namespace spiderpool::op::ipam {

struct Caches {
  kube::Informer<api::SpiderIPPool>* pools = nullptr;          // pool controller, GC
  kube::Informer<api::SpiderSubnet>* subnets = nullptr;        // pool controller (optional)
  kube::Informer<api::SpiderReservedIP>* reserved_ips = nullptr;  // pool controller
  kube::Informer<api::SpiderEndpoint>* endpoints = nullptr;    // GC
  kube::Informer<api::Pod>* pods = nullptr;                    // GC
  kube::Informer<api::Node>* nodes = nullptr;                  // GC
  kube::Informer<api::StatefulSet>* statefulsets = nullptr;    // GC (when enable_statefulset)
};

}  // namespace spiderpool::op::ipam
