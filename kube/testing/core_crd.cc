// CustomResourceDefinitions: validation, status, (un)registration of the served resources.

#include "kube/testing/core.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/strings.h"
#include "kube/testing/core_util.h"
#include "kube/testing/errors.h"
#include "kube/testing/resources.h"

namespace spiderpool::kube::testing::internal {

using base::Json;
using base::StrCat;

// ---- CustomResourceDefinitions ----

namespace {

// KEP-4358 (GA in 1.32): at most 8 selectableFields per version, each a simple JSON path
// (".a.b", no array notation) outside metadata to a string, boolean or integer field of the
// version's schema, no path twice.
constexpr size_t kMaxSelectableFields = 8;

void ValidateSelectableFields(const Json& version, const Json& schema, const std::string& path,
                              std::vector<FieldError>* errs) {
  if (!version.contains("selectableFields")) return;
  const Json& fields = version["selectableFields"];
  const std::string fpath = path + ".selectableFields";
  if (!fields.is_array()) {
    errs->push_back(FieldInvalid(fpath, "{...}", "must be a list"));
    return;
  }
  if (fields.size() > kMaxSelectableFields) {
    errs->push_back({"FieldValueTooMany", fpath,
                     StrCat("Too many: ", fields.size(), ": must have at most ",
                            kMaxSelectableFields, " items")});
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string jpath = StrCat(fpath, "[", i, "].jsonPath");
    const std::string jp = fields[i].is_object() ? Str(fields[i], "jsonPath") : std::string();
    if (jp.empty()) {
      errs->push_back(FieldRequired(jpath, ""));
      continue;
    }
    bool valid = jp.size() > 1 && jp[0] == '.' && jp.find_first_of("[]*") == std::string::npos;
    if (valid && (jp == ".metadata" || jp.rfind(".metadata.", 0) == 0)) {
      errs->push_back(FieldInvalid(jpath, Quote(jp), "must not point to fields in metadata"));
      continue;
    }
    const Json* at = &schema;
    for (size_t start = 1; valid && start <= jp.size();) {
      size_t dot = jp.find('.', start);
      std::string key = jp.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      const Json* props = at->is_object() && at->contains("properties") ? &(*at)["properties"]
                                                                        : nullptr;
      if (key.empty() || props == nullptr || !props->is_object() || !props->contains(key)) {
        valid = false;
        break;
      }
      at = &(*props)[key];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (!valid) {
      errs->push_back(FieldInvalid(jpath, Quote(jp), "is an invalid path"));
      continue;
    }
    const std::string type = at->is_object() ? Str(*at, "type") : std::string();
    if (type != "string" && type != "boolean" && type != "integer") {
      errs->push_back(FieldInvalid(jpath, Quote(jp),
                                   "must point to a field of type string, boolean or integer. "
                                   "Enum string fields and strings with formats are allowed"));
      continue;
    }
    if (!seen.insert(jp).second) {
      errs->push_back({"FieldValueDuplicate", jpath, StrCat("Duplicate value: ", Quote(jp))});
    }
  }
}

// The fields a version's field selectors may name (validated above), without the leading dot.
std::vector<std::string> SelectableFieldsOf(const Json& version) {
  std::vector<std::string> out;
  if (!version.contains("selectableFields") || !version["selectableFields"].is_array()) return out;
  for (const Json& f : version["selectableFields"]) {
    std::string jp = f.is_object() ? Str(f, "jsonPath") : std::string();
    if (jp.size() > 1) out.push_back(jp.substr(1));
  }
  return out;
}

}  // namespace

void Core::SetCrdStatus(Json* crd, const Json* old) const {
  const Json& spec = (*crd)["spec"];
  const Json& names = spec.is_object() ? spec.value("names", Json::object()) : Json::object();
  std::string kind = Str(names, "kind");
  std::string singular = Str(names, "singular");
  if (singular.empty()) {
    singular = kind;
    for (char& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::string list_kind = Str(names, "listKind");
  if (list_kind.empty()) list_kind = kind + "List";
  Json accepted = {{"plural", Str(names, "plural")},
                   {"singular", singular},
                   {"kind", kind},
                   {"listKind", list_kind}};
  if (names.contains("shortNames")) accepted["shortNames"] = names["shortNames"];
  if (names.contains("categories")) accepted["categories"] = names["categories"];
  std::string now = NowRfc3339();
  auto since = [&](const std::string& type) {
    if (old && old->contains("status") && (*old)["status"].is_object()) {
      const Json& conds = (*old)["status"].value("conditions", Json::array());
      for (const Json& c : conds) {
        if (Str(c, "type") == type && Str(c, "status") == "True") {
          std::string t = Str(c, "lastTransitionTime");
          if (!t.empty()) return t;
        }
      }
    }
    return now;
  };
  Json stored = Json::array();
  if (old && old->contains("status") && (*old)["status"].is_object()) {
    stored = (*old)["status"].value("storedVersions", Json::array());
  }
  if (spec.is_object() && spec.contains("versions") && spec["versions"].is_array()) {
    for (const Json& v : spec["versions"]) {
      if (v.is_object() && v.value("storage", false) == true) {
        std::string name = Str(v, "name");
        if (std::find(stored.begin(), stored.end(), Json(name)) == stored.end()) {
          stored.push_back(name);
        }
      }
    }
  }
  (*crd)["status"] = {
      {"conditions",
       {{{"type", "NamesAccepted"},
         {"status", "True"},
         {"lastTransitionTime", since("NamesAccepted")},
         {"reason", "NoConflicts"},
         {"message", "no conflicts found"}},
        {{"type", "Established"},
         {"status", "True"},
         {"lastTransitionTime", since("Established")},
         {"reason", "InitialNamesAccepted"},
         {"message", "the initial names have been accepted"}}}},
      {"acceptedNames", accepted},
      {"storedVersions", stored}};
}

std::optional<ApiStatus> Core::PlanCrd(const Json& crd,
                                       std::map<std::string, SchemaValidator>* validators) const {
  std::vector<FieldError> errs;
  std::string name = MetaStr(crd, "name");
  const Json& spec = crd.contains("spec") ? crd["spec"] : Json();
  if (!spec.is_object()) {
    errs.push_back(FieldRequired("spec", ""));
    return InvalidStatus("apiextensions.k8s.io", "CustomResourceDefinition", name, errs);
  }
  std::string group = Str(spec, "group");
  const Json& names = spec.contains("names") && spec["names"].is_object() ? spec["names"]
                                                                          : Json::object();
  std::string plural = Str(names, "plural"), kind = Str(names, "kind");
  if (group.empty()) {
    errs.push_back(FieldRequired("spec.group", ""));
  } else if (group.find('.') == std::string::npos) {
    errs.push_back(FieldInvalid("spec.group", Quote(group), "should be a domain with at least one dot"));
  } else if (std::vector<std::string> e = api::IsDns1123Subdomain(group); !e.empty()) {
    errs.push_back(FieldInvalid("spec.group", Quote(group), absl::StrJoin(e, ",")));
  }
  if (plural.empty()) {
    errs.push_back(FieldRequired("spec.names.plural", ""));
  } else if (std::vector<std::string> e = api::IsDns1123Label(plural); !e.empty()) {
    errs.push_back(FieldInvalid("spec.names.plural", Quote(plural), absl::StrJoin(e, ",")));
  }
  if (kind.empty()) errs.push_back(FieldRequired("spec.names.kind", ""));
  if (!group.empty() && !plural.empty() && name != plural + "." + group) {
    errs.push_back(FieldInvalid("metadata.name", Quote(name),
                                "must be spec.names.plural+\".\"+spec.group"));
  }
  std::string scope = Str(spec, "scope");
  if (scope != "Namespaced" && scope != "Cluster") {
    errs.push_back(scope.empty() ? FieldRequired("spec.scope", "")
                                 : FieldNotSupported("spec.scope", Quote(scope),
                                                     {"Cluster", "Namespaced"}));
  }
  for (const ResourceInfo& b : BuiltinResources()) {
    if (b.group == group && b.plural == plural) {
      errs.push_back(FieldInvalid("spec.names.plural", Quote(plural),
                                  "conflicts with a built-in resource"));
    }
  }
  const Json* versions = spec.contains("versions") ? &spec["versions"] : nullptr;
  if (!versions || !versions->is_array() || versions->empty()) {
    errs.push_back(FieldInvalid("spec.versions", "null", "must have exactly one version marked as storage version"));
  } else {
    int storage = 0;
    std::set<std::string> seen;
    SchemaValidatorFactory factory = options_.schema_validator_factory
                                         ? options_.schema_validator_factory
                                         : DefaultSchemaValidatorFactory();
    for (size_t i = 0; i < versions->size(); ++i) {
      const Json& v = (*versions)[i];
      std::string path = StrCat("spec.versions[", i, "]");
      std::string vname = Str(v, "name");
      if (vname.empty()) {
        errs.push_back(FieldRequired(path + ".name", ""));
        continue;
      }
      if (std::vector<std::string> e = api::IsDns1035Label(vname); !e.empty()) {
        errs.push_back(FieldInvalid(path + ".name", Quote(vname), absl::StrJoin(e, ",")));
      }
      if (!seen.insert(vname).second) {
        errs.push_back({"FieldValueDuplicate", path + ".name",
                        StrCat("Duplicate value: ", Quote(vname))});
      }
      if (v.value("storage", false) == true) ++storage;
      const Json* schema = nullptr;
      if (v.contains("schema") && v["schema"].is_object() &&
          v["schema"].contains("openAPIV3Schema")) {
        schema = &v["schema"]["openAPIV3Schema"];
      }
      if (!schema || !schema->is_object()) {
        errs.push_back(FieldRequired(path + ".schema.openAPIV3Schema", "schemas are required"));
        continue;
      }
      ValidateSelectableFields(v, *schema, path, &errs);
      if (factory) {
        auto validator = factory(*schema);
        if (!validator.ok()) {
          errs.push_back(FieldInvalid(path + ".schema.openAPIV3Schema", "{...}",
                                      base::FromAbsl(validator.status().message())));
        } else {
          (*validators)[vname] = *std::move(validator);
        }
      }
    }
    if (storage != 1) {
      errs.push_back(FieldInvalid("spec.versions", "[...]",
                                  "must have exactly one version marked as storage version"));
    }
  }
  if (!errs.empty()) {
    return InvalidStatus("apiextensions.k8s.io", "CustomResourceDefinition", name, errs);
  }
  return std::nullopt;
}

std::optional<ApiStatus> Core::ApplyCrdLocked(
    const Json& crd, const std::map<std::string, SchemaValidator>& validators) {
  const Json& spec = crd["spec"];
  const Json& names = spec["names"];
  std::string group = Str(spec, "group"), plural = Str(names, "plural");
  auto [it, inserted] = resources_.try_emplace({group, plural});
  ResourceState& rs = it->second;
  if (!inserted && !rs.custom) {
    return InternalErrorStatus(StrCat("resource ", plural, ".", group, " is built in"));
  }
  if (inserted) rs.history_floor = rv_;
  rs.group = group;
  rs.plural = plural;
  rs.custom = true;
  rs.kind = Str(names, "kind");
  rs.singular = Str(names, "singular");
  rs.list_kind = Str(names, "listKind");
  rs.namespaced = Str(spec, "scope") == "Namespaced";
  rs.short_names.clear();
  if (names.contains("shortNames") && names["shortNames"].is_array()) {
    for (const Json& s : names["shortNames"]) {
      if (s.is_string()) rs.short_names.push_back(s.get<std::string>());
    }
  }
  rs.versions.clear();
  for (const Json& v : spec["versions"]) {
    std::string vname = Str(v, "name");
    if (v.value("storage", false) == true) rs.storage_version = vname;
    if (v.value("served", false) != true) continue;
    bool has_status = v.contains("subresources") && v["subresources"].is_object() &&
                      v["subresources"].contains("status") &&
                      v["subresources"]["status"].is_object();
    ResourceInfo info = Normalized({group, vname, rs.kind, plural, rs.singular, rs.namespaced,
                                    has_status, rs.short_names, rs.list_kind});
    rs.singular = info.singular;
    rs.list_kind = info.list_kind;
    auto vit = validators.find(vname);
    rs.versions[vname] = VersionState{info, vit == validators.end() ? nullptr : vit->second,
                                      SelectableFieldsOf(v)};
  }
  return std::nullopt;
}

void Core::UnregisterCrdLocked(const Json& crd) {
  const Json& spec = MetaOf(crd).is_object() && crd.contains("spec") ? crd["spec"] : Json();
  if (!spec.is_object() || !spec.contains("names") || !spec["names"].is_object()) return;
  std::string group = Str(spec, "group"), plural = Str(spec["names"], "plural");
  auto it = resources_.find({group, plural});
  if (it == resources_.end() || !it->second.custom) return;
  ResourceState& rs = it->second;
  std::vector<StoredPtr> all;
  for (const auto& [k, s] : rs.objects) all.push_back(s);
  for (const StoredPtr& s : all) {
    int64_t rv = NextRvLocked();
    Json final_obj = s->obj;
    MutableMeta(final_obj)["resourceVersion"] = std::to_string(rv);
    rs.objects.erase(s->key);
    EmitLocked(rs, "DELETED", MakeStored(std::move(final_obj), s->key, rv), s);
  }
  for (const auto& w : rs.watchers) w->Close(false);
  watches_cv_.notify_all();
  resources_.erase(it);
}

}  // namespace spiderpool::kube::testing::internal
