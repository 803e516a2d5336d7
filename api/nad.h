#pragma once
// NetworkAttachmentDefinition (k8s.cni.cncf.io/v1; namespaced, short name `net-attach-def`, no
// status): the Multus network a pod attaches to. spec.config holds a CNI configuration (one
// plugin or a conflist) as JSON text. The CRD ships in charts/spiderpool/crds; reference
// docs/reference/dra-cdi-multus.md §B5. multus/ generates these from SpiderMultusConfigs.

#include <string>
#include <string_view>

#include "api/codec.h"
#include "api/meta.h"

namespace spiderpool::api {

inline constexpr std::string_view kNADGroup = "k8s.cni.cncf.io";
inline constexpr std::string_view kNADApiVersion = "k8s.cni.cncf.io/v1";

struct NetworkAttachmentDefinitionSpec {
  // JSON text. Empty means "use the CNI file on disk whose name matches" (Multus rule).
  std::string config;
  template <typename V>
  void Visit(V& v) {
    v.Field("config", config);
  }
};

struct NetworkAttachmentDefinition {
  SP_API_OBJECT_HEAD(NetworkAttachmentDefinition)
  NetworkAttachmentDefinitionSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};
using NetworkAttachmentDefinitionList = List<NetworkAttachmentDefinition>;

}  // namespace spiderpool::api
