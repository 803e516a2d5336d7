#pragma once
// The shared layer of builtin_validation*.cc (internal to kube/testing): JSON access that never
// throws, field.Error's value rendering, field paths and errors, the name and value formats of
// k8s.io/apimachinery/pkg/util/validation and metav1 validation; then the entry point of each
// API group's rules, one file per group:
//   builtin_validation_core.cc       core/v1: pods and templates, nodes, namespaces, ...
//   builtin_validation_apps.cc       apps/v1 and batch/v1
//   builtin_validation_resource.cc   resource.k8s.io (v1; v1beta1 converted first)
//   builtin_validation_admission.cc  admissionregistration.k8s.io/v1
// builtin_validation.cc dispatches by group and resource (ValidateBuiltin).

#include <string>
#include <string_view>
#include <vector>


#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_join.h"
#include "api/labels.h"
#include "api/names.h"
#include "base/strings.h"
#include "kube/testing/core_util.h"
#include "base/json.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing::internal::builtin {

using base::Json;
using base::StrCat;
using Errs = std::vector<FieldError>;

inline const Json& EmptyObject() {
  static const Json* kEmpty = new Json(Json::object());
  return *kEmpty;
}

// ---- JSON access (never throws; null counts as absent) ----

inline const Json* At(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

inline const Json& ObjAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v != nullptr && v->is_object() ? *v : EmptyObject();
}

inline const Json* ArrAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v != nullptr && v->is_array() ? v : nullptr;
}

inline size_t ArrSize(const Json& j, std::string_view key) {
  const Json* v = ArrAt(j, key);
  return v == nullptr ? 0 : v->size();
}

inline std::string StrAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

inline bool Has(const Json& j, std::string_view key) { return At(j, key) != nullptr; }

inline std::optional<int64_t> IntOf(const Json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(u);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= -9.2e18 && d <= 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

inline std::optional<int64_t> IntAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v == nullptr ? std::nullopt : IntOf(*v);
}

inline std::optional<bool> BoolAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

// Semantic equality as apiequality.Semantic.DeepEqual sees decoded objects: absent, null and
// empty lists/maps are the same thing.
inline Json Normalized(const Json& j) {
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      Json v = Normalized(it.value());
      if (v.is_null()) continue;
      if ((v.is_array() || v.is_object()) && v.empty()) continue;
      out[it.key()] = std::move(v);
    }
    return out;
  }
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& e : j) out.push_back(Normalized(e));
    return out;
  }
  return j;
}

// For comparing a whole spec across an update: also Go's zero values ("", false, 0) count as
// absent, as they do for the non-pointer fields of the decoded object (a client that writes
// back `"hostNetwork": false` or `"restartPolicy": ""` has not changed the pod).
inline Json NormalizedSpec(const Json& j) {
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      const Json& v = it.value();
      if ((v.is_string() && v.get_ref<const std::string&>().empty()) ||
          (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v == 0)) {
        continue;
      }
      Json n = NormalizedSpec(v);
      if (n.is_null() || ((n.is_array() || n.is_object()) && n.empty())) continue;
      out[it.key()] = std::move(n);
    }
    return out;
  }
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& e : j) out.push_back(NormalizedSpec(e));
    return out;
  }
  return j;
}

inline bool SameValue(const Json* a, const Json* b) {
  Json na = a == nullptr ? Json() : Normalized(*a);
  Json nb = b == nullptr ? Json() : Normalized(*b);
  auto empty = [](const Json& v) {
    return v.is_null() || ((v.is_object() || v.is_array()) && v.empty());
  };
  if (empty(na) && empty(nb)) return true;
  return na == nb;
}

// ---- value rendering (field.Error's BadValue) ----

