#pragma once
// Publisher: keeps this node's ResourceSlices of one DRA driver equal to a device list.
//
//   Publisher pub(rest, "node1");                       // driver netresources.spidernet.io
//   SP_ASSIGN_OR_RETURN(PublishResult r, pub.Publish(BuildDevices(nics, pools)));
//
// The pool is named after the node (spec.pool.name = spec.nodeName = <node>). Publish():
//   1. picks the served resource.k8s.io version once (GET /apis/resource.k8s.io: v1, else
//      v1beta2, else v1beta1; v1beta1 gets devices wrapped in `basic`);
//   2. splits the devices into slices of <= 128 and validates every slice with
//      api::ValidateResourceSlice — an invalid slice is refused (InvalidArgument, nothing
//      written);
//   3. lists the node's slices (fieldSelector spec.nodeName=<node>,spec.driver=<driver>);
//   4. if the newest generation already holds exactly the desired slices, writes nothing
//      (only leftovers of older generations are deleted); otherwise writes every slice with
//      generation = max existing + 1 and resourceSliceCount = the number of slices, then
//      deletes the slices that are not part of it;
//   5. on 409 (Conflict / AlreadyExists, e.g. a concurrent writer) re-lists and starts over,
//      at most `max_attempts` times. 429 / 5xx answers with Retry-After are retried by the
//      RestClient; anything else is returned as the API error (kube/rest/errors.h).
//
// Slice names are deterministic: `<node>-<driver>-<index>` (SliceName), the node part cut and
// suffixed with a hash when the whole would exceed 253 characters. Slices of the next
// generation overwrite those of the previous one in place (update with resourceVersion), so
// a node never holds more than its slice count plus leftovers being deleted.
//
// With PublisherOptions::node_uid the slices carry the Node as controller ownerReference and
// are garbage-collected with it.
//
// Thread-safe (calls are serialized).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/resource_slice.h"
#include "dra/resourceslice/model.h"
#include "kube/rest/client.h"
#include "kube/rest/rest_client.h"

namespace spiderpool::dra::resourceslice {

struct PublisherOptions {
  // "" = discover; otherwise the resource.k8s.io version to use ("v1", "v1beta2", "v1beta1").
  std::string api_version;
  // metadata.uid of the Node: slices get {apiVersion: v1, kind: Node, name, uid,
  // controller: true} as ownerReference. "" = none.
  std::string node_uid;
  // Publish attempts when a write meets 409 Conflict / AlreadyExists.
  int max_attempts = 5;
  std::string field_manager = "spiderpool-agent";
};

struct PublishResult {
  bool changed = false;     // anything was written or deleted
  int64_t generation = 0;   // the pool generation published now
  int slices = 0;           // resourceSliceCount
  int devices = 0;
  int created = 0, updated = 0, deleted = 0;
  int attempts = 0;
  std::string api_version;  // the resource.k8s.io version used
};

// GET /apis/resource.k8s.io and the preferred supported version: "v1", "v1beta2" or
// "v1beta1". NotFound when the group is not served (DRA off, Kubernetes < 1.32);
// FailedPrecondition when none of the three is.
absl::StatusOr<std::string> DiscoverResourceApiVersion(kube::RestClient& rest);

// "<node>-<driver>-<index>", at most 253 characters (a longer node name is cut, cleaned of
// trailing '-'/'.', and followed by 8 hex digits of its FNV-1a hash).
std::string SliceName(std::string_view node, std::string_view driver, int index);

class Publisher {
 public:
  Publisher(std::shared_ptr<kube::RestClient> rest, std::string node_name,
            std::string driver = std::string(kDriverName), PublisherOptions options = {});

  // The version in use (discovered on first use, then cached; re-discovered after the
  // server answers 404 for it).
  absl::StatusOr<std::string> ApiVersion();

  // Makes this node's slices hold exactly `devices` (see above).
  absl::StatusOr<PublishResult> Publish(const std::vector<api::Device>& devices);

  // Deletes every slice of this node and driver (agent shutdown with the driver disabled, node
  // decommission). Returns how many were deleted.
  absl::StatusOr<int> Unpublish();

  // The node's slices of this driver as the server has them, converted to the v1 types,
  // sorted by name.
  absl::StatusOr<std::vector<api::ResourceSlice>> List();

  const std::string& node_name() const { return node_; }
  const std::string& driver() const { return driver_; }

 private:
  struct Existing {
    std::string name;
    std::string resource_version;
    std::optional<api::ResourceSlice> slice;  // nullopt: did not decode (deleted as leftover)
  };
  // What this process last wrote under a name: lets a slice whose stored form differs from
  // the sent one (an API server dropping a field of a disabled feature gate) count as current.
  struct Written {
    std::string resource_version;
    std::string content;  // ContentKey of what was sent
  };

  absl::StatusOr<std::string> ApiVersionLocked();
  absl::StatusOr<std::vector<Existing>> ListLocked(const std::string& version);
  // One attempt; IsConflict/IsAlreadyExists errors make Publish start over.
  absl::StatusOr<PublishResult> PublishOnce(const std::vector<api::ResourceSlice>& desired,
                                            const std::string& version);
  std::vector<api::OwnerReference> OwnerReferences() const;
  // The desired slices (generation 0, to be set), validated.
  absl::StatusOr<std::vector<api::ResourceSlice>> Desired(const std::vector<api::Device>& devices);
  bool IsCurrent(const Existing& e, const api::ResourceSlice& desired) const;
  static std::string ContentKey(const api::ResourceSlice& s);
  kube::DynamicClient Slices(const std::string& version) const;

  std::shared_ptr<kube::RestClient> rest_;
  const std::string node_;
  const std::string driver_;
  const PublisherOptions options_;

  std::mutex mu_;
  std::string version_;                     // guarded by mu_; "" = not discovered yet
  std::map<std::string, Written> written_;  // guarded by mu_
};

}  // namespace spiderpool::dra::resourceslice
