// Built-in validation, resource.k8s.io kinds (see builtin_validation_internal.h and the rules' sources in
// builtin_validation.cc). Moved unchanged from builtin_validation.cc.
#include "kube/testing/builtin_validation_internal.h"

namespace spiderpool::kube::testing::internal::builtin {

// ---- resource.k8s.io/v1 ----

// ValidateCSIDriverName (DRA driver names are CSI driver names).
void CheckDriverName(const std::string& path, const std::string& driver, Errs& errs) {
  if (driver.empty()) errs.push_back(FieldRequired(path, ""));
  if (driver.size() > 63) {
    errs.push_back({"FieldValueTooLong", path, "Too long: may not be more than 63 bytes"});
  }
  std::string lower = driver;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const std::string& e : api::IsDns1123Subdomain(lower)) {
    errs.push_back(FieldInvalid(path, Quote(driver), e));
  }
}

void CheckPoolName(const std::string& path, const std::string& name, Errs& errs) {
  if (name.empty()) {
    errs.push_back(FieldRequired(path, ""));
    return;
  }
  if (name.size() > 253) {
    errs.push_back({"FieldValueTooLong", path, "Too long: may not be more than 253 bytes"});
  }
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    CheckDnsSubdomain(path, name.substr(start, slash == std::string::npos ? slash : slash - start),
                      errs);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
}

// validateQualifiedName of device attributes and capacities: C identifier or <driver>/<id>.
void CheckDeviceQualifiedName(const std::string& path, const std::string& name, Errs& errs) {
  size_t slash = name.find('/');
  auto c_ident = [&](const std::string& id) {
    if (std::string e = CIdentifierError(id); !e.empty())
      errs.push_back(FieldInvalid(path, Quote(id), e));
  };
  if (slash == std::string::npos) {
    c_ident(name);
    return;
  }
  std::string domain = name.substr(0, slash), id = name.substr(slash + 1);
  if (id.find('/') != std::string::npos) return;  // kube does not check names with two slashes
  if (domain.empty()) {
    errs.push_back(FieldInvalid(path, "\"\"", "the domain must not be empty"));
  } else {
    CheckDriverName(path, domain, errs);
  }
  if (id.empty()) {
    errs.push_back(FieldInvalid(path, "\"\"", "the name must not be empty"));
  } else {
    c_ident(id);
  }
}

// ValidateNodeSelector (non-empty terms) plus DRA's "exactly one term".
void CheckSliceNodeSelector(const Json& ns, const std::string& path, bool exactly_one, Errs& errs) {
  size_t terms = ArrSize(ns, "nodeSelectorTerms");
  if (terms == 0) {
    errs.push_back(FieldRequired(Child(path, "nodeSelectorTerms"),
                                 "must have at least one node selector term"));
  }
  if (exactly_one && terms != 1) {
    errs.push_back(FieldInvalid(Child(path, "nodeSelectorTerms"),
                                Render(ArrAt(ns, "nodeSelectorTerms")),
                                "must have exactly one node selector term"));
  }
}

