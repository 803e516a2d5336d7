#pragma once
// SpiderClaimParameter (spiderpool.spidernet.io/v2beta1; namespaced, short name `scp`, no
// status). Upstream added it for classic DRA in Apr 2024 and removed it in Jan 2025; we serve it
// again as the parameters object of our DRA driver. Spec = upstream's last one (reference §1.7)
// plus `rdmaAcc`, which upstream's DRA issue and e2e ids (Q00001: "rdmaAcc true/false") name.

#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/meta.h"

namespace spiderpool::api {

// A NIC of the claim: which SpiderMultusConfig (namespace/name) configures it.
struct ClaimNic {
  std::string multus_name;
  std::string namespace_;
  bool default_route = false;
  template <typename V>
  void Visit(V& v) {
    v.Field("multusName", multus_name, {.required = true});
    v.Field("namespace", namespace_, {.required = true});
    v.Field("defaultRoute", default_route);
  }
};

struct ClaimParameterSpec {
  bool enable_rdma = false;
  // Not in upstream's last CRD: the DRA issue (#4485, e2e Q00001) names this flag for RDMA
  // acceleration (LD_PRELOAD of the RDMA library into the containers).
  std::optional<bool> rdma_acc;
  std::optional<ClaimNic> default_nic;
  std::vector<ClaimNic> secondary_nics;
  template <typename V>
  void Visit(V& v) {
    v.Field("enableRdma", enable_rdma);
    v.Field("rdmaAcc", rdma_acc);
    v.Field("defaultNic", default_nic);
    v.Field("secondaryNics", secondary_nics);
  }
};

struct SpiderClaimParameter {
  SP_API_OBJECT_HEAD(SpiderClaimParameter)
  ClaimParameterSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};
using SpiderClaimParameterList = List<SpiderClaimParameter>;

}  // namespace spiderpool::api