// encoding/json's output: keys sorted, HTML characters escaped.
inline std::string GoJson(const Json& v) {
  std::string dumped = base::DumpJson(v);
  std::string out;
  out.reserve(dumped.size());
  for (char c : dumped) {
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string Render(const Json* v) {
  if (v == nullptr || v->is_null()) return "null";
  if (v->is_string()) return Quote(v->get_ref<const std::string&>());
  if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
  if (v->is_number()) return base::DumpJson(*v);
  return GoJson(*v);
}

inline std::string RenderInt(int64_t v) { return std::to_string(v); }

// An internal (untagged) Go struct marshalled by encoding/json: Go field names, declaration
// order, no omitempty. `fields` maps the JSON name of the versioned object to the Go name;
// `strings` lists the string-typed ones (rendered "" when absent, others null).
inline std::string GoStruct(const Json& obj,
                     std::initializer_list<std::pair<std::string_view, std::string_view>> fields,
                     std::initializer_list<std::string_view> strings) {
  std::string out = "{";
  bool first = true;
  for (const auto& [json_name, go_name] : fields) {
    if (!first) out += ",";
    first = false;
    out += StrCat("\"", go_name, "\":");
    const Json* v = At(obj, json_name);
    if (v != nullptr) {
      out += GoJson(*v);
    } else if (std::find(strings.begin(), strings.end(), json_name) != strings.end()) {
      out += "\"\"";
    } else {
      out += "null";
    }
  }
  return out + "}";
}

// metav1.LabelSelector (json tags, omitempty): matchLabels then matchExpressions.
inline std::string RenderLabelSelector(const Json* sel) {
  if (sel == nullptr || !sel->is_object()) return Render(sel);
  std::string out = "{";
  const Json& ml = ObjAt(*sel, "matchLabels");
  if (!ml.empty()) out += StrCat("\"matchLabels\":", GoJson(ml));
  if (const Json* me = ArrAt(*sel, "matchExpressions"); me != nullptr && !me->empty()) {
    if (out.size() > 1) out += ",";
    out += "\"matchExpressions\":[";
    for (size_t i = 0; i < me->size(); ++i) {
      const Json& r = (*me)[i];
      if (i) out += ",";
      out += StrCat("{\"key\":", GoJson(Json(StrAt(r, "key"))),
                    ",\"operator\":", GoJson(Json(StrAt(r, "operator"))));
      if (ArrSize(r, "values") > 0) out += StrCat(",\"values\":", GoJson(*ArrAt(r, "values")));
      out += "}";
    }
    out += "]";
  }
  return out + "}";
}

// ---- paths and errors ----

inline std::string Child(std::string_view path, std::string_view name) {
  return path.empty() ? std::string(name) : StrCat(path, ".", name);
}
inline std::string Index(std::string_view path, size_t i) { return StrCat(path, "[", i, "]"); }
inline std::string KeyOf(std::string_view path, std::string_view key) {
  return StrCat(path, "[", key, "]");
}

inline FieldError FieldDuplicate(std::string_view field, std::string_view value_repr) {
  return {"FieldValueDuplicate", std::string(field), StrCat("Duplicate value: ", value_repr)};
}
inline FieldError FieldTooMany(std::string_view field, size_t actual, size_t max) {
  return {"FieldValueTooMany", std::string(field),
          StrCat("Too many: ", actual, ": must have at most ", max, " items")};
}

constexpr std::string_view kImmutable = "field is immutable";
constexpr std::string_view kNonNegative = "must be greater than or equal to 0";

// ---- name and value formats (k8s.io/apimachinery/pkg/util/validation) ----

// One field.Invalid per message of an api/names.h check, as the apiserver reports them.
inline void AddInvalid(const std::string& path, const std::string& v,
                       const std::vector<std::string>& msgs, Errs& errs) {
  for (const std::string& e : msgs) errs.push_back(FieldInvalid(path, Quote(v), e));
}
inline void CheckDnsLabel(const std::string& path, const std::string& v, Errs& errs) {
  AddInvalid(path, v, api::IsDns1123Label(v), errs);
}
inline void CheckDnsSubdomain(const std::string& path, const std::string& v, Errs& errs) {
  AddInvalid(path, v, api::IsDns1123Subdomain(v), errs);
}
inline void CheckQualifiedName(const std::string& path, const std::string& v, Errs& errs) {
  AddInvalid(path, v, api::IsQualifiedName(v), errs);
}
inline void CheckLabelValue(const std::string& path, const std::string& v, Errs& errs) {
  AddInvalid(path, v, api::IsValidLabelValue(v), errs);
}

// IsValidPortNum.
inline std::string PortNumError(int64_t port) {
  return port >= 1 && port <= 65535 ? "" : "must be between 1 and 65535, inclusive";
}

// IsValidPortName (IANA_SVC_NAME).
inline std::vector<std::string> PortNameErrors(std::string_view name) {
  std::vector<std::string> out;
  if (name.size() < 1 || name.size() > 15) out.push_back("must be no more than 15 characters");
  bool alnum_dash = true, letter = false;
  for (char c : name) {
    if (c >= 'a' && c <= 'z') {
      letter = true;
    } else if (!((c >= '0' && c <= '9') || c == '-')) {
      alnum_dash = false;
    }
  }
  if (!alnum_dash) {
    out.push_back("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  } else if (!letter) {
    out.push_back("must contain at least one letter (a-z)");
  }
  if (name.find("--") != std::string_view::npos) {
    out.push_back("must not contain consecutive hyphens");
  }
  if (!name.empty() && (name.front() == '-' || name.back() == '-')) {
    out.push_back("must not begin or end with a hyphen");
  }
  return out;
}

// IsConfigMapKey.
inline std::vector<std::string> ConfigKeyErrors(std::string_view key) {
  std::vector<std::string> out;
  if (key.size() > 253) out.push_back("must be no more than 253 characters");
  bool ok = !key.empty();
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      ok = false;
    }
  }
  if (!ok) {
    out.push_back(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')");
  }
  if (key == ".") {
    out.push_back("must not be '.'");
  } else if (key == "..") {
    out.push_back("must not be '..'");
  } else if (key.substr(0, 2) == "..") {
    out.push_back("must not start with '..'");
  }
  return out;
}

// validation.IsCIdentifier.
inline std::string CIdentifierError(std::string_view id) {
  bool ok = !id.empty() && (std::isalpha(static_cast<unsigned char>(id[0])) || id[0] == '_');
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) ok = false;
  }
  if (ok) return "";
  return "a valid C identifier must start with alphabetic character or '_', followed by a string "
         "of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex "
         "used for validation is '[A-Za-z_][A-Za-z0-9_]*')";
}

