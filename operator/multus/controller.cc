#include "operator/multus/controller.h"

#include <optional>
#include <utility>

#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/errors.h"

namespace spiderpool::op::multus {

namespace {

namespace gen = ::spiderpool::multus;

std::string Key(std::string_view ns, std::string_view name) {
  return base::StrCat(ns, "/", name);
}

bool IsSpiderApiVersion(std::string_view api_version) {
  return api_version.size() > api::kSpiderGroup.size() &&
         api_version.substr(0, api::kSpiderGroup.size()) == api::kSpiderGroup &&
         api_version[api::kSpiderGroup.size()] == '/';
}

// The controller reference of `meta` if it names a SpiderMultusConfig, else nullptr.
const api::OwnerReference* SMCControllerRef(const api::ObjectMeta& meta) {
  const api::OwnerReference* ref = meta.ControllerRef();
  if (ref == nullptr || ref->kind != api::SpiderMultusConfig::Resource().kind ||
      !IsSpiderApiVersion(ref->api_version)) {
    return nullptr;
  }
  return ref;
}

std::string Describe(const api::OwnerReference& ref) {
  return base::StrCat(ref.kind, " ", ref.name, " (uid ", ref.uid, ")");
}

}  // namespace

MultusConfigController::MultusConfigController(ControllerOptions options,
                                               std::shared_ptr<kube::RestClient> rest,
                                               Informers informers,
                                               kube::EventRecorder* recorder)
    : options_(std::move(options)),
      rest_(std::move(rest)),
      informers_(informers),
      recorder_(recorder),
      smc_client_(rest_),
      nad_client_(rest_) {
  kube::ControllerOptions co;
  co.name = kControllerName;
  co.workers = options_.workers;
  co.clock = options_.clock;
  co.registry = options_.registry;
  co.cache_synced = {[this] { return informers_.smcs->HasSynced(); },
                     [this] { return informers_.nads->HasSynced(); }};
  controller_ = std::make_unique<kube::Controller>(std::move(co), this);
  RegisterHandlers();
}

MultusConfigController::~MultusConfigController() = default;

void MultusConfigController::RegisterHandlers() {
  informers_.nads->AddIndexer(kIndexNADByControllerSMC,
                              [](const api::NetworkAttachmentDefinition& nad) {
                                std::vector<std::string> out;
                                if (const auto* ref = SMCControllerRef(nad.metadata)) {
                                  out.push_back(Key(nad.metadata.namespace_, ref->name));
                                }
                                return out;
                              });
  informers_.smcs->AddIndexer(kIndexSMCByNADName, [](const api::SpiderMultusConfig& smc) {
    return std::vector<std::string>{Key(smc.metadata.namespace_, gen::NADName(smc))};
  });

  auto enqueue_smc = [this](const api::SpiderMultusConfig& smc) {
    controller_->Enqueue({smc.metadata.namespace_, smc.metadata.name});
  };
  informers_.smcs->AddHandlers(
      {.on_add = enqueue_smc,
       .on_update = [enqueue_smc](const api::SpiderMultusConfig&,
                                  const api::SpiderMultusConfig& smc) { enqueue_smc(smc); },
       .on_delete = enqueue_smc});
  informers_.nads->AddHandlers(
      {.on_add = [this](const api::NetworkAttachmentDefinition& nad) { EnqueueForNAD(nad); },
       .on_update =
           [this](const api::NetworkAttachmentDefinition& old_nad,
                  const api::NetworkAttachmentDefinition& nad) {
             const auto* old_ref = SMCControllerRef(old_nad.metadata);
             const auto* new_ref = SMCControllerRef(nad.metadata);
             if (old_ref != nullptr && (new_ref == nullptr || old_ref->uid != new_ref->uid)) {
               controller_->Enqueue({old_nad.metadata.namespace_, old_ref->name});
             }
             EnqueueForNAD(nad);
           },
       .on_delete = [this](const api::NetworkAttachmentDefinition& nad) { EnqueueForNAD(nad); }});
}

void MultusConfigController::EnqueueForNAD(const api::NetworkAttachmentDefinition& nad) {
  const std::string& ns = nad.metadata.namespace_;
  if (const auto* ref = SMCControllerRef(nad.metadata)) controller_->Enqueue({ns, ref->name});
  controller_->Enqueue({ns, nad.metadata.name});
  for (const auto& smc :
       informers_.smcs->store().ByIndex(kIndexSMCByNADName, Key(ns, nad.metadata.name))) {
    controller_->Enqueue({ns, smc->metadata.name});
  }
}

absl::Status MultusConfigController::Run(std::stop_token stop) {
  SP_LOG(Info).Msg("starting SpiderMultusConfig controller")
      .KV("workers", options_.workers)
      .KV("namespace", options_.namespace_.empty() ? "<all>" : options_.namespace_);
  return controller_->Run(stop);
}

absl::StatusOr<kube::ReconcileResult> MultusConfigController::Reconcile(
    const kube::ReconcileRequest& request, std::stop_token) {
  auto smc = informers_.smcs->store().Get(request.Key());
  if (smc == nullptr) {
    SP_RETURN_IF_ERROR(DeleteStale(request.namespace_, request.name, nullptr));
    return kube::ReconcileResult{};
  }
  if (smc->metadata.IsDeleting()) return kube::ReconcileResult{};
  return ReconcilePresent(*smc);
}

absl::StatusOr<kube::ReconcileResult> MultusConfigController::ReconcilePresent(
    const api::SpiderMultusConfig& smc) {
  auto desired = gen::BuildDesiredNAD(smc, options_.generate);
  if (!desired.ok()) {
    // An invalid SMC (the webhook normally rejects it): report once per change, no requeue.
    const std::string msg =
        base::StrCat("failed to generate net-attach-def ", smc.metadata.namespace_, "/",
                     gen::NADName(smc), ": ", base::FromAbsl(desired.status().message()));
    SP_LOG(Warning).Msg("cannot generate the net-attach-def of a SpiderMultusConfig")
        .KV("controller", kControllerName)
        .KV("smc", Key(smc.metadata.namespace_, smc.metadata.name))
        .KV("err", msg);
    recorder_->Event(api::MakeObjectReference(smc), "Warning", kReasonGenerateFailed, msg);
    return kube::ReconcileResult{};
  }
  absl::Status synced = Sync(smc, *desired);
  if (kube::IsInvalid(synced)) {
    // The server refuses the object (e.g. a cr-name that is no DNS subdomain): permanent
    // until the SMC changes, like a generation error.
    const std::string msg =
        base::StrCat("the API server rejected net-attach-def ", desired->metadata.namespace_,
                     "/", desired->metadata.name, ": ", base::FromAbsl(synced.message()));
    SP_LOG(Warning).Msg("the API server rejected the net-attach-def of a SpiderMultusConfig")
        .KV("controller", kControllerName)
        .KV("smc", Key(smc.metadata.namespace_, smc.metadata.name))
        .KV("err", msg);
    recorder_->Event(api::MakeObjectReference(smc), "Warning", kReasonNADRejected, msg);
  } else {
    SP_RETURN_IF_ERROR(synced);
  }
  SP_RETURN_IF_ERROR(DeleteStale(smc.metadata.namespace_, smc.metadata.name, &smc));
  return kube::ReconcileResult{};
}

absl::StatusOr<bool> MultusConfigController::OwnerAlive(const std::string& ns,
                                                        const api::OwnerReference& ref) const {
  auto cached = informers_.smcs->store().Get(Key(ns, ref.name));
  if (cached != nullptr && cached->metadata.uid == ref.uid) return true;
  // The cache may lag behind the server: ask it before calling the owner gone.
  auto live = smc_client_.Get(ns, ref.name);
  if (kube::IsNotFound(live.status())) return false;
  if (!live.ok()) return live.status();
  return live->metadata.uid == ref.uid;
}

absl::Status MultusConfigController::Sync(const api::SpiderMultusConfig& smc,
                                          const api::NetworkAttachmentDefinition& desired) {
  const std::string& ns = desired.metadata.namespace_;
  const std::string& name = desired.metadata.name;
  const std::string smc_key = Key(smc.metadata.namespace_, smc.metadata.name);
  std::optional<api::NetworkAttachmentDefinition> actual;
  if (auto cached = informers_.nads->store().Get(Key(ns, name))) actual = *cached;
  bool first = true;

  return kube::RetryOnConflict(options_.conflict_retry, [&]() -> absl::Status {
    if (!first) {  // after a conflict: the server's current object
      auto live = nad_client_.Get(ns, name);
      if (kube::IsNotFound(live.status())) {
        actual.reset();
      } else if (!live.ok()) {
        return live.status();
      } else {
        actual = std::move(*live);
      }
    }
    first = false;

    if (!actual.has_value()) {
      auto created = nad_client_.Create(desired);
      if (created.ok()) {
        SP_LOG(Info).Msg("created net-attach-def")
            .KV("controller", kControllerName)
            .KV("smc", smc_key)
            .KV("nad", Key(ns, name));
        return absl::OkStatus();
      }
      if (!kube::IsAlreadyExists(created.status())) return created.status();
      // Created by someone else since the cache saw it: continue with the live object.
      auto live = nad_client_.Get(ns, name);
      if (!live.ok()) return live.status();
      actual = std::move(*live);
    }

    // Being deleted: its deletion event enqueues this SMC again, which then recreates it.
    if (actual->metadata.IsDeleting()) return absl::OkStatus();

    const api::OwnerReference* ref = actual->metadata.ControllerRef();
    const bool ours = ref != nullptr && ref->uid == smc.metadata.uid;
    bool take_over = false;
    if (!ours && ref != nullptr && IsSpiderApiVersion(ref->api_version)) {
      bool other_alive = true;  // Spider kinds other than SMC cannot be checked: keep off.
      if (SMCControllerRef(actual->metadata) != nullptr) {
        SP_ASSIGN_OR_RETURN(other_alive, OwnerAlive(ns, *ref));
      }
      if (other_alive) {
        const std::string msg = base::StrCat(
            "net-attach-def ", ns, "/", name, " is controlled by ", Describe(*ref),
            ", not by this SpiderMultusConfig; it is left unchanged");
        SP_LOG(Warning).Msg("net-attach-def belongs to another owner; not touching it")
            .KV("controller", kControllerName)
            .KV("smc", smc_key)
            .KV("nad", Key(ns, name))
            .KV("owner", Describe(*ref));
        recorder_->Event(api::MakeObjectReference(smc), "Warning", kReasonNADOwnedByOther, msg);
        return absl::OkStatus();
      }
      take_over = true;  // its SpiderMultusConfig is gone
    } else if (!ours) {
      take_over = true;  // no controller, or a controller outside spiderpool (as upstream)
    }

    if (!take_over && !gen::NADNeedsUpdate(desired, *actual)) return absl::OkStatus();
    api::NetworkAttachmentDefinition update = *actual;
    gen::ApplyDesiredNAD(desired, &update);
    auto updated = nad_client_.Update(update);
    if (!updated.ok()) return updated.status();
    SP_LOG(Info).Msg(take_over ? "took over net-attach-def" : "repaired net-attach-def")
        .KV("controller", kControllerName)
        .KV("smc", smc_key)
        .KV("nad", Key(ns, name));
    return absl::OkStatus();
  });
}

absl::Status MultusConfigController::DeleteStale(const std::string& ns, const std::string& name,
                                                 const api::SpiderMultusConfig* current) {
  const std::string want = current != nullptr ? gen::NADName(*current) : std::string();
  for (const auto& nad : informers_.nads->store().ByIndex(kIndexNADByControllerSMC, Key(ns, name))) {
    const api::OwnerReference* ref = SMCControllerRef(nad->metadata);
    if (ref == nullptr || nad->metadata.IsDeleting()) continue;
    // The NAD the SMC wants is Sync's business (kept, repaired or taken over).
    if (current != nullptr && nad->metadata.name == want) continue;
    const bool renamed = current != nullptr && ref->uid == current->metadata.uid;
    if (!renamed) {
      SP_ASSIGN_OR_RETURN(bool alive, OwnerAlive(ns, *ref));
      if (alive) continue;
    }
    kube::DeleteOptions del;
    del.precondition_uid = nad->metadata.uid;
    del.precondition_resource_version = nad->metadata.resource_version;
    absl::Status s = nad_client_.Delete(ns, nad->metadata.name, del);
    if (kube::IsNotFound(s)) continue;
    if (kube::IsConflict(s)) {
      // Changed since the cache saw it (e.g. taken over); its update event brings us back.
      SP_LOG(Info).Msg("net-attach-def changed before its deletion; re-checking later")
          .KV("controller", kControllerName)
          .KV("nad", Key(ns, nad->metadata.name));
      continue;
    }
    SP_RETURN_IF_ERROR(s);
    SP_LOG(Info).Msg(renamed ? "deleted the net-attach-def of a former cr-name"
                             : "deleted the net-attach-def of a deleted SpiderMultusConfig")
        .KV("controller", kControllerName)
        .KV("smc", Key(ns, name))
        .KV("nad", Key(ns, nad->metadata.name));
  }
  return absl::OkStatus();
}

// ---- AddToManager --------------------------------------------------------------------------

namespace {

// Everything AddToManager creates; shared by the runnables it adds (members are destroyed in
// reverse order: controller, recorder, informers).
struct Bundle {
  std::unique_ptr<kube::Informer<api::SpiderMultusConfig>> smcs;
  std::unique_ptr<kube::Informer<api::NetworkAttachmentDefinition>> nads;
  std::unique_ptr<kube::EventRecorder> recorder;
  std::unique_ptr<MultusConfigController> controller;
};


}  // namespace

absl::StatusOr<MultusConfigController*> AddToManager(kube::Manager* manager,
                                                     std::shared_ptr<kube::RestClient> rest,
                                                     ControllerOptions options) {
  if (manager == nullptr || rest == nullptr) {
    return absl::InvalidArgumentError("AddToManager: manager and rest must be set");
  }
  auto b = std::make_shared<Bundle>();
  kube::InformerOptions smc_opts{.namespace_ = options.namespace_,
                                 .resync_period = options.resync_period,
                                 .registry = options.registry};
  kube::InformerOptions nad_opts{.namespace_ = options.namespace_, .registry = options.registry};
  b->smcs = std::make_unique<kube::Informer<api::SpiderMultusConfig>>(rest, smc_opts);
  b->nads = std::make_unique<kube::Informer<api::NetworkAttachmentDefinition>>(rest, nad_opts);
  kube::EventRecorder* recorder = options.recorder;
  if (recorder == nullptr) {
    b->recorder = std::make_unique<kube::EventRecorder>(
        rest, kube::EventRecorderOptions{.component = "spiderpool-controller",
                                         .host = options.event_host,
                                         .clock = options.clock,
                                         .registry = options.registry});
    recorder = b->recorder.get();
  }
  b->controller = std::make_unique<MultusConfigController>(
      std::move(options), std::move(rest), Informers{.smcs = b->smcs.get(), .nads = b->nads.get()},
      recorder);
  MultusConfigController* out = b->controller.get();

  manager->Add(std::make_unique<kube::FuncRunnable>(
      "spidermultusconfig-informer", /*needs_leader=*/false, [b](std::stop_token s) {
        b->smcs->Run(s);
        return absl::OkStatus();
      }));
  manager->Add(std::make_unique<kube::FuncRunnable>(
      "networkattachmentdefinition-informer", /*needs_leader=*/false, [b](std::stop_token s) {
        b->nads->Run(s);
        return absl::OkStatus();
      }));
  // The controller runs on the leader only; the runnable keeps the whole bundle alive.
  manager->Add(std::make_unique<kube::FuncRunnable>(
      b->controller->Name(), /*needs_leader=*/true,
      [b](std::stop_token stop) { return b->controller->Run(stop); }));
  return out;
}

}  // namespace spiderpool::op::multus
