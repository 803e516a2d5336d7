#include "api/core.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "base/strings.h"

namespace spiderpool::api {

// ---- Resource() ---------------------------------------------------------------------------

const ResourceInfo& Pod::Resource() {
  static const ResourceInfo info{.group = "",
                                 .version = "v1",
                                 .kind = "Pod",
                                 .plural = "pods",
                                 .singular = "pod",
                                 .namespaced = true,
                                 .has_status = true,
                                 .short_names = {"po"}};
  return info;
}

const ResourceInfo& Node::Resource() {
  static const ResourceInfo info{.group = "",
                                 .version = "v1",
                                 .kind = "Node",
                                 .plural = "nodes",
                                 .singular = "node",
                                 .namespaced = false,
                                 .has_status = true,
                                 .short_names = {"no"}};
  return info;
}

const ResourceInfo& Namespace::Resource() {
  static const ResourceInfo info{.group = "",
                                 .version = "v1",
                                 .kind = "Namespace",
                                 .plural = "namespaces",
                                 .singular = "namespace",
                                 .namespaced = false,
                                 .has_status = true,
                                 .short_names = {"ns"}};
  return info;
}

const ResourceInfo& Lease::Resource() {
  static const ResourceInfo info{.group = "coordination.k8s.io",
                                 .version = "v1",
                                 .kind = "Lease",
                                 .plural = "leases",
                                 .singular = "lease",
                                 .namespaced = true,
                                 .has_status = false,
                                 .short_names = {}};
  return info;
}

const ResourceInfo& Event::Resource() {
  static const ResourceInfo info{.group = "",
                                 .version = "v1",
                                 .kind = "Event",
                                 .plural = "events",
                                 .singular = "event",
                                 .namespaced = true,
                                 .has_status = false,
                                 .short_names = {"ev"}};
  return info;
}

const ResourceInfo& events_v1::Event::Resource() {
  static const ResourceInfo info{.group = "events.k8s.io",
                                 .version = "v1",
                                 .kind = "Event",
                                 .plural = "events",
                                 .singular = "event",
                                 .namespaced = true,
                                 .has_status = false,
                                 .short_names = {"ev"}};
  return info;
}

const ResourceInfo& ConfigMap::Resource() {
  static const ResourceInfo info{.group = "",
                                 .version = "v1",
                                 .kind = "ConfigMap",
                                 .plural = "configmaps",
                                 .singular = "configmap",
                                 .namespaced = true,
                                 .has_status = false,
                                 .short_names = {"cm"}};
  return info;
}

const ResourceInfo& Secret::Resource() {
  static const ResourceInfo info{.group = "",
                                 .version = "v1",
                                 .kind = "Secret",
                                 .plural = "secrets",
                                 .singular = "secret",
                                 .namespaced = true,
                                 .has_status = false,
                                 .short_names = {}};
  return info;
}

// Positional: group, version, kind, plural, singular, namespaced, has_status, short_names.
const ResourceInfo& ServiceResource() {
  static const ResourceInfo info{"", "v1", "Service", "services", "service", true, true, {"svc"}};
  return info;
}

const ResourceInfo& ServiceAccountResource() {
  static const ResourceInfo info{
      "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", true, false, {"sa"}};
  return info;
}

const ResourceInfo& EndpointsResource() {
  static const ResourceInfo info{
      "", "v1", "Endpoints", "endpoints", "endpoints", true, false, {"ep"}};
  return info;
}

const ResourceInfo& CustomResourceDefinitionResource() {
  static const ResourceInfo info{"apiextensions.k8s.io", "v1", "CustomResourceDefinition",
                                 "customresourcedefinitions", "customresourcedefinition",
                                 false, true, {"crd", "crds"}};
  return info;
}

// ---- Pod / Node helpers -------------------------------------------------------------------

bool PodIsAlive(const Pod& pod) {
  if (pod.metadata.deletion_timestamp.has_value()) return false;
  const std::string& phase = pod.status.phase;
  const std::string& restart = pod.spec.restart_policy;
  if (phase == kPodSucceeded && restart != kRestartPolicyAlways) return false;
  if (phase == kPodFailed && restart == kRestartPolicyNever) return false;
  if (phase == kPodFailed && pod.status.reason == "Evicted") return false;
  return true;
}

std::vector<std::string> PodIPs(const Pod& pod) {
  std::vector<std::string> ips;
  for (const PodIP& p : pod.status.pod_ips) {
    if (!p.ip.empty()) ips.push_back(p.ip);
  }
  if (ips.empty() && !pod.status.pod_ip.empty()) ips.push_back(pod.status.pod_ip);
  return ips;
}

bool NodeIsReady(const Node& node) {
  for (const NodeCondition& c : node.status.conditions) {
    if (c.type == "Ready") return c.status == "True";
  }
  return false;
}

std::string NodeAddressOf(const Node& node, std::string_view type) {
  for (const NodeAddress& a : node.status.addresses) {
    if (a.type == type) return a.address;
  }
  return "";
}

// ---- Secret / base64 ----------------------------------------------------------------------

std::string Base64Encode(std::string_view bytes) {
  return absl::Base64Escape(base::ToAbsl(bytes));
}

absl::StatusOr<std::string> Base64Decode(std::string_view text) {
  std::string out;
  // absl accepts unpadded input too; Kubernetes' decoder (encoding/base64.StdEncoding) does
  // not, so insist on the padded length.
  if (text.size() % 4 != 0 || !absl::Base64Unescape(base::ToAbsl(text), &out)) {
    return absl::InvalidArgumentError("illegal base64 data");
  }
  return out;
}

absl::StatusOr<std::string> Secret::Get(std::string_view key) const {
  auto s = string_data.find(std::string(key));
  if (s != string_data.end()) return s->second;
  auto d = data.find(std::string(key));
  if (d == data.end()) {
    return absl::NotFoundError(base::StrCat("secret ", metadata.Key(), " has no key \"", key,
                                            "\""));
  }
  auto bytes = Base64Decode(d->second);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        base::StrCat("secret ", metadata.Key(), " data[", key, "]: illegal base64 data"));
  }
  return bytes;
}

