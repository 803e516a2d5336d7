#include "kube/rest/client.h"

#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::kube {
namespace {

using base::Json;

std::string MetaString(const Json& object, std::string_view field) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto it = meta->find(field);
  if (it == meta->end() || !it->is_string()) return "";
  return it->get<std::string>();
}

void AddListQuery(const ListOptions& o, QueryParams* q) {
  if (!o.label_selector.empty()) q->emplace_back("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) q->emplace_back("fieldSelector", o.field_selector);
  if (o.limit > 0) q->emplace_back("limit", std::to_string(o.limit));
  if (!o.continue_token.empty()) q->emplace_back("continue", o.continue_token);
  if (!o.resource_version.empty()) q->emplace_back("resourceVersion", o.resource_version);
  if (!o.resource_version_match.empty()) {
    q->emplace_back("resourceVersionMatch", o.resource_version_match);
  }
  if (o.timeout_seconds > 0) q->emplace_back("timeoutSeconds", std::to_string(o.timeout_seconds));
}

void AddWriteQuery(bool dry_run, const std::string& field_manager, QueryParams* q) {
  if (dry_run) q->emplace_back("dryRun", "All");
  if (!field_manager.empty()) q->emplace_back("fieldManager", field_manager);
}

absl::StatusOr<Json> ParseBody(const Response& r, std::string_view what) {
  absl::StatusOr<Json> j = base::ParseJson(r.body);
  if (!j.ok()) {
    return absl::DataLossError(base::StrCat(what, ": cannot parse the server's answer: ",
                                            base::FromAbsl(j.status().message())));
  }
  if (!j->is_object()) {
    return absl::DataLossError(base::StrCat(what, ": the server's answer is not an object"));
  }
  return j;
}

}  // namespace

Json DeleteOptions::ToJson() const {
  Json j = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!precondition_uid.empty() || !precondition_resource_version.empty()) {
    Json pre = Json::object();
    if (!precondition_uid.empty()) pre["uid"] = precondition_uid;
    if (!precondition_resource_version.empty()) {
      pre["resourceVersion"] = precondition_resource_version;
    }
    j["preconditions"] = pre;
  }
  if (!propagation_policy.empty()) j["propagationPolicy"] = propagation_policy;
  if (grace_period_seconds.has_value()) j["gracePeriodSeconds"] = *grace_period_seconds;
  if (dry_run) j["dryRun"] = Json::array({"All"});
  return j;
}

std::string_view PatchContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge: return "application/merge-patch+json";
    case PatchType::kJson: return "application/json-patch+json";
    case PatchType::kStrategicMerge: return "application/strategic-merge-patch+json";
    case PatchType::kApply: return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

void SetTypeMeta(const api::ResourceInfo& resource, Json* object) {
  if (!object->is_object()) return;
  auto api_version = object->find("apiVersion");
  if (api_version == object->end() || !api_version->is_string() ||
      api_version->get_ref<const std::string&>().empty()) {
    (*object)["apiVersion"] = resource.ApiVersion();
  }
  auto kind = object->find("kind");
  if (kind == object->end() || !kind->is_string() || kind->get_ref<const std::string&>().empty()) {
    (*object)["kind"] = resource.kind;
  }
}

DynamicClient::DynamicClient(std::shared_ptr<RestClient> rest, api::ResourceInfo resource)
    : rest_(std::move(rest)), resource_(std::move(resource)) {}

absl::StatusOr<std::string> DynamicClient::ObjectPath(const Json& object,
                                                      std::string_view subresource,
                                                      bool with_name) const {
  if (!object.is_object()) {
    return absl::InvalidArgumentError(base::StrCat(resource_.kind, ": object must be a JSON object"));
  }
  std::string ns = MetaString(object, "namespace");
  std::string name = MetaString(object, "name");
  if (resource_.namespaced && ns.empty()) {
    return absl::InvalidArgumentError(
        base::StrCat(resource_.kind, " ", name, ": metadata.namespace is required"));
  }
  if (with_name && name.empty()) {
    return absl::InvalidArgumentError(base::StrCat(resource_.kind, ": metadata.name is required"));
  }
  return ResourcePath(resource_, ns, with_name ? name : "", subresource);
}

