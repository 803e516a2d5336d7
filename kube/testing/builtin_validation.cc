#include "kube/testing/builtin_validation.h"

// The rules below follow kube-apiserver's registry strategies and validation packages
// (pkg/apis/{core,apps,batch,coordination,resource,admissionregistration}/validation,
// k8s.io/apimachinery/pkg/apis/meta/v1/validation), including their field paths and messages.
//
// kube-apiserver validates the *defaulted* internal object. The loopback server does no
// defaulting, so a field that kube would default (restartPolicy, dnsPolicy, protocol, Service
// type, StatefulSet podManagementPolicy, ...) is only checked when it is set. Values in
// messages are rendered as field.Error does since Kubernetes 1.34: strings and numbers as Go's
// %q / %v, anything composite as JSON (null for an absent map or pointer).

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

#include "api/labels.h"
#include "base/strings.h"
#include "kube/testing/core_util.h"

namespace spiderpool::kube::testing::internal {
namespace {

using base::Json;
using base::StrCat;
using Errs = std::vector<FieldError>;

const Json& EmptyObject() {
  static const Json* kEmpty = new Json(Json::object());
  return *kEmpty;
}

// ---- JSON access (never throws; null counts as absent) ----

const Json* At(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

const Json& ObjAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v != nullptr && v->is_object() ? *v : EmptyObject();
}

const Json* ArrAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v != nullptr && v->is_array() ? v : nullptr;
}

size_t ArrSize(const Json& j, std::string_view key) {
  const Json* v = ArrAt(j, key);
  return v == nullptr ? 0 : v->size();
}

std::string StrAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

bool Has(const Json& j, std::string_view key) { return At(j, key) != nullptr; }

std::optional<int64_t> IntOf(const Json& v) {
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

std::optional<int64_t> IntAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  return v == nullptr ? std::nullopt : IntOf(*v);
}

std::optional<bool> BoolAt(const Json& j, std::string_view key) {
  const Json* v = At(j, key);
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

// Semantic equality as apiequality.Semantic.DeepEqual sees decoded objects: absent, null and
// empty lists/maps are the same thing.
Json Normalized(const Json& j) {
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
Json NormalizedSpec(const Json& j) {
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

bool SameValue(const Json* a, const Json* b) {
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
std::string GoJson(const Json& v) {
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

std::string Render(const Json* v) {
  if (v == nullptr || v->is_null()) return "null";
  if (v->is_string()) return Quote(v->get_ref<const std::string&>());
  if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
  if (v->is_number()) return base::DumpJson(*v);
  return GoJson(*v);
}

std::string RenderInt(int64_t v) { return std::to_string(v); }

// An internal (untagged) Go struct marshalled by encoding/json: Go field names, declaration
// order, no omitempty. `fields` maps the JSON name of the versioned object to the Go name;
// `strings` lists the string-typed ones (rendered "" when absent, others null).
std::string GoStruct(const Json& obj,
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
std::string RenderLabelSelector(const Json* sel) {
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

std::string Child(std::string_view path, std::string_view name) {
  return path.empty() ? std::string(name) : StrCat(path, ".", name);
}
std::string Index(std::string_view path, size_t i) { return StrCat(path, "[", i, "]"); }
std::string KeyOf(std::string_view path, std::string_view key) {
  return StrCat(path, "[", key, "]");
}

FieldError FieldDuplicate(std::string_view field, std::string_view value_repr) {
  return {"FieldValueDuplicate", std::string(field), StrCat("Duplicate value: ", value_repr)};
}
FieldError FieldTooMany(std::string_view field, size_t actual, size_t max) {
  return {"FieldValueTooMany", std::string(field),
          StrCat("Too many: ", actual, ": must have at most ", max, " items")};
}

constexpr std::string_view kImmutable = "field is immutable";
constexpr std::string_view kNonNegative = "must be greater than or equal to 0";

// ---- name and value formats (k8s.io/apimachinery/pkg/util/validation) ----

void CheckDnsLabel(const std::string& path, const std::string& v, Errs& errs) {
  std::string e = api::ValidateDns1123Label(v);
  if (!e.empty()) errs.push_back(FieldInvalid(path, Quote(v), e));
}

void CheckDnsSubdomain(const std::string& path, const std::string& v, Errs& errs) {
  std::string e = api::ValidateDns1123Subdomain(v);
  if (!e.empty()) errs.push_back(FieldInvalid(path, Quote(v), e));
}

std::string ValidateDns1035Label(std::string_view v) {
  if (v.size() > 63) return "must be no more than 63 characters";
  bool ok = !v.empty() && v.front() >= 'a' && v.front() <= 'z' &&
            ((v.back() >= 'a' && v.back() <= 'z') || (v.back() >= '0' && v.back() <= '9'));
  for (char c : v) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) ok = false;
  }
  if (ok) return "";
  return "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
         "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
         "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
}

// IsQualifiedName's messages (an empty name part also fails the pattern).
std::vector<std::string> QualifiedNameErrors(std::string_view v) {
  std::string e = api::ValidateLabelKey(v);
  if (e.empty()) return {};
  std::vector<std::string> out{e};
  if (e == "name part must be non-empty") out.push_back(api::ValidateLabelKey("-"));
  return out;
}

void CheckQualifiedName(const std::string& path, const std::string& v, Errs& errs) {
  for (std::string& e : QualifiedNameErrors(v)) errs.push_back(FieldInvalid(path, Quote(v), e));
}

void CheckLabelValue(const std::string& path, const std::string& v, Errs& errs) {
  std::string e = api::ValidateLabelValue(v);
  if (!e.empty()) errs.push_back(FieldInvalid(path, Quote(v), e));
}

// IsValidPortNum.
std::string PortNumError(int64_t port) {
  return port >= 1 && port <= 65535 ? "" : "must be between 1 and 65535, inclusive";
}

// IsValidPortName (IANA_SVC_NAME).
std::vector<std::string> PortNameErrors(std::string_view name) {
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
std::vector<std::string> ConfigKeyErrors(std::string_view key) {
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
std::string CIdentifierError(std::string_view id) {
  bool ok = !id.empty() && (std::isalpha(static_cast<unsigned char>(id[0])) || id[0] == '_');
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) ok = false;
  }
  if (ok) return "";
  return "a valid C identifier must start with alphabetic character or '_', followed by a string "
         "of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex "
         "used for validation is '[A-Za-z_][A-Za-z0-9_]*')";
}

void NonNegative(const Json& obj, std::string_view key, const std::string& path, Errs& errs) {
  std::optional<int64_t> v = IntAt(obj, key);
  if (v && *v < 0) errs.push_back(FieldInvalid(path, RenderInt(*v), kNonNegative));
}

void NotSupportedIfSet(const Json& obj, std::string_view key, const std::string& path,
                       const std::vector<std::string>& supported, Errs& errs) {
  std::string v = StrAt(obj, key);
  if (v.empty()) return;
  if (std::find(supported.begin(), supported.end(), v) == supported.end()) {
    errs.push_back(FieldNotSupported(path, Quote(v), supported));
  }
}

// ---- metav1 validation ----

// ValidateLabels: keys and values, reported at the map's path.
void ValidateLabelMap(const Json* labels, const std::string& path, Errs& errs) {
  if (labels == nullptr || !labels->is_object()) return;
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    CheckQualifiedName(path, it.key(), errs);
    if (it.value().is_string()) CheckLabelValue(path, it.value().get<std::string>(), errs);
  }
}

// ValidateAnnotations (keys are qualified names, case-insensitively).
void ValidateAnnotationMap(const Json* annotations, const std::string& path, Errs& errs) {
  if (annotations == nullptr || !annotations->is_object()) return;
  for (auto it = annotations->begin(); it != annotations->end(); ++it) {
    std::string lower = it.key();
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::string& e : QualifiedNameErrors(lower)) {
      errs.push_back(FieldInvalid(path, Quote(it.key()), e));
    }
  }
}

void ValidateLabelSelector(const Json* sel, const std::string& path, Errs& errs) {
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

bool SelectorEmpty(const Json& sel) {
  return ObjAt(sel, "matchLabels").empty() && ArrSize(sel, "matchExpressions") == 0;
}

// ---- core: pods and templates ----

const std::vector<std::string> kTaintEffects = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

void ValidateTolerations(const Json& spec, const std::string& path, Errs& errs) {
  const Json* tols = ArrAt(spec, "tolerations");
  if (tols == nullptr) return;
  for (size_t i = 0; i < tols->size(); ++i) {
    const Json& t = (*tols)[i];
    std::string p = Index(path, i);
    std::string key = StrAt(t, "key"), op = StrAt(t, "operator"), value = StrAt(t, "value");
    std::string effect = StrAt(t, "effect");
    if (!key.empty()) CheckQualifiedName(Child(p, "key"), key, errs);
    if (key.empty() && op != "Exists") {
      errs.push_back(FieldInvalid(
          Child(p, "operator"), Quote(op),
          "operator must be Exists when `key` is empty, which means \"match all values and all "
          "keys\""));
    }
    if (Has(t, "tolerationSeconds") && effect != "NoExecute") {
      errs.push_back(FieldInvalid(Child(p, "effect"), Quote(effect),
                                  "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (op.empty() || op == "Equal") {
      std::string e = api::ValidateLabelValue(value);
      if (!e.empty()) errs.push_back(FieldInvalid(Child(p, "operator"), Quote(value), e));
    } else if (op == "Exists") {
      if (!value.empty()) {
        errs.push_back(FieldInvalid(Child(p, "operator"),
                                    GoStruct(t,
                                             {{"key", "Key"},
                                              {"operator", "Operator"},
                                              {"value", "Value"},
                                              {"effect", "Effect"},
                                              {"tolerationSeconds", "TolerationSeconds"}},
                                             {"key", "operator", "value", "effect"}),
                                    "value must be empty when `operator` is 'Exists'"));
      }
    } else {
      errs.push_back(FieldNotSupported(Child(p, "operator"), Quote(op), {"Equal", "Exists"}));
    }
    if (!effect.empty() &&
        std::find(kTaintEffects.begin(), kTaintEffects.end(), effect) == kTaintEffects.end()) {
      errs.push_back(FieldNotSupported(Child(p, "effect"), Quote(effect), kTaintEffects));
    }
  }
}

// validateContainerCommon: what regular and init containers share.
void ValidateContainerCommon(const Json& c, const std::string& p, Errs& errs) {
  std::string name = StrAt(c, "name");
  if (name.empty()) {
    errs.push_back(FieldRequired(Child(p, "name"), ""));
  } else {
    CheckDnsLabel(Child(p, "name"), name, errs);
  }
  if (StrAt(c, "image").empty()) errs.push_back(FieldRequired(Child(p, "image"), ""));
  NotSupportedIfSet(c, "terminationMessagePolicy", Child(p, "terminationMessagePolicy"),
                    {"File", "FallbackToLogsOnError"}, errs);
  if (const Json* ports = ArrAt(c, "ports")) {
    std::set<std::string> names;
    for (size_t i = 0; i < ports->size(); ++i) {
      const Json& port = (*ports)[i];
      std::string pp = Index(Child(p, "ports"), i);
      std::string pname = StrAt(port, "name");
      if (!pname.empty()) {
        std::vector<std::string> msgs = PortNameErrors(pname);
        for (std::string& m : msgs)
          errs.push_back(FieldInvalid(Child(pp, "name"), Quote(pname), m));
        if (msgs.empty() && !names.insert(pname).second) {
          errs.push_back(FieldDuplicate(Child(pp, "name"), Quote(pname)));
        }
      }
      std::optional<int64_t> cp = IntAt(port, "containerPort");
      if (!cp || *cp == 0) {
        errs.push_back(FieldRequired(Child(pp, "containerPort"), ""));
      } else if (std::string e = PortNumError(*cp); !e.empty()) {
        errs.push_back(FieldInvalid(Child(pp, "containerPort"), RenderInt(*cp), e));
      }
      std::optional<int64_t> hp = IntAt(port, "hostPort");
      if (hp && *hp != 0) {
        if (std::string e = PortNumError(*hp); !e.empty()) {
          errs.push_back(FieldInvalid(Child(pp, "hostPort"), RenderInt(*hp), e));
        }
      }
      NotSupportedIfSet(port, "protocol", Child(pp, "protocol"), {"SCTP", "TCP", "UDP"}, errs);
    }
  }
  if (const Json* env = ArrAt(c, "env")) {
    for (size_t i = 0; i < env->size(); ++i) {
      if (StrAt((*env)[i], "name").empty()) {
        errs.push_back(FieldRequired(Child(Index(Child(p, "env"), i), "name"), ""));
      }
    }
  }
  NotSupportedIfSet(c, "imagePullPolicy", Child(p, "imagePullPolicy"),
                    {"Always", "IfNotPresent", "Never"}, errs);
}

void ValidatePodSpec(const Json& spec, const std::string& path, Errs& errs) {
  // volumes
  if (const Json* vols = ArrAt(spec, "volumes")) {
    std::set<std::string> names;
    for (size_t i = 0; i < vols->size(); ++i) {
      const Json& v = (*vols)[i];
      std::string p = Index(Child(path, "volumes"), i);
      Errs el;
      size_t sources = 0;
      if (v.is_object()) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (it.key() != "name" && !it.value().is_null()) ++sources;
        }
      }
      if (sources == 0) el.push_back(FieldRequired(p, "must specify a volume type"));
      std::string name = StrAt(v, "name");
      if (name.empty()) {
        el.push_back(FieldRequired(Child(p, "name"), ""));
      } else {
        CheckDnsLabel(Child(p, "name"), name, el);
      }
      if (names.count(name)) el.push_back(FieldDuplicate(Child(p, "name"), Quote(name)));
      if (el.empty()) names.insert(name);
      for (FieldError& e : el) errs.push_back(std::move(e));
    }
  }
  // containers
  std::set<std::string> names;
  const Json* containers = ArrAt(spec, "containers");
  std::string cpath = Child(path, "containers");
  if (containers == nullptr || containers->empty()) {
    errs.push_back(FieldRequired(cpath, ""));
  } else {
    for (size_t i = 0; i < containers->size(); ++i) {
      const Json& c = (*containers)[i];
      std::string p = Index(cpath, i);
      ValidateContainerCommon(c, p, errs);
      std::string name = StrAt(c, "name");
      if (!names.insert(name).second) errs.push_back(FieldDuplicate(Child(p, "name"), Quote(name)));
    }
  }
  if (const Json* inits = ArrAt(spec, "initContainers")) {
    for (size_t i = 0; i < inits->size(); ++i) {
      const Json& c = (*inits)[i];
      std::string p = Index(Child(path, "initContainers"), i);
      ValidateContainerCommon(c, p, errs);
      std::string name = StrAt(c, "name");
      if (names.count(name)) {
        errs.push_back(FieldDuplicate(Child(p, "name"), Quote(name)));
      } else if (!name.empty()) {
        names.insert(name);
      }
    }
  }
  NotSupportedIfSet(spec, "restartPolicy", Child(path, "restartPolicy"),
                    {"Always", "OnFailure", "Never"}, errs);
  NotSupportedIfSet(spec, "dnsPolicy", Child(path, "dnsPolicy"),
                    {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}, errs);
  ValidateLabelMap(At(spec, "nodeSelector"), Child(path, "nodeSelector"), errs);
  if (std::string sa = StrAt(spec, "serviceAccountName"); !sa.empty()) {
    CheckDnsSubdomain(Child(path, "serviceAccountName"), sa, errs);
  }
  if (std::string node = StrAt(spec, "nodeName"); !node.empty()) {
    CheckDnsSubdomain(Child(path, "nodeName"), node, errs);
  }
  if (std::optional<int64_t> ads = IntAt(spec, "activeDeadlineSeconds")) {
    if (*ads < 1 || *ads > std::numeric_limits<int32_t>::max()) {
      errs.push_back(FieldInvalid(Child(path, "activeDeadlineSeconds"), RenderInt(*ads),
                                  "must be between 1 and 2147483647, inclusive"));
    }
  }
  if (std::string h = StrAt(spec, "hostname"); !h.empty())
    CheckDnsLabel(Child(path, "hostname"), h, errs);
  if (std::string s = StrAt(spec, "subdomain"); !s.empty()) {
    CheckDnsLabel(Child(path, "subdomain"), s, errs);
  }
  ValidateTolerations(spec, Child(path, "tolerations"), errs);
}

// ValidatePodTemplateSpec (labels and annotations are reported at <path>.labels, as kube does).
void ValidatePodTemplateSpec(const Json& tmpl, const std::string& path, Errs& errs) {
  const Json& meta = ObjAt(tmpl, "metadata");
  ValidateLabelMap(At(meta, "labels"), Child(path, "labels"), errs);
  ValidateAnnotationMap(At(meta, "annotations"), Child(path, "annotations"), errs);
  const Json& spec = ObjAt(tmpl, "spec");
  ValidatePodSpec(spec, Child(path, "spec"), errs);
  if (ArrSize(spec, "ephemeralContainers") > 0) {
    errs.push_back(FieldForbidden(Child(path, "spec.ephemeralContainers"),
                                  "ephemeral containers not allowed in pod template"));
  }
}

void ImageWhitespace(const Json& spec, std::string_view list, const std::string& path, Errs& errs) {
  const Json* cs = ArrAt(spec, list);
  if (cs == nullptr) return;
  for (size_t i = 0; i < cs->size(); ++i) {
    std::string image = StrAt((*cs)[i], "image");
    size_t b = image.find_first_not_of(" \t\n\v\f\r");
    size_t e = image.find_last_not_of(" \t\n\v\f\r");
    bool trimmed = image.empty() || (b == 0 && e == image.size() - 1);
    if (!trimmed) {
      errs.push_back(FieldInvalid(Child(Index(Child(path, list), i), "image"), Quote(image),
                                  "must not have leading or trailing whitespace"));
    }
  }
}

constexpr std::string_view kPodUpdateForbidden =
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)";

void ValidatePod(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  ValidatePodSpec(spec, "spec", errs);
  ImageWhitespace(spec, "containers", "spec", errs);
  ImageWhitespace(spec, "initContainers", "spec", errs);
  if (old == nullptr) {
    if (ArrSize(spec, "ephemeralContainers") > 0) {
      errs.push_back(FieldForbidden("spec.ephemeralContainers", "cannot be set on create"));
    }
    if (!StrAt(spec, "nodeName").empty() && ArrSize(spec, "schedulingGates") > 0) {
      errs.push_back(FieldForbidden("spec.nodeName",
                                    "cannot be set until all schedulingGates have been cleared"));
    }
    return;
  }
  const Json& old_spec = ObjAt(*old, "spec");
  // ValidateContainerUpdates: the number of (init) containers is fixed.
  for (std::string_view list : {"containers", "initContainers"}) {
    if (ArrSize(spec, list) != ArrSize(old_spec, list)) {
      errs.push_back(
          FieldForbidden(Child("spec", list), "pod updates may not add or remove containers"));
      return;
    }
  }
  // activeDeadlineSeconds: set from nil, or lowered.
  std::optional<int64_t> ads = IntAt(spec, "activeDeadlineSeconds");
  std::optional<int64_t> old_ads = IntAt(old_spec, "activeDeadlineSeconds");
  if (ads) {
    if (*ads < 0 || *ads > std::numeric_limits<int32_t>::max()) {
      errs.push_back(FieldInvalid("spec.activeDeadlineSeconds", RenderInt(*ads),
                                  "must be between 0 and 2147483647, inclusive"));
      return;
    }
    if (old_ads && *old_ads < *ads) {
      errs.push_back(FieldInvalid("spec.activeDeadlineSeconds", RenderInt(*ads),
                                  "must be less than or equal to previous value"));
      return;
    }
  } else if (old_ads) {
    errs.push_back(FieldInvalid("spec.activeDeadlineSeconds", "null",
                                "must not update from a positive integer to nil value"));
  }
  // Tolerations: existing ones stay (tolerationSeconds may change), new ones may be added.
  if (const Json* old_tols = ArrAt(old_spec, "tolerations")) {
    const Json* tols = ArrAt(spec, "tolerations");
    for (const Json& ot : *old_tols) {
      bool found = false;
      Json want = NormalizedSpec(ot);
      if (want.is_object()) want.erase("tolerationSeconds");
      for (size_t i = 0; tols != nullptr && i < tols->size() && !found; ++i) {
        Json have = NormalizedSpec((*tols)[i]);
        if (have.is_object()) have.erase("tolerationSeconds");
        found = have == want;
      }
      if (!found) {
        errs.push_back(FieldForbidden("spec.tolerations",
                                      "existing toleration can not be modified except its "
                                      "tolerationSeconds"));
        break;
      }
    }
  }
  // Everything else in spec is immutable.
  Json munged = NormalizedSpec(spec);
  Json before = NormalizedSpec(old_spec);
  for (std::string_view list : {"containers", "initContainers"}) {
    const Json* olds = ArrAt(before, list);
    auto found = munged.find(std::string(list));
    if (olds == nullptr || found == munged.end() || !found->is_array()) continue;
    Json* news = &*found;
    for (size_t i = 0; i < news->size() && i < olds->size(); ++i) {
      if (!(*news)[i].is_object()) continue;
      if (const Json* img = At((*olds)[i], "image")) {
        (*news)[i]["image"] = *img;
      } else {
        (*news)[i].erase("image");
      }
    }
  }
  for (std::string_view k : {"activeDeadlineSeconds", "tolerations", "schedulingGates"}) {
    munged.erase(std::string(k));
    if (const Json* v = At(before, k)) munged[std::string(k)] = *v;
  }
  std::optional<int64_t> old_grace = IntAt(old_spec, "terminationGracePeriodSeconds");
  std::optional<int64_t> grace = IntAt(spec, "terminationGracePeriodSeconds");
  if (old_grace && *old_grace < 0 && grace && *grace == 1) {
    munged["terminationGracePeriodSeconds"] = *old_grace;
  }
  if (munged == before) return;
  // kube-apiserver appends a cmp.Diff of the internal PodSpec; this lists the changed fields.
  std::string diff = "  core.PodSpec{\n";
  std::set<std::string> keys;
  for (auto it = munged.begin(); it != munged.end(); ++it) keys.insert(it.key());
  for (auto it = before.begin(); it != before.end(); ++it) keys.insert(it.key());
  for (const std::string& k : keys) {
    const Json* a = At(before, k);
    const Json* b = At(munged, k);
    if (a != nullptr && b != nullptr && *a == *b) continue;
    if (a != nullptr) diff += StrCat("- \t", k, ": ", GoJson(*a), ",\n");
    if (b != nullptr) diff += StrCat("+ \t", k, ": ", GoJson(*b), ",\n");
  }
  diff += "  }\n";
  errs.push_back(FieldForbidden("spec", StrCat(kPodUpdateForbidden, "\n", diff)));
}

// ---- core: other kinds ----

void ValidateNode(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  if (const Json* taints = ArrAt(spec, "taints")) {
    std::map<std::string, std::set<std::string>> seen;  // effect -> keys
    for (size_t i = 0; i < taints->size(); ++i) {
      const Json& t = (*taints)[i];
      std::string p = Index("spec.taints", i);
      std::string key = StrAt(t, "key"), value = StrAt(t, "value"), effect = StrAt(t, "effect");
      CheckQualifiedName(Child(p, "key"), key, errs);
      if (std::string e = api::ValidateLabelValue(value); !e.empty()) {
        errs.push_back(FieldInvalid(Child(p, "value"), Quote(value), e));
      }
      if (effect.empty()) {
        errs.push_back(FieldRequired(Child(p, "effect"), ""));
      } else if (std::find(kTaintEffects.begin(), kTaintEffects.end(), effect) ==
                 kTaintEffects.end()) {
        errs.push_back(FieldNotSupported(Child(p, "effect"), Quote(effect), kTaintEffects));
      }
      if (!seen[effect].insert(key).second) {
        FieldError dup = FieldDuplicate(p, GoStruct(t,
                                                    {{"key", "Key"},
                                                     {"value", "Value"},
                                                     {"effect", "Effect"},
                                                     {"timeAdded", "TimeAdded"}},
                                                    {"key", "value", "effect"}));
        dup.body += ": taints must be unique by key and effect pair";
        errs.push_back(std::move(dup));
      }
    }
  }
  if (old == nullptr) return;
  const Json& old_spec = ObjAt(*old, "spec");
  if (ArrSize(old_spec, "podCIDRs") > 0 &&
      !SameValue(At(old_spec, "podCIDRs"), At(spec, "podCIDRs"))) {
    errs.push_back(FieldForbidden("spec.podCIDRs",
                                  "node updates may not change podCIDR except from \"\" to valid"));
  }
  std::string old_provider = StrAt(old_spec, "providerID");
  if (!old_provider.empty() && old_provider != StrAt(spec, "providerID")) {
    errs.push_back(FieldForbidden(
        "spec.providerID", "node updates may not change providerID except from \"\" to valid"));
  }
}

bool IsStandardFinalizer(std::string_view f) {
  return f == "kubernetes" || f == "orphan" || f == "foregroundDeletion";
}

void ValidateNamespace(const Json& obj, Errs& errs) {
  const Json* fins = ArrAt(ObjAt(obj, "spec"), "finalizers");
  if (fins == nullptr) return;
  for (const Json& f : *fins) {
    if (!f.is_string()) continue;
    std::string name = f.get<std::string>();
    CheckQualifiedName("spec.finalizers", name, errs);
    if (name.find('/') == std::string::npos && !IsStandardFinalizer(name)) {
      errs.push_back(FieldInvalid("spec.finalizers", Quote(name),
                                  "name is neither a standard finalizer name nor is it fully "
                                  "qualified"));
    }
  }
}

void ImmutableWhenSet(const Json& obj, const Json* old,
                      std::initializer_list<std::string_view> bags, Errs& errs) {
  if (old == nullptr || BoolAt(*old, "immutable") != std::optional<bool>(true)) return;
  if (BoolAt(obj, "immutable") != std::optional<bool>(true)) {
    errs.push_back(FieldForbidden("immutable", "field is immutable when `immutable` is set"));
  }
  for (std::string_view bag : bags) {
    if (!SameValue(At(obj, bag), At(*old, bag))) {
      errs.push_back(FieldForbidden(bag, "field is immutable when `immutable` is set"));
    }
  }
}

void ValidateConfigMap(const Json& obj, const Json* old, Errs& errs) {
  ImmutableWhenSet(obj, old, {"data", "binaryData"}, errs);
  const Json& data = ObjAt(obj, "data");
  const Json& binary = ObjAt(obj, "binaryData");
  for (auto it = data.begin(); it != data.end(); ++it) {
    for (std::string& e : ConfigKeyErrors(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("data", it.key()), Quote(it.key()), e));
    }
    if (binary.contains(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("data", it.key()), Quote(it.key()),
                                  "duplicate of key present in binaryData"));
    }
  }
  for (auto it = binary.begin(); it != binary.end(); ++it) {
    for (std::string& e : ConfigKeyErrors(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("binaryData", it.key()), Quote(it.key()), e));
    }
  }
}

void ValidateSecret(const Json& obj, const Json* old, Errs& errs) {
  std::string type = StrAt(obj, "type");
  if (old != nullptr) {  // ValidateSecretUpdate: these come before the secret's own rules
    std::string old_type = StrAt(*old, "type");
    if ((type.empty() ? "Opaque" : type) != (old_type.empty() ? "Opaque" : old_type)) {
      errs.push_back(FieldInvalid("type", Quote(type.empty() ? "Opaque" : type), kImmutable));
    }
    ImmutableWhenSet(obj, old, {"data"}, errs);
  }
  // stringData is merged into data by the v1 conversion before validation.
  Json data = ObjAt(obj, "data");
  const Json& string_data = ObjAt(obj, "stringData");
  for (auto it = string_data.begin(); it != string_data.end(); ++it) data[it.key()] = it.value();
  for (auto it = data.begin(); it != data.end(); ++it) {
    for (std::string& e : ConfigKeyErrors(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("data", it.key()), Quote(it.key()), e));
    }
  }
  auto require = [&](std::string_view key) {
    if (!data.contains(key)) errs.push_back(FieldRequired(KeyOf("data", key), ""));
  };
  if (type == "kubernetes.io/service-account-token") {
    if (StrAt(ObjAt(MetaOf(obj), "annotations"), "kubernetes.io/service-account.name").empty()) {
      errs.push_back(FieldRequired("metadata.annotations[kubernetes.io/service-account.name]", ""));
    }
  } else if (type == "kubernetes.io/dockercfg") {
    require(".dockercfg");
  } else if (type == "kubernetes.io/dockerconfigjson") {
    require(".dockerconfigjson");
  } else if (type == "kubernetes.io/basic-auth") {
    if (!data.contains("username") && !data.contains("password")) {
      require("username");
      require("password");
    }
  } else if (type == "kubernetes.io/ssh-auth") {
    const Json* key = At(data, "ssh-privatekey");
    if (key == nullptr || (key->is_string() && key->get_ref<const std::string&>().empty())) {
      errs.push_back(FieldRequired("data[ssh-privatekey]", ""));
    }
  } else if (type == "kubernetes.io/tls") {
    require("tls.crt");
    require("tls.key");
  }
}

