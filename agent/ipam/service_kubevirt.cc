// KubeVirt static IPs (reference §2.6), the IpamService side: a pod controlled by a VMI keeps
// its IPs under the VMI's name, the migration target answers without conflict detection, and
// a VM pod's DEL keeps the IPs while the VM wants them (README "KubeVirt").
#include "agent/ipam/service.h"

#include "api/kubevirt.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::ipam {
namespace sp = ::spiderpool::ipam;

bool IpamService::KubevirtStaticIP(const sp::PodOwner& owner) const {
  return options_.config.enable_kubevirt_static_ip &&
         api::kubevirt::IsVMIOwner(owner.api_version, owner.kind);
}

std::string IpamService::EndpointName(const api::Pod& pod, const sp::PodOwner& owner) const {
  return KubevirtStaticIP(owner) ? owner.name : pod.metadata.name;
}

bool IpamService::ConflictDetectionFor(const api::Pod& pod, const sp::PodOwner& owner) {
  if (!options_.config.enable_ip_conflict_detection) return false;
  if (!KubevirtStaticIP(owner)) return true;
  auto job = pod.metadata.annotations.find(std::string(api::kubevirt::kAnnotationMigrationJobName));
  if (job == pod.metadata.annotations.end() || job->second.empty()) return true;
  // The target pod of a live migration: until the switch-over the source pod answers for
  // this very IP, so a probe would always find a "conflict".
  absl::StatusOr<base::Json> vmim = kube::DynamicClient(rest_, api::kubevirt::VMIMResource())
                                        .Get(pod.metadata.namespace_, job->second);
  if (vmim.ok()) return false;
  if (!kube::IsNotFound(vmim.status())) {
    SP_LOG(Warning).Msg("cannot read the VM's migration; IP conflict detection stays on")
        .KV("pod", base::StrCat(pod.metadata.namespace_, "/", pod.metadata.name))
        .KV("migration", job->second)
        .KV("error", vmim.status());
  }
  return true;
}

absl::StatusOr<bool> IpamService::VMWantsItsIPs(const std::string& ns, const std::string& vmi) {
  absl::StatusOr<bool> wants = api::kubevirt::VMWantsItsIPs([&](const api::ResourceInfo& r) {
    return kube::DynamicClient(rest_, r).GetMetadata(ns, vmi);
  });
  if (!wants.ok()) return base::Annotate(wants.status(), base::StrCat("KubeVirt VM ", ns, "/", vmi));
  return wants;
}

std::optional<std::string> IpamService::VMIOfPod(const std::string& ns, const std::string& pod_name,
                                                 const std::string& uid,
                                                 const UidRecords& records) const {
  // The pod, while the cache has it (the kubelet's DEL usually comes before the pod goes).
  std::shared_ptr<const api::Pod> pod = caches_.pods.store().Get(base::StrCat(ns, "/", pod_name));
  if (pod != nullptr && pod->metadata.uid == uid) {
    const api::OwnerReference* ref = pod->metadata.ControllerRef();
    if (ref == nullptr || !api::kubevirt::IsVMIOwner(ref->api_version, ref->kind)) {
      return std::nullopt;
    }
    return ref->name;
  }
  // The pod is gone: the pool records of its UID name the VMI ("ns/vmi", not "ns/pod").
  const std::string pod_key = base::StrCat(ns, "/", pod_name);
  for (const std::string& owner : records.owners) {
    const size_t slash = owner.find('/');
    if (owner != pod_key && slash != std::string::npos && owner.substr(0, slash) == ns) {
      return owner.substr(slash + 1);
    }
  }
  return std::nullopt;
}

}  // namespace spiderpool::agent::ipam
