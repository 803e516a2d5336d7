#include "operator/dra/claim_webhook.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "api/resource_claim.h"
#include "base/log.h"
#include "base/strings.h"
#include "dra/driver/params.h"
#include "dra/resourceslice/model.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"
#include "kube/webhook/certs.h"

namespace spiderpool::op::dra {

namespace rv1 = ::spiderpool::api::resource_v1;
namespace kw = ::spiderpool::kube::webhook;
using base::StrCat;

namespace {

const api::SpiderpoolPools* SectionPools(const api::MultusCNIConfigSpec& s) {
  const std::string type = s.cni_type.value_or("");
  auto get = [](const auto& section) -> const api::SpiderpoolPools* {
    return section && section->ippools ? &*section->ippools : nullptr;
  };
  if (type == api::kCniTypeMacvlan) return get(s.macvlan);
  if (type == api::kCniTypeIPvlan) return get(s.ipvlan);
  if (type == api::kCniTypeVlan) return get(s.vlan);
  if (type == api::kCniTypeSriov) return get(s.sriov);
  if (type == api::kCniTypeIBSriov) return get(s.ibsriov);
  if (type == api::kCniTypeIPoIB) return get(s.ipoib);
  if (type == api::kCniTypeOvs) return get(s.ovs);
  return nullptr;
}

bool IsV6(const api::SpiderIPPool& p) {
  if (p.spec.ip_version.has_value()) return *p.spec.ip_version == 6;
  return p.spec.subnet.find(':') != std::string::npos;
}

// The opaque configs' SpiderClaimParameter per main request name.
struct Target {
  std::string parameter;
  std::string config_path;
};

}  // namespace

ClaimSources ApiSources(std::shared_ptr<kube::RestClient> rest,
                        const kube::Informer<api::SpiderIPPool>* pools) {
  ClaimSources s;
  s.claim_parameter = [c = kube::Client<api::SpiderClaimParameter>(rest)](
                          const std::string& ns, const std::string& name)
      -> absl::StatusOr<std::optional<api::SpiderClaimParameter>> {
    absl::StatusOr<api::SpiderClaimParameter> got = c.Get(ns, name);
    if (kube::IsNotFound(got.status())) return std::nullopt;
    if (!got.ok()) return got.status();
    return *std::move(got);
  };
  s.multus_config = [c = kube::Client<api::SpiderMultusConfig>(rest)](
                        const std::string& ns, const std::string& name)
      -> absl::StatusOr<std::optional<api::SpiderMultusConfig>> {
    absl::StatusOr<api::SpiderMultusConfig> got = c.Get(ns, name);
    if (kube::IsNotFound(got.status())) return std::nullopt;
    if (!got.ok()) return got.status();
    return *std::move(got);
  };
  s.pools = [pools] {
    return pools != nullptr ? pools->store().List()
                            : std::vector<std::shared_ptr<const api::SpiderIPPool>>{};
  };
  return s;
}

SmcPools PoolsOf(const api::SpiderMultusConfig& smc,
                 const std::vector<std::shared_ptr<const api::SpiderIPPool>>& pools,
                 std::string_view spiderpool_namespace) {
  SmcPools out;
  if (const api::SpiderpoolPools* named = SectionPools(smc.spec);
      named != nullptr && (!named->ipv4.empty() || !named->ipv6.empty())) {
    out.ipv4 = named->ipv4;
    out.ipv6 = named->ipv6;
    return out;
  }
  const std::string key = StrCat(smc.metadata.namespace_, "/", smc.metadata.name);
  auto usable = [](const api::SpiderIPPool& p) {
    return !p.metadata.IsDeleting() && !p.spec.disable.value_or(false);
  };
  auto add = [&](const api::SpiderIPPool& p) {
    (IsV6(p) ? out.ipv6 : out.ipv4).push_back(p.metadata.name);
  };
  for (const auto& p : pools) {
    if (!usable(*p)) continue;
    for (const std::string& m : p->spec.multus_name) {
      const std::string full =
          m.find('/') == std::string::npos ? StrCat(spiderpool_namespace, "/", m) : m;
      if (full == key) {
        add(*p);
        break;
      }
    }
  }
  if (out.ipv4.empty() && out.ipv6.empty()) {
    for (const auto& p : pools) {
      if (usable(*p) && p->spec.default_.value_or(false) && p->spec.multus_name.empty()) add(*p);
    }
  }
  std::sort(out.ipv4.begin(), out.ipv4.end());
  std::sort(out.ipv6.begin(), out.ipv6.end());
  return out;
}

absl::StatusOr<std::optional<base::Json>> AddNetworkSelectors(const base::Json& claim,
                                                              const ClaimWebhookOptions& options) {
  if (!claim.is_object() || claim.value("apiVersion", "") != rv1::kApiVersionV1) return std::nullopt;
  absl::StatusOr<rv1::ResourceClaim> decoded = rv1::DecodeResourceClaim(claim);
  if (!decoded.ok()) return std::nullopt;  // the API server's validation answers that
  const rv1::DeviceClaim& dc = decoded->spec.devices;
  const std::string ns = decoded->metadata.namespace_;

  // Which request gets which parameter: the last config of our driver naming it.
  std::map<std::string, Target> targets;
  for (size_t i = 0; i < dc.config.size(); ++i) {
    const rv1::DeviceClaimConfiguration& c = dc.config[i];
    if (!c.opaque || c.opaque->driver != options.driver) continue;
    const std::string path = StrCat("spec.devices.config[", i, "].opaque.parameters");
    absl::StatusOr<::spiderpool::dra::driver::ClaimParameterRef> ref =
        ::spiderpool::dra::driver::ParseParameters(c.opaque->parameters);
    if (!ref.ok()) {
      return absl::InvalidArgumentError(StrCat(path, ": ", base::FromAbsl(ref.status().message())));
    }
    std::vector<std::string> names;
    if (c.requests.empty()) {
      for (const rv1::DeviceRequest& r : dc.requests) names.push_back(r.name);
    } else {
      for (const std::string& r : c.requests) names.push_back(r.substr(0, r.find('/')));
    }
    for (const std::string& n : names) targets[n] = {ref->name, path};
  }
  if (targets.empty()) return std::nullopt;

  // Selectors per parameter.
  std::map<std::string, std::vector<std::string>> selectors;
  for (const auto& [request, t] : targets) {
    if (selectors.contains(t.parameter)) continue;
    auto scp = options.sources.claim_parameter(ns, t.parameter);
    if (!scp.ok()) {
      return absl::InternalError(StrCat(t.config_path, ": reading SpiderClaimParameter ", ns, "/",
                                        t.parameter, ": ", base::FromAbsl(scp.status().message())));
    }
    if (!scp->has_value()) {
      return absl::NotFoundError(
          StrCat(t.config_path, ": SpiderClaimParameter ", ns, "/", t.parameter, " not found"));
    }
    const api::SpiderClaimParameter& p = **scp;
    api::SpiderMultusConfig smc;
    if (p.spec.default_nic.has_value()) {
      const std::string smc_ns =
          p.spec.default_nic->namespace_.empty() ? ns : p.spec.default_nic->namespace_;
      auto got = options.sources.multus_config(smc_ns, p.spec.default_nic->multus_name);
      if (!got.ok()) {
        return absl::InternalError(StrCat("SpiderClaimParameter ", ns, "/", t.parameter,
                                          ": reading SpiderMultusConfig ", smc_ns, "/",
                                          p.spec.default_nic->multus_name, ": ",
                                          base::FromAbsl(got.status().message())));
      }
      if (!got->has_value()) {
        return absl::NotFoundError(StrCat("SpiderClaimParameter ", ns, "/", t.parameter,
                                          ": spec.defaultNic: SpiderMultusConfig ", smc_ns, "/",
                                          p.spec.default_nic->multus_name, " not found"));
      }
      smc = **got;
      smc.metadata.namespace_ = smc_ns;
    }
    SmcPools pools = PoolsOf(smc, options.sources.pools ? options.sources.pools()
                                                        : std::vector<std::shared_ptr<const api::SpiderIPPool>>{},
                             options.spiderpool_namespace);
    auto sel = ::spiderpool::dra::resourceslice::SelectorFor(
        smc, {.ipv4_pools = pools.ipv4, .ipv6_pools = pools.ipv6, .rdma = p.spec.enable_rdma},
        options.driver);
    if (!sel.ok()) return sel.status();
    selectors[t.parameter] = *std::move(sel);
  }

  base::Json out = claim;
  bool changed = false;
  base::Json& requests = out["spec"]["devices"]["requests"];
  for (auto& r : requests) {
    auto t = targets.find(r.value("name", ""));
    if (t == targets.end()) continue;
    auto add_to = [&](base::Json& exact) {
      base::Json& list = exact["selectors"];
      if (!list.is_array()) list = base::Json::array();
      for (const std::string& expr : selectors[t->second.parameter]) {
        const bool present = std::any_of(list.begin(), list.end(), [&](const base::Json& s) {
          return s.is_object() && s.contains("cel") && s["cel"].value("expression", "") == expr;
        });
        if (present) continue;
        list.push_back({{"cel", {{"expression", expr}}}});
        changed = true;
      }
    };
    if (r.contains("exactly") && r["exactly"].is_object()) {
      add_to(r["exactly"]);
    } else if (r.contains("firstAvailable") && r["firstAvailable"].is_array()) {
      for (auto& sub : r["firstAvailable"]) add_to(sub);
    }
  }
  if (!changed) return std::nullopt;
  return out;
}

kube::webhook::MutatingHandler ClaimHandler(ClaimWebhookOptions options) {
  return [options = std::move(options)](const api::AdmissionRequest& req) -> kw::Mutation {
    if (req.operation != "CREATE") return kw::Mutation::Unchanged();
    base::Json object = req.object;
    // The namespace of the request, should the object not carry it yet.
    if (object.is_object() && object.value("metadata", base::Json::object()).value("namespace", "").empty()) {
      object["metadata"]["namespace"] = req.namespace_;
    }
    absl::StatusOr<std::optional<base::Json>> r = AddNetworkSelectors(object, options);
    if (!r.ok()) {
      const int32_t code = r.status().code() == absl::StatusCode::kNotFound          ? 404
                           : r.status().code() == absl::StatusCode::kInvalidArgument ? 400
                                                                                     : 500;
      return kw::Mutation::Denied(kw::Decision::Deny(code, base::FromAbsl(r.status().message())));
    }
    if (!r->has_value()) return kw::Mutation::Unchanged();
    return kw::Mutation::Patched(**std::move(r));
  };
}

api::MutatingWebhookConfiguration ClaimWebhookConfiguration(std::string_view service_namespace,
                                                           std::string_view service_name,
                                                           int32_t port,
                                                           std::string_view ca_bundle_pem) {
  api::MutatingWebhookConfiguration c;
  c.SetTypeMeta();
  c.metadata.name = std::string(kClaimWebhookConfigurationName);
  api::MutatingWebhook w;
  w.name = std::string(kClaimWebhookName);
  w.client_config.service = api::ServiceReference{.namespace_ = std::string(service_namespace),
                                                 .name = std::string(service_name),
                                                 .path = std::string(kClaimWebhookPath),
                                                 .port = port};
  if (!ca_bundle_pem.empty()) w.client_config.SetCABundlePEM(ca_bundle_pem);
  w.rules.push_back({.operations = {"CREATE"},
                     .api_groups = {"resource.k8s.io"},
                     .api_versions = {"v1"},
                     .resources = {"resourceclaims"}});
  w.failure_policy = std::string(api::kFailurePolicyFail);
  w.side_effects = std::string(api::kSideEffectsNone);
  w.admission_review_versions = {"v1"};
  c.webhooks.push_back(std::move(w));
  return c;
}

std::unique_ptr<kube::Runnable> ConfigurationSync(std::shared_ptr<kube::RestClient> rest,
                                                  ConfigurationSyncOptions options,
                                                  std::function<std::string()> ca_bundle) {
  return std::make_unique<kube::FuncRunnable>(
      "dra-claim-webhook-configuration", /*needs_leader=*/false,
      [rest, options, ca_bundle](std::stop_token stop) -> absl::Status {
        std::string done;  // the bundle last written
        absl::Duration wait = absl::Milliseconds(200);
        while (!stop.stop_requested()) {
          const std::string ca = ca_bundle();
          if (!ca.empty() && ca != done) {
            absl::Status s;
            if (options.create) {
              kube::Client<api::MutatingWebhookConfiguration> client(rest);
              auto want = ClaimWebhookConfiguration(options.service_namespace, options.service_name,
                                                    options.port, ca);
              s = kube::RetryOnConflict(kube::DefaultRetry(), [&]() -> absl::Status {
                auto got = client.Get("", want.metadata.name);
                if (kube::IsNotFound(got.status())) return client.Create(want).status();
                if (!got.ok()) return got.status();
                got->webhooks = want.webhooks;
                return client.Update(*got).status();
              });
            } else {
              s = kw::PatchCABundle(rest, {std::string(kClaimWebhookConfigurationName)}, {}, ca);
            }
            if (s.ok()) {
              done = ca;
              wait = options.interval;
              SP_LOG(Info).Msg("DRA claim webhook configuration synced")
                  .KV("name", std::string(kClaimWebhookConfigurationName));
            } else if (!options.create && (kube::IsNotFound(s) || kube::IsForbidden(s))) {
              // The chart installs it (and the RBAC for it) only with dra.enabled: quiet.
              wait = options.interval;
            } else {
              SP_LOG(Warning).Msg("DRA claim webhook configuration").KV("error", s);
            }
          }
          std::mutex mu;
          std::unique_lock lock(mu);
          std::condition_variable_any().wait_for(lock, stop, absl::ToChronoMilliseconds(wait),
                                                 [] { return false; });
          if (!done.empty()) wait = options.interval;
        }
        return absl::OkStatus();
      });
}

}  // namespace spiderpool::op::dra
