#pragma once
// Test fixtures shared by the SpiderIPPool / SpiderSubnet / SpiderReservedIP rule tests: valid
// objects to start from and a World of existing objects for the Context.

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "api/validation/validation.h"

namespace spiderpool::api::validation::testing_objects {

inline std::vector<std::string> Strings(const ErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

inline api::SpiderIPPool Pool(std::string name = "pool1") {
  api::SpiderIPPool p;
  p.SetTypeMeta();
  p.metadata.name = std::move(name);
  p.spec.ip_version = 4;
  p.spec.subnet = "10.0.0.0/24";
  p.spec.ips = {"10.0.0.10-10.0.0.100"};
  p.spec.gateway = "10.0.0.1";
  return p;
}

inline api::SpiderIPPool Pool6(std::string name = "pool6") {
  api::SpiderIPPool p;
  p.SetTypeMeta();
  p.metadata.name = std::move(name);
  p.spec.ip_version = 6;
  p.spec.subnet = "fd00::/64";
  p.spec.ips = {"fd00::10-fd00::ff"};
  return p;
}

inline api::SpiderSubnet Subnet(std::string name = "subnet1") {
  api::SpiderSubnet s;
  s.SetTypeMeta();
  s.metadata.name = std::move(name);
  s.metadata.uid = "uid-" + s.metadata.name;
  s.spec.ip_version = 4;
  s.spec.subnet = "10.0.0.0/24";
  s.spec.ips = {"10.0.0.2-10.0.0.200"};
  s.spec.gateway = "10.0.0.1";
  return s;
}

inline void OwnBy(api::SpiderIPPool* pool, const api::SpiderSubnet& s) {
  pool->metadata.owner_references.push_back({.api_version = "spiderpool.spidernet.io/v2beta1",
                                             .kind = "SpiderSubnet",
                                             .name = s.metadata.name,
                                             .uid = s.metadata.uid,
                                             .controller = true,
                                             .block_owner_deletion = true});
}

// Existing objects for the context; deques keep the pointers stable.
struct World {
  std::deque<api::SpiderIPPool> pools;
  std::deque<api::SpiderSubnet> subnets;
  Context ctx;
  api::SpiderIPPool& AddPool(api::SpiderIPPool p) {
    pools.push_back(std::move(p));
    ctx.ippools.push_back(&pools.back());
    return pools.back();
  }
  api::SpiderSubnet& AddSubnet(api::SpiderSubnet s) {
    subnets.push_back(std::move(s));
    ctx.subnets.push_back(&subnets.back());
    return subnets.back();
  }
};

}  // namespace spiderpool::api::validation::testing_objects
