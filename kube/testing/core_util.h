#pragma once
// Helpers shared by the core's translation units (core*.cc): JSON metadata accessors, request
// parameters, response builders, metadata validation, selectors. Internal to kube/testing.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/labels.h"
#include "api/names.h"
#include "base/json.h"
#include "kube/testing/core.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing::internal {

// Attempts of an unconditional update/delete racing with other writers before giving up (409).
inline constexpr size_t kMaxUpdateAttempts = 32;

// ---- object metadata ----
std::string Str(const base::Json& j, std::string_view key);  // "" unless a string
const base::Json& MetaOf(const base::Json& obj);               // {} unless an object
std::string MetaStr(const base::Json& obj, std::string_view key);
base::Json& MutableMeta(base::Json& obj);
int64_t MetaGeneration(const base::Json& obj);
std::vector<std::string> Finalizers(const base::Json& obj);
// metadata.ownerReferences when a non-empty array, else nullptr.
const base::Json* OwnerRefs(const base::Json& obj);
bool Deleting(const base::Json& obj);  // metadata.deletionTimestamp is set
// metadata.deletionGracePeriodSeconds is 0: the last finalizer's removal deletes the object.
bool GracePeriodZero(const base::Json& obj);
// The grace period a DELETE gives a pod (kube's pod strategy CheckGracefulDelete): 0 for a pod
// not bound to a node or already Succeeded/Failed, else DeleteOptions.gracePeriodSeconds,
// else spec.terminationGracePeriodSeconds, else 30.
int64_t PodGracePeriod(const base::Json& pod, const base::Json& delete_options);
// Copy of `j` without the given top-level keys.
base::Json Without(const base::Json& j, std::initializer_list<std::string_view> keys);
// `[]string{"a", "b"}`, as Go's %#v prints it in apiserver messages.
std::string GoStringSlice(const std::vector<std::string>& v);
std::string Key(std::string_view ns, std::string_view name);  // "ns/name" or "name"
std::string ApiVersionOf(std::string_view group, std::string_view version);
bool IsCrdResource(const std::string& group, const std::string& plural);

// ---- requests / responses ----
std::string Param(const HttpRequest& req, const std::string& key);
bool ParamTrue(const HttpRequest& req, const std::string& key);
bool ParseInt(std::string_view s, int64_t* out);
std::string MediaType(std::string_view content_type);  // lower-case, without parameters
// "All" when dryRun=All is requested (query or DeleteOptions body), else "".
std::string DryRun(const HttpRequest& req, const base::Json* options);
HttpResponse RawJson(int code, std::string body);
HttpResponse JsonResp(int code, const base::Json& j);
HttpResponse StatusResp(const ApiStatus& s);  // with Retry-After when set
std::string Base64Url(std::string_view s);
bool UnBase64Url(std::string_view s, std::string* out);
// The stored text, or a copy with apiVersion rewritten for another served version.
std::string RenderAs(const Stored& s, const std::string& api_version);

// ---- decoding and validation ----
std::optional<ApiStatus> ParseBodyObject(const std::string& body, base::Json* out);
// Fills missing apiVersion/kind; 400 when they disagree with the endpoint.
std::optional<ApiStatus> CheckTypeMeta(base::Json* obj, const std::string& api_version,
                                       const std::string& kind);
// JSON type checks the real decoder performs on metadata (400 on mismatch).
std::optional<ApiStatus> CheckMetaTypes(const base::Json& obj);
// Field validation of metadata: name, labels, annotations, finalizers, ownerReferences.
std::vector<FieldError> ValidateMeta(const base::Json& obj, bool dns_label_name);
std::vector<FieldError> ToFieldErrors(const std::vector<StatusCause>& causes);

// ---- selectors ----
struct Selectors {
  api::Selector labels;
  api::FieldSelector fields;
};
// labelSelector / fieldSelector query parameters (400 on bad syntax or unsupported fields;
// `selectable` = a CRD version's selectableFields).
std::optional<ApiStatus> ParseSelectors(const HttpRequest& req, const ResourceInfo& info,
                                        bool custom, const std::vector<std::string>& selectable,
                                        Selectors* out);
bool StoredMatches(const Stored& s, const Selectors& sel);

}  // namespace spiderpool::kube::testing::internal
