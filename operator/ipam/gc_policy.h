#pragma once
// The IP garbage collector's decision for one allocation (reference §2.10, §2.6), as pure
// functions of what is known about the pod name: no I/O, no clock (now is an argument).
//
// For a record {ip -> pod "ns/name", podUid} (or a SpiderEndpoint, decided for its
// status.current.uid with no ip):
//   - valid StatefulSet pod (the StatefulSet exists, is not being deleted, and its replicas
//     cover the ordinal, honouring spec.ordinals.start)           -> keep, whatever the pod's
//     state, even when the pod is gone or has a new UID (the agent moves the record to the new
//     UID). One exception, as upstream: the new pod's SpiderEndpoint already holds the new UID
//     and does not list this ip (it was given other IPs)      -> reclaim (pod_uid_mismatch);
//   - no pod of that name                                        -> reclaim (pod_missing);
//   - a pod of that name with another UID                        -> reclaim (pod_uid_mismatch);
//   - the pod's node was deleted                                 -> reclaim (node_missing);
//   - Succeeded/Failed: after finishedAt (latest container; else when first seen terminal)
//     + terminationGracePeriodSeconds (30 when unset) + additional delay -> reclaim
//     (pod_terminated), before that                              -> wait;
//   - Terminating (deletionTimestamp): after deletionTimestamp + deletionGracePeriodSeconds +
//     additional delay                                           -> reclaim (pod_terminating),
//     before that -> wait; unless switched off for the node's readiness;
//   - otherwise (Pending, Running, Unknown)                      -> keep.
// KubeVirt VMs (enable_kubevirt_static_ip) are kept whatever the state.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "api/apps.h"
#include "api/core.h"
#include "api/spider.h"

namespace spiderpool::op::ipam {

enum class GCReason {
  kPodMissing,
  kPodUIDMismatch,
  kNodeMissing,
  kPodTerminated,
  kPodTerminating,
  kKubevirtVMGone,
};
// "pod_missing" | "pod_uid_mismatch" | "node_missing" | "pod_terminated" | "pod_terminating" |
// "kubevirt_vm_gone": the `reason` label of the GC metrics.
std::string_view GCReasonName(GCReason reason);

struct GCPolicy {
  absl::Duration additional_grace_delay = absl::ZeroDuration();
  bool enable_statefulset = true;
  // SPIDERPOOL_GC_STATELESS_TERMINATING_POD_ON_{READY,NOT_READY}_NODE_ENABLED (default true).
  bool gc_terminating_pod_on_ready_node = true;
  bool gc_terminating_pod_on_not_ready_node = true;
  // enableKubevirtStaticIP: records of KubeVirt VMs (their endpoint's ownerControllerType is
  // VirtualMachineInstance; the record names the VMI, not a pod) are kept while the VM wants
  // them (api/kubevirt.h VMWantsItsIPs) and reclaimed once it does not.
  bool enable_kubevirt_static_ip = true;
};

// What is known about one pod name.
struct PodFacts {
  std::shared_ptr<const api::Pod> pod;                  // null: no pod of that name
  std::shared_ptr<const api::SpiderEndpoint> endpoint;  // null: no endpoint of that name
  bool node_exists = true;  // the pod's spec.nodeName names an existing Node (or is empty)
  bool node_ready = true;
  bool valid_statefulset_pod = false;  // see IsValidStatefulSetPod
  bool kubevirt_vm = false;  // the endpoint's ownerControllerType is VirtualMachineInstance
  bool kubevirt_vm_wants_ips = true;  // kubevirt_vm: the VMI or its VM still exists (live)
  // When the GC first saw this pod Succeeded/Failed: used when no container has finishedAt.
  std::optional<absl::Time> first_seen_terminal;
};

struct Verdict {
  enum class Action { kKeep, kReclaim, kWait };
  Action action = Action::kKeep;
  GCReason reason = GCReason::kPodMissing;  // kReclaim and kWait
  absl::Time deadline = absl::InfinitePast();  // kWait: decide again then
  std::string detail;  // for logs
};

// `ip` is the record's address ("" when deciding for the SpiderEndpoint itself).
Verdict Decide(const GCPolicy& policy, const PodFacts& facts, std::string_view uid,
               std::string_view ip, absl::Time now);

// ---- StatefulSet pods ----------------------------------------------------------------------

struct StatefulSetPodRef {
  std::string statefulset;  // name, in the pod's namespace
  int64_t ordinal = 0;
};
// The StatefulSet that would own the pod named `pod_name`, from the strongest evidence there
// is: the live pod's controller reference (kind StatefulSet, apps/*), else the endpoint's
// ownerControllerType/Name, else the name alone ("<sts>-<ordinal>"). nullopt when the evidence
// says another owner, or the name is not "<sts>-<ordinal>" of that StatefulSet.
std::optional<StatefulSetPodRef> StatefulSetOwnerOf(std::string_view pod_name,
                                                    const api::Pod* pod,
                                                    const api::SpiderEndpoint* endpoint);
// The StatefulSet exists (non-null), is not being deleted, and covers the ordinal.
bool IsValidStatefulSetPod(const StatefulSetPodRef& ref, const api::StatefulSet* sts);

// ---- helpers -------------------------------------------------------------------------------

// The latest containerStatuses[].state.terminated.finishedAt (init containers too); nullopt
// when no container has one.
std::optional<absl::Time> PodFinishedAt(const api::Pod& pod);
// Whether the endpoint's status.current.ips lists `ip` (as ipv4 or ipv6, CIDR form).
bool EndpointHasIP(const api::SpiderEndpoint& endpoint, std::string_view ip);
// When a Succeeded/Failed pod's IPs may go; nullopt when the pod is not terminal.
std::optional<absl::Time> TerminatedDeadline(const GCPolicy& policy, const api::Pod& pod,
                                             std::optional<absl::Time> first_seen_terminal,
                                             absl::Time now);
// When a Terminating pod's IPs may go; nullopt when it has no deletionTimestamp.
std::optional<absl::Time> TerminatingDeadline(const GCPolicy& policy, const api::Pod& pod);

}  // namespace spiderpool::op::ipam
