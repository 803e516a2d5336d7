#pragma once
// KubeVirt facts the IPAM needs (reference §2.1 step 3, §2.6, §2.10): a VM's pods
// (virt-launcher-<vm>-xxxxx) are controlled by its VirtualMachineInstance; with
// enableKubevirtStaticIP their IPs are kept under the VMI's name (the SpiderEndpoint and the
// pool records say "<ns>/<vmi>") across pod restarts and live migration, and freed once the
// VM no longer wants them. We never write KubeVirt objects: only their metadata is read.

#include <optional>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

#include "api/meta.h"
#include "api/resource.h"

namespace spiderpool::api::kubevirt {

inline constexpr std::string_view kAPIVersion = "kubevirt.io/v1";
inline constexpr std::string_view kKindVMI = "VirtualMachineInstance";
inline constexpr std::string_view kKindVM = "VirtualMachine";
// Set by KubeVirt on the target pod of a live migration (its value names the VMIM).
inline constexpr std::string_view kAnnotationMigrationJobName = "kubevirt.io/migrationJobName";

ResourceInfo VMIResource();   // virtualmachineinstances.kubevirt.io
ResourceInfo VMResource();    // virtualmachines.kubevirt.io
ResourceInfo VMIMResource();  // virtualmachineinstancemigrations.kubevirt.io

// A controller reference naming a KubeVirt VMI (a VM's pod).
bool IsVMIOwner(std::string_view api_version, std::string_view kind);

// Whether the VM behind a VMI name still wants its IPs (upstream IsValidVMPod), from what the
// API server answered: `vmi` / `vm` are null when that object does not exist.
//  - the VMI exists and is not being deleted: yes;
//  - the VMI is being deleted and no VM controls it: no;
//  - otherwise (VMI gone or going, a VM controls it): yes while the VM exists and is not being
//    deleted (a stopped VM keeps its IP for its next start).
bool VMWantsItsIPs(const ObjectMeta* vmi, const ObjectMeta* vm);
// The same, asking `get` (one object's metadata by resource, nullopt when it does not exist)
// for the VMI and, only when that does not settle it, for the VM of the same name.
using MetaGetter =
    absl::FunctionRef<absl::StatusOr<std::optional<ObjectMeta>>(const ResourceInfo& resource)>;
absl::StatusOr<bool> VMWantsItsIPs(MetaGetter get);

}  // namespace spiderpool::api::kubevirt
