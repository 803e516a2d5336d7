#pragma once
// Type lists of every top-level kind in api/, for code that does the same thing to each
// (round-trip tests, fuzzing, CRD checks, server registration):
//
//   api::SpiderKinds::ForEach([&]<typename T>() { Register(T::Resource()); });

#include "api/apps.h"
#include "api/core.h"
#include "api/nad.h"
#include "api/spider.h"

namespace spiderpool::api {

template <typename... T>
struct KindList {
  static constexpr size_t kSize = sizeof...(T);
  template <typename F>
  static void ForEach(F&& f) {
    (f.template operator()<T>(), ...);
  }
};

using CoreKinds = KindList<Pod, Node, Namespace, Lease, Event, events_v1::Event, ConfigMap, Secret>;
using SpiderKinds = KindList<SpiderIPPool, SpiderSubnet, SpiderReservedIP, SpiderEndpoint,
                             SpiderMultusConfig, SpiderCoordinator, SpiderClaimParameter>;
// apps/v1 and batch/v1 workloads (read by the controller: StatefulSet IPs, auto pools).
using AppsKinds = KindList<Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob>;
// Kinds of other projects' CRDs that the chart ships and we write (not checked against our
// group's CRDs by crd_fields_test; api/nad_test checks the NAD CRD).
using MultusKinds = KindList<NetworkAttachmentDefinition>;

}  // namespace spiderpool::api
