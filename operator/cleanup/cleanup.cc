#include "operator/cleanup/cleanup.h"

#include <optional>
#include <utility>

#include "absl/strings/str_join.h"

#include "api/admissionregistration.h"
#include "api/apps.h"
#include "api/core.h"
#include "api/labels.h"
#include "api/spider.h"
#include "base/backoff.h"
#include "base/json.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"

namespace spiderpool::op::cleanup {

namespace {

std::string ObjectName(const api::ResourceInfo& r, const base::Json& obj) {
  const base::Json& md = obj.value("metadata", base::Json::object());
  std::string ns = md.value("namespace", "");
  std::string name = md.value("name", "");
  return ns.empty() ? base::StrCat(r.kind, "/", name) : base::StrCat(r.kind, "/", ns, "/", name);
}

std::vector<std::string> Finalizers(const base::Json& obj) {
  std::vector<std::string> out;
  const auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return out;
  const auto f = md->find("finalizers");
  if (f == md->end() || !f->is_array()) return out;
  for (const base::Json& v : *f) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

bool HasOurFinalizer(const base::Json& obj) {
  for (const std::string& f : Finalizers(obj)) {
    if (f == api::kSpiderFinalizer) return true;
  }
  return false;
}

// Step 1a: the controller's Deployment to 0 replicas. Returns the selector of its pods, or
// nullopt when there is no such Deployment.
absl::StatusOr<std::optional<api::Selector>> ScaleDown(
    const std::shared_ptr<kube::RestClient>& rest, const Options& o, Result* result) {
  if (o.controller_deployment.empty()) return std::optional<api::Selector>();
  const std::string what = base::StrCat("Deployment ", o.namespace_, "/", o.controller_deployment);
  kube::DynamicClient deployments(rest, api::Deployment::Resource());
  absl::StatusOr<base::Json> dep = deployments.Get(o.namespace_, o.controller_deployment);
  if (kube::IsNotFound(dep.status())) {
    SP_LOG(Info).Msg("controller Deployment not found: nothing to stop").KV("deployment", what);
    return std::optional<api::Selector>();
  }
  if (!dep.ok()) return base::Annotate(dep.status(), base::StrCat("getting ", what));
  const base::Json spec = dep->value("spec", base::Json::object());
  absl::StatusOr<api::Selector> selector =
      api::Selector::FromJson(spec.value("selector", base::Json(nullptr)));
  if (!selector.ok() || selector->Empty() || selector->MatchesNothing()) {
    return absl::FailedPreconditionError(
        base::StrCat(what, ": spec.selector selects no definite set of pods"));
  }
  if (!spec.contains("replicas") || spec["replicas"] != 0) {
    absl::StatusOr<base::Json> patched =
        deployments.Patch(o.namespace_, o.controller_deployment, kube::PatchType::kMerge,
                          base::Json{{"spec", {{"replicas", 0}}}});
    if (!patched.ok() && !kube::IsNotFound(patched.status())) {
      return base::Annotate(patched.status(), base::StrCat("scaling ", what, " to 0"));
    }
  }
  result->controller_scaled_down = true;
  SP_LOG(Info).Msg("controller scaled to 0").KV("deployment", what)
      .KV("selector", selector->String());
  return std::optional<api::Selector>(*std::move(selector));
}

// Step 1c: wait until no pod of the controller exists (terminating ones included).
absl::Status WaitForPodsGone(const std::shared_ptr<kube::RestClient>& rest, const Options& o,
                             const api::Selector& selector) {
  kube::DynamicClient pods(rest, api::Pod::Resource());
  const absl::Time deadline = o.clock->Now() + o.timeout;
  while (true) {
    absl::StatusOr<base::Json> list = pods.List(o.namespace_, {.label_selector = selector.String()});
    if (!list.ok()) {
      return base::Annotate(list.status(), base::StrCat("listing the controller's pods in ",
                                                        o.namespace_));
    }
    std::vector<std::string> left;
    for (const base::Json& p : list->value("items", base::Json::array())) {
      left.push_back(p["metadata"].value("name", ""));
    }
    if (left.empty()) return absl::OkStatus();
    if (o.clock->Now() >= deadline) {
      return absl::DeadlineExceededError(base::StrCat(
          "the pods of Deployment ", o.namespace_, "/", o.controller_deployment,
          " are still there after ", absl::FormatDuration(o.timeout), ": ",
          absl::StrJoin(left, ", "), "; no finalizer was removed"));
    }
    o.clock->SleepFor(o.poll_interval);
  }
}

// Step 2.
template <typename T>
absl::Status DeleteWebhookConfiguration(const std::shared_ptr<kube::RestClient>& rest,
                                        const std::string& name, Result* result) {
  kube::DynamicClient client(rest, T::Resource());
  absl::Status s = client.Delete("", name);
  if (kube::IsNotFound(s)) return absl::OkStatus();
  if (!s.ok()) {
    return base::Annotate(s, base::StrCat("deleting ", T::Resource().kind, " ", name));
  }
  result->webhook_configurations_deleted.push_back(base::StrCat(T::Resource().kind, "/", name));
  SP_LOG(Info).Msg("webhook configuration deleted").KV("kind", T::Resource().kind).KV("name", name);
  return absl::OkStatus();
}

// Step 3 for one kind; appends failures to `errors`.
template <typename T>
void ReleaseFinalizers(const std::shared_ptr<kube::RestClient>& rest, const Options& o,
                       Result* result, std::vector<std::string>* errors) {
  const api::ResourceInfo& r = T::Resource();
  kube::DynamicClient client(rest, r);
  absl::StatusOr<base::Json> list = client.ListAll("", {.label_selector = o.label_selector});
  if (kube::IsNotFound(list.status())) return;  // CRD not installed
  if (!list.ok()) {
    errors->push_back(base::StrCat("listing ", r.GroupResource(), ": ",
                                   base::FromAbsl(list.status().message())));
    return;
  }
  for (const base::Json& item : list->value("items", base::Json::array())) {
    if (!HasOurFinalizer(item)) continue;
    const std::string ns = item["metadata"].value("namespace", "");
    const std::string name = item["metadata"].value("name", "");
    bool removed = false;
    absl::Status s = kube::RetryOnConflict(
        kube::DefaultRetry(),
        [&]() -> absl::Status {
          absl::StatusOr<base::Json> fresh = client.Get(ns, name);
          if (kube::IsNotFound(fresh.status())) return absl::OkStatus();
          SP_RETURN_IF_ERROR(fresh.status());
          if (!HasOurFinalizer(*fresh)) return absl::OkStatus();
          base::Json keep = base::Json::array();
          for (const std::string& f : Finalizers(*fresh)) {
            if (f != api::kSpiderFinalizer) keep.push_back(f);
          }
          (*fresh)["metadata"]["finalizers"] = std::move(keep);
          absl::StatusOr<base::Json> updated = client.Update(*fresh);
          if (kube::IsNotFound(updated.status())) return absl::OkStatus();
          SP_RETURN_IF_ERROR(updated.status());
          removed = true;
          return absl::OkStatus();
        },
        *o.clock);
    if (!s.ok()) {
      errors->push_back(base::StrCat("removing the finalizer of ", ObjectName(r, item), ": ",
                                     base::FromAbsl(s.message())));
      continue;
    }
    if (removed) {
      result->finalizers_removed.push_back(ObjectName(r, item));
      SP_LOG(Info).Msg("finalizer removed").KV("object", ObjectName(r, item));
    }
  }
}

}  // namespace

absl::StatusOr<Result> Run(const std::shared_ptr<kube::RestClient>& rest, const Options& o) {
  if (!o.label_selector.empty()) {
    SP_RETURN_IF_ERROR(base::Annotate(api::Selector::Parse(o.label_selector).status(),
                                      "cleanup label selector"));
  }
  Result result;
  // The webhook configurations go before the wait: if the controller does not stop in time,
  // no admission webhook is left pointing at a controller that is scaled to 0.
  SP_ASSIGN_OR_RETURN(std::optional<api::Selector> controller_pods, ScaleDown(rest, o, &result));
  if (!o.webhook_configuration.empty()) {
    SP_RETURN_IF_ERROR(DeleteWebhookConfiguration<api::MutatingWebhookConfiguration>(
        rest, o.webhook_configuration, &result));
    SP_RETURN_IF_ERROR(DeleteWebhookConfiguration<api::ValidatingWebhookConfiguration>(
        rest, o.webhook_configuration, &result));
  }
  if (controller_pods) SP_RETURN_IF_ERROR(WaitForPodsGone(rest, o, *controller_pods));
  std::vector<std::string> errors;
  ReleaseFinalizers<api::SpiderIPPool>(rest, o, &result, &errors);
  ReleaseFinalizers<api::SpiderSubnet>(rest, o, &result, &errors);
  ReleaseFinalizers<api::SpiderReservedIP>(rest, o, &result, &errors);
  ReleaseFinalizers<api::SpiderMultusConfig>(rest, o, &result, &errors);
  ReleaseFinalizers<api::SpiderCoordinator>(rest, o, &result, &errors);
  ReleaseFinalizers<api::SpiderClaimParameter>(rest, o, &result, &errors);
  // Last: the agents (still running during the hook) write endpoints with the finalizer.
  ReleaseFinalizers<api::SpiderEndpoint>(rest, o, &result, &errors);
  if (!errors.empty()) {
    return absl::UnavailableError(base::StrCat(errors.size(), " object(s) not released: ",
                                               absl::StrJoin(errors, "; ")));
  }
  return result;
}

}  // namespace spiderpool::op::cleanup