void ValidateResourceSlice(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  std::string driver = StrAt(spec, "driver");
  CheckDriverName("spec.driver", driver, errs);
  const Json& pool = ObjAt(spec, "pool");
  CheckPoolName("spec.pool.name", StrAt(pool, "name"), errs);
  if (int64_t n = IntAt(pool, "resourceSliceCount").value_or(0); n <= 0) {
    errs.push_back(
        FieldInvalid("spec.pool.resourceSliceCount", RenderInt(n), "must be greater than zero"));
  }
  if (int64_t g = IntAt(pool, "generation").value_or(0); g < 0) {
    errs.push_back(FieldInvalid("spec.pool.generation", RenderInt(g),
                                "must be greater than or equal to zero"));
  }
  if (old != nullptr) {
    const Json& old_spec = ObjAt(*old, "spec");
    std::string pool_name = StrAt(pool, "name");
    if (pool_name != StrAt(ObjAt(old_spec, "pool"), "name")) {
      errs.push_back(FieldInvalid("spec.pool.name", Quote(pool_name), kImmutable));
    }
    if (driver != StrAt(old_spec, "driver"))
      errs.push_back(FieldInvalid("spec.driver", Quote(driver), kImmutable));
    if (!SameValue(At(spec, "nodeName"), At(old_spec, "nodeName"))) {
      errs.push_back(FieldInvalid("spec.nodeName", Render(At(spec, "nodeName")), kImmutable));
    }
  }
  std::vector<std::string> set_fields;
  if (const Json* node = At(spec, "nodeName")) {
    std::string n = node->is_string() ? node->get<std::string>() : "";
    if (!n.empty()) {
      set_fields.push_back("`nodeName`");
      CheckDnsSubdomain("spec.nodeName", n, errs);
    } else {
      errs.push_back(FieldInvalid("spec.nodeName", Quote(n),
                                  "must be either unset or set to a non-empty string"));
    }
  }
  if (const Json* ns = At(spec, "nodeSelector")) {
    set_fields.push_back("`nodeSelector`");
    CheckSliceNodeSelector(*ns, "spec.nodeSelector", true, errs);
  }
  for (const char* k : {"allNodes", "perDeviceNodeSelection"}) {
    if (std::optional<bool> b = BoolAt(spec, k)) {
      if (*b) {
        set_fields.push_back(StrCat("`", k, "`"));
      } else {
        errs.push_back(
            FieldInvalid(Child("spec", k), "false", "must be either unset or set to true"));
      }
    }
  }
  if (set_fields.empty()) {
    errs.push_back(FieldRequired("spec",
                                 "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                                 "`perDeviceNodeSelection` is required"));
  } else if (set_fields.size() > 1) {
    std::string joined;
    for (const std::string& s : set_fields) joined += (joined.empty() ? "" : ", ") + s;
    errs.push_back(FieldInvalid(
        "spec", Quote(StrCat("{", joined, "}")),
        "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
        "required, but multiple fields are set"));
  }
  if (Has(spec, "sharedCounters") && Has(spec, "devices")) {
    errs.push_back(
        FieldInvalid("spec", "\"\"", "only one of `sharedCounters` or `devices` is allowed"));
  }
  const Json* devices = ArrAt(spec, "devices");
  if (devices == nullptr) return;
  size_t max_devices = 128;
  for (const Json& d : *devices) {
    if (ArrSize(d, "taints") > 0 || ArrSize(d, "consumesCounters") > 0) max_devices = 64;
  }
  if (devices->size() > max_devices) {
    errs.push_back(FieldTooMany("spec.devices", devices->size(), max_devices));
    return;
  }
  bool per_device = BoolAt(spec, "perDeviceNodeSelection") == std::optional<bool>(true);
  std::set<std::string> names;
  for (size_t i = 0; i < devices->size(); ++i) {
    const Json& d = (*devices)[i];
    std::string p = Index("spec.devices", i);
    CheckDnsLabel(Child(p, "name"), StrAt(d, "name"), errs);
    const Json& attrs = ObjAt(d, "attributes");
    for (auto it = attrs.begin(); it != attrs.end(); ++it) {
      std::string ap = KeyOf(Child(p, "attributes"), it.key());
      CheckDeviceQualifiedName(ap, it.key(), errs);
      int values = 0;
      for (const char* k : {"bool", "int", "string", "version"})
        values += Has(it.value(), k) ? 1 : 0;
      if (values == 0) {
        errs.push_back(FieldInvalid(ap, "\"\"", "exactly one value must be specified"));
      } else if (values > 1) {
        errs.push_back(FieldInvalid(ap,
                                    GoStruct(it.value(),
                                             {{"int", "IntValue"},
                                              {"bool", "BoolValue"},
                                              {"string", "StringValue"},
                                              {"version", "VersionValue"}},
                                             {}),
                                    "exactly one value must be specified"));
      }
    }
    const Json& capacity = ObjAt(d, "capacity");
    for (auto it = capacity.begin(); it != capacity.end(); ++it) {
      CheckDeviceQualifiedName(KeyOf(Child(p, "capacity"), it.key()), it.key(), errs);
    }
    bool node_fields = Has(d, "nodeName") || Has(d, "nodeSelector") || Has(d, "allNodes");
    if (per_device) {
      int set = 0;
      if (Has(d, "nodeName")) {
        std::string n = StrAt(d, "nodeName");
        if (n.empty()) {
          errs.push_back(FieldInvalid(Child(p, "nodeName"), "\"\"", "must not be empty"));
        } else {
          ++set;
          CheckDnsSubdomain(Child(p, "nodeName"), n, errs);
        }
      }
      if (const Json* ns = At(d, "nodeSelector")) {
        ++set;
        CheckSliceNodeSelector(*ns, Child(p, "nodeSelector"), false, errs);
      }
      if (std::optional<bool> all = BoolAt(d, "allNodes")) {
        if (*all) {
          ++set;
        } else {
          errs.push_back(
              FieldInvalid(Child(p, "allNodes"), "false", "must be either unset or set to true"));
        }
      }
      constexpr std::string_view kPerDevice =
          "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
          "`perDeviceNodeSelection` is set to true in the ResourceSlice spec";
      if (set == 0) errs.push_back(FieldRequired(p, kPerDevice));
    } else if (node_fields) {
      errs.push_back(
          FieldInvalid(p, "null",
                       "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                       "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"));
    }
  }
  for (size_t i = 0; i < devices->size(); ++i) {
    std::string name = StrAt((*devices)[i], "name");
    if (!names.insert(name).second)
      errs.push_back(FieldDuplicate(Index("spec.devices", i), Quote(name)));
  }
}

void CheckDeviceClassRef(const Json& req, const std::string& path, Errs& errs) {
  std::string cls = StrAt(req, "deviceClassName");
  if (cls.empty()) {
    errs.push_back(FieldRequired(Child(path, "deviceClassName"), ""));
  } else {
    CheckDnsSubdomain(Child(path, "deviceClassName"), cls, errs);
  }
}

void CheckSelectors(const Json& obj, const std::string& path, Errs& errs) {
  const Json* sels = ArrAt(obj, "selectors");
  if (sels == nullptr) return;
  if (sels->size() > 32) {
    errs.push_back(FieldTooMany(path, sels->size(), 32));
    return;
  }
  for (size_t i = 0; i < sels->size(); ++i) {
    const Json* cel = At((*sels)[i], "cel");
    std::string p = Index(path, i);
    if (cel == nullptr) {
      errs.push_back(FieldRequired(Child(p, "cel"), ""));
    } else if (StrAt(*cel, "expression").empty()) {
      errs.push_back(FieldRequired(Child(p, "cel.expression"), "expression is required"));
    }
  }
}

void CheckAllocationMode(const Json& req, const std::string& path, Errs& errs) {
  std::string mode = StrAt(req, "allocationMode");
  std::optional<int64_t> count = IntAt(req, "count");
  if (mode == "All") {
    if (count && *count != 0) {
      errs.push_back(FieldInvalid(Child(path, "count"), RenderInt(*count),
                                  "must not be specified when allocationMode is 'All'"));
    }
  } else if (mode.empty() || mode == "ExactCount") {
    if (count && *count < 0) {  // 0 is defaulted to 1
      errs.push_back(
          FieldInvalid(Child(path, "count"), RenderInt(*count), "must be greater than zero"));
    }
  } else {
    errs.push_back(
        FieldNotSupported(Child(path, "allocationMode"), Quote(mode), {"All", "ExactCount"}));
  }
}

void CheckDeviceConfiguration(const Json& cfg, const std::string& path, Errs& errs) {
  const Json* opaque = At(cfg, "opaque");
  if (opaque == nullptr) {
    errs.push_back(FieldRequired(Child(path, "opaque"), ""));
    return;
  }
  CheckDriverName(Child(path, "opaque.driver"), StrAt(*opaque, "driver"), errs);
  const Json* params = At(*opaque, "parameters");
  if (params == nullptr) {
    errs.push_back(FieldRequired(Child(path, "opaque.parameters"), ""));
  } else if (!params->is_object()) {
    errs.push_back(FieldInvalid(Child(path, "opaque.parameters"), "\"<value omitted>\"",
                                "must be a valid JSON object"));
  }
}

void ValidateDeviceClaim(const Json& devices, const std::string& path, Errs& errs) {
  std::map<std::string, std::set<std::string>> request_names;  // request -> subrequests
  const Json* requests = ArrAt(devices, "requests");
  std::string rpath = Child(path, "requests");
  if (requests != nullptr && requests->size() > 32) {
    errs.push_back(FieldTooMany(rpath, requests->size(), 32));
    requests = nullptr;
  }
  for (size_t i = 0; requests != nullptr && i < requests->size(); ++i) {
    const Json& r = (*requests)[i];
    std::string p = Index(rpath, i);
    CheckDnsLabel(Child(p, "name"), StrAt(r, "name"), errs);
    std::set<std::string>& subs = request_names[StrAt(r, "name")];
    size_t first = ArrSize(r, "firstAvailable");
    bool exactly = Has(r, "exactly");
    if (first == 0 && !exactly) {
      errs.push_back(FieldRequired(p, "exactly one of `exactly` or `firstAvailable` is required"));
    } else if (first > 0 && exactly) {
      errs.push_back(FieldInvalid(p, "null",
                                  "exactly one of `exactly` or `firstAvailable` is required, but "
                                  "multiple fields are set"));
    } else if (exactly) {
      const Json& ex = ObjAt(r, "exactly");
      std::string ep = Child(p, "exactly");
      CheckDeviceClassRef(ex, ep, errs);
      CheckSelectors(ex, Child(ep, "selectors"), errs);
      CheckAllocationMode(ex, ep, errs);
    } else {
      const Json& list = *ArrAt(r, "firstAvailable");
      std::string fp = Child(p, "firstAvailable");
      if (list.size() > 8) {
        errs.push_back(FieldTooMany(fp, list.size(), 8));
        continue;
      }
      for (size_t j = 0; j < list.size(); ++j) {
        const Json& sub = list[j];
        std::string sp = Index(fp, j);
        CheckDnsLabel(Child(sp, "name"), StrAt(sub, "name"), errs);
        CheckDeviceClassRef(sub, sp, errs);
        CheckSelectors(sub, Child(sp, "selectors"), errs);
        CheckAllocationMode(sub, sp, errs);
      }
      for (size_t j = 0; j < list.size(); ++j) {
        std::string name = StrAt(list[j], "name");
        if (!subs.insert(name).second) errs.push_back(FieldDuplicate(Index(fp, j), Quote(name)));
      }
    }
  }
  std::set<std::string> seen;
  for (size_t i = 0; requests != nullptr && i < requests->size(); ++i) {
    std::string name = StrAt((*requests)[i], "name");
    if (!seen.insert(name).second) errs.push_back(FieldDuplicate(Index(rpath, i), Quote(name)));
  }
  auto check_ref = [&](const std::string& p, const std::string& ref) {
    constexpr std::string_view kMsg =
        "must be the name of a request in the claim or the name of a request and a subrequest "
        "separated by '/'";
    size_t slash = ref.find('/');
    if (slash != std::string::npos && ref.find('/', slash + 1) != std::string::npos) {
      errs.push_back(FieldInvalid(p, Quote(ref), kMsg));
      return;
    }
    std::string req = ref.substr(0, slash);
    CheckDnsLabel(p, req, errs);
    if (slash != std::string::npos) CheckDnsLabel(p, ref.substr(slash + 1), errs);
    auto it = request_names.find(req);
    bool found = it != request_names.end() &&
                 (slash == std::string::npos || it->second.count(ref.substr(slash + 1)) > 0);
    if (!found) errs.push_back(FieldInvalid(p, Quote(ref), kMsg));
  };
  for (const char* list : {"constraints", "config"}) {
    const Json* items = ArrAt(devices, list);
    for (size_t i = 0; items != nullptr && i < items->size(); ++i) {
      const Json& item = (*items)[i];
      std::string p = Index(Child(path, list), i);
      if (const Json* refs = ArrAt(item, "requests")) {
        std::set<std::string> dup;
        for (size_t j = 0; j < refs->size(); ++j) {
          std::string ref = (*refs)[j].is_string() ? (*refs)[j].get<std::string>() : "";
          check_ref(Index(Child(p, "requests"), j), ref);
          if (!dup.insert(ref).second) {
            errs.push_back(FieldDuplicate(Index(Child(p, "requests"), j), Quote(ref)));
          }
        }
      }
      if (std::string_view(list) == "config") CheckDeviceConfiguration(item, p, errs);
    }
  }
}

void SpecImmutable(const Json& obj, const Json* old, Errs& errs) {
  if (old == nullptr) return;
  const Json* spec = At(obj, "spec");
  if (!SameValue(spec, At(*old, "spec"))) {
    errs.push_back(FieldInvalid("spec", Render(spec), kImmutable));
  }
}

void ValidateResourceClaim(const Json& obj, const Json* old, Errs& errs) {
  if (old != nullptr) {
    SpecImmutable(obj, old, errs);
    return;
  }
  ValidateDeviceClaim(ObjAt(ObjAt(obj, "spec"), "devices"), "spec.devices", errs);
}

void ValidateResourceClaimTemplate(const Json& obj, const Json* old, Errs& errs) {
  if (old != nullptr) {
    SpecImmutable(obj, old, errs);
    return;
  }
  const Json& spec = ObjAt(obj, "spec");
  const Json& meta = ObjAt(spec, "metadata");
  ValidateLabelMap(At(meta, "labels"), "spec.metadata.labels", errs);
  ValidateAnnotationMap(At(meta, "annotations"), "spec.metadata.annotations", errs);
  ValidateDeviceClaim(ObjAt(ObjAt(spec, "spec"), "devices"), "spec.spec.devices", errs);
}

void ValidateDeviceClass(const Json& obj, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  CheckSelectors(spec, "spec.selectors", errs);
  if (const Json* cfg = ArrAt(spec, "config")) {
    for (size_t i = 0; i < cfg->size(); ++i)
      CheckDeviceConfiguration((*cfg)[i], Index("spec.config", i), errs);
  }
}

// resource.k8s.io/v1beta1 objects in the internal (= v1) shape: requests carry their class and
// selectors at the top level instead of under `exactly`, device fields sit under `basic`, and
// nodeName/allNodes are plain values where "" and false mean unset. kube-apiserver validates
// the converted internal object, so paths are the v1 ones.
Json ResourceV1Beta1ToV1(std::string_view plural, const Json& obj) {
  Json out = obj;
  auto convert_devices = [](Json& devices) {
    if (!devices.is_object()) return;
    auto reqs = devices.find("requests");
    if (reqs == devices.end() || !reqs->is_array()) return;
    for (Json& r : *reqs) {
      if (!r.is_object() || ArrSize(r, "firstAvailable") > 0) continue;
      Json exactly = Json::object();
      for (const char* k : {"deviceClassName", "selectors", "allocationMode", "count",
                            "adminAccess", "tolerations"}) {
        if (auto it = r.find(k); it != r.end()) {
          exactly[k] = *it;
          r.erase(k);
        }
      }
      if (!exactly.empty()) r["exactly"] = std::move(exactly);
    }
  };
  if (!out.is_object() || !out.contains("spec") || !out["spec"].is_object()) return out;
  Json& spec = out["spec"];
  if (plural == "resourceslices") {
    if (StrAt(spec, "nodeName").empty()) spec.erase("nodeName");
    if (BoolAt(spec, "allNodes") == std::optional<bool>(false)) spec.erase("allNodes");
    if (auto devs = spec.find("devices"); devs != spec.end() && devs->is_array()) {
      for (Json& d : *devs) {
        if (!d.is_object()) continue;
        auto basic = d.find("basic");
        if (basic == d.end()) continue;
        Json b = basic->is_object() ? *basic : Json::object();
        d.erase("basic");
        for (auto it = b.begin(); it != b.end(); ++it) d[it.key()] = it.value();
      }
    }
  } else if (plural == "resourceclaims") {
    if (spec.contains("devices")) convert_devices(spec["devices"]);
  } else if (plural == "resourceclaimtemplates") {
    if (spec.contains("spec") && spec["spec"].is_object() && spec["spec"].contains("devices")) {
      convert_devices(spec["spec"]["devices"]);
    }
  }
  return out;
}

Errs ValidateBuiltinResource(std::string_view plural, const Json& obj, const Json* old, Errs errs) {
  if (plural == "resourceslices") {
    ValidateResourceSlice(obj, old, errs);
  } else if (plural == "resourceclaims") {
    ValidateResourceClaim(obj, old, errs);
  } else if (plural == "resourceclaimtemplates") {
    ValidateResourceClaimTemplate(obj, old, errs);
  } else if (plural == "deviceclasses") {
    ValidateDeviceClass(obj, errs);
  }
  return errs;
}

}  // namespace spiderpool::kube::testing::internal::builtin