absl::StatusOr<Json> DynamicClient::Get(std::string_view ns, std::string_view name) const {
  if (name.empty()) return absl::InvalidArgumentError("Get: name is required");
  Request r;
  r.path = ResourcePath(resource_, ns, name);
  SP_ASSIGN_OR_RETURN(Response resp, rest_->Do(r));
  return ParseBody(resp, r.path);
}

absl::StatusOr<std::optional<api::ObjectMeta>> DynamicClient::GetMetadata(
    std::string_view ns, std::string_view name) const {
  absl::StatusOr<Json> obj = Get(ns, name);
  if (!obj.ok()) {
    if (kube::IsNotFound(obj.status())) return std::optional<api::ObjectMeta>();
    return obj.status();
  }
  api::DecodeErrors errs;
  api::ObjectMeta meta = api::DecodeInto<api::ObjectMeta>((*obj).value("metadata", Json::object()), &errs);
  if (!errs.ok()) return errs.ToStatus(base::StrCat(resource_.kind, " ", ns, "/", name, " metadata"));
  return std::optional<api::ObjectMeta>(std::move(meta));
}

absl::StatusOr<Json> DynamicClient::List(std::string_view ns, const ListOptions& options) const {
  Request r;
  r.path = ResourcePath(resource_, ns);
  AddListQuery(options, &r.query);
  if (options.metadata_only) r.headers.emplace_back("Accept", kMetadataListAccept);
  SP_ASSIGN_OR_RETURN(Response resp, rest_->Do(r));
  return ParseBody(resp, r.path);
}

absl::StatusOr<Json> DynamicClient::ListAll(std::string_view ns, ListOptions options) const {
  if (options.limit <= 0) options.limit = 500;
  options.continue_token.clear();
  constexpr int kMaxRestarts = 3;
  for (int restart = 0;; ++restart) {
    ListOptions page_options = options;
    if (restart > kMaxRestarts) page_options.limit = 0;  // last resort: one big list
    Json result;
    Json items = Json::array();
    bool expired = false;
    while (true) {
      absl::StatusOr<Json> page = List(ns, page_options);
      if (!page.ok()) {
        if (kube::IsGone(page.status()) && !page_options.continue_token.empty()) {
          SP_LOG(Info).Msg("list continue token expired, relisting")
              .KV("resource", resource_.GroupResource());
          expired = true;
          break;
        }
        return page.status();
      }
      if (result.is_null()) result = *page;
      auto page_items = page->find("items");
      if (page_items != page->end() && page_items->is_array()) {
        for (Json& item : *page_items) items.push_back(std::move(item));
      }
      std::string next;
      if (auto meta = page->find("metadata"); meta != page->end() && meta->is_object()) {
        if (auto c = meta->find("continue"); c != meta->end() && c->is_string()) {
          next = c->get<std::string>();
        }
      }
      if (next.empty()) break;
      page_options.continue_token = next;
      // A continued list must not repeat the resourceVersion (the token carries it).
      page_options.resource_version.clear();
      page_options.resource_version_match.clear();
    }
    if (expired) continue;
    result["items"] = std::move(items);
    if (auto meta = result.find("metadata"); meta != result.end() && meta->is_object()) {
      meta->erase("continue");
      meta->erase("remainingItemCount");
    }
    return result;
  }
}

absl::StatusOr<Json> DynamicClient::Write(std::string_view method, const Json& object,
                                          std::string_view subresource, bool with_name,
                                          const CreateOptions& options) const {
  SP_ASSIGN_OR_RETURN(std::string path, ObjectPath(object, subresource, with_name));
  Json body = object;
  SetTypeMeta(resource_, &body);
  Request r;
  r.method = std::string(method);
  r.path = path;
  r.body = base::DumpJson(body);
  AddWriteQuery(options.dry_run, options.field_manager, &r.query);
  SP_ASSIGN_OR_RETURN(Response resp, rest_->Do(r));
  return ParseBody(resp, r.path);
}

