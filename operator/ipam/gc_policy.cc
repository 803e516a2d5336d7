#include "operator/ipam/gc_policy.h"

#include <algorithm>

#include "base/ip.h"

namespace spiderpool::op::ipam {

namespace {

constexpr int64_t kDefaultTerminationGracePeriodSeconds = 30;  // the API server's default

Verdict Keep(std::string detail) {
  return Verdict{.action = Verdict::Action::kKeep, .detail = std::move(detail)};
}
Verdict Reclaim(GCReason reason, std::string detail) {
  return Verdict{.action = Verdict::Action::kReclaim, .reason = reason, .detail = std::move(detail)};
}
Verdict WaitOrReclaim(GCReason reason, absl::Time deadline, absl::Time now, std::string detail) {
  if (now >= deadline) return Reclaim(reason, std::move(detail));
  return Verdict{.action = Verdict::Action::kWait,
                 .reason = reason,
                 .deadline = deadline,
                 .detail = std::move(detail)};
}

void LatestFinishedAt(const std::vector<api::ContainerStatus>& statuses,
                      std::optional<absl::Time>* latest) {
  for (const api::ContainerStatus& c : statuses) {
    if (!c.unknown.is_object()) continue;
    auto state = c.unknown.find("state");
    if (state == c.unknown.end() || !state->is_object()) continue;
    auto terminated = state->find("terminated");
    if (terminated == state->end() || !terminated->is_object()) continue;
    auto finished = terminated->find("finishedAt");
    if (finished == terminated->end() || !finished->is_string()) continue;
    auto t = api::ParseTime(finished->get<std::string>());
    if (t.ok() && (!latest->has_value() || *t > **latest)) *latest = *t;
  }
}

// "10.0.0.5" == "10.0.0.5/24", and "fd00::1" == "fd00:0::1".
bool SameAddress(std::string_view cidr_or_ip, std::string_view ip) {
  std::string_view addr = cidr_or_ip.substr(0, cidr_or_ip.find('/'));
  if (addr == ip) return true;
  auto a = base::IPAddress::Parse(addr);
  auto b = base::IPAddress::Parse(ip);
  return a.ok() && b.ok() && *a == *b;
}

}  // namespace

std::string_view GCReasonName(GCReason reason) {
  switch (reason) {
    case GCReason::kPodMissing: return "pod_missing";
    case GCReason::kPodUIDMismatch: return "pod_uid_mismatch";
    case GCReason::kNodeMissing: return "node_missing";
    case GCReason::kPodTerminated: return "pod_terminated";
    case GCReason::kPodTerminating: return "pod_terminating";
    case GCReason::kKubevirtVMGone: return "kubevirt_vm_gone";
  }
  return "unknown";
}

std::optional<absl::Time> PodFinishedAt(const api::Pod& pod) {
  std::optional<absl::Time> latest;
  LatestFinishedAt(pod.status.container_statuses, &latest);
  LatestFinishedAt(pod.status.init_container_statuses, &latest);
  return latest;
}

bool EndpointHasIP(const api::SpiderEndpoint& endpoint, std::string_view ip) {
  if (!endpoint.status.has_value()) return false;
  for (const api::IPAllocationDetail& d : endpoint.status->current.ips) {
    if (d.ipv4.has_value() && SameAddress(*d.ipv4, ip)) return true;
    if (d.ipv6.has_value() && SameAddress(*d.ipv6, ip)) return true;
  }
  return false;
}

std::optional<absl::Time> TerminatedDeadline(const GCPolicy& policy, const api::Pod& pod,
                                             std::optional<absl::Time> first_seen_terminal,
                                             absl::Time now) {
  if (pod.status.phase != api::kPodSucceeded && pod.status.phase != api::kPodFailed) {
    return std::nullopt;
  }
  std::optional<absl::Time> since = PodFinishedAt(pod);
  if (!since.has_value()) since = first_seen_terminal.value_or(now);
  const int64_t grace = std::max<int64_t>(
      0, pod.spec.termination_grace_period_seconds.value_or(kDefaultTerminationGracePeriodSeconds));
  return *since + absl::Seconds(grace) + policy.additional_grace_delay;
}

std::optional<absl::Time> TerminatingDeadline(const GCPolicy& policy, const api::Pod& pod) {
  if (!pod.metadata.deletion_timestamp.has_value()) return std::nullopt;
  const int64_t grace = std::max<int64_t>(0, pod.metadata.deletion_grace_period_seconds.value_or(0));
  return pod.metadata.deletion_timestamp->value + absl::Seconds(grace) +
         policy.additional_grace_delay;
}

Verdict Decide(const GCPolicy& policy, const PodFacts& facts, std::string_view uid,
               std::string_view ip, absl::Time now) {
  if (policy.enable_kubevirt_static_ip && facts.kubevirt_vm) {
    if (facts.kubevirt_vm_wants_ips) return Keep("KubeVirt VM (static IP)");
    return Reclaim(GCReason::kKubevirtVMGone, "the KubeVirt VM and its VMI are gone or being deleted");
  }
  const bool sts = policy.enable_statefulset && facts.valid_statefulset_pod;
  const api::Pod* pod = facts.pod.get();
  if (pod == nullptr) {
    if (sts) return Keep("StatefulSet pod being recreated");
    return Reclaim(GCReason::kPodMissing, "no pod of that name");
  }
  if (pod->metadata.uid != uid) {
    if (sts) {
      const api::SpiderEndpoint* ep = facts.endpoint.get();
      if (!ip.empty() && ep != nullptr && ep->status.has_value() &&
          ep->status->current.uid == pod->metadata.uid && !EndpointHasIP(*ep, ip)) {
        return Reclaim(GCReason::kPodUIDMismatch,
                       "the recreated StatefulSet pod was given other IPs");
      }
      return Keep("StatefulSet pod recreated; the agent moves its IPs to the new UID");
    }
    return Reclaim(GCReason::kPodUIDMismatch, "the pod of that name has another UID");
  }
  if (sts) return Keep("valid StatefulSet pod");
  if (!pod->spec.node_name.empty() && !facts.node_exists) {
    return Reclaim(GCReason::kNodeMissing, "the pod's node was deleted");
  }
  if (auto deadline = TerminatedDeadline(policy, *pod, facts.first_seen_terminal, now)) {
    return WaitOrReclaim(GCReason::kPodTerminated, *deadline, now,
                         "pod " + pod->status.phase);
  }
  if (auto deadline = TerminatingDeadline(policy, *pod)) {
    const bool enabled = facts.node_ready ? policy.gc_terminating_pod_on_ready_node
                                          : policy.gc_terminating_pod_on_not_ready_node;
    if (!enabled) return Keep("terminating pod GC is off for this node state");
    return WaitOrReclaim(GCReason::kPodTerminating, *deadline, now, "pod terminating");
  }
  return Keep("pod alive");
}

std::optional<StatefulSetPodRef> StatefulSetOwnerOf(std::string_view pod_name,
                                                    const api::Pod* pod,
                                                    const api::SpiderEndpoint* endpoint) {
  auto parsed = api::ParseStatefulSetPodName(pod_name);
  if (!parsed.has_value()) return std::nullopt;
  std::string owner = parsed->statefulset;
  if (pod != nullptr) {
    const api::OwnerReference* ref = pod->metadata.ControllerRef();
    if (ref == nullptr || ref->kind != "StatefulSet" ||
        ref->api_version.rfind("apps/", 0) != 0) {
      return std::nullopt;
    }
    owner = ref->name;
  } else if (endpoint != nullptr && endpoint->status.has_value()) {
    if (endpoint->status->owner_controller_type != "StatefulSet") return std::nullopt;
    owner = endpoint->status->owner_controller_name;
  }
  if (owner != parsed->statefulset) return std::nullopt;
  return StatefulSetPodRef{.statefulset = std::move(owner), .ordinal = parsed->ordinal};
}

bool IsValidStatefulSetPod(const StatefulSetPodRef& ref, const api::StatefulSet* sts) {
  if (sts == nullptr || sts->metadata.IsDeleting()) return false;
  if (sts->metadata.name != ref.statefulset) return false;
  return api::StatefulSetCoversOrdinal(*sts, ref.ordinal);
}

}  // namespace spiderpool::op::ipam
