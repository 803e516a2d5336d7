#pragma once
// SpiderCoordinator (spiderpool.spidernet.io/v2beta1; cluster scoped, short name `scc`, status
// subresource; one instance named `default`). Reference §1.6.

#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/meta.h"
#include "api/spider_types.h"

namespace spiderpool::api {

inline constexpr std::string_view kCoordinatorPhaseSynced = "Synced";
inline constexpr std::string_view kCoordinatorPhaseNotReady = "NotReady";

struct CoordinatorStatus {
  std::string phase;  // Synced | NotReady
  std::string reason;
  std::vector<std::string> overlay_pod_cidr;
  std::vector<std::string> service_cidr;
  template <typename V>
  void Visit(V& v) {
    v.Field("phase", phase, {.required = true});
    v.Field("reason", reason);
    v.Field("overlayPodCIDR", overlay_pod_cidr, {.format = Format::kCIDR});
    v.Field("serviceCIDR", service_cidr, {.format = Format::kCIDR});
  }
};

struct SpiderCoordinator {
  SP_API_OBJECT_HEAD(SpiderCoordinator)
  CoordinatorSpec spec;
  std::optional<CoordinatorStatus> status;  // absent until the controller syncs it
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
  }
};
using SpiderCoordinatorList = List<SpiderCoordinator>;

}  // namespace spiderpool::api
