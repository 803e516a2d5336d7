#pragma once
// The Spider admission handlers: upstream's mutating and validating webhooks for every kind of
// configurations.h, wired to api/validation (rules and messages) and multus/defaults.h
// (SpiderMultusConfig defaulting), registered on a kube::webhook::AdmissionServer.
//
//   op::webhook::HandlerOptions h;
//   h.config = {.enable_validating_resources_deleted_webhook = true};
//   h.sources = op::webhook::InformerSources(&pool_informer, &subnet_informer);
//   op::webhook::AddLiveSources(rest, &h.sources);       // fresh reads, NAD/SMC lookups
//   op::webhook::RegisterHandlers(&server, h);
//
// What each handler does (controller-runtime's CustomDefaulter / CustomValidator semantics):
//   mutate    decode the object (leniently: a field of the wrong type is left at its zero value,
//             a badly formatted one is kept as written), apply Mutate<Kind> (an error is logged,
//             never a rejection: the validating webhook reports the field), answer the object;
//             the server sends the JSON patch, minus what the typed round trip alone would change
//             (fields our types do not model are never erased);
//   validate  CREATE / UPDATE / DELETE -> Validate<Kind>{Create,Update,Delete}; a failing result
//             is denied with Result::ToStatus() (422 Invalid with causes, 403 Forbidden, 409
//             AlreadyExists), which kube-apiserver relays as `admission webhook
//             "<kind>.spiderpool.spidernet.io" denied the request: <message>`. An object that
//             passes the rules but does not decode with our types is denied 422 Invalid listing
//             the decode errors (our informers could not read it). DELETE never fails on
//             decoding. CONNECT is allowed.
//
// Where the existing pools and subnets come from (the Context lists):
//   * `ippools` / `subnets`: the controller's informer caches, used for mutation (the owning
//     SpiderSubnet) and whenever no live list is set;
//   * `ippools_live` / `subnets_live`: a consistent LIST from the API server, used for the
//     cross-object checks of CREATE and UPDATE of SpiderIPPool / SpiderSubnet (subnet overlap,
//     IP overlap with same-CIDR pools, AlreadyExists, the subnet's orphan-pool check), exactly
//     where upstream reads through its uncached APIReader. An informer lags the API server by
//     the watch latency, so two overlapping pools applied back to back (`kubectl apply -f` of a
//     list) could both pass a cache-only check; the live list closes that window at the cost of
//     one LIST per pool/subnet create/update (rare writes; IPAM status updates go to /status and
//     never reach these webhooks). A failing live list denies with 500 InternalError (the
//     webhook is failurePolicy Fail anyway).
// Two creates racing at the same instant can still both pass (as upstream): the check is not a
// transaction.

#include <functional>
#include <map>
#include <string>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "api/core.h"
#include "api/spider.h"
#include "api/validation/validation.h"
#include "kube/informer/informer.h"
#include "kube/rest/rest_client.h"
#include "kube/webhook/server.h"

namespace spiderpool::op::webhook {

template <typename T>
using ListFn = std::function<absl::StatusOr<std::vector<std::shared_ptr<const T>>>()>;

struct Sources {
  ListFn<api::SpiderIPPool> ippools;  // cache (required for pools/subnets; empty = no objects)
  ListFn<api::SpiderSubnet> subnets;
  ListFn<api::SpiderIPPool> ippools_live;  // optional: fresh reads, see above
  ListFn<api::SpiderSubnet> subnets_live;
  // SpiderMultusConfig: owners of an existing NAD. Unset = that rule is skipped.
  api::validation::NetAttachDefOwnersFn net_attach_def_owners;
  // SpiderClaimParameter: whether a SpiderMultusConfig exists. Unset = that rule is skipped.
  api::validation::MultusConfigExistsFn multus_config_exists;
  // Pod resource injection (enable_pod_resource_inject): every SpiderMultusConfig (cache) and
  // the annotations of a namespace (cache; a missing namespace = none). Unset = none.
  ListFn<api::SpiderMultusConfig> multus_configs;
  std::function<absl::StatusOr<std::map<std::string, std::string>>(const std::string&)>
      namespace_annotations;
};

// `ippools` / `subnets` from informer stores (either may be null: then that list is empty).
Sources InformerSources(const kube::Informer<api::SpiderIPPool>* ippools,
                        const kube::Informer<api::SpiderSubnet>* subnets);
// Sets `multus_configs` / `namespace_annotations` from informer stores (null: left unset).
void AddPodInjectInformerSources(const kube::Informer<api::SpiderMultusConfig>* smcs,
                                 const kube::Informer<api::Namespace>* namespaces,
                                 Sources* sources);
// Fills the unset live lists and lookups with direct API reads through `rest`: consistent LISTs
// of pools and subnets, GET of NetworkAttachmentDefinitions and SpiderMultusConfigs.
void AddLiveSources(std::shared_ptr<kube::RestClient> rest, Sources* sources);

struct HandlerOptions {
  api::validation::Config config;
  Sources sources;
  bool enable_multus_config = true;
  bool enable_coordinator = true;
  bool enable_claim_parameter = false;
  // podResourceInject.enabled: the Pod webhook of pod_inject.h at kPodMutatePath.
  bool enable_pod_resource_inject = false;
};

// Registers the mutating and validating handlers of every enabled kind at upstream's paths.
// The server keeps copies of `options`; the sources must stay valid while it serves.
void RegisterHandlers(kube::webhook::AdmissionServer* server, const HandlerOptions& options);

}  // namespace spiderpool::op::webhook
