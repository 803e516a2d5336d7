#pragma once
// admission.k8s.io/v1 AdmissionReview: what kube-apiserver POSTs to a webhook and what the
// webhook answers. Field names follow k8s.io/api/admission/v1 exactly. The objects travel raw
// (base::Json): the webhook decodes them with the kind's own codec, so decode errors carry the
// kind's field paths.
//
//   auto review = api::DecodeJson<api::AdmissionReview>(body);
//   ...
//   api::AdmissionReview out = api::MakeResponseReview(*review, api::Allow(uid));
//   return base::DumpJson(api::Encode(out));

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/codec.h"
#include "api/meta.h"

namespace spiderpool::api {

inline constexpr std::string_view kAdmissionApiVersion = "admission.k8s.io/v1";
inline constexpr std::string_view kAdmissionReviewKind = "AdmissionReview";
inline constexpr std::string_view kPatchTypeJSONPatch = "JSONPatch";

inline constexpr std::string_view kOperationCreate = "CREATE";
inline constexpr std::string_view kOperationUpdate = "UPDATE";
inline constexpr std::string_view kOperationDelete = "DELETE";
inline constexpr std::string_view kOperationConnect = "CONNECT";

struct GroupVersionKind {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
  template <typename V>
  void Visit(V& v) {
    v.Field("group", group);
    v.Field("version", version);
    v.Field("kind", kind);
  }
  friend bool operator==(const GroupVersionKind&, const GroupVersionKind&) = default;
};

struct GroupVersionResource {
  std::string group;
  std::string version;
  std::string resource;  // plural
  template <typename V>
  void Visit(V& v) {
    v.Field("group", group);
    v.Field("version", version);
    v.Field("resource", resource);
  }
  friend bool operator==(const GroupVersionResource&, const GroupVersionResource&) = default;
};

struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  template <typename V>
  void Visit(V& v) {
    v.Field("username", username);
    v.Field("uid", uid);
    v.Field("groups", groups);
    v.Field("extra", extra);
  }
};

struct AdmissionRequest {
  std::string uid;
  GroupVersionKind kind;
  GroupVersionResource resource;
  std::string sub_resource;
  std::optional<GroupVersionKind> request_kind;
  std::optional<GroupVersionResource> request_resource;
  std::string request_sub_resource;
  std::string name;
  std::string namespace_;
  std::string operation;  // CREATE | UPDATE | DELETE | CONNECT
  UserInfo user_info;
  Json object;      // null for DELETE
  Json old_object;  // set for UPDATE and DELETE
  std::optional<bool> dry_run;
  Json options;  // CreateOptions / UpdateOptions / DeleteOptions, raw
  template <typename V>
  void Visit(V& v) {
    v.Field("uid", uid, {.required = true});
    v.Field("kind", kind, {.required = true});
    v.Field("resource", resource, {.required = true});
    v.Field("subResource", sub_resource);
    v.Field("requestKind", request_kind);
    v.Field("requestResource", request_resource);
    v.Field("requestSubResource", request_sub_resource);
    v.Field("name", name);
    v.Field("namespace", namespace_);
    v.Field("operation", operation,
            {.required = true, .enum_values = {"CREATE", "UPDATE", "DELETE", "CONNECT"}});
    v.Field("userInfo", user_info, {.required = true});
    v.Field("object", object);
    v.Field("oldObject", old_object);
    v.Field("dryRun", dry_run);
    v.Field("options", options);
  }
};

struct AdmissionResponse {
  std::string uid;
  bool allowed = false;
  std::optional<Status> result;
  std::optional<std::string> patch;  // base64 of the JSON patch text
  std::optional<std::string> patch_type;
  std::map<std::string, std::string> audit_annotations;
  std::vector<std::string> warnings;
  template <typename V>
  void Visit(V& v) {
    v.Field("uid", uid, {.required = true});
    v.Field("allowed", allowed, {.required = true});
    v.Field("status", result);
    v.Field("patch", patch);
    v.Field("patchType", patch_type, {.enum_values = {"JSONPatch"}});
    v.Field("auditAnnotations", audit_annotations);
    v.Field("warnings", warnings);
  }
};

struct AdmissionReview {
  std::string api_version;
  std::string kind;
  std::optional<AdmissionRequest> request;
  std::optional<AdmissionResponse> response;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("request", request);
    v.Field("response", response);
  }
};

// Allowed, no patch.
AdmissionResponse Allow(std::string_view uid);
// Denied with a Failure status: code (e.g. 403, 422), message, and reason (defaults from the
// code: 400 BadRequest, 403 Forbidden, 404 NotFound, 409 AlreadyExists/Conflict, 422 Invalid,
// 500 InternalError).
AdmissionResponse Deny(std::string_view uid, int32_t code, std::string_view message,
                       std::string_view reason = "");
// Denied with a full Status (e.g. an Invalid status carrying per-field causes).
AdmissionResponse DenyWithStatus(std::string_view uid, Status status);
// Denied as 422 Invalid for a kind, listing every field error as a cause and in the message:
//   SpiderIPPool.spiderpool.spidernet.io "pool1" is invalid: spec.ips[2]: "x" is not an IP
AdmissionResponse DenyInvalid(std::string_view uid, std::string_view group_kind,
                              std::string_view name, const DecodeErrors& errors);
// Allowed with a JSON patch (an array of RFC 6902 operations): patch = base64(compact JSON),
// patchType = "JSONPatch". An empty array yields a plain Allow. InvalidArgument if `json_patch`
// is not an array of objects.
absl::StatusOr<AdmissionResponse> AllowWithPatch(std::string_view uid, const Json& json_patch);
// The JSON patch carried by a response (decoded from base64 and parsed); null if none.
absl::StatusOr<Json> ResponsePatch(const AdmissionResponse& response);

// The review to send back for `request`: same apiVersion/kind (defaulting to
// admission.k8s.io/v1 AdmissionReview), no request, `response` with its uid set to the
// request's uid.
AdmissionReview MakeResponseReview(const AdmissionReview& request, AdmissionResponse response);

// Checks a decoded review is something a webhook can answer: apiVersion admission.k8s.io/v1,
// kind AdmissionReview, a request with a uid.
absl::Status ValidateRequestReview(const AdmissionReview& review);

}  // namespace spiderpool::api
