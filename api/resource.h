#pragma once
// Where a kind lives on the API server. Every top-level API type declares
//   static const api::ResourceInfo& Resource();
// so generic code (clients, informers, the loopback server registration) can build URLs.
// The one description of a resource: kube/testing's loopback server serves exactly these.
// Aggregate order (positional init): group, version, kind, plural, singular, namespaced,
// has_status, short_names, list_kind.

#include <string>
#include <vector>

namespace spiderpool::api {

struct ResourceInfo {
  std::string group;    // "" for the core group
  std::string version;  // "v1", "v2beta1"
  std::string kind;     // "SpiderIPPool"
  std::string plural;   // "spiderippools"
  std::string singular;
  bool namespaced = false;
  bool has_status = false;  // status subresource
  std::vector<std::string> short_names;
  std::string list_kind;  // a CRD's names.listKind; "" = kind + "List"

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  std::string ListKind() const { return list_kind.empty() ? kind + "List" : list_kind; }
  // "spiderippools.spiderpool.spidernet.io" / "pods"
  std::string GroupResource() const { return group.empty() ? plural : plural + "." + group; }
};

template <typename T>
concept ApiObject = requires {
  { T::Resource() } -> std::same_as<const ResourceInfo&>;
};

}  // namespace spiderpool::api