void Secret::Set(std::string_view key, std::string_view bytes) {
  data[std::string(key)] = Base64Encode(bytes);
}

// ---- OwnerReference helpers ---------------------------------------------------------------

bool IsOwnedBy(const ObjectMeta& meta, std::string_view owner_uid) {
  return std::any_of(meta.owner_references.begin(), meta.owner_references.end(),
                     [&](const OwnerReference& r) { return r.uid == owner_uid; });
}

bool IsControlledBy(const ObjectMeta& meta, std::string_view owner_uid) {
  const OwnerReference* c = meta.ControllerRef();
  return c != nullptr && c->uid == owner_uid;
}

absl::Status SetOwnerReference(ObjectMeta* meta, OwnerReference ref) {
  if (ref.controller.value_or(false)) {
    const OwnerReference* c = meta->ControllerRef();
    if (c != nullptr && c->uid != ref.uid) {
      return absl::AlreadyExistsError(base::StrCat("Object ", meta->Key(),
                                                   " is already owned by another ", c->kind,
                                                   " controller ", c->name));
    }
  }
  for (OwnerReference& r : meta->owner_references) {
    if (r.uid == ref.uid) {
      r = std::move(ref);
      return absl::OkStatus();
    }
  }
  meta->owner_references.push_back(std::move(ref));
  return absl::OkStatus();
}

bool RemoveOwnerReference(ObjectMeta* meta, std::string_view owner_uid) {
  auto& refs = meta->owner_references;
  auto it = std::remove_if(refs.begin(), refs.end(),
                           [&](const OwnerReference& r) { return r.uid == owner_uid; });
  if (it == refs.end()) return false;
  refs.erase(it, refs.end());
  return true;
}

}  // namespace spiderpool::api
