#include "api/resource_claim.h"

#include <utility>

#include "base/ip.h"
#include "base/strings.h"

namespace spiderpool::api::resource_v1 {

using base::StrCat;

const ResourceInfo& ResourceClaim::Resource() {
  static const ResourceInfo info{.group = std::string(kGroup),
                                 .version = "v1",
                                 .kind = "ResourceClaim",
                                 .plural = "resourceclaims",
                                 .singular = "resourceclaim",
                                 .namespaced = true,
                                 .has_status = true};
  return info;
}

const ResourceInfo& ResourceClaimTemplate::Resource() {
  static const ResourceInfo info{.group = std::string(kGroup),
                                 .version = "v1",
                                 .kind = "ResourceClaimTemplate",
                                 .plural = "resourceclaimtemplates",
                                 .singular = "resourceclaimtemplate",
                                 .namespaced = true,
                                 .has_status = false};
  return info;
}

std::string_view DeviceRequestAllocationResult::MainRequest() const {
  std::string_view r = request;
  size_t slash = r.find('/');
  return slash == std::string_view::npos ? r : r.substr(0, slash);
}

bool DeviceAllocationConfiguration::AppliesTo(std::string_view request) const {
  if (requests.empty()) return true;
  std::string_view main = request.substr(0, request.find('/'));
  for (const std::string& r : requests) {
    if (r == request || r == main) return true;
  }
  return false;
}

bool AllocatedDeviceStatus::SameDevice(const AllocatedDeviceStatus& o) const {
  return driver == o.driver && pool == o.pool && device == o.device &&
         share_id.value_or("") == o.share_id.value_or("");
}

std::vector<const DeviceRequestAllocationResult*> ResourceClaim::ResultsFor(
    std::string_view driver) const {
  std::vector<const DeviceRequestAllocationResult*> out;
  if (!status.allocation.has_value()) return out;
  for (const auto& r : status.allocation->devices.results) {
    if (r.driver == driver) out.push_back(&r);
  }
  return out;
}

std::vector<const DeviceAllocationConfiguration*> ResourceClaim::ConfigsFor(
    std::string_view driver, std::string_view request) const {
  std::vector<const DeviceAllocationConfiguration*> out;
  if (!status.allocation.has_value()) return out;
  for (const auto& c : status.allocation->devices.config) {
    if (!c.opaque.has_value() || c.opaque->driver != driver) continue;
    if (c.AppliesTo(request)) out.push_back(&c);
  }
  return out;
}

// ---- versions -----------------------------------------------------------------------------

namespace {

// The fields a v1beta1 DeviceRequest carries flat and v1 keeps under `exactly`.
constexpr std::string_view kFlatRequestFields[] = {"deviceClassName", "selectors",
                                                   "allocationMode",  "count",
                                                   "adminAccess",     "tolerations",
                                                   "capacity"};

// v1beta1 spec.devices -> v1 in place. Malformed parts are left for the decoder to report.
void FlatRequestsToExactly(Json* spec) {
  if (spec == nullptr || !spec->is_object()) return;
  auto devices = spec->find("devices");
  if (devices == spec->end() || !devices->is_object()) return;
  auto requests = devices->find("requests");
  if (requests == devices->end() || !requests->is_array()) return;
  for (Json& req : *requests) {
    if (!req.is_object()) continue;
    auto fa = req.find("firstAvailable");
    bool has_first_available = fa != req.end() && fa->is_array() && !fa->empty();
    Json exactly = Json::object();
    for (std::string_view f : kFlatRequestFields) {
      auto it = req.find(f);
      if (it == req.end()) continue;
      if (!has_first_available) exactly[std::string(f)] = std::move(*it);
      req.erase(it);
    }
    if (!has_first_available && !exactly.empty() && !req.contains("exactly")) {
      req["exactly"] = std::move(exactly);
    }
  }
}

// object[key] when it is a string, else `fallback` (never throws on odd input).
std::string StringAt(const Json& object, std::string_view key, std::string_view fallback = "") {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::string(fallback);
  return it->get<std::string>();
}

enum class Shape { kV1, kFlat, kUnknown };

Shape ShapeOf(std::string_view api_version) {
  if (api_version.empty() || api_version == kApiVersionV1 || api_version == kApiVersionV1beta2) {
    return Shape::kV1;
  }
  if (api_version == kApiVersionV1beta1 || api_version == kApiVersionV1alpha3) return Shape::kFlat;
  return Shape::kUnknown;
}

absl::Status ConvertOne(Json* object, std::string_view list_version,
                        std::string_view default_kind) {
  if (!object->is_object()) {
    return absl::InvalidArgumentError("expected a resource.k8s.io object");
  }
  std::string api_version = StringAt(*object, "apiVersion", list_version);
  Shape shape = ShapeOf(api_version);
  if (shape == Shape::kUnknown) {
    return absl::InvalidArgumentError(
        StrCat("apiVersion: unsupported version \"", api_version, "\" (want ", kApiVersionV1,
               ", ", kApiVersionV1beta2, ", ", kApiVersionV1beta1, " or ", kApiVersionV1alpha3,
               ")"));
  }
  if (shape == Shape::kFlat) {
    std::string kind = StringAt(*object, "kind", default_kind);
    auto spec = object->find("spec");
    if (spec != object->end()) {
      if (kind == "ResourceClaimTemplate") {
        if (spec->is_object()) {
          auto inner = spec->find("spec");
          if (inner != spec->end()) FlatRequestsToExactly(&*inner);
        }
      } else {
        FlatRequestsToExactly(&*spec);
      }
    }
  }
  if (object->contains("apiVersion")) (*object)["apiVersion"] = std::string(kApiVersionV1);
  return absl::OkStatus();
}

}  // namespace

absl::Status ConvertToV1(Json* object) {
  if (object == nullptr || !object->is_object()) {
    return absl::InvalidArgumentError("expected a resource.k8s.io object");
  }
  std::string kind = StringAt(*object, "kind");
  if (kind.size() > 4 && kind.substr(kind.size() - 4) == "List") {
    std::string version = StringAt(*object, "apiVersion");
    if (ShapeOf(version) == Shape::kUnknown) {
      return absl::InvalidArgumentError(
          StrCat("apiVersion: unsupported version \"", version, "\""));
    }
    auto items = object->find("items");
    if (items != object->end() && items->is_array()) {
      for (size_t i = 0; i < items->size(); ++i) {
        absl::Status s = ConvertOne(&(*items)[i], version, kind.substr(0, kind.size() - 4));
        if (!s.ok()) {
          return absl::InvalidArgumentError(StrCat("items[", i, "]: ", base::FromAbsl(s.message())));
        }
      }
    }
    (*object)["apiVersion"] = std::string(kApiVersionV1);
    return absl::OkStatus();
  }
  return ConvertOne(object, "", "");
}

absl::StatusOr<ResourceClaim> DecodeResourceClaim(const Json& object) {
  Json copy = object;
  absl::Status s = ConvertToV1(&copy);
  if (!s.ok()) return s;
  DecodeErrors errs;
  ResourceClaim out = DecodeInto<ResourceClaim>(copy, &errs);
  if (!errs.ok()) return errs.ToStatus("ResourceClaim");
  return out;
}

absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(const Json& object) {
  Json copy = object;
  if (!copy.is_object()) return absl::InvalidArgumentError("expected a resource.k8s.io object");
  absl::Status s = ConvertOne(&copy, "", "ResourceClaimTemplate");
  if (!s.ok()) return s;
  DecodeErrors errs;
  ResourceClaimTemplate out = DecodeInto<ResourceClaimTemplate>(copy, &errs);
  if (!errs.ok()) return errs.ToStatus("ResourceClaimTemplate");
  return out;
}

// ---- status.devices helpers ---------------------------------------------------------------

bool UpsertDeviceStatus(std::vector<AllocatedDeviceStatus>* devices, AllocatedDeviceStatus entry) {
  for (AllocatedDeviceStatus& d : *devices) {
    if (!d.SameDevice(entry)) continue;
    if (Encode(d) == Encode(entry)) return false;
    d = std::move(entry);
    return true;
  }
  devices->push_back(std::move(entry));
  return true;
}

size_t RemoveDeviceStatuses(std::vector<AllocatedDeviceStatus>* devices, std::string_view driver,
                            const std::function<bool(const AllocatedDeviceStatus&)>& pred) {
  size_t before = devices->size();
  std::erase_if(*devices, [&](const AllocatedDeviceStatus& d) {
    return d.driver == driver && (!pred || pred(d));
  });
  return before - devices->size();
}

absl::Status ValidateDeviceStatus(const AllocatedDeviceStatus& entry, std::string_view path) {
  std::vector<std::string> errs;
  if (entry.driver.empty()) errs.push_back(StrCat(path, ".driver: Required value"));
  if (entry.pool.empty()) errs.push_back(StrCat(path, ".pool: Required value"));
  if (entry.device.empty()) errs.push_back(StrCat(path, ".device: Required value"));
  if (entry.conditions.size() > kMaxDeviceConditions) {
    errs.push_back(StrCat(path, ".conditions: Too many: ", entry.conditions.size(),
                          ": must have at most ", kMaxDeviceConditions, " items"));
  }
  if (entry.network_data.has_value()) {
    const NetworkDeviceData& n = *entry.network_data;
    const std::string np = StrCat(path, ".networkData");
    if (n.interface_name.size() > kMaxInterfaceNameLength) {
      errs.push_back(StrCat(np, ".interfaceName: Too long: may not be more than ",
                            kMaxInterfaceNameLength, " bytes"));
    }
    if (n.hardware_address.size() > kMaxHardwareAddressLength) {
      errs.push_back(StrCat(np, ".hardwareAddress: Too long: may not be more than ",
                            kMaxHardwareAddressLength, " bytes"));
    }
    if (n.ips.size() > kMaxNetworkIPs) {
      errs.push_back(StrCat(np, ".ips: Too many: ", n.ips.size(), ": must have at most ",
                            kMaxNetworkIPs, " items"));
    }
    for (size_t i = 0; i < n.ips.size(); ++i) {
      auto p = base::IPPrefix::Parse(n.ips[i]);
      if (!p.ok()) {
        errs.push_back(StrCat(np, ".ips[", i, "]: Invalid value: \"", n.ips[i],
                              "\": must be an IP address in CIDR form (\"192.0.2.5/24\")"));
        continue;
      }
      for (size_t j = 0; j < i; ++j) {
        if (n.ips[j] == n.ips[i]) {
          errs.push_back(StrCat(np, ".ips[", i, "]: Duplicate value: \"", n.ips[i], "\""));
          break;
        }
      }
    }
  }
  if (errs.empty()) return absl::OkStatus();
  std::string msg;
  for (const std::string& e : errs) {
    if (!msg.empty()) msg += "; ";
    msg += e;
  }
  return absl::InvalidArgumentError(msg);
}

}  // namespace spiderpool::api::resource_v1
