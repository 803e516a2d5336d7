#include "kube/testing/webhook_admission.h"


#include <algorithm>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/escaping.h"
#include "api/admissionregistration.h"
#include "api/codec.h"
#include "api/labels.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing {

using base::Json;
using base::StrCat;

namespace {

constexpr int kDefaultTimeoutSeconds = 10;
constexpr int kMaxTimeoutSeconds = 30;

std::string Str(const Json& j, std::string_view key) {
  if (!j.is_object()) return "";
  auto it = j.find(std::string(key));
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const Json& Field(const Json& j, std::string_view key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(std::string(key));
  return it == j.end() ? kNull : *it;
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string NewUuid() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  uint64_t a, b;
  {
    std::lock_guard<std::mutex> l(mu);
    a = rng();
    b = rng();
  }
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xffff),
                static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

// "host:port" / "[v6]:port" -> host, port.
bool SplitHostPort(std::string_view hp, std::string* host, int* port) {
  size_t colon = hp.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= hp.size()) return false;
  std::string_view h = hp.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) return false;
  int p = 0;
  for (char c : hp.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    p = p * 10 + (c - '0');
    if (p > 65535) return false;
  }
  *host = std::string(h);
  *port = p;
  return true;
}

}  // namespace

// ---- matching ----------------------------------------------------------------------------

std::string AdmissionNamespace(const AdmissionAttributes& attrs) {
  if (attrs.resource.group.empty() && attrs.resource.plural == "namespaces") {
    return attrs.operation == AdmissionOperation::kCreate ? "" : attrs.name;
  }
  return attrs.namespace_name;
}

bool IsExemptAdmissionConfigurationResource(const ResourceInfo& resource) {
  if (resource.group != "admissionregistration.k8s.io") return false;
  const std::string& k = resource.kind;
  return k == "ValidatingWebhookConfiguration" || k == "MutatingWebhookConfiguration" ||
         k == "ValidatingAdmissionPolicy" || k == "ValidatingAdmissionPolicyBinding" ||
         k == "MutatingAdmissionPolicy" || k == "MutatingAdmissionPolicyBinding";
}

bool WebhookRuleMatches(const api::RuleWithOperations& rule, const AdmissionAttributes& attrs) {
  const bool is_namespace = attrs.resource.group.empty() && attrs.resource.plural == "namespaces";
  const std::string ns = AdmissionNamespace(attrs);
  const std::string scope = rule.scope.value_or("");
  if (scope == "Namespaced") {
    if (is_namespace || ns.empty()) return false;
  } else if (scope == "Cluster") {
    if (!is_namespace && !ns.empty()) return false;
  } else if (!scope.empty() && scope != "*") {
    return false;
  }
  auto any_of = [](const std::vector<std::string>& v, std::string_view want) {
    return Contains(v, "*") || Contains(v, want);
  };
  if (!any_of(rule.operations, AdmissionOperationName(attrs.operation))) return false;
  if (!any_of(rule.api_groups, attrs.resource.group)) return false;
  if (!any_of(rule.api_versions, attrs.resource.version)) return false;
  for (const std::string& r : rule.resources) {
    size_t slash = r.find('/');
    std::string res = r.substr(0, slash);
    std::string sub = slash == std::string::npos ? "" : r.substr(slash + 1);
    if ((res == "*" || res == attrs.resource.plural) && (sub == "*" || sub == attrs.subresource)) {
      return true;
    }
  }
  return false;
}