absl::StatusOr<Json> DynamicClient::Create(const Json& object, const CreateOptions& options) const {
  return Write("POST", object, "", /*with_name=*/false, options);
}

absl::StatusOr<Json> DynamicClient::Update(const Json& object, const UpdateOptions& options) const {
  return Write("PUT", object, "", /*with_name=*/true, options);
}

absl::StatusOr<Json> DynamicClient::UpdateStatus(const Json& object,
                                                 const UpdateOptions& options) const {
  return Write("PUT", object, "status", /*with_name=*/true, options);
}

absl::Status DynamicClient::Delete(std::string_view ns, std::string_view name,
                                   const DeleteOptions& options) const {
  if (name.empty()) return absl::InvalidArgumentError("Delete: name is required");
  if (resource_.namespaced && ns.empty()) {
    return absl::InvalidArgumentError(base::StrCat("Delete ", resource_.kind, " ", name,
                                                   ": namespace is required"));
  }
  Request r;
  r.method = "DELETE";
  r.path = ResourcePath(resource_, ns, name);
  r.body = base::DumpJson(options.ToJson());
  return rest_->Do(r).status();
}

absl::Status DynamicClient::DeleteCollection(std::string_view ns, const ListOptions& selection,
                                             const DeleteOptions& options) const {
  Request r;
  r.method = "DELETE";
  r.path = ResourcePath(resource_, ns);
  AddListQuery(selection, &r.query);
  r.body = base::DumpJson(options.ToJson());
  return rest_->Do(r).status();
}

absl::StatusOr<Json> DynamicClient::Patch(std::string_view ns, std::string_view name,
                                          PatchType type, const Json& patch,
                                          const PatchOptions& options) const {
  if (name.empty()) return absl::InvalidArgumentError("Patch: name is required");
  if (resource_.namespaced && ns.empty()) {
    return absl::InvalidArgumentError(base::StrCat("Patch ", resource_.kind, " ", name,
                                                   ": namespace is required"));
  }
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return absl::InvalidArgumentError("server-side apply needs a field manager");
  }
  Request r;
  r.method = "PATCH";
  r.path = ResourcePath(resource_, ns, name, options.subresource);
  r.content_type = std::string(PatchContentType(type));
  r.body = base::DumpJson(patch);
  AddWriteQuery(options.dry_run, options.field_manager, &r.query);
  if (options.force) r.query.emplace_back("force", "true");
  SP_ASSIGN_OR_RETURN(Response resp, rest_->Do(r));
  return ParseBody(resp, r.path);
}

absl::Status DynamicClient::Watch(std::string_view ns, const WatchOptions& options,
                                  const WatchCallback& callback, std::stop_token stop) const {
  return rest_->Watch(resource_, ns, options, callback, std::move(stop));
}

base::BackoffPolicy DefaultRetry() {
  base::BackoffPolicy p;
  p.initial = absl::Milliseconds(10);
  p.max = absl::Seconds(30);
  p.factor = 1.0;
  p.jitter = 0.1;
  p.steps = 5;
  return p;
}

base::BackoffPolicy DefaultBackoff() {
  base::BackoffPolicy p;
  p.initial = absl::Milliseconds(10);
  p.max = absl::Seconds(30);
  p.factor = 5.0;
  p.jitter = 0.1;
  p.steps = 4;
  return p;
}

absl::Status RetryOnError(const base::BackoffPolicy& policy,
                          const std::function<bool(const absl::Status&)>& retriable,
                          const std::function<absl::Status()>& fn, base::Clock& clock) {
  int steps = policy.steps > 0 ? policy.steps : 5;
  base::BackoffPolicy unlimited = policy;
  unlimited.steps = 0;
  base::Backoff backoff(unlimited);
  for (int call = 1;; ++call) {
    absl::Status s = fn();
    if (s.ok() || !retriable(s) || call >= steps) return s;
    clock.SleepFor(backoff.Next());
  }
}

absl::Status RetryOnConflict(const base::BackoffPolicy& policy,
                             const std::function<absl::Status()>& fn, base::Clock& clock) {
  return RetryOnError(policy, IsConflict, fn, clock);
}

}  // namespace spiderpool::kube
