#pragma once
// Resource clients on top of RestClient:
//   DynamicClient   untyped (base::Json objects) for one api::ResourceInfo: generic code,
//                   `apply`, informers;
//   Client<T>       typed, for any api::ApiObject T (decodes with api/codec.h).
// Both are cheap value types (a shared_ptr<RestClient> + the resource), namespace-aware:
// namespace arguments are ignored for cluster-scoped resources, and "" on a namespaced
// resource means "all namespaces" for List/ListAll/Watch. Create/Update/UpdateStatus take the
// namespace and name from the object's metadata.
//
// RetryOnConflict(policy, fn): client-go's retry.RetryOnConflict: re-runs a get-modify-update
// function while it fails with a 409 Conflict, with backoff, at most policy.steps times.

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/codec.h"
#include "api/meta.h"
#include "api/resource.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/json.h"
#include "base/strings.h"
#include "kube/rest/errors.h"
#include "kube/rest/rest_client.h"
#include "kube/rest/watch.h"

namespace spiderpool::kube {

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // page size; 0 = everything in one answer
  std::string continue_token;
  // "" = most recent (consistent read); "0" = any (served from the watch cache).
  std::string resource_version;
  std::string resource_version_match;  // "NotOlderThan" | "Exact" | ""
  int64_t timeout_seconds = 0;
  // Only the objects' metadata: Accept as=PartialObjectMetadataList (client-go's metadata
  // client); items are {"kind":"PartialObjectMetadata","metadata":...}.
  bool metadata_only = false;
};

struct CreateOptions {
  bool dry_run = false;
  std::string field_manager;
};
using UpdateOptions = CreateOptions;

struct DeleteOptions {
  // Preconditions: the delete fails with 409 Conflict unless they hold.
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::string propagation_policy;  // "Orphan" | "Background" | "Foreground" | ""
  std::optional<int64_t> grace_period_seconds;
  bool dry_run = false;
  base::Json ToJson() const;  // a meta.k8s.io/v1 DeleteOptions object
};

enum class PatchType {
  kMerge,           // application/merge-patch+json (RFC 7386)
  kJson,            // application/json-patch+json (RFC 6902)
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
  kApply,           // application/apply-patch+yaml (server-side apply; needs field_manager)
};
std::string_view PatchContentType(PatchType type);

struct PatchOptions {
  std::string subresource;  // "" or "status"
  bool dry_run = false;
  std::string field_manager;
  bool force = false;  // server-side apply only
};

class DynamicClient {
 public:
  DynamicClient(std::shared_ptr<RestClient> rest, api::ResourceInfo resource);

  absl::StatusOr<base::Json> Get(std::string_view ns, std::string_view name) const;
  // The object's metadata; nullopt when it does not exist (404).
  absl::StatusOr<std::optional<api::ObjectMeta>> GetMetadata(std::string_view ns,
                                                             std::string_view name) const;
  // One page (or everything when limit = 0): the list object as the server sent it.
  absl::StatusOr<base::Json> List(std::string_view ns, const ListOptions& options = {}) const;
  // Follows continue tokens (page size options.limit, 500 when 0). If a continue token expires
  // (410) the list restarts from scratch (at most 3 times). Returns a list object holding every
  // item, with metadata.resourceVersion of the (consistent) snapshot.
  absl::StatusOr<base::Json> ListAll(std::string_view ns, ListOptions options = {}) const;
  absl::StatusOr<base::Json> Create(const base::Json& object,
                                    const CreateOptions& options = {}) const;
  absl::StatusOr<base::Json> Update(const base::Json& object,
                                    const UpdateOptions& options = {}) const;
  absl::StatusOr<base::Json> UpdateStatus(const base::Json& object,
                                          const UpdateOptions& options = {}) const;
  absl::Status Delete(std::string_view ns, std::string_view name,
                      const DeleteOptions& options = {}) const;
  absl::Status DeleteCollection(std::string_view ns, const ListOptions& selection,
                                const DeleteOptions& options = {}) const;
  // `patch` is JSON for kMerge / kJson / kStrategicMerge; for kApply it is the object to apply
  // (sent as JSON, which is valid YAML).
  absl::StatusOr<base::Json> Patch(std::string_view ns, std::string_view name, PatchType type,
                                   const base::Json& patch,
                                   const PatchOptions& options = {}) const;
  // See RestClient::Watch.
  absl::Status Watch(std::string_view ns, const WatchOptions& options,
                     const WatchCallback& callback, std::stop_token stop = {}) const;

  const api::ResourceInfo& resource() const { return resource_; }
  const std::shared_ptr<RestClient>& rest() const { return rest_; }

