#include "api/kubevirt.h"

#include <algorithm>

namespace spiderpool::api::kubevirt {
namespace {

ResourceInfo KubevirtResource(std::string kind, std::string plural, std::string singular) {
  return ResourceInfo{.group = "kubevirt.io", .version = "v1", .kind = std::move(kind),
                      .plural = std::move(plural), .singular = std::move(singular),
                      .namespaced = true, .has_status = true};
}

bool ControlledByVM(const ObjectMeta& vmi) {
  return std::any_of(vmi.owner_references.begin(), vmi.owner_references.end(),
                     [](const OwnerReference& r) {
                       return r.controller.value_or(false) && r.kind == kKindVM &&
                              r.api_version == kAPIVersion;
                     });
}

}  // namespace

ResourceInfo VMIResource() {
  return KubevirtResource(std::string(kKindVMI), "virtualmachineinstances",
                          "virtualmachineinstance");
}
ResourceInfo VMResource() {
  return KubevirtResource(std::string(kKindVM), "virtualmachines", "virtualmachine");
}
ResourceInfo VMIMResource() {
  return KubevirtResource("VirtualMachineInstanceMigration", "virtualmachineinstancemigrations",
                          "virtualmachineinstancemigration");
}

bool IsVMIOwner(std::string_view api_version, std::string_view kind) {
  return api_version == kAPIVersion && kind == kKindVMI;
}

bool VMWantsItsIPs(const ObjectMeta* vmi, const ObjectMeta* vm) {
  if (vmi != nullptr) {
    if (!vmi->IsDeleting()) return true;
    if (!ControlledByVM(*vmi)) return false;
  }
  return vm != nullptr && !vm->IsDeleting();
}

absl::StatusOr<bool> VMWantsItsIPs(MetaGetter get) {
  absl::StatusOr<std::optional<ObjectMeta>> vmi = get(VMIResource());
  if (!vmi.ok()) return vmi.status();
  if (vmi->has_value() && !(*vmi)->IsDeleting()) return true;
  absl::StatusOr<std::optional<ObjectMeta>> vm = get(VMResource());
  if (!vm.ok()) return vm.status();
  return VMWantsItsIPs(vmi->has_value() ? &**vmi : nullptr, vm->has_value() ? &**vm : nullptr);
}

}  // namespace spiderpool::api::kubevirt
