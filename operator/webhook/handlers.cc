#include "operator/webhook/handlers.h"

#include <string>
#include <utility>

#include "api/codec.h"
#include "api/nad.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"
#include "multus/defaults.h"
#include "operator/webhook/configurations.h"
#include "operator/webhook/pod_inject.h"

namespace spiderpool::op::webhook {

namespace validation = ::spiderpool::api::validation;
namespace kw = ::spiderpool::kube::webhook;
using base::Json;
using base::StrCat;

namespace {

// What one kind's webhooks do; unset members are "nothing to do / allow".
template <typename T>
struct KindOps {
  Kind kind;
  bool needs_lists = false;  // the Context needs the pool and subnet lists
  std::function<absl::Status(T*, const validation::Context&)> mutate;
  std::function<validation::Result(const T&, const validation::Context&)> create;
  std::function<validation::Result(const T&, const T&, const validation::Context&)> update;
  std::function<validation::Result(const T&, const validation::Context&)> remove;
};

// Keeps the listed objects alive while the Context points into them.
struct Lists {
  std::vector<std::shared_ptr<const api::SpiderIPPool>> pools;
  std::vector<std::shared_ptr<const api::SpiderSubnet>> subnets;
};

template <typename T>
absl::Status ListInto(const ListFn<T>& live, const ListFn<T>& cached, bool use_live,
                      std::vector<std::shared_ptr<const T>>* out) {
  const ListFn<T>& fn = (use_live && live) ? live : cached;
  if (!fn) return absl::OkStatus();
  absl::StatusOr<std::vector<std::shared_ptr<const T>>> got = fn();
  if (!got.ok()) return got.status();
  *out = *std::move(got);
  return absl::OkStatus();
}

// The Context of one request. `live` picks the fresh lists where they exist; mutation needs
// only the subnets (`with_pools` false).
absl::Status BuildContext(const HandlerOptions& o, bool needs_lists, bool live, bool with_pools,
                          Lists* lists, validation::Context* ctx) {
  ctx->config = o.config;
  ctx->net_attach_def_owners = o.sources.net_attach_def_owners;
  ctx->multus_config_exists = o.sources.multus_config_exists;
  if (!needs_lists) return absl::OkStatus();
  absl::Status s;
  if (with_pools) {
    s = ListInto(o.sources.ippools_live, o.sources.ippools, live, &lists->pools);
    if (!s.ok()) return base::Annotate(s, "failed to list IPPools");
  }
  s = ListInto(o.sources.subnets_live, o.sources.subnets, live, &lists->subnets);
  if (!s.ok()) return base::Annotate(s, "failed to list Subnets");
  ctx->ippools = validation::Refs<api::SpiderIPPool>(lists->pools);
  ctx->subnets = validation::Refs<api::SpiderSubnet>(lists->subnets);
  return absl::OkStatus();
}

template <typename T>
T DecodeLoose(const Json& raw, api::DecodeErrors* errs) {
  return api::DecodeInto<T>(raw, errs);
}

std::string GroupKind(Kind kind) { return StrCat(KindName(kind), ".", kGroup); }

kw::Decision DenyDecodeErrors(Kind kind, std::string_view name, const api::DecodeErrors& errs) {
  api::AdmissionResponse r = api::DenyInvalid("", GroupKind(kind), name, errs);
  return kw::Decision::Deny(*r.result);
}

template <typename T>
kw::MutatingHandler MakeMutating(std::shared_ptr<const HandlerOptions> o, KindOps<T> ops) {
  return [o, ops](const api::AdmissionRequest& req) -> kw::Mutation {
    if ((req.operation != api::kOperationCreate && req.operation != api::kOperationUpdate) ||
        !ops.mutate || !req.object.is_object()) {
      return kw::Mutation::Unchanged();
    }
    api::DecodeErrors errs;
    T obj = DecodeLoose<T>(req.object, &errs);
    Json round_trip = api::Encode(obj);
    Lists lists;
    validation::Context ctx;
    // Mutation reads the cache: it only looks up the owning SpiderSubnet, and a miss is
    // reported by the validating step.
    absl::Status s = BuildContext(*o, ops.needs_lists, /*live=*/false, /*with_pools=*/false,
                                  &lists, &ctx);
    if (s.ok()) s = ops.mutate(&obj, ctx);
    if (!s.ok()) {
      SP_LOG(Warning).Msg("mutating webhook: nothing (more) to mutate")
          .KV("kind", KindName(ops.kind))
          .KV("name", req.name)
          .KV("operation", req.operation)
          .KV("err", std::string(s.message()));
    }
    return kw::Mutation::Patched(api::Encode(obj), std::move(round_trip));
  };
}

template <typename T>
kw::ValidatingHandler MakeValidating(std::shared_ptr<const HandlerOptions> o, KindOps<T> ops) {
  return [o, ops](const api::AdmissionRequest& req) -> kw::Decision {
    const bool is_delete = req.operation == api::kOperationDelete;
    if (req.operation == api::kOperationConnect) return kw::Decision::Allow();
    if (is_delete && !ops.remove) return kw::Decision::Allow();
    api::DecodeErrors errs;
    api::DecodeErrors old_errs;
    const Json& subject = is_delete ? req.old_object : req.object;
    T obj = DecodeLoose<T>(subject, &errs);
    Lists lists;
    validation::Context ctx;
    const bool live = req.operation == api::kOperationCreate ||
                      req.operation == api::kOperationUpdate;
    absl::Status s = BuildContext(*o, ops.needs_lists && !is_delete, live, /*with_pools=*/true,
                                  &lists, &ctx);
    if (!s.ok()) {
      SP_LOG(Warning).Msg("validating webhook: cannot read existing objects")
          .KV("kind", KindName(ops.kind)).KV("err", std::string(s.message()));
      return kw::Decision::Deny(500, StrCat("Internal error occurred: ",
                                            base::FromAbsl(s.message())));
    }
    validation::Result r;
    if (req.operation == api::kOperationCreate) {
      if (!ops.create) return kw::Decision::Allow();
      r = ops.create(obj, ctx);
    } else if (req.operation == api::kOperationUpdate) {
      if (!ops.update) return kw::Decision::Allow();
      T old = DecodeLoose<T>(req.old_object, &old_errs);
      r = ops.update(old, obj, ctx);
    } else {
      r = ops.remove(obj, ctx);
      return r.ok() ? kw::Decision::Allow() : kw::Decision::Deny(r.ToStatus());
    }
    if (!r.ok()) return kw::Decision::Deny(r.ToStatus());
    if (!errs.ok()) return DenyDecodeErrors(ops.kind, req.name, errs);
    return kw::Decision::Allow();
  };
}

template <typename T>
void Register(kw::AdmissionServer* server, const std::shared_ptr<const HandlerOptions>& o,
              const KindOps<T>& ops, bool mutating, bool validating) {
  if (mutating) server->Mutating(MutatePath(ops.kind), MakeMutating<T>(o, ops));
  if (validating) server->Validating(ValidatePath(ops.kind), MakeValidating<T>(o, ops));
}

bool Has(const std::vector<Kind>& kinds, Kind k) {
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

template <typename T>
ListFn<T> StoreList(const kube::Informer<T>* informer) {
  if (informer == nullptr) return nullptr;
  return [informer]() -> absl::StatusOr<std::vector<std::shared_ptr<const T>>> {
    return informer->store().List();
  };
}

template <typename T>
ListFn<T> LiveList(std::shared_ptr<kube::RestClient> rest) {
  return [client = kube::Client<T>(std::move(rest))]()
             -> absl::StatusOr<std::vector<std::shared_ptr<const T>>> {
    // resourceVersion "" = a consistent read from storage, not the watch cache.
    absl::StatusOr<api::List<T>> list = client.ListAll("");
    if (!list.ok()) return list.status();
    std::vector<std::shared_ptr<const T>> out;
    out.reserve(list->items.size());
    for (T& item : list->items) out.push_back(std::make_shared<const T>(std::move(item)));
    return out;
  };
}

kw::MutatingHandler MakePodInjectHandler(std::shared_ptr<const HandlerOptions> o) {
  return [o](const api::AdmissionRequest& req) -> kw::Mutation {
    if (req.operation != api::kOperationCreate || !req.object.is_object()) {
      return kw::Mutation::Unchanged();
    }
    std::map<std::string, std::string> ns_annotations;
    if (o->sources.namespace_annotations && !req.namespace_.empty()) {
      auto a = o->sources.namespace_annotations(req.namespace_);
      if (!a.ok()) {
        return kw::Mutation::Denied(kw::Decision::Deny(
            500, StrCat("Internal error occurred: ", base::FromAbsl(a.status().message()))));
      }
      ns_annotations = std::move(*a);
    }
    std::vector<std::shared_ptr<const api::SpiderMultusConfig>> smcs;
    if (o->sources.multus_configs) {
      auto l = o->sources.multus_configs();
      if (!l.ok()) {
        return kw::Mutation::Denied(kw::Decision::Deny(
            500, StrCat("Internal error occurred: ", base::FromAbsl(l.status().message()))));
      }
      smcs = std::move(*l);
    }
    absl::StatusOr<std::optional<Json>> pod = InjectPodResources(req.object, ns_annotations, smcs);
    if (!pod.ok()) {
      SP_LOG(Warning).Msg("pod webhook: resource injection failed")
          .KV("namespace", req.namespace_)
          .KV("err", std::string(pod.status().message()));
      // controller-runtime answers a defaulter's plain error with Denied (403).
      return kw::Mutation::Denied(
          kw::Decision::Deny(403, base::FromAbsl(pod.status().message())));
    }
    if (!pod->has_value()) return kw::Mutation::Unchanged();
    return kw::Mutation::Patched(std::move(**pod));
  };
}

}  // namespace

Sources InformerSources(const kube::Informer<api::SpiderIPPool>* ippools,
                        const kube::Informer<api::SpiderSubnet>* subnets) {
  Sources s;
  s.ippools = StoreList(ippools);
  s.subnets = StoreList(subnets);
  return s;
}

void AddPodInjectInformerSources(const kube::Informer<api::SpiderMultusConfig>* smcs,
                                 const kube::Informer<api::Namespace>* namespaces,
                                 Sources* sources) {
  if (smcs != nullptr) sources->multus_configs = StoreList(smcs);
  if (namespaces != nullptr) {
    sources->namespace_annotations = [namespaces](const std::string& name)
        -> absl::StatusOr<std::map<std::string, std::string>> {
      auto ns = namespaces->store().Get(name);
      if (ns == nullptr) return std::map<std::string, std::string>();
      return ns->metadata.annotations;
    };
  }
}

void AddLiveSources(std::shared_ptr<kube::RestClient> rest, Sources* sources) {
  if (!sources->ippools_live) sources->ippools_live = LiveList<api::SpiderIPPool>(rest);
  if (!sources->subnets_live) sources->subnets_live = LiveList<api::SpiderSubnet>(rest);
  if (!sources->net_attach_def_owners) {
    sources->net_attach_def_owners =
        [client = kube::Client<api::NetworkAttachmentDefinition>(rest)](
            std::string_view ns, std::string_view name)
        -> absl::StatusOr<std::optional<std::vector<api::OwnerReference>>> {
      absl::StatusOr<api::NetworkAttachmentDefinition> nad = client.Get(ns, name);
      if (kube::IsNotFound(nad.status())) return std::nullopt;
      if (!nad.ok()) return nad.status();
      return nad->metadata.owner_references;
    };
  }
  if (!sources->multus_config_exists) {
    sources->multus_config_exists = [client = kube::Client<api::SpiderMultusConfig>(rest)](
                                        std::string_view ns,
                                        std::string_view name) -> absl::StatusOr<bool> {
      absl::StatusOr<api::SpiderMultusConfig> smc = client.Get(ns, name);
      if (kube::IsNotFound(smc.status())) return false;
      if (!smc.ok()) return smc.status();
      return true;
    };
  }
}

void RegisterHandlers(kw::AdmissionServer* server, const HandlerOptions& options) {
  auto o = std::make_shared<const HandlerOptions>(options);
  ConfigurationOptions co;
  co.enable_multus_config = options.enable_multus_config;
  co.enable_coordinator = options.enable_coordinator;
  co.enable_claim_parameter = options.enable_claim_parameter;
  const std::vector<Kind> mutating = MutatingKinds(co);
  const std::vector<Kind> validating = ValidatingKinds(co);

  Register<api::SpiderIPPool>(
      server, o,
      {.kind = Kind::kIPPool,
       .needs_lists = true,
       .mutate = validation::MutateIPPool,
       .create = validation::ValidateIPPoolCreate,
       .update = validation::ValidateIPPoolUpdate,
       .remove = validation::ValidateIPPoolDelete},
      Has(mutating, Kind::kIPPool), Has(validating, Kind::kIPPool));
  Register<api::SpiderSubnet>(
      server, o,
      {.kind = Kind::kSubnet,
       .needs_lists = true,
       .mutate = validation::MutateSubnet,
       .create = validation::ValidateSubnetCreate,
       .update = validation::ValidateSubnetUpdate,
       .remove = validation::ValidateSubnetDelete},
      Has(mutating, Kind::kSubnet), Has(validating, Kind::kSubnet));
  Register<api::SpiderReservedIP>(
      server, o,
      {.kind = Kind::kReservedIP,
       .mutate = validation::MutateReservedIP,
       .create = validation::ValidateReservedIPCreate,
       .update = validation::ValidateReservedIPUpdate},
      Has(mutating, Kind::kReservedIP), Has(validating, Kind::kReservedIP));
  Register<api::SpiderCoordinator>(
      server, o,
      {.kind = Kind::kCoordinator,
       .mutate = validation::MutateCoordinator,
       .create = validation::ValidateCoordinatorCreate,
       .update = validation::ValidateCoordinatorUpdate},
      Has(mutating, Kind::kCoordinator), Has(validating, Kind::kCoordinator));
  Register<api::SpiderMultusConfig>(
      server, o,
      {.kind = Kind::kMultusConfig,
       .mutate = [](api::SpiderMultusConfig* smc, const validation::Context&) -> absl::Status {
         multus::DefaultSpiderMultusConfig(smc);
         return absl::OkStatus();
       },
       .create = validation::ValidateMultusConfigCreate,
       .update = validation::ValidateMultusConfigUpdate},
      Has(mutating, Kind::kMultusConfig), Has(validating, Kind::kMultusConfig));
  // Upstream's SpiderClaimParameter defaulter was a no-op; only the validator is served.
  Register<api::SpiderClaimParameter>(
      server, o,
      {.kind = Kind::kClaimParameter,
       .create = validation::ValidateClaimParameterCreate,
       .update = validation::ValidateClaimParameterUpdate},
      false, Has(validating, Kind::kClaimParameter));
  if (options.enable_pod_resource_inject) {
    server->Mutating(std::string(kPodMutatePath), MakePodInjectHandler(o));
  }
}

}  // namespace spiderpool::op::webhook