 private:
  absl::StatusOr<std::string> ObjectPath(const base::Json& object,
                                         std::string_view subresource, bool with_name) const;
  // POST/PUT of `object` (apiVersion/kind filled in) to its collection or object path.
  absl::StatusOr<base::Json> Write(std::string_view method, const base::Json& object,
                                   std::string_view subresource, bool with_name,
                                   const CreateOptions& options) const;
  std::shared_ptr<RestClient> rest_;
  api::ResourceInfo resource_;
};

// Sets apiVersion/kind of `object` from the resource (if missing).
void SetTypeMeta(const api::ResourceInfo& resource, base::Json* object);

namespace client_internal {
template <typename T>
absl::StatusOr<T> DecodeObject(absl::StatusOr<base::Json> j) {
  if (!j.ok()) return j.status();
  absl::StatusOr<T> out = api::Decode<T>(*j);
  if (!out.ok()) {
    return absl::DataLossError(base::StrCat("decoding ", T::Resource().kind, " from the server: ",
                                            base::FromAbsl(out.status().message())));
  }
  return out;
}
}  // namespace client_internal

template <api::ApiObject T>
class Client {
 public:
  explicit Client(std::shared_ptr<RestClient> rest) : dynamic_(std::move(rest), T::Resource()) {}

  absl::StatusOr<T> Get(std::string_view ns, std::string_view name) const {
    return client_internal::DecodeObject<T>(dynamic_.Get(ns, name));
  }
  absl::StatusOr<api::List<T>> List(std::string_view ns, const ListOptions& options = {}) const {
    return DecodeList(dynamic_.List(ns, options));
  }
  absl::StatusOr<api::List<T>> ListAll(std::string_view ns, const ListOptions& options = {}) const {
    return DecodeList(dynamic_.ListAll(ns, options));
  }
  absl::StatusOr<T> Create(const T& object, const CreateOptions& options = {}) const {
    return client_internal::DecodeObject<T>(dynamic_.Create(Encode(object), options));
  }
  absl::StatusOr<T> Update(const T& object, const UpdateOptions& options = {}) const {
    return client_internal::DecodeObject<T>(dynamic_.Update(Encode(object), options));
  }
  absl::StatusOr<T> UpdateStatus(const T& object, const UpdateOptions& options = {}) const {
    return client_internal::DecodeObject<T>(dynamic_.UpdateStatus(Encode(object), options));
  }
  absl::Status Delete(std::string_view ns, std::string_view name,
                      const DeleteOptions& options = {}) const {
    return dynamic_.Delete(ns, name, options);
  }
  absl::StatusOr<T> Patch(std::string_view ns, std::string_view name, PatchType type,
                          const base::Json& patch, const PatchOptions& options = {}) const {
    return client_internal::DecodeObject<T>(dynamic_.Patch(ns, name, type, patch, options));
  }
  // Events carry JSON objects; decode with api::Decode<T>(event.object).
  absl::Status Watch(std::string_view ns, const WatchOptions& options,
                     const WatchCallback& callback, std::stop_token stop = {}) const {
    return dynamic_.Watch(ns, options, callback, std::move(stop));
  }

  const DynamicClient& dynamic() const { return dynamic_; }

  // The JSON sent for `object` (apiVersion/kind filled in).
  static base::Json Encode(const T& object) {
    base::Json j = api::Encode(object);
    SetTypeMeta(T::Resource(), &j);
    return j;
  }

 private:
  static absl::StatusOr<api::List<T>> DecodeList(absl::StatusOr<base::Json> j) {
    if (!j.ok()) return j.status();
    absl::StatusOr<api::List<T>> out = api::Decode<api::List<T>>(*j);
    if (!out.ok()) {
      return absl::DataLossError(base::StrCat("decoding ", T::Resource().ListKind(),
                                              " from the server: ",
                                              base::FromAbsl(out.status().message())));
    }
    return out;
  }

  DynamicClient dynamic_;
};

// client-go's retry.DefaultRetry: 5 steps, 10ms, factor 1, jitter 0.1.
base::BackoffPolicy DefaultRetry();
// client-go's retry.DefaultBackoff: 4 steps, 10ms, factor 5, jitter 0.1.
base::BackoffPolicy DefaultBackoff();

// Runs `fn` until it returns anything but a conflict (IsConflict), sleeping policy delays in
// between; after policy.steps calls (5 when 0) the last conflict is returned.
absl::Status RetryOnConflict(const base::BackoffPolicy& policy,
                             const std::function<absl::Status()>& fn,
                             base::Clock& clock = base::RealClock::Get());
// The same for any predicate (client-go's retry.OnError).
absl::Status RetryOnError(const base::BackoffPolicy& policy,
                          const std::function<bool(const absl::Status&)>& retriable,
                          const std::function<absl::Status()>& fn,
                          base::Clock& clock = base::RealClock::Get());

}  // namespace spiderpool::kube
