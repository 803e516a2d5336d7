// Built-in validation, apps/v1 and batch/v1 kinds (see builtin_validation_internal.h and the rules' sources in
// builtin_validation.cc). Moved unchanged from builtin_validation.cc.
#include "kube/testing/builtin_validation_internal.h"

namespace spiderpool::kube::testing::internal::builtin {

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
    if (!name.empty() && api::IsDns1123Subdomain(name).empty()) {
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

}  // namespace spiderpool::kube::testing::internal::builtin