void ValidateService(const Json& obj, Errs& errs) {
  std::string name = MetaOf(obj).is_object() ? StrAt(MetaOf(obj), "name") : "";
  if (!name.empty() && api::ValidateDns1123Subdomain(name).empty()) {
    if (std::string e = ValidateDns1035Label(name); !e.empty()) {
      errs.push_back(FieldInvalid("metadata.name", Quote(name), e));
    }
  }
  const Json& spec = ObjAt(obj, "spec");
  std::string type = StrAt(spec, "type");
  bool headless = StrAt(spec, "clusterIP") == "None";
  const Json* ports = ArrAt(spec, "ports");
  size_t nports = ports == nullptr ? 0 : ports->size();
  if (nports == 0 && !headless && type != "ExternalName") {
    errs.push_back(FieldRequired("spec.ports", ""));
  }
  if (type == "ExternalName") {
    std::string cname = StrAt(spec, "externalName");
    if (!cname.empty() && cname.back() == '.') cname.pop_back();
    if (cname.empty()) {
      errs.push_back(FieldRequired("spec.externalName", ""));
    } else {
      CheckDnsSubdomain("spec.externalName", cname, errs);
    }
  }
  std::set<std::string> names;
  for (size_t i = 0; i < nports; ++i) {
    const Json& port = (*ports)[i];
    std::string p = Index("spec.ports", i);
    std::string pname = StrAt(port, "name");
    if (nports > 1 && pname.empty()) {
      errs.push_back(FieldRequired(Child(p, "name"), ""));
    } else if (!pname.empty()) {
      CheckDnsLabel(Child(p, "name"), pname, errs);
      if (!names.insert(pname).second)
        errs.push_back(FieldDuplicate(Child(p, "name"), Quote(pname)));
    }
    int64_t num = IntAt(port, "port").value_or(0);
    if (std::string e = PortNumError(num); !e.empty()) {
      errs.push_back(FieldInvalid(Child(p, "port"), RenderInt(num), e));
    }
    NotSupportedIfSet(port, "protocol", Child(p, "protocol"), {"SCTP", "TCP", "UDP"}, errs);
    if (const Json* target = At(port, "targetPort")) {
      if (std::optional<int64_t> tp = IntOf(*target)) {
        if (std::string e = PortNumError(*tp); !e.empty()) {
          errs.push_back(FieldInvalid(Child(p, "targetPort"), RenderInt(*tp), e));
        }
      } else if (target->is_string()) {
        for (std::string& e : PortNameErrors(target->get<std::string>())) {
          errs.push_back(
              FieldInvalid(Child(p, "targetPort"), Quote(target->get<std::string>()), e));
        }
      }
    }
  }
  ValidateLabelMap(At(spec, "selector"), "spec.selector", errs);
  NotSupportedIfSet(spec, "sessionAffinity", "spec.sessionAffinity", {"ClientIP", "None"}, errs);
  NotSupportedIfSet(spec, "type", "spec.type",
                    {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}, errs);
}

