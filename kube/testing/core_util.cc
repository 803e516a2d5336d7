#include "kube/testing/core_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "absl/strings/escaping.h"
#include "base/strings.h"
#include "kube/testing/resources.h"

namespace spiderpool::kube::testing::internal {

using base::Json;
using base::StrCat;

std::string Str(const Json& j, std::string_view key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

const Json& MetaOf(const Json& obj) {
  static const Json kEmpty = Json::object();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find("metadata");
  if (it == obj.end() || !it->is_object()) return kEmpty;
  return *it;
}

std::string MetaStr(const Json& obj, std::string_view key) { return Str(MetaOf(obj), key); }

Json& MutableMeta(Json& obj) {
  Json& m = obj["metadata"];
  if (!m.is_object()) m = Json::object();
  return m;
}

int64_t MetaGeneration(const Json& obj) {
  const Json& m = MetaOf(obj);
  auto it = m.find("generation");
  if (it == m.end() || !it->is_number_integer()) return 0;
  return it->get<int64_t>();
}

const Json* OwnerRefs(const Json& obj) {
  const Json& m = MetaOf(obj);
  auto it = m.find("ownerReferences");
  if (it == m.end() || !it->is_array() || it->empty()) return nullptr;
  return &*it;
}

std::vector<std::string> Finalizers(const Json& obj) {
  std::vector<std::string> out;
  const Json& m = MetaOf(obj);
  auto it = m.find("finalizers");
  if (it == m.end() || !it->is_array()) return out;
  for (const Json& f : *it) {
    if (f.is_string()) out.push_back(f.get<std::string>());
  }
  return out;
}

bool GracePeriodZero(const Json& obj) {
  const Json& m = MetaOf(obj);
  auto g = m.find("deletionGracePeriodSeconds");
  return g == m.end() || !g->is_number_integer() || g->get<int64_t>() == 0;
}

int64_t PodGracePeriod(const Json& pod, const Json& delete_options) {
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object() || Str(*spec, "nodeName").empty()) return 0;
  auto status = pod.find("status");
  if (status != pod.end() && status->is_object()) {
    std::string phase = Str(*status, "phase");
    if (phase == "Succeeded" || phase == "Failed") return 0;
  }
  int64_t grace = 30;
  auto tg = spec->find("terminationGracePeriodSeconds");
  if (tg != spec->end() && tg->is_number_integer()) grace = tg->get<int64_t>();
  auto og = delete_options.find("gracePeriodSeconds");
  if (og != delete_options.end() && og->is_number_integer()) grace = og->get<int64_t>();
  return std::max<int64_t>(grace, 0);
}

bool Deleting(const Json& obj) {
  const Json& m = MetaOf(obj);
  auto it = m.find("deletionTimestamp");
  return it != m.end() && !it->is_null();
}

std::string Param(const HttpRequest& req, const std::string& key) {
  auto it = req.params.find(key);
  return it == req.params.end() ? "" : it->second;
}

bool ParamTrue(const HttpRequest& req, const std::string& key) {
  std::string v = Param(req, key);
  return v == "true" || v == "1" || v == "True";
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

HttpResponse RawJson(int code, std::string body) {
  HttpResponse r;
  r.code = code;
  r.body = std::move(body);
  return r;
}

HttpResponse JsonResp(int code, const Json& j) { return RawJson(code, base::DumpJson(j)); }

HttpResponse StatusResp(const ApiStatus& s) {
  HttpResponse r = JsonResp(s.code, s.ToJson());
  if (s.retry_after_seconds > 0) {
    r.headers.emplace_back("Retry-After", std::to_string(s.retry_after_seconds));
  }
  return r;
}

std::string Key(std::string_view ns, std::string_view name) {
  return ns.empty() ? std::string(name) : StrCat(ns, "/", name);
}

std::string ApiVersionOf(std::string_view group, std::string_view version) {
  return group.empty() ? std::string(version) : StrCat(group, "/", version);
}

std::string MediaType(std::string_view content_type) {
  std::string_view mt = content_type.substr(0, content_type.find(';'));
  while (!mt.empty() && mt.back() == ' ') mt.remove_suffix(1);
  std::string out(mt);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Copies `j` without the given top-level keys (for "did the spec change" comparisons).
Json Without(const Json& j, std::initializer_list<std::string_view> keys) {
  Json out = j;
  if (!out.is_object()) return out;
  for (std::string_view k : keys) out.erase(std::string(k));
  return out;
}

std::string GoStringSlice(const std::vector<std::string>& v) {
  std::string out = "[]string{";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += Quote(v[i]);
  }
  return out + "}";
}

// Type checks that the real server's decoder performs (400 on mismatch).
std::optional<ApiStatus> CheckMetaTypes(const Json& obj) {
  auto it = obj.find("metadata");
  if (it == obj.end() || it->is_null()) return std::nullopt;
  const Json& m = *it;
  if (!m.is_object()) {
    return BadRequestStatus("json: cannot unmarshal metadata: must be an object");
  }
  for (const char* k : {"name", "generateName", "namespace", "uid", "resourceVersion",
                        "creationTimestamp", "deletionTimestamp", "selfLink"}) {
    auto f = m.find(k);
    if (f != m.end() && !f->is_null() && !f->is_string()) {
      return BadRequestStatus(StrCat("json: cannot unmarshal ", f->type_name(),
                                     " into Go struct field ObjectMeta.metadata.", k,
                                     " of type string"));
    }
  }
  for (const char* k : {"labels", "annotations"}) {
    auto f = m.find(k);
    if (f == m.end() || f->is_null()) continue;
    if (!f->is_object()) {
      return BadRequestStatus(StrCat("json: cannot unmarshal ", f->type_name(),
                                     " into Go struct field ObjectMeta.metadata.", k,
                                     " of type map[string]string"));
    }
    for (const Json& v : *f) {
      if (!v.is_string()) {
        return BadRequestStatus(StrCat("json: cannot unmarshal ", v.type_name(),
                                       " into Go struct field ObjectMeta.metadata.", k,
                                       " of type string"));
      }
    }
  }
  if (auto f = m.find("finalizers"); f != m.end() && !f->is_null()) {
    if (!f->is_array()) {
      return BadRequestStatus("json: cannot unmarshal into Go struct field "
                              "ObjectMeta.metadata.finalizers of type []string");
    }
    for (const Json& v : *f) {
      if (!v.is_string()) {
        return BadRequestStatus("json: cannot unmarshal into Go struct field "
                                "ObjectMeta.metadata.finalizers of type string");
      }
    }
  }
  for (const char* k : {"generation", "deletionGracePeriodSeconds"}) {
    auto f = m.find(k);
    if (f != m.end() && !f->is_null() && !f->is_number_integer()) {
      return BadRequestStatus(StrCat("json: cannot unmarshal ", f->type_name(),
                                     " into Go struct field ObjectMeta.metadata.", k,
                                     " of type int64"));
    }
  }
  if (auto f = m.find("ownerReferences"); f != m.end() && !f->is_null()) {
    if (!f->is_array()) {
      return BadRequestStatus("json: cannot unmarshal into Go struct field "
                              "ObjectMeta.metadata.ownerReferences of type []v1.OwnerReference");
    }
    for (const Json& v : *f) {
      if (!v.is_object()) {
        return BadRequestStatus("json: cannot unmarshal into Go struct field "
                                "ObjectMeta.metadata.ownerReferences of type v1.OwnerReference");
      }
    }
  }
  return std::nullopt;
}

// Field validation of metadata (422 causes).
std::vector<FieldError> ValidateMeta(const Json& obj, bool dns_label_name) {
  std::vector<FieldError> errs;
  const Json& m = MetaOf(obj);
  std::string name = Str(m, "name");
  if (!name.empty()) {
    for (const std::string& e :
         dns_label_name ? api::IsDns1123Label(name) : api::IsDns1123Subdomain(name)) {
      errs.push_back(FieldInvalid("metadata.name", Quote(name), e));
    }
  }
  if (auto f = m.find("labels"); f != m.end() && f->is_object()) {
    for (auto it = f->begin(); it != f->end(); ++it) {
      for (const std::string& e : api::IsQualifiedName(it.key())) {
        errs.push_back(FieldInvalid("metadata.labels", Quote(it.key()), e));
      }
      if (it.value().is_string()) {
        std::string v = it.value().get<std::string>();
        for (const std::string& e : api::IsValidLabelValue(v)) {
          errs.push_back(FieldInvalid("metadata.labels", Quote(v), e));
        }
      }
    }
  }
  if (auto f = m.find("annotations"); f != m.end() && f->is_object()) {
    size_t total = 0;
    for (auto it = f->begin(); it != f->end(); ++it) {
      for (const std::string& e : api::IsQualifiedName(it.key())) {
        errs.push_back(FieldInvalid("metadata.annotations", Quote(it.key()), e));
      }
      total += it.key().size();
      if (it.value().is_string()) total += it.value().get_ref<const std::string&>().size();
    }
    if (total > 256 * 1024) {
      errs.push_back({"FieldValueTooLong", "metadata.annotations",
                      "Too long: must have at most 262144 bytes"});
    }
  }
  if (auto f = m.find("finalizers"); f != m.end() && f->is_array()) {
    for (size_t i = 0; i < f->size(); ++i) {
      if (!(*f)[i].is_string()) continue;
      std::string fin = (*f)[i].get<std::string>();
      for (const std::string& e : api::IsQualifiedName(fin)) {
        errs.push_back(FieldInvalid(StrCat("metadata.finalizers[", i, "]"), Quote(fin), e));
      }
    }
  }
  if (auto f = m.find("ownerReferences"); f != m.end() && f->is_array()) {
    for (size_t i = 0; i < f->size(); ++i) {
      const Json& o = (*f)[i];
      for (const char* k : {"apiVersion", "kind", "name", "uid"}) {
        if (Str(o, k).empty()) {
          errs.push_back(FieldRequired(StrCat("metadata.ownerReferences[", i, "].", k), ""));
        }
      }
    }
  }
  return errs;
}

std::string Base64Url(std::string_view s) {
  std::string out;
  absl::WebSafeBase64Escape(base::ToAbsl(s), &out);
  return out;
}

bool UnBase64Url(std::string_view s, std::string* out) {
  return absl::WebSafeBase64Unescape(base::ToAbsl(s), out);
}

std::vector<FieldError> ToFieldErrors(const std::vector<StatusCause>& causes) {
  std::vector<FieldError> out;
  for (const StatusCause& c : causes) {
    out.push_back({c.reason.empty() ? "FieldValueInvalid" : c.reason, c.field, c.message});
  }
  return out;
}


std::string RenderAs(const Stored& s, const std::string& api_version) {
  auto it = s.obj.find("apiVersion");
  if (it != s.obj.end() && it->is_string() &&
      it->get_ref<const std::string&>() == api_version) {
    return s.text;
  }
  Json copy = s.obj;
  copy["apiVersion"] = api_version;
  return base::DumpJson(copy);
}


std::optional<ApiStatus> ParseSelectors(const HttpRequest& req, const ResourceInfo& info,
                                        bool custom, const std::vector<std::string>& selectable,
                                        Selectors* out) {
  auto ls = api::Selector::Parse(Param(req, "labelSelector"));
  if (!ls.ok()) return BadRequestStatus(base::FromAbsl(ls.status().message()));
  auto fs = api::FieldSelector::Parse(Param(req, "fieldSelector"));
  if (!fs.ok()) return BadRequestStatus(base::FromAbsl(fs.status().message()));
  for (const api::FieldRequirement& r : fs->requirements()) {
    if (!FieldSelectable(info, custom, selectable, r.field)) {
      return BadRequestStatus(StrCat("field label not supported: ", r.field));
    }
  }
  out->labels = *std::move(ls);
  out->fields = *std::move(fs);
  return std::nullopt;
}

bool StoredMatches(const Stored& s, const Selectors& sel) {
  if (!sel.labels.Matches(s.labels)) return false;
  if (!sel.fields.Empty() &&
      !sel.fields.Matches([&s](const std::string& f) { return FieldValue(s.obj, f); })) {
    return false;
  }
  return true;
}


std::optional<ApiStatus> CheckTypeMeta(Json* obj, const std::string& api_version,
                                       const std::string& kind) {
  auto a = obj->find("apiVersion");
  if (a == obj->end() || a->is_null() || (a->is_string() && a->get_ref<const std::string&>().empty())) {
    (*obj)["apiVersion"] = api_version;
  } else if (!a->is_string() || a->get_ref<const std::string&>() != api_version) {
    return BadRequestStatus(StrCat("the API version in the data (",
                                   a->is_string() ? a->get<std::string>() : base::DumpJson(*a),
                                   ") does not match the expected API version (", api_version,
                                   ")"));
  }
  auto k = obj->find("kind");
  if (k == obj->end() || k->is_null() || (k->is_string() && k->get_ref<const std::string&>().empty())) {
    (*obj)["kind"] = kind;
  } else if (!k->is_string() || k->get_ref<const std::string&>() != kind) {
    return BadRequestStatus(StrCat("the kind in the data (",
                                   k->is_string() ? k->get<std::string>() : base::DumpJson(*k),
                                   ") does not match the expected kind (", kind, ")"));
  }
  return std::nullopt;
}

std::optional<ApiStatus> ParseBodyObject(const std::string& body, Json* out) {
  auto parsed = base::ParseJson(body);
  if (!parsed.ok()) {
    return BadRequestStatus(StrCat("the object provided is unrecognized: ",
                                   base::FromAbsl(parsed.status().message())));
  }
  if (!parsed->is_object()) {
    return BadRequestStatus("the object provided is unrecognized: not a JSON object");
  }
  *out = *std::move(parsed);
  return std::nullopt;
}

bool IsCrdResource(const std::string& group, const std::string& plural) {
  return group == "apiextensions.k8s.io" && plural == "customresourcedefinitions";
}

std::string DryRun(const HttpRequest& req, const Json* options) {
  for (auto [it, end] = req.params.equal_range("dryRun"); it != end; ++it) {
    if (it->second == "All") return "All";
  }
  if (options && options->is_object()) {
    auto d = options->find("dryRun");
    if (d != options->end() && d->is_array()) {
      for (const Json& v : *d) {
        if (v == "All") return "All";
      }
    }
  }
  return "";
}

}  // namespace spiderpool::kube::testing::internal