inline void NonNegative(const Json& obj, std::string_view key, const std::string& path, Errs& errs) {
  std::optional<int64_t> v = IntAt(obj, key);
  if (v && *v < 0) errs.push_back(FieldInvalid(path, RenderInt(*v), kNonNegative));
}

inline void NotSupportedIfSet(const Json& obj, std::string_view key, const std::string& path,
                       const std::vector<std::string>& supported, Errs& errs) {
  std::string v = StrAt(obj, key);
  if (v.empty()) return;
  if (std::find(supported.begin(), supported.end(), v) == supported.end()) {
    errs.push_back(FieldNotSupported(path, Quote(v), supported));
  }
}

// ---- metav1 validation ----

// ValidateLabels: keys and values, reported at the map's path.
inline void ValidateLabelMap(const Json* labels, const std::string& path, Errs& errs) {
  if (labels == nullptr || !labels->is_object()) return;
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    CheckQualifiedName(path, it.key(), errs);
    if (it.value().is_string()) CheckLabelValue(path, it.value().get<std::string>(), errs);
  }
}

// ValidateAnnotations (keys are qualified names, case-insensitively).
inline void ValidateAnnotationMap(const Json* annotations, const std::string& path, Errs& errs) {
  if (annotations == nullptr || !annotations->is_object()) return;
  for (auto it = annotations->begin(); it != annotations->end(); ++it) {
    std::string lower = it.key();
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    AddInvalid(path, it.key(), api::IsQualifiedName(lower), errs);
  }
}

