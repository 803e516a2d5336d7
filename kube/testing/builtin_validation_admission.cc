// Built-in validation, admissionregistration.k8s.io/v1 webhook configurations (see builtin_validation_internal.h and the rules' sources in
// builtin_validation.cc). Moved unchanged from builtin_validation.cc.
#include "kube/testing/builtin_validation_internal.h"

namespace spiderpool::kube::testing::internal::builtin {

// ---- admissionregistration.k8s.io/v1 ----

// utilvalidation.IsFullyQualifiedName.
void CheckFullyQualifiedName(const std::string& path, const std::string& name, Errs& errs) {
  if (name.empty()) {
    errs.push_back(FieldRequired(path, ""));
    return;
  }
  if (std::vector<std::string> e = api::IsDns1123Subdomain(name); !e.empty()) {
    errs.push_back(FieldInvalid(path, Quote(name), absl::StrJoin(e, ",")));
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
    } else if (std::vector<std::string> e = api::IsDns1123Subdomain(step); !e.empty()) {
      errs.push_back(
          FieldInvalid(pp, Quote(p), StrCat("segment[", i, "]: ", absl::StrJoin(e, ","))));
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
        AddInvalid(Index(vp, j), v, api::IsDns1035Label(v), errs);
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

}  // namespace spiderpool::kube::testing::internal::builtin
