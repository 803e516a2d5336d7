// Fuzz target: ResourceClaim / ResourceClaimTemplate as the API server serves them, in any
// resource.k8s.io version (api/resource_claim.h: ConvertToV1 + decode). Read by the controller
// and by the agent's DRA driver. Properties: nothing crashes; what decodes re-encodes to JSON
// that decodes to the same encoding; ConvertToV1 is idempotent on what it accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/resource_claim.h"
#include "base/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spiderpool;
  using namespace spiderpool::api::resource_v1;
  auto j = base::ParseJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!j.ok()) return 0;
  if (auto claim = DecodeResourceClaim(*j); claim.ok()) {
    const base::Json enc = api::Encode(*claim);
    auto again = DecodeResourceClaim(enc);
    if (!again.ok() || api::Encode(*again) != enc) __builtin_trap();
    for (const auto& d : claim->status.devices) (void)ValidateDeviceStatus(d, "status.devices");
    for (const auto* r : claim->ResultsFor("netresources.spidernet.io")) {
      (void)claim->ConfigsFor("netresources.spidernet.io", r->request);
      (void)r->MainRequest();
    }
  }
  if (auto tmpl = DecodeResourceClaimTemplate(*j); tmpl.ok()) {
    const base::Json enc = api::Encode(*tmpl);
    auto again = DecodeResourceClaimTemplate(enc);
    if (!again.ok() || api::Encode(*again) != enc) __builtin_trap();
  }
  base::Json once = *j;
  if (ConvertToV1(&once).ok()) {
    base::Json twice = once;
    if (!ConvertToV1(&twice).ok() || twice != once) __builtin_trap();
  }
  return 0;
}
