#pragma once
// The claim's network as CEL the scheduler evaluates (issue 15, dra/README.md "Claims"): a
// mutating admission webhook on ResourceClaim CREATE. For every request that a config of our
// driver ties to a SpiderClaimParameter, it adds the selectors of
// dra::resourceslice::SelectorFor for the parameter's defaultNic SpiderMultusConfig: its
// master(s) / resourceName, its cniType, the pools its pods allocate from, enableRdma. The
// scheduler then only picks devices — and so nodes — that serve that network.
//
//   op::dra::ClaimWebhookOptions o{.spiderpool_namespace = ns};
//   o.sources = op::dra::ApiSources(rest, &pool_informer);
//   webhook->server().Mutating(std::string(op::dra::kClaimWebhookPath), op::dra::ClaimHandler(o));
//   manager.Add(op::dra::ConfigurationSync(rest, {...}, [w] { return w->ca_bundle_pem(); }));
//
// Pools of an SMC: the `ippools` of its CNI section; else the pools whose spec.multusName names
// it ("<ns>/<name>", a bare name in spiderpool's namespace); else the cluster default pools
// (spec.default). Terminating and disabled pools are left out; IPv4 / IPv6 by spec.ipVersion
// (else the subnet's family). No pool: no pool selector (the master still narrows).
//
// Denied (the resourceclaim controller reports it on the pod and retries): parameters that
// are not exactly {apiVersion, kind, name} (dra/driver's message), a SpiderClaimParameter or
// its defaultNic SMC that does not exist (404), a read that fails (500).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/admissionregistration.h"
#include "api/spider_claimparameter.h"
#include "api/spider_ippool.h"
#include "api/spider_multusconfig.h"
#include "base/json.h"
#include "kube/controller/manager.h"
#include "kube/informer/informer.h"
#include "kube/rest/rest_client.h"
#include "kube/webhook/server.h"

namespace spiderpool::op::dra {

inline constexpr std::string_view kClaimWebhookPath = "/mutate-resource-k8s-io-v1-resourceclaim";
inline constexpr std::string_view kClaimWebhookName = "resourceclaim.spiderpool.spidernet.io";
inline constexpr std::string_view kClaimWebhookConfigurationName = "spiderpool-controller-dra";

struct ClaimSources {
  // nullopt = not found.
  std::function<absl::StatusOr<std::optional<api::SpiderClaimParameter>>(const std::string& ns,
                                                                         const std::string& name)>
      claim_parameter;
  std::function<absl::StatusOr<std::optional<api::SpiderMultusConfig>>(const std::string& ns,
                                                                       const std::string& name)>
      multus_config;
  std::function<std::vector<std::shared_ptr<const api::SpiderIPPool>>()> pools;
};

// Parameters and SMCs read live from the API server (a claim is created once per pod; an
// informer would trail a just-applied SpiderClaimParameter), pools from the informer cache.
ClaimSources ApiSources(std::shared_ptr<kube::RestClient> rest,
                        const kube::Informer<api::SpiderIPPool>* pools);

struct ClaimWebhookOptions {
  std::string driver = "netresources.spidernet.io";
  std::string spiderpool_namespace = "kube-system";  // of bare multusName entries
  ClaimSources sources;
};

// The pools `smc`'s pods allocate from, by family (see above).
struct SmcPools {
  std::vector<std::string> ipv4, ipv6;
};
SmcPools PoolsOf(const api::SpiderMultusConfig& smc,
                 const std::vector<std::shared_ptr<const api::SpiderIPPool>>& pools,
                 std::string_view spiderpool_namespace);

// The claim (v1 JSON) with the selectors added, nullopt when nothing changes (no config of
// ours, or the selectors are already there: re-running is a no-op). Errors are denials: the
// Status code says which (InvalidArgument 400-ish, NotFound, Internal for reads).
absl::StatusOr<std::optional<base::Json>> AddNetworkSelectors(const base::Json& claim,
                                                              const ClaimWebhookOptions& options);

kube::webhook::MutatingHandler ClaimHandler(ClaimWebhookOptions options);

// The MutatingWebhookConfiguration `spiderpool-controller-dra`: one webhook on
// resource.k8s.io/v1 resourceclaims CREATE, service <service>.<ns>:<port> at kClaimWebhookPath,
// failurePolicy Fail, sideEffects None, v1 reviews.
api::MutatingWebhookConfiguration ClaimWebhookConfiguration(
    std::string_view service_namespace, std::string_view service_name, int32_t port,
    std::string_view ca_bundle_pem);

struct ConfigurationSyncOptions {
  std::string service_namespace;
  std::string service_name = "spiderpool-controller";
  int32_t port = 5722;
  // true: create / replace the configuration (no chart: the demo, tests); false: the chart
  // created it, only its caBundle is kept equal to the webhook server's.
  bool create = false;
  absl::Duration interval = absl::Seconds(30);
};

// A runnable (no leader election) that, once `ca_bundle` returns a bundle, ensures the
// configuration (create) or patches its caBundle, then re-checks every `interval`.
std::unique_ptr<kube::Runnable> ConfigurationSync(std::shared_ptr<kube::RestClient> rest,
                                                  ConfigurationSyncOptions options,
                                                  std::function<std::string()> ca_bundle);

}  // namespace spiderpool::op::dra
