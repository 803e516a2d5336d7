#include "api/kubevirt.h"

#include "gtest/gtest.h"

namespace spiderpool::api::kubevirt {
namespace {

ObjectMeta Meta(bool deleting, bool owned_by_vm) {
  ObjectMeta m;
  m.name = "vm1";
  if (deleting) m.deletion_timestamp = Time{absl::FromUnixSeconds(1700000000)};
  if (owned_by_vm) {
    m.owner_references.push_back({.api_version = std::string(kAPIVersion),
                                  .kind = std::string(kKindVM), .name = "vm1", .uid = "u",
                                  .controller = true});
  }
  return m;
}

TEST(Kubevirt, RunningVMIWantsItsIPs) {
  ObjectMeta vmi = Meta(false, true);
  EXPECT_TRUE(VMWantsItsIPs(&vmi, nullptr));
  ObjectMeta bare = Meta(false, false);
  EXPECT_TRUE(VMWantsItsIPs(&bare, nullptr)) << "a VMI without a VM, while it lives";
}

TEST(Kubevirt, DeletedBareVMIDoesNot) {
  ObjectMeta vmi = Meta(true, false);
  ObjectMeta vm = Meta(false, false);
  EXPECT_FALSE(VMWantsItsIPs(&vmi, &vm)) << "no VM controls this VMI: the VM of that name is another";
}

TEST(Kubevirt, StoppedOrRestartingVMKeepsItsIPs) {
  ObjectMeta vm = Meta(false, false);
  EXPECT_TRUE(VMWantsItsIPs(nullptr, &vm)) << "VMI gone, the VM is stopped";
  ObjectMeta going = Meta(true, true);
  EXPECT_TRUE(VMWantsItsIPs(&going, &vm)) << "VMI being replaced by its VM (restart)";
}

TEST(Kubevirt, DeletedVMReleases) {
  ObjectMeta vm = Meta(true, false);
  EXPECT_FALSE(VMWantsItsIPs(nullptr, &vm));
  EXPECT_FALSE(VMWantsItsIPs(nullptr, nullptr));
  ObjectMeta going = Meta(true, true);
  EXPECT_FALSE(VMWantsItsIPs(&going, nullptr));
  EXPECT_FALSE(VMWantsItsIPs(&going, &vm));
}

TEST(Kubevirt, OwnerAndResources) {
  EXPECT_TRUE(IsVMIOwner("kubevirt.io/v1", "VirtualMachineInstance"));
  EXPECT_FALSE(IsVMIOwner("kubevirt.io/v1alpha3", "VirtualMachineInstance"));
  EXPECT_FALSE(IsVMIOwner("kubevirt.io/v1", "VirtualMachine"));
  EXPECT_EQ(VMIResource().GroupResource(), "virtualmachineinstances.kubevirt.io");
  EXPECT_EQ(VMResource().ApiVersion(), "kubevirt.io/v1");
  EXPECT_EQ(VMIMResource().plural, "virtualmachineinstancemigrations");
}

}  // namespace
}  // namespace spiderpool::api::kubevirt