base::Json BuildAdmissionReview(const AdmissionAttributes& attrs, const Json& object,
                                std::string_view uid, std::string_view version) {
  const ResourceInfo& r = attrs.resource;
  Json gvk = {{"group", r.group}, {"version", r.version}, {"kind", r.kind}};
  Json gvr = {{"group", r.group}, {"version", r.version}, {"resource", r.plural}};
  Json user = {{"username", attrs.user.username}};
  if (!attrs.user.uid.empty()) user["uid"] = attrs.user.uid;
  if (!attrs.user.groups.empty()) user["groups"] = attrs.user.groups;
  Json options = attrs.options;
  if (options.is_object() && Str(options, "kind") == "PatchOptions") {
    // kube-apiserver admits a PATCH as an UPDATE with the patch options as UpdateOptions.
    options["kind"] = "UpdateOptions";
  }
  Json req = {{"uid", uid},
              {"kind", gvk},
              {"resource", gvr},
              {"requestKind", gvk},
              {"requestResource", gvr},
              {"operation", AdmissionOperationName(attrs.operation)},
              {"userInfo", user},
              {"object", object},
              {"oldObject", attrs.old_object},
              {"dryRun", attrs.dry_run},
              {"options", options}};
  if (!attrs.subresource.empty()) {
    req["subResource"] = attrs.subresource;
    req["requestSubResource"] = attrs.subresource;
  }
  if (!attrs.name.empty()) req["name"] = attrs.name;
  std::string ns = AdmissionNamespace(attrs);
  if (!ns.empty()) req["namespace"] = ns;
  return {{"kind", "AdmissionReview"},
          {"apiVersion", StrCat("admission.k8s.io/", version)},
          {"request", std::move(req)}};
}

ApiStatus WebhookDeniedStatus(std::string_view webhook_name, const Json& status) {
  ApiStatus s;
  int64_t code = 0;
  const Json& c = Field(status, "code");
  if (c.is_number_integer()) code = c.get<int64_t>();
  // Rejections are never < 400 (kube-apiserver forces 400). Codes above 599 are not valid
  // HTTP statuses for our HTTP stack: they become 500.
  s.code = code < 400 ? 400 : code > 599 ? 500 : static_cast<int>(code);
  s.reason = Str(status, "reason");
  std::string denied = StrCat("admission webhook ", Quote(webhook_name), " denied the request");
  std::string message = Str(status, "message");
  if (!message.empty()) {
    s.message = StrCat(denied, ": ", message);
  } else if (!s.reason.empty()) {
    s.message = StrCat(denied, ": ", s.reason);
  } else {
    s.message = StrCat(denied, " without explanation");
  }
  const Json& d = Field(status, "details");
  if (d.is_object()) {
    s.name = Str(d, "name");
    s.group = Str(d, "group");
    s.kind = Str(d, "kind");
    const Json& ra = Field(d, "retryAfterSeconds");
    if (ra.is_number_integer() && ra.get<int64_t>() > 0 && ra.get<int64_t>() < INT_MAX) {
      s.retry_after_seconds = static_cast<int>(ra.get<int64_t>());
    }
    const Json& causes = Field(d, "causes");
    if (causes.is_array()) {
      for (const Json& cause : causes) {
        s.causes.push_back({Str(cause, "reason"), Str(cause, "message"), Str(cause, "field")});
      }
    }
  }
  return s;
}

// ---- service resolution ----------------------------------------------------------------------

ServiceResolver ClusterServiceResolver(ObjectLister lister) {
  return [lister = std::move(lister)](std::string_view ns, std::string_view name,
                                      int port) -> absl::StatusOr<std::string> {
    Json svc;
    for (Json& s : lister("", "v1", "services", ns)) {
      if (Str(Field(s, "metadata"), "name") == name) {
        svc = std::move(s);
        break;
      }
    }
    if (svc.is_null()) return absl::NotFoundError(StrCat("service ", Quote(name), " not found"));
    std::string dial = Str(Field(Field(svc, "metadata"), "annotations"),
                           kServiceDialAddressAnnotation);
    if (!dial.empty()) {
      std::string h;
      int p = 0;
      if (!SplitHostPort(dial, &h, &p)) {
        return absl::InvalidArgumentError(
            StrCat("invalid ", kServiceDialAddressAnnotation, " annotation ", Quote(dial)));
      }
      return JoinHostPort(h, p);
    }
    const Json& spec = Field(svc, "spec");
    std::string type = Str(spec, "type");
    if (type == "ExternalName") return JoinHostPort(Str(spec, "externalName"), port);
    if (!type.empty() && type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer") {
      return absl::InvalidArgumentError(StrCat("unsupported service type ", Quote(type)));
    }
    std::string cluster_ip = Str(spec, "clusterIP");
    if (cluster_ip == "None") {
      return absl::InvalidArgumentError("cannot route to service with ClusterIP \"None\"");
    }
    bool has_port = false;
    const Json& ports = Field(spec, "ports");
    if (ports.is_array()) {
      for (const Json& p : ports) {
        const Json& pv = Field(p, "port");
        if (pv.is_number_integer() && pv.get<int64_t>() == port) has_port = true;
      }
    }
    if (!has_port) {
      return absl::NotFoundError(
          StrCat("no service port ", port, " found for service ", Quote(name)));
    }
    if (cluster_ip.empty()) {
      return absl::UnavailableError(StrCat("service ", ns, "/", name,
                                           " has no clusterIP (set the ",
                                           kServiceDialAddressAnnotation, " annotation)"));
    }
    return JoinHostPort(cluster_ip, port);
  };
}

