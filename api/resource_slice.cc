#include "api/resource_slice.h"

#include <cctype>
#include <set>
#include <utility>

#include "api/names.h"
#include "base/strings.h"

namespace spiderpool::api {

namespace rs = resourceslice;
using base::StrCat;
using validation::BadValue;
using validation::ErrorList;

// ---- equality (on the encoded form: an unset `unknown` and an empty one are the same) ------

bool operator==(const DeviceAttribute& a, const DeviceAttribute& b) {
  return Encode(a) == Encode(b);
}
bool operator==(const DeviceCapacity& a, const DeviceCapacity& b) {
  return Encode(a) == Encode(b);
}
bool operator==(const Device& a, const Device& b) { return Encode(a) == Encode(b); }

// ---- resources ----------------------------------------------------------------------------

ResourceInfo ResourceSliceResourceIn(std::string_view version) {
  return ResourceInfo{.group = std::string(rs::kGroup),
                      .version = std::string(version),
                      .kind = "ResourceSlice",
                      .plural = "resourceslices",
                      .singular = "resourceslice",
                      .namespaced = false,
                      .has_status = false};
}

ResourceInfo DeviceClassResourceIn(std::string_view version) {
  return ResourceInfo{.group = std::string(rs::kGroup),
                      .version = std::string(version),
                      .kind = "DeviceClass",
                      .plural = "deviceclasses",
                      .singular = "deviceclass",
                      .namespaced = false,
                      .has_status = false};
}

const ResourceInfo& ResourceSlice::Resource() {
  static const ResourceInfo info = ResourceSliceResourceIn(rs::kVersionV1);
  return info;
}

const ResourceInfo& DeviceClass::Resource() {
  static const ResourceInfo info = DeviceClassResourceIn(rs::kVersionV1);
  return info;
}

// ---- versions -----------------------------------------------------------------------------

namespace {

bool KnownVersion(std::string_view v) {
  return v == rs::kVersionV1 || v == rs::kVersionV1beta2 || v == rs::kVersionV1beta1;
}

absl::Status UnknownVersion(std::string_view what, std::string_view v) {
  return absl::InvalidArgumentError(
      StrCat(what, ": unsupported resource.k8s.io version \"", v,
             "\" (supported: v1, v1beta2, v1beta1)"));
}

// Merges `basic` of each v1beta1 device into the device (the v1 shape). A `basic` that is
// not an object is reported here, with its v1beta1 path; other errors come from the v1
// decoder with v1 paths (kube-apiserver normalizes v1beta1 paths the same way).
void UnwrapBasic(Json* object, DecodeErrors* errs) {
  if (!object->is_object()) return;
  auto spec = object->find("spec");
  if (spec == object->end() || !spec->is_object()) return;
  auto devices = spec->find("devices");
  if (devices == spec->end() || !devices->is_array()) return;
  for (size_t i = 0; i < devices->size(); ++i) {
    Json& d = (*devices)[i];
    if (!d.is_object()) continue;
    auto basic = d.find("basic");
    if (basic == d.end()) continue;
    Json b = std::move(*basic);
    d.erase("basic");
    if (b.is_null()) continue;
    if (!b.is_object()) {
      errs->Add(StrCat("spec.devices[", i, "].basic"),
                "expected object, got " + codec_internal::Describe(b));
      continue;
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (it.key() == "name") continue;  // `name` lives outside `basic`
      d[it.key()] = std::move(it.value());
    }
  }
}

}  // namespace

absl::StatusOr<Json> EncodeResourceSliceAs(const ResourceSlice& slice, std::string_view version) {
  if (!KnownVersion(version)) return UnknownVersion("ResourceSlice", version);
  Json j = Encode(slice);
  j["apiVersion"] = StrCat(rs::kGroup, "/", version);
  j["kind"] = "ResourceSlice";
  if (version != rs::kVersionV1beta1) return j;
  auto devices = j["spec"].find("devices");
  if (devices == j["spec"].end()) return j;
  for (Json& d : *devices) {
    Json wrapped = Json::object();
    Json basic = Json::object();
    for (auto it = d.begin(); it != d.end(); ++it) {
      if (it.key() == "name") {
        wrapped["name"] = it.value();
      } else {
        basic[it.key()] = it.value();
      }
    }
    // v1beta1 BasicDevice is a pointer: written even when empty so the device has a type.
    wrapped["basic"] = std::move(basic);
    d = std::move(wrapped);
  }
  return j;
}

absl::StatusOr<ResourceSlice> DecodeResourceSliceFrom(const Json& object,
                                                      std::string_view version) {
  if (!KnownVersion(version)) return UnknownVersion("ResourceSlice", version);
  DecodeErrors errs;
  ResourceSlice out;
  if (version == rs::kVersionV1beta1) {
    Json copy = object;
    UnwrapBasic(&copy, &errs);
    out = DecodeInto<ResourceSlice>(copy, &errs);
  } else {
    out = DecodeInto<ResourceSlice>(object, &errs);
  }
  if (!errs.ok()) return errs.ToStatus();
  out.SetTypeMeta();
  return out;
}

absl::StatusOr<Json> EncodeDeviceClassAs(const DeviceClass& cls, std::string_view version) {
  if (!KnownVersion(version)) return UnknownVersion("DeviceClass", version);
  Json j = Encode(cls);
  j["apiVersion"] = StrCat(rs::kGroup, "/", version);
  j["kind"] = "DeviceClass";
  if (!j.contains("spec")) j["spec"] = Json::object();
  return j;
}

absl::StatusOr<DeviceClass> DecodeDeviceClassFrom(const Json& object, std::string_view version) {
  if (!KnownVersion(version)) return UnknownVersion("DeviceClass", version);
  absl::StatusOr<DeviceClass> out = Decode<DeviceClass>(object);
  if (!out.ok()) return out.status();
  out->SetTypeMeta();
  return out;
}

// ---- validation ---------------------------------------------------------------------------

namespace {

void ValidateCIdentifier(std::string_view id, const std::string& path, ErrorList* errs) {
  if (id.size() > static_cast<size_t>(rs::kDeviceMaxIDLength)) {
    errs->push_back(validation::TooLong(path, rs::kDeviceMaxIDLength));
  }
  for (std::string& msg : IsCIdentifier(id)) {
    errs->push_back(validation::Invalid(path, BadValue::String(id), std::move(msg)));
  }
}

// corevalidation.ValidateCSIDriverName.
void ValidateDriverName(std::string_view driver, const std::string& path, ErrorList* errs) {
  if (driver.empty()) errs->push_back(validation::Required(path, ""));
  if (driver.size() > static_cast<size_t>(rs::kDriverNameMaxLength)) {
    errs->push_back(validation::TooLong(path, rs::kDriverNameMaxLength));
  }
  std::string lower(driver);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string& msg : IsDns1123Subdomain(lower)) {
    errs->push_back(validation::Invalid(path, BadValue::String(driver), std::move(msg)));
  }
}

void ValidatePoolName(std::string_view name, const std::string& path, ErrorList* errs) {
  if (name.empty()) {
    errs->push_back(validation::Required(path, ""));
    return;
  }
  if (name.size() > static_cast<size_t>(rs::kPoolNameMaxLength)) {
    errs->push_back(validation::TooLong(path, rs::kPoolNameMaxLength));
  }
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    std::string_view part =
        name.substr(start, slash == std::string_view::npos ? name.npos : slash - start);
    for (std::string& msg : IsDns1123Subdomain(part)) {
      errs->push_back(validation::Invalid(path, BadValue::String(part), std::move(msg)));
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
}

bool IsNumeric(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsAlnumDash(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

// semver.org 2.0.0, as the validation's semverRe.
bool IsSemver(std::string_view v) {
  size_t plus = v.find('+');
  std::string_view build = plus == std::string_view::npos ? "" : v.substr(plus + 1);
  std::string_view rest = v.substr(0, plus);
  if (plus != std::string_view::npos) {
    size_t start = 0;
    while (true) {
      size_t dot = build.find('.', start);
      if (!IsAlnumDash(build.substr(start, dot == build.npos ? build.npos : dot - start))) {
        return false;
      }
      if (dot == build.npos) break;
      start = dot + 1;
    }
  }
  size_t dash = rest.find('-');
  std::string_view core = rest.substr(0, dash);
  if (dash != std::string_view::npos) {
    std::string_view pre = rest.substr(dash + 1);
    size_t start = 0;
    while (true) {
      size_t dot = pre.find('.', start);
      std::string_view id = pre.substr(start, dot == pre.npos ? pre.npos : dot - start);
      if (!IsAlnumDash(id)) return false;
      if (IsNumeric(id) && id.size() > 1 && id[0] == '0') return false;
      if (dot == pre.npos) break;
      start = dot + 1;
    }
  }
  int parts = 0;
  size_t start = 0;
  while (true) {
    size_t dot = core.find('.', start);
    std::string_view n = core.substr(start, dot == core.npos ? core.npos : dot - start);
    if (!IsNumeric(n) || (n.size() > 1 && n[0] == '0')) return false;
    ++parts;
    if (dot == core.npos) break;
    start = dot + 1;
  }
  return parts == 3;
}

// truncateIfTooLong of the validation's validateMap.
std::string TruncateKey(const std::string& key, size_t max_len) {
  if (max_len < 16) max_len = 16;
  if (key.size() <= max_len) return key;
  size_t remaining = max_len - 3;
  return key.substr(0, (remaining + 1) / 2) + "..." + key.substr(key.size() - remaining / 2);
}

constexpr size_t kMaxKeyLength = rs::kDeviceMaxDomainLength + 1 + rs::kDeviceMaxIDLength;

void ValidateAttribute(const DeviceAttribute& a, const std::string& path, ErrorList* errs) {
  int fields = 0;
  if (a.bool_value) ++fields;
  if (a.int_value) ++fields;
  if (a.string_value) {
    ++fields;
    if (a.string_value->size() > static_cast<size_t>(rs::kDeviceAttributeMaxValueLength)) {
      errs->push_back(validation::TooLong(path + ".string", rs::kDeviceAttributeMaxValueLength));
    }
  }
  if (a.version_value) {
    ++fields;
    if (!IsSemver(*a.version_value)) {
      errs->push_back(validation::Invalid(path + ".version", BadValue::String(*a.version_value),
                                          "must be a string compatible with semver.org spec 2.0.0"));
    }
    if (a.version_value->size() > static_cast<size_t>(rs::kDeviceAttributeMaxValueLength)) {
      errs->push_back(validation::TooLong(path + ".version", rs::kDeviceAttributeMaxValueLength));
    }
  }
  if (a.unknown.is_object()) {
    for (const char* list : {"bools", "ints", "strings", "versions"}) {
      auto it = a.unknown.find(list);
      if (it != a.unknown.end() && !it->is_null()) ++fields;
    }
  }
  if (fields == 0) {
    errs->push_back(validation::Invalid(path, BadValue::String(""),
                                        "exactly one value must be specified"));
  } else if (fields > 1) {
    errs->push_back(validation::Invalid(path, BadValue::Raw(base::DumpJson(Encode(a))),
                                        "exactly one value must be specified"));
  }
}

void ValidateDevice(const Device& d, bool per_device_node_selection, const std::string& path,
                    ErrorList* errs) {
  for (std::string& msg : IsDns1123Label(d.name)) {
    errs->push_back(validation::Invalid(path + ".name", BadValue::String(d.name), std::move(msg)));
  }
  int64_t count = static_cast<int64_t>(d.attributes.size() + d.capacity.size());
  if (count > rs::kMaxAttributesAndCapacitiesPerDevice) {
    errs->push_back(validation::Invalid(
        path, BadValue::Int(count),
        StrCat("the total number of attributes and capacities must not exceed ",
               rs::kMaxAttributesAndCapacitiesPerDevice)));
  }
  std::string attrs_path = path + ".attributes";
  for (const auto& [key, attr] : d.attributes) {
    ErrorList key_errs = ValidateQualifiedName(key, attrs_path);
    errs->insert(errs->end(), key_errs.begin(), key_errs.end());
    ValidateAttribute(attr, StrCat(attrs_path, "[", TruncateKey(key, kMaxKeyLength), "]"), errs);
  }
  bool multi = d.allow_multiple_allocations.value_or(false);
  std::string cap_path = path + ".capacity";
  for (const auto& [key, cap] : d.capacity) {
    ErrorList key_errs = ValidateQualifiedName(key, cap_path);
    errs->insert(errs->end(), key_errs.begin(), key_errs.end());
    if (!multi && cap.unknown.is_object() && cap.unknown.contains("requestPolicy") &&
        !cap.unknown["requestPolicy"].is_null()) {
      errs->push_back(validation::Forbidden(
          StrCat(cap_path, "[", TruncateKey(key, kMaxKeyLength), "].requestPolicy"),
          "allowMultipleAllocations must be true"));
    }
  }
  if (!per_device_node_selection && d.unknown.is_object()) {
    for (const char* f : {"nodeName", "nodeSelector", "allNodes"}) {
      auto it = d.unknown.find(f);
      if (it != d.unknown.end() && !it->is_null()) {
        errs->push_back(validation::Invalid(
            path, BadValue::Null(),
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"));
        break;
      }
    }
  }
}

}  // namespace

ErrorList ValidateQualifiedName(std::string_view name, const std::string& path) {
  ErrorList errs;
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) {
    ValidateCIdentifier(name, path, &errs);
    return errs;
  }
  if (name.find('/', slash + 1) != std::string_view::npos) {
    errs.push_back(validation::Invalid(path, BadValue::String(name),
                                       "must not contain more than one slash"));
    return errs;
  }
  std::string_view domain = name.substr(0, slash);
  std::string_view id = name.substr(slash + 1);
  if (domain.empty()) {
    errs.push_back(validation::Invalid(path, BadValue::String(""), "the domain must not be empty"));
  } else {
    ValidateDriverName(domain, path, &errs);
  }
  if (id.empty()) {
    errs.push_back(validation::Invalid(path, BadValue::String(""), "the name must not be empty"));
  } else {
    ValidateCIdentifier(id, path, &errs);
  }
  return errs;
}

ErrorList ValidateResourceSlice(const ResourceSlice& slice) {
  ErrorList errs;
  const ObjectMeta& m = slice.metadata;
  if (m.name.empty() && m.generate_name.empty()) {
    errs.push_back(validation::Required("metadata.name", "name or generateName is required"));
  } else if (!m.name.empty()) {
    for (std::string& msg : IsDns1123Subdomain(m.name)) {
      errs.push_back(validation::Invalid("metadata.name", BadValue::String(m.name), std::move(msg)));
    }
  }

  const ResourceSliceSpec& spec = slice.spec;
  ValidateDriverName(spec.driver, "spec.driver", &errs);
  ValidatePoolName(spec.pool.name, "spec.pool.name", &errs);
  if (spec.pool.resource_slice_count <= 0) {
    errs.push_back(validation::Invalid("spec.pool.resourceSliceCount",
                                       BadValue::Int(spec.pool.resource_slice_count),
                                       "must be greater than zero"));
  }
  if (spec.pool.generation < 0) {
    errs.push_back(validation::Invalid("spec.pool.generation", BadValue::Int(spec.pool.generation),
                                       "must be greater than or equal to zero"));
  }

  std::vector<std::string> set;
  if (spec.node_name.has_value()) {
    if (!spec.node_name->empty()) {
      set.push_back("`nodeName`");
      for (std::string& msg : IsDns1123Subdomain(*spec.node_name)) {
        errs.push_back(validation::Invalid("spec.nodeName", BadValue::String(*spec.node_name),
                                           std::move(msg)));
      }
    } else {
      errs.push_back(validation::Invalid("spec.nodeName", BadValue::String(""),
                                         "must be either unset or set to a non-empty string"));
    }
  }
  if (spec.node_selector.has_value()) {
    set.push_back("`nodeSelector`");
    const Json& sel = *spec.node_selector;
    const Json* terms = nullptr;
    if (sel.is_object()) {
      auto it = sel.find("nodeSelectorTerms");
      if (it != sel.end()) terms = &*it;
    }
    if (terms == nullptr || !terms->is_array() || terms->size() != 1) {
      errs.push_back(validation::Invalid(
          "spec.nodeSelector.nodeSelectorTerms",
          BadValue::Raw(terms == nullptr ? "null" : base::DumpJson(*terms)),
          "must have exactly one node selector term"));
    }
  }
  if (spec.all_nodes.has_value()) {
    if (*spec.all_nodes) {
      set.push_back("`allNodes`");
    } else {
      errs.push_back(validation::Invalid("spec.allNodes", BadValue::Bool(false),
                                         "must be either unset or set to true"));
    }
  }
  bool per_device = false;
  if (spec.per_device_node_selection.has_value()) {
    if (*spec.per_device_node_selection) {
      set.push_back("`perDeviceNodeSelection`");
      per_device = true;
    } else {
      errs.push_back(validation::Invalid("spec.perDeviceNodeSelection", BadValue::Bool(false),
                                         "must be either unset or set to true"));
    }
  }
  constexpr char kOneOf[] =
      "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
  if (set.empty()) {
    errs.push_back(validation::Required("spec", kOneOf));
  } else if (set.size() > 1) {
    std::string joined = "{";
    for (size_t i = 0; i < set.size(); ++i) joined += (i ? ", " : "") + set[i];
    joined += "}";
    errs.push_back(validation::Invalid("spec", BadValue::String(joined),
                                       StrCat(kOneOf, ", but multiple fields are set")));
  }
  if (spec.unknown.is_object() && spec.unknown.contains("sharedCounters") &&
      !spec.unknown["sharedCounters"].is_null() && !spec.devices.empty()) {
    errs.push_back(validation::Invalid("spec", BadValue::String(""),
                                       "only one of `sharedCounters` or `devices` is allowed"));
  }

  if (spec.devices.size() > static_cast<size_t>(rs::kMaxDevices)) {
    errs.push_back(validation::TooMany("spec.devices", static_cast<int64_t>(spec.devices.size()),
                                       rs::kMaxDevices));
    return errs;  // upstream short-circuits (DoS protection)
  }
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    ValidateDevice(spec.devices[i], per_device, StrCat("spec.devices[", i, "]"), &errs);
  }
  std::set<std::string> names;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    if (!names.insert(spec.devices[i].name).second) {
      errs.push_back(validation::Duplicate(StrCat("spec.devices[", i, "]"),
                                           BadValue::String(spec.devices[i].name)));
    }
  }
  return errs;
}

absl::Status ValidateResourceSliceStatus(const ResourceSlice& slice) {
  ErrorList errs = ValidateResourceSlice(slice);
  if (errs.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(validation::InvalidMessage(
      rs::kGroup, "ResourceSlice",
      slice.metadata.name.empty() ? slice.metadata.generate_name : slice.metadata.name, errs));
}

}  // namespace spiderpool::api