inline void ValidateLabelSelector(const Json* sel, const std::string& path, Errs& errs) {
  if (sel == nullptr || !sel->is_object()) return;
  ValidateLabelMap(At(*sel, "matchLabels"), Child(path, "matchLabels"), errs);
  const Json* exprs = ArrAt(*sel, "matchExpressions");
  if (exprs == nullptr) return;
  for (size_t i = 0; i < exprs->size(); ++i) {
    const Json& r = (*exprs)[i];
    std::string p = Index(Child(path, "matchExpressions"), i);
    std::string op = StrAt(r, "operator");
    size_t nvalues = ArrSize(r, "values");
    if (op == "In" || op == "NotIn") {
      if (nvalues == 0) {
        errs.push_back(FieldRequired(Child(p, "values"),
                                     "must be specified when `operator` is 'In' or 'NotIn'"));
      }
    } else if (op == "Exists" || op == "DoesNotExist") {
      if (nvalues > 0) {
        errs.push_back(
            FieldForbidden(Child(p, "values"),
                           "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
      }
    } else {
      errs.push_back(
          FieldInvalid(Child(p, "operator"), Quote(op), "not a valid selector operator"));
    }
    CheckQualifiedName(Child(p, "key"), StrAt(r, "key"), errs);
    if (const Json* values = ArrAt(r, "values")) {
      for (size_t j = 0; j < values->size(); ++j) {
        if ((*values)[j].is_string()) {
          CheckLabelValue(Index(Child(p, "values"), j), (*values)[j].get<std::string>(), errs);
        }
      }
    }
  }
}

inline bool SelectorEmpty(const Json& sel) {
  return ObjAt(sel, "matchLabels").empty() && ArrSize(sel, "matchExpressions") == 0;
}

// ---- the entry points of the group files ----

// builtin_validation_core.cc
void ValidatePodTemplateSpec(const Json& tmpl, const std::string& path, Errs& errs);
void ValidatePod(const Json& obj, const Json* old, Errs& errs);
void ValidateNode(const Json& obj, const Json* old, Errs& errs);
void ValidateNamespace(const Json& obj, Errs& errs);
void ValidateConfigMap(const Json& obj, const Json* old, Errs& errs);
void ValidateSecret(const Json& obj, const Json* old, Errs& errs);
void ValidateService(const Json& obj, Errs& errs);
void ValidateEvent(const Json& obj, const Json* old, bool events_v1, Errs& errs);
void ValidateLease(const Json& obj, Errs& errs);
bool IsStandardFinalizer(std::string_view f);
// builtin_validation_apps.cc
void ValidateDeployment(const Json& obj, const Json* old, Errs& errs);
void ValidateReplicaSet(const Json& obj, const Json* old, Errs& errs);
void ValidateStatefulSet(const Json& obj, const Json* old, Errs& errs);
void ValidateDaemonSet(const Json& obj, const Json* old, Errs& errs);
void ValidateJobSpec(const Json& spec, const std::string& path, Errs& errs);
void ValidateCronJob(const Json& obj, Errs& errs);
// builtin_validation_resource.cc
Json ResourceV1Beta1ToV1(std::string_view plural, const Json& obj);
Errs ValidateBuiltinResource(std::string_view plural, const Json& obj, const Json* old, Errs errs);
void ValidateResourceSlice(const Json& obj, const Json* old, Errs& errs);
void ValidateResourceClaim(const Json& obj, const Json* old, Errs& errs);
void ValidateResourceClaimTemplate(const Json& obj, const Json* old, Errs& errs);
void ValidateDeviceClass(const Json& obj, Errs& errs);
// builtin_validation_admission.cc
void ValidateWebhookConfiguration(const Json& obj, bool mutating, Errs& errs);

}  // namespace spiderpool::kube::testing::internal::builtin