void ValidateLease(const Json& obj, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  if (std::optional<int64_t> d = IntAt(spec, "leaseDurationSeconds"); d && *d <= 0) {
    errs.push_back(
        FieldInvalid("spec.leaseDurationSeconds", RenderInt(*d), "must be greater than 0"));
  }
  if (std::optional<int64_t> t = IntAt(spec, "leaseTransitions"); t && *t < 0) {
    errs.push_back(FieldInvalid("spec.leaseTransitions", RenderInt(*t), kNonNegative));
  }
  if (!StrAt(spec, "preferredHolder").empty() && StrAt(spec, "strategy").empty()) {
    errs.push_back(
        FieldForbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"));
  }
}

// The internal core.Event's fields and their names in the versioned JSON.
struct EventFields {
  const char* involved_object;  // regarding
  const char* message;          // note
  const char* reporting_controller;
  const char* source;           // deprecatedSource
  const char* first_timestamp;  // deprecatedFirstTimestamp
  const char* last_timestamp;   // deprecatedLastTimestamp
  const char* count;            // deprecatedCount
};
constexpr EventFields kCoreEvent = {"involvedObject", "message",        "reportingComponent",
                                    "source",         "firstTimestamp", "lastTimestamp",
                                    "count"};
constexpr EventFields kEventsV1 = {"regarding",
                                   "note",
                                   "reportingController",
                                   "deprecatedSource",
                                   "deprecatedFirstTimestamp",
                                   "deprecatedLastTimestamp",
                                   "deprecatedCount"};

bool TimeSet(const Json& obj, std::string_view key) {
  const Json* v = At(obj, key);
  return v != nullptr && !(v->is_string() && v->get_ref<const std::string&>().empty());
}

std::string RenderObjectReference(const Json& ref) {
  return GoStruct(
      ref,
      {{"kind", "Kind"},
       {"namespace", "Namespace"},
       {"name", "Name"},
       {"uid", "UID"},
       {"apiVersion", "APIVersion"},
       {"resourceVersion", "ResourceVersion"},
       {"fieldPath", "FieldPath"}},
      {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"});
}

// legacyValidateEvent + (events.k8s.io) ValidateEventCreate/ValidateEventUpdate.
void ValidateEvent(const Json& obj, const Json* old, bool events_v1, Errs& errs) {
  const EventFields& f = events_v1 ? kEventsV1 : kCoreEvent;
  std::string ns = StrAt(MetaOf(obj), "namespace");
  const Json& involved = ObjAt(obj, f.involved_object);
  std::string involved_ns = StrAt(involved, "namespace");
  std::string controller = StrAt(obj, f.reporting_controller);
  // The legacy rules name the field after the request's API: reportingComponent in core/v1.
  std::string controller_path = events_v1 ? "reportingController" : "reportingComponent";
  auto ns_mismatch = [&] {
    errs.push_back(FieldInvalid("involvedObject.namespace", Quote(involved_ns),
                                "does not match event.namespace"));
  };
  if (!TimeSet(obj, "eventTime")) {
    if (involved_ns.empty()) {
      if (!ns.empty() && ns != "default") ns_mismatch();
    } else if (ns != involved_ns) {
      ns_mismatch();
    }
  } else {
    if (involved_ns.empty() && ns != "default" && ns != "kube-system") ns_mismatch();
    if (controller.empty()) errs.push_back(FieldRequired(controller_path, ""));
    CheckQualifiedName(controller_path, controller, errs);
    std::string instance = StrAt(obj, "reportingInstance");
    if (instance.empty()) errs.push_back(FieldRequired("reportingInstance", ""));
    if (instance.size() > 128) {
      errs.push_back(FieldInvalid("reportingInstance", "\"\"", "can have at most 128 characters"));
    }
    std::string action = StrAt(obj, "action");
    if (action.empty()) errs.push_back(FieldRequired("action", ""));
    if (action.size() > 128)
      errs.push_back(FieldInvalid("action", "\"\"", "can have at most 128 characters"));
    std::string reason = StrAt(obj, "reason");
    if (reason.empty()) errs.push_back(FieldRequired("reason", ""));
    if (reason.size() > 128)
      errs.push_back(FieldInvalid("reason", "\"\"", "can have at most 128 characters"));
    if (StrAt(obj, f.message).size() > 1024) {
      errs.push_back(FieldInvalid("message", "\"\"", "can have at most 1024 characters"));
    }
  }
  if (std::string e = api::ValidateDns1123Subdomain(ns); !e.empty()) {
    errs.push_back(FieldInvalid("namespace", Quote(ns), e));
  }
  if (!events_v1) return;

  const Json& series = ObjAt(obj, "series");
  auto validate_series = [&] {
    if (!Has(obj, "series")) return;
    if (IntAt(series, "count").value_or(0) < 2) {
      errs.push_back(FieldInvalid("series.count", "\"\"", "should be at least 2"));
    }
    if (!TimeSet(series, "lastObservedTime")) {
      errs.push_back(FieldRequired("series.lastObservedTime", ""));
    }
  };
  if (old == nullptr) {
    validate_series();
    if (!TimeSet(obj, "eventTime")) errs.push_back(FieldRequired("eventTime", ""));
    std::string type = StrAt(obj, "type");
    if (type != "Normal" && type != "Warning") {
      errs.push_back(FieldInvalid("type", "\"\"", StrCat("has invalid value: ", type)));
    }
    if (TimeSet(obj, f.first_timestamp)) {
      errs.push_back(FieldInvalid("deprecatedFirstTimestamp", "\"\"", "needs to be unset"));
    }
    if (TimeSet(obj, f.last_timestamp)) {
      errs.push_back(FieldInvalid("deprecatedLastTimestamp", "\"\"", "needs to be unset"));
    }
    if (IntAt(obj, f.count).value_or(0) != 0) {
      errs.push_back(FieldInvalid("deprecatedCount", "\"\"", "needs to be unset"));
    }
    const Json& source = ObjAt(obj, f.source);
    if (!StrAt(source, "component").empty() || !StrAt(source, "host").empty()) {
      errs.push_back(FieldInvalid("deprecatedSource", "\"\"", "needs to be unset"));
    }
    return;
  }
  if (!SameValue(At(obj, "series"), At(*old, "series"))) validate_series();
  auto immutable = [&](const char* key, std::string_view path, const std::string& repr) {
    if (!SameValue(At(obj, key), At(*old, key)))
      errs.push_back(FieldInvalid(path, repr, kImmutable));
  };
  auto str_repr = [&](const char* key) { return Quote(StrAt(obj, key)); };
  immutable(f.involved_object, "involvedObject", RenderObjectReference(involved));
  immutable("reason", "reason", str_repr("reason"));
  immutable(f.message, "message", str_repr(f.message));
  immutable(f.source, "source",
            GoStruct(ObjAt(obj, f.source), {{"component", "Component"}, {"host", "Host"}},
                     {"component", "host"}));
  immutable(f.first_timestamp, "firstTimestamp", Render(At(obj, f.first_timestamp)));
  immutable(f.last_timestamp, "lastTimestamp", Render(At(obj, f.last_timestamp)));
  immutable(f.count, "count", RenderInt(IntAt(obj, f.count).value_or(0)));
  immutable("type", "type", str_repr("type"));
  immutable("eventTime", "eventTime", Render(At(obj, "eventTime")));
  immutable("action", "action", str_repr("action"));
  immutable("related", "related",
            Has(obj, "related") ? RenderObjectReference(ObjAt(obj, "related")) : "null");
  immutable(f.reporting_controller, "reportingController", Quote(controller));
  immutable("reportingInstance", "reportingInstance", str_repr("reportingInstance"));
}

// ---- apps / batch ----

// The selector/template part shared by Deployment and ReplicaSet
// (ValidatePodTemplateSpecForReplicaSet).
void ValidateReplicaSetLikeSpec(const Json& spec, std::string_view empty_msg, Errs& errs) {
  const Json* sel = At(spec, "selector");
  if (sel == nullptr) {
    errs.push_back(FieldRequired("spec.selector", ""));
  } else {
    ValidateLabelSelector(sel, "spec.selector", errs);
    if (SelectorEmpty(*sel)) {
      errs.push_back(FieldInvalid("spec.selector", RenderLabelSelector(sel), empty_msg));
    }
  }
  auto selector = api::Selector::FromJson(sel == nullptr ? Json() : *sel);
  if (!selector.ok()) {
    errs.push_back(
        FieldInvalid("spec.selector", RenderLabelSelector(sel), "invalid label selector"));
    return;
  }
  const Json& tmpl = ObjAt(spec, "template");
  const Json* labels = At(ObjAt(tmpl, "metadata"), "labels");
  if (!selector->Empty() && !selector->Matches(api::LabelsOf(tmpl))) {
    errs.push_back(FieldInvalid("spec.template.metadata.labels", Render(labels),
                                "`selector` does not match template `labels`"));
  }
  ValidatePodTemplateSpec(tmpl, "spec.template", errs);
  const Json& pod_spec = ObjAt(tmpl, "spec");
  std::string restart = StrAt(pod_spec, "restartPolicy");
  if (!restart.empty() && restart != "Always") {
    errs.push_back(
        FieldNotSupported("spec.template.spec.restartPolicy", Quote(restart), {"Always"}));
  }
  if (Has(pod_spec, "activeDeadlineSeconds")) {
    errs.push_back(FieldForbidden("spec.template.spec.activeDeadlineSeconds",
                                  "activeDeadlineSeconds in ReplicaSet is not Supported"));
  }
}

void SelectorImmutable(const Json& obj, const Json* old, Errs& errs) {
  if (old == nullptr) return;
  const Json* sel = At(ObjAt(obj, "spec"), "selector");
  if (!SameValue(sel, At(ObjAt(*old, "spec"), "selector"))) {
    errs.push_back(FieldInvalid("spec.selector", RenderLabelSelector(sel), kImmutable));
  }
}

void ValidateDeployment(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  NonNegative(spec, "replicas", "spec.replicas", errs);
  ValidateReplicaSetLikeSpec(spec, "empty selector is invalid for deployment", errs);
  const Json& strategy = ObjAt(spec, "strategy");
  std::string type = StrAt(strategy, "type");
  if (type == "Recreate") {
    if (Has(strategy, "rollingUpdate")) {
      errs.push_back(FieldForbidden("spec.strategy.rollingUpdate",
                                    "may not be specified when strategy `type` is 'Recreate'"));
    }
  } else if (!type.empty() && type != "RollingUpdate") {
    errs.push_back(FieldNotSupported(
        "spec.strategy",
        GoStruct(strategy, {{"type", "Type"}, {"rollingUpdate", "RollingUpdate"}}, {"type"}),
        {"Recreate", "RollingUpdate"}));
  }
  NonNegative(spec, "minReadySeconds", "spec.minReadySeconds", errs);
  if (std::optional<int64_t> r = IntAt(spec, "revisionHistoryLimit"); r && *r < 0) {
    errs.push_back(FieldInvalid("spec.revisionHistoryLimit", RenderInt(*r), kNonNegative));
  }
  if (std::optional<int64_t> pd = IntAt(spec, "progressDeadlineSeconds")) {
    if (*pd < 0)
      errs.push_back(FieldInvalid("spec.progressDeadlineSeconds", RenderInt(*pd), kNonNegative));
    if (*pd <= IntAt(spec, "minReadySeconds").value_or(0)) {
      errs.push_back(FieldInvalid("spec.progressDeadlineSeconds", RenderInt(*pd),
                                  "must be greater than minReadySeconds"));
    }
  }
  SelectorImmutable(obj, old, errs);
}

void ValidateReplicaSet(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  NonNegative(spec, "replicas", "spec.replicas", errs);
  NonNegative(spec, "minReadySeconds", "spec.minReadySeconds", errs);
  // kube's message says "deployment" here too.
  ValidateReplicaSetLikeSpec(spec, "empty selector is invalid for deployment", errs);
  SelectorImmutable(obj, old, errs);
}

void ValidateDaemonSet(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  const Json* sel = At(spec, "selector");
  ValidateLabelSelector(sel, "spec.selector", errs);
  auto selector = api::Selector::FromJson(sel == nullptr ? Json() : *sel);
  const Json& tmpl = ObjAt(spec, "template");
  if (selector.ok() && !selector->Matches(api::LabelsOf(tmpl))) {
    errs.push_back(FieldInvalid("spec.template.metadata.labels",
                                Render(At(ObjAt(tmpl, "metadata"), "labels")),
                                "`selector` does not match template `labels`"));
  }
  if (sel != nullptr && SelectorEmpty(*sel)) {
    errs.push_back(FieldInvalid("spec.selector", RenderLabelSelector(sel),
                                "empty selector is invalid for daemonset"));
  }
  ValidatePodTemplateSpec(tmpl, "spec.template", errs);
  const Json& pod_spec = ObjAt(tmpl, "spec");
  std::string restart = StrAt(pod_spec, "restartPolicy");
  if (!restart.empty() && restart != "Always") {
    errs.push_back(
        FieldNotSupported("spec.template.spec.restartPolicy", Quote(restart), {"Always"}));
  }
  if (std::optional<int64_t> ads = IntAt(pod_spec, "activeDeadlineSeconds")) {
    errs.push_back(FieldInvalid("spec.template.spec.activeDeadlineSeconds", RenderInt(*ads),
                                "activeDeadlineSeconds must be nil for daemons"));
  }
  NonNegative(spec, "minReadySeconds", "spec.minReadySeconds", errs);
  const Json& strategy = ObjAt(spec, "updateStrategy");
  std::string type = StrAt(strategy, "type");
  if (!type.empty() && type != "RollingUpdate" && type != "OnDelete") {
    errs.push_back(FieldNotSupported(
        "spec.updateStrategy",
        GoStruct(strategy, {{"type", "Type"}, {"rollingUpdate", "RollingUpdate"}}, {"type"}),
        {"RollingUpdate", "OnDelete"}));
  }
  if (std::optional<int64_t> r = IntAt(spec, "revisionHistoryLimit"); r && *r < 0) {
    errs.push_back(FieldInvalid("spec.revisionHistoryLimit", RenderInt(*r), kNonNegative));
  }
  SelectorImmutable(obj, old, errs);
}

void ValidateStatefulSet(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  if (old == nullptr) {
    // StatefulSet names are DNS labels (the pods are <name>-<ordinal>).
    std::string name = StrAt(MetaOf(obj), "name");
    if (!name.empty() && api::ValidateDns1123Subdomain(name).empty()) {
      CheckDnsLabel("metadata.name", name, errs);
    }
  }
  std::string pmp = StrAt(spec, "podManagementPolicy");
  if (!pmp.empty() && pmp != "OrderedReady" && pmp != "Parallel") {
    errs.push_back(FieldInvalid("spec.podManagementPolicy", Quote(pmp),
                                "must be 'OrderedReady' or 'Parallel'"));
  }
  const Json& strategy = ObjAt(spec, "updateStrategy");
  std::string type = StrAt(strategy, "type");
  if (type == "OnDelete") {
    if (Has(strategy, "rollingUpdate")) {
      errs.push_back(FieldInvalid(
          "spec.updateStrategy.rollingUpdate",
          GoStruct(ObjAt(strategy, "rollingUpdate"),
                   {{"partition", "Partition"}, {"maxUnavailable", "MaxUnavailable"}}, {}),
          "only allowed for updateStrategy 'RollingUpdate'"));
    }
  } else if (type.empty() || type == "RollingUpdate") {
    NonNegative(ObjAt(strategy, "rollingUpdate"), "partition",
                "spec.updateStrategy.rollingUpdate.partition", errs);
  } else {
    errs.push_back(FieldInvalid(
        "spec.updateStrategy",
        GoStruct(strategy, {{"type", "Type"}, {"rollingUpdate", "RollingUpdate"}}, {"type"}),
        "must be 'RollingUpdate' or 'OnDelete'"));
  }
  NonNegative(spec, "replicas", "spec.replicas", errs);
  NonNegative(spec, "minReadySeconds", "spec.minReadySeconds", errs);
  NonNegative(ObjAt(spec, "ordinals"), "start", "spec.ordinals.start", errs);
  // serviceName is optional (1.33+); when set it must be a DNS label (it becomes the pods'
  // subdomain). Stored values are not re-checked on update.
  if (std::string svc = StrAt(spec, "serviceName"); !svc.empty() && old == nullptr) {
    CheckDnsLabel("spec.serviceName", svc, errs);
  }
  const Json* sel = At(spec, "selector");
  if (sel == nullptr) {
    errs.push_back(FieldRequired("spec.selector", ""));
  } else {
    ValidateLabelSelector(sel, "spec.selector", errs);
    if (SelectorEmpty(*sel)) {
      errs.push_back(FieldInvalid("spec.selector", RenderLabelSelector(sel),
                                  "empty selector is invalid for statefulset"));
    }
  }
  auto selector = api::Selector::FromJson(sel == nullptr ? Json() : *sel);
  const Json& tmpl = ObjAt(spec, "template");
  if (!selector.ok()) {
    errs.push_back(FieldInvalid("spec.selector", RenderLabelSelector(sel), ""));
  } else {
    if (!selector->Empty() && !selector->Matches(api::LabelsOf(tmpl))) {
      errs.push_back(FieldInvalid("spec.template.metadata.labels",
                                  Render(At(ObjAt(tmpl, "metadata"), "labels")),
                                  "`selector` does not match template `labels`"));
    }
    ValidatePodTemplateSpec(tmpl, "spec.template", errs);
  }
  const Json& pod_spec = ObjAt(tmpl, "spec");
  std::string restart = StrAt(pod_spec, "restartPolicy");
  if (!restart.empty() && restart != "Always") {
    errs.push_back(
        FieldNotSupported("spec.template.spec.restartPolicy", Quote(restart), {"Always"}));
  }
  if (Has(pod_spec, "activeDeadlineSeconds")) {
    errs.push_back(FieldForbidden("spec.template.spec.activeDeadlineSeconds",
                                  "activeDeadlineSeconds in StatefulSet is not Supported"));
  }
  if (old == nullptr) return;
  Json a = NormalizedSpec(spec), b = NormalizedSpec(ObjAt(*old, "spec"));
  for (const char* k :
       {"replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy", "minReadySeconds"}) {
    a.erase(k);
    b.erase(k);
  }
  for (Json* s : {&a, &b}) {
    if (!s->contains("podManagementPolicy")) (*s)["podManagementPolicy"] = "OrderedReady";
  }
  if (a != b) {
    errs.push_back(FieldForbidden(
        "spec",
        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"));
  }
}

// validateJobSpec without the generated selector: kube-apiserver generates spec.selector and
// the controller-uid labels unless manualSelector is true, which this server does not model.
void ValidateJobSpec(const Json& spec, const std::string& path, Errs& errs) {
  for (const char* k : {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                        "ttlSecondsAfterFinished"}) {
    NonNegative(spec, k, Child(path, k), errs);
  }
  if (BoolAt(spec, "manualSelector") == std::optional<bool>(true)) {
    const Json* sel = At(spec, "selector");
    const Json& tmpl = ObjAt(spec, "template");
    if (sel == nullptr) {
      errs.push_back(FieldRequired(Child(path, "selector"), ""));
    } else {
      ValidateLabelSelector(sel, Child(path, "selector"), errs);
      auto selector = api::Selector::FromJson(*sel);
      if (selector.ok() && !selector->Matches(api::LabelsOf(tmpl))) {
        errs.push_back(FieldInvalid(Child(path, "template.metadata.labels"),
                                    Render(At(ObjAt(tmpl, "metadata"), "labels")),
                                    "`selector` does not match template `labels`"));
      }
    }
  }
  const Json& tmpl = ObjAt(spec, "template");
  ValidatePodTemplateSpec(tmpl, Child(path, "template"), errs);
  std::string restart = StrAt(ObjAt(tmpl, "spec"), "restartPolicy");
  if (restart != "OnFailure" && restart != "Never") {
    errs.push_back(FieldNotSupported(Child(path, "template.spec.restartPolicy"),
                                     Quote(restart.empty() ? "Always" : restart),
                                     {"OnFailure", "Never"}));
  }
}

void ValidateCronJob(const Json& obj, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  if (StrAt(spec, "schedule").empty()) errs.push_back(FieldRequired("spec.schedule", ""));
  NotSupportedIfSet(spec, "concurrencyPolicy", "spec.concurrencyPolicy",
                    {"Allow", "Forbid", "Replace"}, errs);
  ValidateJobSpec(ObjAt(ObjAt(spec, "jobTemplate"), "spec"), "spec.jobTemplate.spec", errs);
}

// ---- resource.k8s.io/v1 ----

// ValidateCSIDriverName (DRA driver names are CSI driver names).
void CheckDriverName(const std::string& path, const std::string& driver, Errs& errs) {
  if (driver.empty()) errs.push_back(FieldRequired(path, ""));
  if (driver.size() > 63) {
    errs.push_back({"FieldValueTooLong", path, "Too long: may not be more than 63 bytes"});
  }
  std::string lower = driver;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (std::string e = api::ValidateDns1123Subdomain(lower); !e.empty()) {
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

// ---- admissionregistration.k8s.io/v1 ----

// utilvalidation.IsFullyQualifiedName.
void CheckFullyQualifiedName(const std::string& path, const std::string& name, Errs& errs) {
  if (name.empty()) {
    errs.push_back(FieldRequired(path, ""));
    return;
  }
  if (std::string e = api::ValidateDns1123Subdomain(name); !e.empty()) {
    errs.push_back(FieldInvalid(path, Quote(name), e));
    return;
  }
  if (std::count(name.begin(), name.end(), '.') < 2) {
    errs.push_back(FieldInvalid(
        path, Quote(name), "should be a domain with at least three segments separated by dots"));
  }
}

void CheckWebhookUrl(const std::string& path, const std::string& url, Errs& errs) {
  constexpr std::string_view kForm = "; desired format: https://host[/path]";
  size_t colon = url.find(':');
  std::string scheme;
  bool has_scheme =
      colon != std::string::npos && colon > 0 && std::isalpha(static_cast<unsigned char>(url[0]));
  for (size_t i = 0; has_scheme && i < colon; ++i) {
    char c = url[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'))
      has_scheme = false;
  }
  std::string rest = url;
  if (has_scheme) {
    scheme = url.substr(0, colon);
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    rest = url.substr(colon + 1);
  }
  std::string fragment, query, authority;
  if (size_t h = rest.find('#'); h != std::string::npos) {
    fragment = rest.substr(h + 1);
    rest = rest.substr(0, h);
  }
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (rest.rfind("//", 0) == 0) {
    authority = rest.substr(
        2, rest.find('/', 2) == std::string::npos ? std::string::npos : rest.find('/', 2) - 2);
  }
  std::string user, host = authority;
  if (size_t at = authority.rfind('@'); at != std::string::npos) {
    user = authority.substr(0, at);
    host = authority.substr(at + 1);
  }
  if (scheme != "https")
    errs.push_back(
        FieldInvalid(path, Quote(scheme), StrCat("'https' is the only allowed URL scheme", kForm)));
  if (host.empty())
    errs.push_back(FieldInvalid(path, "\"\"", StrCat("host must be specified", kForm)));
  if (authority.find('@') != std::string::npos) {
    errs.push_back(FieldInvalid(path, Quote(user), "user information is not permitted in the URL"));
  }
  if (!fragment.empty())
    errs.push_back(FieldInvalid(path, Quote(fragment), "fragments are not permitted in the URL"));
  if (!query.empty())
    errs.push_back(
        FieldInvalid(path, Quote(query), "query parameters are not permitted in the URL"));
}

void CheckWebhookService(const std::string& path, const Json& svc, Errs& errs) {
  if (StrAt(svc, "name").empty())
    errs.push_back(FieldRequired(Child(path, "name"), "service name is required"));
  if (StrAt(svc, "namespace").empty()) {
    errs.push_back(FieldRequired(Child(path, "namespace"), "service namespace is required"));
  }
  int64_t port = IntAt(svc, "port").value_or(443);
  if (std::string e = PortNumError(port); !e.empty()) {
    errs.push_back(
        FieldInvalid(Child(path, "port"), RenderInt(port), StrCat("port is not valid: ", e)));
  }
  if (!Has(svc, "path")) return;
  std::string p = StrAt(svc, "path");
  if (p.empty() || p == "/") return;
  std::string pp = Child(path, "path");
  if (p == "//") {
    errs.push_back(FieldInvalid(pp, Quote(p), "segment[0] may not be empty"));
    return;
  }
  if (p[0] != '/') errs.push_back(FieldInvalid(pp, Quote(p), "must start with a '/'"));
  std::string check = p.substr(1);
  if (!check.empty() && check.back() == '/') check.pop_back();
  size_t start = 0;
  for (size_t i = 0;; ++i) {
    size_t slash = check.find('/', start);
    std::string step = check.substr(start, slash == std::string::npos ? slash : slash - start);
    if (step.empty()) {
      errs.push_back(FieldInvalid(pp, Quote(p), StrCat("segment[", i, "] may not be empty")));
    } else if (std::string e = api::ValidateDns1123Subdomain(step); !e.empty()) {
      errs.push_back(FieldInvalid(pp, Quote(p), StrCat("segment[", i, "]: ", e)));
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
}

void CheckRule(const Json& rule, const std::string& p, Errs& errs) {
  auto has_wildcard = [](const Json* list) {
    if (list == nullptr) return false;
    for (const Json& v : *list) {
      if (v.is_string() && v.get_ref<const std::string&>() == "*") return true;
    }
    return false;
  };
  const Json* ops = ArrAt(rule, "operations");
  if (ops == nullptr || ops->empty()) errs.push_back(FieldRequired(Child(p, "operations"), ""));
  if (ops != nullptr && ops->size() > 1 && has_wildcard(ops)) {
    errs.push_back(FieldInvalid(Child(p, "operations"), GoJson(*ops),
                                "if '*' is present, must not specify other operations"));
  }
  for (size_t i = 0; ops != nullptr && i < ops->size(); ++i) {
    std::string op = (*ops)[i].is_string() ? (*ops)[i].get<std::string>() : "";
    static const std::vector<std::string> kOps = {"*", "CONNECT", "CREATE", "DELETE", "UPDATE"};
    if (std::find(kOps.begin(), kOps.end(), op) == kOps.end()) {
      errs.push_back(FieldNotSupported(Index(Child(p, "operations"), i), Quote(op), kOps));
    }
  }
  const Json* groups = ArrAt(rule, "apiGroups");
  if (groups == nullptr || groups->empty())
    errs.push_back(FieldRequired(Child(p, "apiGroups"), ""));
  if (groups != nullptr && groups->size() > 1 && has_wildcard(groups)) {
    errs.push_back(FieldInvalid(Child(p, "apiGroups"), GoJson(*groups),
                                "if '*' is present, must not specify other API groups"));
  }
  const Json* versions = ArrAt(rule, "apiVersions");
  if (versions == nullptr || versions->empty())
    errs.push_back(FieldRequired(Child(p, "apiVersions"), ""));
  if (versions != nullptr && versions->size() > 1 && has_wildcard(versions)) {
    errs.push_back(FieldInvalid(Child(p, "apiVersions"), GoJson(*versions),
                                "if '*' is present, must not specify other API versions"));
  }
  for (size_t i = 0; versions != nullptr && i < versions->size(); ++i) {
    if (!(*versions)[i].is_string() || (*versions)[i].get_ref<const std::string&>().empty()) {
      errs.push_back(FieldRequired(Index(Child(p, "apiVersions"), i), ""));
    }
  }
  const Json* resources = ArrAt(rule, "resources");
  std::string rp = Child(p, "resources");
  if (resources == nullptr || resources->empty()) errs.push_back(FieldRequired(rp, ""));
  bool double_wild = false, single_wild = false, plain = false;
  std::set<std::string> res_with_wild_sub, sub_with_wild_res;
  for (size_t i = 0; resources != nullptr && i < resources->size(); ++i) {
    std::string r = (*resources)[i].is_string() ? (*resources)[i].get<std::string>() : "";
    if (r.empty()) {
      errs.push_back(FieldRequired(Index(rp, i), ""));
      continue;
    }
    if (r == "*/*") double_wild = true;
    if (r == "*") single_wild = true;
    size_t slash = r.find('/');
    if (slash == std::string::npos) {
      plain = r != "*";
      continue;
    }
    std::string res = r.substr(0, slash), sub = r.substr(slash + 1);
    if (res_with_wild_sub.count(res)) {
      errs.push_back(FieldInvalid(Index(rp, i), Quote(r),
                                  StrCat("if '", res, "/*' is present, must not specify ", r)));
    }
    if (sub_with_wild_res.count(sub)) {
      errs.push_back(FieldInvalid(Index(rp, i), Quote(r),
                                  StrCat("if '*/", sub, "' is present, must not specify ", r)));
    }
    if (sub == "*") res_with_wild_sub.insert(res);
    if (res == "*") sub_with_wild_res.insert(sub);
  }
  if (resources != nullptr && resources->size() > 1 && double_wild) {
    errs.push_back(FieldInvalid(rp, GoJson(*resources),
                                "if '*/*' is present, must not specify other resources"));
  }
  if (single_wild && plain) {
    errs.push_back(
        FieldInvalid(rp, GoJson(*resources),
                     "if '*' is present, must not specify other resources without subresources"));
  }
  NotSupportedIfSet(rule, "scope", Child(p, "scope"), {"*", "Cluster", "Namespaced"}, errs);
}

void ValidateWebhookConfiguration(const Json& obj, bool mutating, Errs& errs) {
  const Json* hooks = ArrAt(obj, "webhooks");
  if (hooks == nullptr) return;
  std::set<std::string> names;
  for (size_t i = 0; i < hooks->size(); ++i) {
    const Json& h = (*hooks)[i];
    std::string p = Index("webhooks", i);
    std::string name = StrAt(h, "name");
    CheckFullyQualifiedName(Child(p, "name"), name, errs);
    if (const Json* rules = ArrAt(h, "rules")) {
      for (size_t j = 0; j < rules->size(); ++j)
        CheckRule((*rules)[j], Index(Child(p, "rules"), j), errs);
    }
    NotSupportedIfSet(h, "failurePolicy", Child(p, "failurePolicy"), {"Fail", "Ignore"}, errs);
    NotSupportedIfSet(h, "matchPolicy", Child(p, "matchPolicy"), {"Equivalent", "Exact"}, errs);
    if (!Has(h, "sideEffects")) {
      errs.push_back(
          FieldRequired(Child(p, "sideEffects"), "must specify one of None, NoneOnDryRun"));
    } else {
      NotSupportedIfSet(h, "sideEffects", Child(p, "sideEffects"), {"None", "NoneOnDryRun"}, errs);
    }
    if (std::optional<int64_t> t = IntAt(h, "timeoutSeconds"); t && (*t > 30 || *t < 1)) {
      errs.push_back(FieldInvalid(Child(p, "timeoutSeconds"), RenderInt(*t),
                                  "the timeout value must be between 1 and 30 seconds"));
    }
    ValidateLabelSelector(At(h, "namespaceSelector"), Child(p, "namespaceSelector"), errs);
    ValidateLabelSelector(At(h, "objectSelector"), Child(p, "objectSelector"), errs);
    const Json& cc = ObjAt(h, "clientConfig");
    bool has_url = Has(cc, "url"), has_service = Has(cc, "service");
    if (has_url == has_service) {
      errs.push_back(
          FieldRequired(Child(p, "clientConfig"), "exactly one of url or service is required"));
    } else if (has_url) {
      CheckWebhookUrl(Child(p, "clientConfig.url"), StrAt(cc, "url"), errs);
    } else {
      CheckWebhookService(Child(p, "clientConfig.service"), ObjAt(cc, "service"), errs);
    }
    if (mutating) {
      NotSupportedIfSet(h, "reinvocationPolicy", Child(p, "reinvocationPolicy"),
                        {"IfNeeded", "Never"}, errs);
    }
    // validateAdmissionReviewVersions
    std::string vp = Child(p, "admissionReviewVersions");
    const Json* versions = ArrAt(h, "admissionReviewVersions");
    if (versions == nullptr || versions->empty()) {
      errs.push_back(FieldRequired(vp, "must specify one of v1, v1beta1"));
    } else {
      std::set<std::string> seen;
      bool accepted = false;
      for (size_t j = 0; j < versions->size(); ++j) {
        std::string v = (*versions)[j].is_string() ? (*versions)[j].get<std::string>() : "";
        if (!seen.insert(v).second) {
          errs.push_back(FieldInvalid(Index(vp, j), Quote(v), "duplicate version"));
          continue;
        }
        if (std::string e = ValidateDns1035Label(v); !e.empty()) {
          errs.push_back(FieldInvalid(Index(vp, j), Quote(v), e));
        }
        if (v == "v1" || v == "v1beta1") accepted = true;
      }
      if (!accepted)
        errs.push_back(
            FieldInvalid(vp, GoJson(*versions), "must include at least one of v1, v1beta1"));
    }
    if (!name.empty() && !names.insert(name).second) {
      errs.push_back(FieldDuplicate(Child(p, "name"), Quote(name)));
    }
  }
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

// ---- every built-in kind ----

// pkg/apis/core/validation.ValidateObjectMeta's extra finalizer rule.
void ValidateKubeFinalizers(const Json& obj, Errs& errs) {
  const Json* fins = ArrAt(MetaOf(obj), "finalizers");
  if (fins == nullptr) return;
  for (size_t i = 0; i < fins->size(); ++i) {
    if (!(*fins)[i].is_string()) continue;
    std::string f = (*fins)[i].get<std::string>();
    if (f.find('/') == std::string::npos && !IsStandardFinalizer(f)) {
      errs.push_back(FieldInvalid(Index("metadata.finalizers", i), Quote(f),
                                  "name is neither a standard finalizer name nor is it fully "
                                  "qualified"));
    }
  }
}

}  // namespace

std::vector<FieldError> ValidateBuiltin(std::string_view group, std::string_view plural,
                                        const base::Json& obj, const base::Json* old) {
  Errs errs;
  if (!obj.is_object()) return errs;
  // CRDs and webhook configurations use apimachinery's ObjectMeta validation, without kube's
  // finalizer rule (the apiserver itself sets customresourcecleanup.apiextensions.k8s.io).
  if (group != "apiextensions.k8s.io" && group != "admissionregistration.k8s.io") {
    ValidateKubeFinalizers(obj, errs);
  }
  if (group.empty()) {
    if (plural == "pods") {
      ValidatePod(obj, old, errs);
    } else if (plural == "nodes") {
      ValidateNode(obj, old, errs);
    } else if (plural == "namespaces") {
      ValidateNamespace(obj, errs);
    } else if (plural == "configmaps") {
      ValidateConfigMap(obj, old, errs);
    } else if (plural == "secrets") {
      ValidateSecret(obj, old, errs);
    } else if (plural == "services") {
      ValidateService(obj, errs);
    } else if (plural == "events") {
      ValidateEvent(obj, old, /*events_v1=*/false, errs);
    }
  } else if (group == "events.k8s.io") {
    if (plural == "events") ValidateEvent(obj, old, /*events_v1=*/true, errs);
  } else if (group == "coordination.k8s.io") {
    if (plural == "leases") ValidateLease(obj, errs);
  } else if (group == "apps") {
    if (plural == "deployments") {
      ValidateDeployment(obj, old, errs);
    } else if (plural == "replicasets") {
      ValidateReplicaSet(obj, old, errs);
    } else if (plural == "statefulsets") {
      ValidateStatefulSet(obj, old, errs);
    } else if (plural == "daemonsets") {
      ValidateDaemonSet(obj, old, errs);
    }
  } else if (group == "batch") {
    if (plural == "jobs") {
      ValidateJobSpec(ObjAt(obj, "spec"), "spec", errs);
    } else if (plural == "cronjobs") {
      ValidateCronJob(obj, errs);
    }
  } else if (group == "resource.k8s.io") {
    if (StrAt(obj, "apiVersion") == "resource.k8s.io/v1beta1") {
      Json converted = ResourceV1Beta1ToV1(plural, obj);
      Json old_converted = old == nullptr ? Json() : ResourceV1Beta1ToV1(plural, *old);
      return ValidateBuiltinResource(plural, converted, old == nullptr ? nullptr : &old_converted,
                                     std::move(errs));
    }
    return ValidateBuiltinResource(plural, obj, old, std::move(errs));
  } else if (group == "admissionregistration.k8s.io") {
    if (plural == "validatingwebhookconfigurations") {
      ValidateWebhookConfiguration(obj, /*mutating=*/false, errs);
    } else if (plural == "mutatingwebhookconfigurations") {
      ValidateWebhookConfiguration(obj, /*mutating=*/true, errs);
    }
  }
  return errs;
}

}  // namespace spiderpool::kube::testing::internal
