// Fuzz target: ResourceSlice and DeviceClass as served in each resource.k8s.io version
// (api/resource_slice.h), read by the controller and the agent. Input: the first byte picks
// the version the object is decoded from, the rest is its JSON. Properties: nothing crashes;
// a slice that decodes validates without crashing and round-trips through every version's
// encoding to the same value.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/resource_slice.h"
#include "base/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spiderpool;
  if (size == 0) return 0;
  static constexpr std::string_view kVersions[] = {"v1", "v1beta2", "v1beta1"};
  const std::string_view version = kVersions[data[0] % 3];
  auto j = base::ParseJson(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (!j.ok()) return 0;
  (void)api::DecodeDeviceClassFrom(*j, version);
  auto slice = api::DecodeResourceSliceFrom(*j, version);
  if (!slice.ok()) return 0;
  (void)api::ValidateResourceSlice(*slice);
  (void)api::ValidateResourceSliceStatus(*slice);
  const base::Json enc = api::Encode(*slice);
  for (std::string_view out : kVersions) {
    auto as = api::EncodeResourceSliceAs(*slice, out);
    if (!as.ok()) __builtin_trap();
    auto again = api::DecodeResourceSliceFrom(*as, out);
    if (!again.ok() || api::Encode(*again) != enc) __builtin_trap();
  }
  return 0;
}