// ---- the plugin ------------------------------------------------------------------------------

namespace {

// One webhook of a configuration; the fields mutating and validating webhooks share are all
// the plugin reads (reinvocationPolicy is ignored).
struct Hook {
  std::string configuration;
  api::WebhookCommon spec;
};

// The configurations of one kind, sorted by name, their webhooks in order. Stored
// configurations were validated on write, so they decode; one that does not is skipped.
template <typename Configuration>
std::vector<Hook> LoadHooksOf(const ObjectLister& lister) {
  const api::ResourceInfo& r = Configuration::Resource();
  std::vector<Configuration> configs;
  for (const Json& j : lister(r.group, r.version, r.plural, "")) {
    absl::StatusOr<Configuration> c = api::Decode<Configuration>(j);
    if (!c.ok()) {
      SP_LOG(Warning).Msg("Skipping an undecodable webhook configuration").KV("err", c.status());
      continue;
    }
    configs.push_back(*std::move(c));
  }
  std::stable_sort(configs.begin(), configs.end(), [](const auto& a, const auto& b) {
    return a.metadata.name < b.metadata.name;
  });
  std::vector<Hook> out;
  for (const Configuration& c : configs) {
    for (const auto& h : c.webhooks) out.push_back({c.metadata.name, h});
  }
  return out;
}

std::vector<Hook> LoadHooks(const ObjectLister& lister, bool mutating) {
  return mutating ? LoadHooksOf<api::MutatingWebhookConfiguration>(lister)
                  : LoadHooksOf<api::ValidatingWebhookConfiguration>(lister);
}

// A selector field of a webhook: absent is {} (kube-apiserver defaults it).
absl::StatusOr<api::Selector> HookSelector(const std::optional<api::LabelSelector>& sel) {
  if (!sel) return api::Selector::Everything();
  return api::Selector::FromJson(api::Encode(*sel));
}

// ShouldCallHook: nullopt = skip; a status = answer it; true = call.
struct MatchOutcome {
  bool call = false;
  std::optional<ApiStatus> error;
};

MatchOutcome Match(const Hook& hook, const AdmissionAttributes& attrs, const Json& object,
                   const ObjectLister& lister) {
  MatchOutcome out;
  std::optional<ApiStatus> ns_error;
  // namespaceSelector
  bool ns_match = true;
  const std::string ns = AdmissionNamespace(attrs);
  const bool is_namespace = attrs.resource.group.empty() && attrs.resource.plural == "namespaces";
  if (!ns.empty() || is_namespace) {
    auto sel = HookSelector(hook.spec.namespace_selector);
    if (!sel.ok()) {
      ns_error = InternalErrorStatus(base::FromAbsl(sel.status().message()));
      ns_match = false;
    } else if (!sel->Empty()) {
      api::Labels labels;
      bool found = false;
      if (is_namespace && attrs.subresource.empty() &&
          (attrs.operation == AdmissionOperation::kCreate ||
           attrs.operation == AdmissionOperation::kUpdate)) {
        labels = api::LabelsOf(object);
        found = true;
      } else {
        for (const Json& n : lister("", "v1", "namespaces", "")) {
          if (Str(Field(n, "metadata"), "name") == ns) {
            labels = api::LabelsOf(n);
            found = true;
            break;
          }
        }
      }
      if (!found) {
        ns_error = NotFoundStatus("", "namespaces", ns);
        ns_match = false;
      } else {
        ns_match = sel->Matches(labels);
      }
    }
  }
  if (!ns_match && !ns_error) return out;
  // objectSelector
  auto osel = HookSelector(hook.spec.object_selector);
  std::optional<ApiStatus> obj_error;
  if (!osel.ok()) {
    obj_error = InternalErrorStatus(base::FromAbsl(osel.status().message()));
  } else if (!osel->Empty()) {
    auto matches = [&](const Json& o) { return o.is_object() && osel->Matches(api::LabelsOf(o)); };
    if (!matches(object) && !matches(attrs.old_object)) return out;
  }
  // rules
  if (std::none_of(hook.spec.rules.begin(), hook.spec.rules.end(),
                   [&](const api::RuleWithOperations& r) { return WebhookRuleMatches(r, attrs); })) {
    return out;
  }
  if (ns_error) {
    out.error = ns_error;
    return out;
  }
  if (obj_error) {
    out.error = obj_error;
    return out;
  }
  out.call = true;
  return out;
}

// What calling one webhook produced.
struct CallOutcome {
  enum Kind { kAllowed, kRejected, kCallError, kError } kind = kAllowed;
  ApiStatus status;           // kRejected / kError
  std::string call_error;     // kCallError: the reason, after `failed calling webhook "x": `
  Json patch;                 // kAllowed from a mutating webhook: the JSON patch (or null)
};

CallOutcome CallError(std::string reason) {
  CallOutcome o;
  o.kind = CallOutcome::kCallError;
  o.call_error = std::move(reason);
  return o;
}

CallOutcome ErrorOutcome(ApiStatus s) {
  CallOutcome o;
  o.kind = CallOutcome::kError;
  o.status = std::move(s);
  return o;
}

// apimachinery's generic message for a non-2xx answer without a Status body.
std::string GenericServerMessage(int code, const std::string& body) {
  switch (code) {
    case 400: return "the server rejected our request for an unknown reason";
    case 401: return "Unauthorized";
    case 403: return "the server does not allow access to the requested resource";
    case 404: return "the server could not find the requested resource";
    case 409: return "the server reported a conflict";
    case 429: return "the server has received too many requests and has asked us to try again later";
    case 500: {
      std::string trimmed = body.substr(0, 256);
      return StrCat("an error on the server (", Quote(trimmed.empty() ? "unknown" : trimmed),
                    ") has prevented the request from succeeding");
    }
    case 503: return "the server is currently unable to handle the request";
    case 504: return "the server was unable to return a response in the time allotted, but may still be processing the request";
    default:
      return StrCat("the server responded with the status code ", code,
                    " but did not return more information");
  }
}

}  // namespace

WebhookAdmission::WebhookAdmission(WebhookAdmissionOptions options)
    : options_(std::move(options)) {
  if (!options_.service_resolver) {
    options_.service_resolver = ClusterServiceResolver(options_.lister);
  }
}

std::optional<ApiStatus> WebhookAdmission::Mutate(const AdmissionAttributes& attrs, Json* object) {
  return Run(true, attrs, object);
}

std::optional<ApiStatus> WebhookAdmission::Validate(const AdmissionAttributes& attrs,
                                                    const Json& object) {
  Json copy = object;
  return Run(false, attrs, &copy);
}

std::optional<ApiStatus> WebhookAdmission::Run(bool mutating, const AdmissionAttributes& attrs,
                                               Json* object) {
  if (!options_.lister || IsExemptAdmissionConfigurationResource(attrs.resource)) {
    return std::nullopt;
  }
  std::vector<Hook> hooks = LoadHooks(options_.lister, mutating);
  if (hooks.empty()) return std::nullopt;

  auto call = [this, mutating, &attrs](const Hook& hook, const Json& obj) -> CallOutcome {
    const api::WebhookCommon& h = hook.spec;
    const std::string& name = h.name;
    if (attrs.dry_run) {
      if (h.side_effects.empty()) return CallError("Webhook SideEffects is nil");
      if (h.side_effects != api::kSideEffectsNone &&
          h.side_effects != api::kSideEffectsNoneOnDryRun) {
        return ErrorOutcome(BadRequestStatus(
            StrCat("admission webhook ", Quote(name), " does not support dry run")));
      }
    }
    std::string version;
    for (const std::string& v : h.admission_review_versions) {
      if (v == "v1" || v == "v1beta1") {
        version = v;
        break;
      }
    }
    if (version.empty()) {
      return CallError(
          "could not create admission objects: webhook does not accept known AdmissionReview "
          "versions (v1, v1beta1)");
    }
    // Client configuration.
    const api::WebhookClientConfig& cc = h.client_config;
    HttpsTarget target;
    std::string url_base;  // for messages: scheme://host[:port]path
    int service_port = 443;
    if (!cc.ca_bundle.empty()) {
      absl::StatusOr<std::string> pem = cc.CABundlePEM();
      if (!pem.ok()) {
        return CallError("could not get REST client: illegal base64 data in caBundle");
      }
      target.ca_pem = *std::move(pem);
    }
    const std::optional<api::ServiceReference>& svc = cc.service;
    std::string path;
    if (svc) {
      if (svc->port && *svc->port > 0 && *svc->port <= 65535) service_port = *svc->port;
      path = svc->path.value_or("");
      target.server_name = StrCat(svc->name, ".", svc->namespace_, ".svc");
      target.host_header = JoinHostPort(target.server_name, service_port);
      url_base = StrCat("https://", target.host_header, path);
    } else {
      const std::string url = cc.url.value_or("");
      if (url.empty()) {
        return CallError(
            "could not get REST client: webhook configuration must have either service or URL");
      }
      if (url.rfind("https://", 0) != 0) {
        return CallError(StrCat("could not get REST client: Unparsable URL: ", Quote(url),
                                ": 'https' is the only allowed URL scheme"));
      }
      std::string rest = url.substr(8);
      size_t slash = rest.find('/');
      std::string hostport = rest.substr(0, slash);
      path = slash == std::string::npos ? "" : rest.substr(slash);
      size_t q = path.find_first_of("?#");
      if (q != std::string::npos) path = path.substr(0, q);
      std::string host;
      int port = 443;
      if (!SplitHostPort(hostport, &host, &port)) {
        host = hostport;
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
          host = host.substr(1, host.size() - 2);
        }
        port = 443;
      }
      if (host.empty()) {
        return CallError(StrCat("could not get REST client: Unparsable URL: ", Quote(url)));
      }
      target.dial_host = host;
      target.dial_port = port;
      target.server_name = host;
      target.host_header = hostport;
      url_base = StrCat("https://", hostport, path);
    }
    const int timeout =
        h.timeout_seconds ? std::clamp<int>(*h.timeout_seconds, 1, kMaxTimeoutSeconds)
                          : kDefaultTimeoutSeconds;
    target.path_and_query = StrCat(path.empty() ? "/" : path, "?timeout=", timeout, "s");
    const std::string url_text = StrCat(url_base, "?timeout=", timeout, "s");
    const absl::Time deadline = absl::Now() + absl::Seconds(timeout);
    auto transport = [&](std::string_view err) {
      return CallError(StrCat("failed to call webhook: Post ", Quote(url_text), ": ", err));
    };
    if (svc) {
      auto addr = options_.service_resolver(svc->namespace_, svc->name, service_port);
      if (!addr.ok()) return transport(base::FromAbsl(addr.status().message()));
      if (!SplitHostPort(*addr, &target.dial_host, &target.dial_port)) {
        return transport(StrCat("invalid resolved address ", Quote(*addr)));
      }
    }

    const std::string uid = NewUuid();
    Json review = BuildAdmissionReview(attrs, obj, uid, version);
    calls_.fetch_add(1);
    auto reply = HttpsPost(target, base::DumpJson(review), deadline);
    if (!reply.ok()) {
      if (absl::IsInvalidArgument(reply.status())) {  // CA bundle
        return CallError(
            StrCat("could not get REST client: ", base::FromAbsl(reply.status().message())));
      }
      return transport(base::FromAbsl(reply.status().message()));
    }
    if (reply->status < 200 || reply->status > 206) {
      auto parsed = base::ParseJson(reply->body);
      std::string msg;
      if (parsed.ok() && Str(*parsed, "kind") == "Status") msg = Str(*parsed, "message");
      if (msg.empty()) msg = GenericServerMessage(reply->status, reply->body);
      return CallError(StrCat("failed to call webhook: ", msg));
    }
    auto parsed = base::ParseJson(reply->body);
    if (!parsed.ok()) {
      return CallError(StrCat("failed to call webhook: ", base::FromAbsl(parsed.status().message())));
    }
    const Json& resp = Field(*parsed, "response");
    if (!parsed->is_object()) {
      return CallError("failed to call webhook: json: cannot unmarshal the response into an "
                       "AdmissionReview");
    }
    if (!resp.is_object()) return CallError("received invalid webhook response: webhook response was absent");
    const Json& allowed = Field(resp, "allowed");
    const Json& patch_type = Field(resp, "patchType");
    const Json& patch = Field(resp, "patch");
    if ((!allowed.is_null() && !allowed.is_boolean()) ||
        (!patch_type.is_null() && !patch_type.is_string()) ||
        (!patch.is_null() && !patch.is_string()) ||
        (!Field(resp, "uid").is_null() && !Field(resp, "uid").is_string())) {
      return CallError(
          "failed to call webhook: json: cannot unmarshal the response into an AdmissionReview");
    }
    std::string patch_bytes;
    if (patch.is_string() && !absl::Base64Unescape(base::ToAbsl(patch.get<std::string>()),
                                                   &patch_bytes)) {
      return CallError("failed to call webhook: illegal base64 data in response.patch");
    }
    std::string ptype = patch_type.is_string() ? patch_type.get<std::string>() : "";
    if (version == "v1") {
      std::string got_uid = Str(resp, "uid");
      if (got_uid != uid) {
        return CallError(StrCat("received invalid webhook response: expected response.uid=",
                                Quote(uid), ", got ", Quote(got_uid)));
      }
      std::string av = Str(*parsed, "apiVersion");
      std::string kind = Str(*parsed, "kind");
      if (av != "admission.k8s.io/v1" || kind != "AdmissionReview") {
        size_t slash = av.find('/');
        std::string gv = slash == std::string::npos ? StrCat("/", av) : av;
        return CallError(StrCat(
            "received invalid webhook response: expected webhook response of "
            "admission.k8s.io/v1, Kind=AdmissionReview, got ",
            gv, ", Kind=", kind));
      }
      if (mutating) {
        if (!patch_bytes.empty() && patch_type.is_null()) {
          return CallError("received invalid webhook response: webhook returned response.patch "
                           "but not response.patchType");
        }
        if (patch_bytes.empty() && !patch_type.is_null()) {
          return CallError("received invalid webhook response: webhook returned "
                           "response.patchType but not response.patch");
        }
        if (!patch_type.is_null() && ptype.empty()) {
          return CallError(StrCat("received invalid webhook response: webhook returned invalid "
                                  "response.patchType of ", Quote(ptype)));
        }
      } else {
        if (!patch_bytes.empty()) {
          return CallError("received invalid webhook response: validating webhook may not "
                           "return response.patch");
        }
        if (!patch_type.is_null()) {
          return CallError("received invalid webhook response: validating webhook may not "
                           "return response.patchType");
        }
      }
    } else if (mutating && !patch_bytes.empty()) {
      ptype = "JSONPatch";  // v1beta1 did not check the patch type
    }
    if (!allowed.is_boolean() || !allowed.get<bool>()) {
      CallOutcome o;
      o.kind = CallOutcome::kRejected;
      o.status = WebhookDeniedStatus(name, Field(resp, "status"));
      return o;
    }
    CallOutcome o;
    if (!mutating || patch_bytes.empty()) return o;
    auto p = base::ParseJson(patch_bytes);
    if (!p.ok() || !p->is_array()) {
      return CallError(StrCat("received undecodable patch in webhook response: ",
                              p.ok() ? "json: cannot unmarshal into a JSON patch"
                                     : base::FromAbsl(p.status().message())));
    }
    if (p->empty()) return o;
    if (ptype != "JSONPatch") {
      return CallError(StrCat("unsupported patch type ", Quote(ptype)));
    }
    o.patch = *std::move(p);
    return o;
  };

  auto failure = [](const Hook& hook, const CallOutcome& o) -> std::optional<ApiStatus> {
    const std::string& name = hook.spec.name;
    switch (o.kind) {
      case CallOutcome::kAllowed:
        return std::nullopt;
      case CallOutcome::kRejected:
      case CallOutcome::kError:
        return o.status;
      case CallOutcome::kCallError:
        if (hook.spec.failure_policy == api::kFailurePolicyIgnore) {
          SP_LOG(Warning)
              .Msg("Failed calling webhook, failing open")
              .KV("webhook", name)
              .KV("err", o.call_error);
          return std::nullopt;
        }
        SP_LOG(Warning)
            .Msg("Failed calling webhook, failing closed")
            .KV("webhook", name)
            .KV("err", o.call_error);
        return InternalErrorStatus(
            StrCat("failed calling webhook ", Quote(name), ": ", o.call_error));
    }
    return std::nullopt;
  };

  if (mutating) {
    for (const Hook& hook : hooks) {
      MatchOutcome m = Match(hook, attrs, *object, options_.lister);
      if (m.error) return m.error;
      if (!m.call) continue;
      CallOutcome o = call(hook, *object);
      if (auto err = failure(hook, o)) return err;
      if (o.patch.is_null()) continue;
      const std::string& name = hook.spec.name;
      if (!object->is_object()) {
        return InternalErrorStatus(StrCat("admission webhook ", Quote(name),
                                          " attempted to modify the object, which is not "
                                          "supported for this operation"));
      }
      auto patched = base::ApplyJsonPatch(*object, o.patch);
      if (!patched.ok()) return InternalErrorStatus(base::FromAbsl(patched.status().message()));
      if (!patched->is_object()) {
        return InternalErrorStatus(
            StrCat("admission webhook ", Quote(name), " patched the object into a non-object"));
      }
      *object = *std::move(patched);
    }
    return std::nullopt;
  }

  // Validating: every matching webhook is called in parallel; the first failure in webhook
  // order is answered.
  std::vector<const Hook*> relevant;
  for (const Hook& hook : hooks) {
    MatchOutcome m = Match(hook, attrs, *object, options_.lister);
    if (m.error) return m.error;
    if (m.call) relevant.push_back(&hook);
  }
  if (relevant.empty()) return std::nullopt;
  std::vector<CallOutcome> outcomes(relevant.size());
  if (relevant.size() == 1) {
    outcomes[0] = call(*relevant[0], *object);
  } else {
    std::vector<std::jthread> threads;
    threads.reserve(relevant.size());
    for (size_t i = 0; i < relevant.size(); ++i) {
      threads.emplace_back([&, i] { outcomes[i] = call(*relevant[i], *object); });
    }
  }  // joined
  for (size_t i = 0; i < relevant.size(); ++i) {
    if (auto err = failure(*relevant[i], outcomes[i])) return err;
  }
  return std::nullopt;
}

}  // namespace spiderpool::kube::testing
