#include "operator/webhook/pod_inject.h"

#include <algorithm>
#include <set>

#include "absl/status/status.h"
#include "base/strings.h"

namespace spiderpool::op::webhook {
namespace {

using base::Json;
using base::StrCat;

template <typename C>
std::string MasterKey(const std::optional<C>& c) {
  if (!c.has_value()) return "";
  if (c->master.size() >= 2 && c->bond.has_value()) return c->bond->name;
  if (!c->master.empty()) return c->master[0];
  return "";
}

bool HasPools(const std::optional<api::SpiderpoolPools>& p) {
  return p.has_value() && (!p->ipv4.empty() || !p->ipv6.empty());
}

// upstream DoValidateRdmaResouce: only the macvlan/ipvlan/vlan/sriov/ib-sriov/ipoib types, each
// with a resource (ipoib: its master) and at least one pool. (Our SMC webhook already refuses an
// annotated SMC without them; the labels can also be set by hand, hence the check here too.)
absl::Status CheckInjectable(const api::SpiderMultusConfig& smc) {
  const auto& s = smc.spec;
  const std::string type = s.cni_type.value_or(std::string(api::kCniTypeCustom));
  std::optional<std::string> resource;
  const std::optional<api::SpiderpoolPools>* pools = nullptr;
  std::optional<api::SpiderpoolPools> none;
  if (type == api::kCniTypeMacvlan && s.macvlan) {
    resource = s.macvlan->rdma_resource_name, pools = &s.macvlan->ippools;
  } else if (type == api::kCniTypeIPvlan && s.ipvlan) {
    resource = s.ipvlan->rdma_resource_name, pools = &s.ipvlan->ippools;
  } else if (type == api::kCniTypeVlan && s.vlan) {
    resource = s.vlan->rdma_resource_name, pools = &s.vlan->ippools;
  } else if (type == api::kCniTypeSriov && s.sriov) {
    resource = s.sriov->resource_name, pools = &s.sriov->ippools;
  } else if (type == api::kCniTypeIBSriov && s.ibsriov) {
    resource = s.ibsriov->resource_name, pools = &s.ibsriov->ippools;
  } else if (type == api::kCniTypeIPoIB && s.ipoib) {
    resource = s.ipoib->master, pools = &s.ipoib->ippools;
  } else if (type != api::kCniTypeMacvlan && type != api::kCniTypeIPvlan &&
             type != api::kCniTypeVlan && type != api::kCniTypeSriov &&
             type != api::kCniTypeIBSriov && type != api::kCniTypeIPoIB) {
    return absl::InvalidArgumentError(
        StrCat("RDMA resource injection does not support cniType: ", type));
  } else {
    pools = &none;
  }
  const std::string id = StrCat(smc.metadata.namespace_, "/", smc.metadata.name);
  if (!resource.has_value() || resource->empty()) {
    return absl::InvalidArgumentError(
        StrCat("SpiderMultusConfig ", id, ": no resource name to inject for cniType ", type));
  }
  if (!HasPools(*pools)) {
    return absl::InvalidArgumentError(
        StrCat("SpiderMultusConfig ", id, ": no ippools to allocate from (cniType ", type, ")"));
  }
  return absl::OkStatus();
}

const Json* Member(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(std::string(key));
  return it == j.end() ? nullptr : &*it;
}

std::optional<std::string> StringAnnotation(const Json& pod, std::string_view key) {
  const Json* md = Member(pod, "metadata");
  const Json* annos = md != nullptr ? Member(*md, "annotations") : nullptr;
  const Json* v = annos != nullptr ? Member(*annos, key) : nullptr;
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

}  // namespace

std::string MultusConfigSortKey(const api::SpiderMultusConfig& smc) {
  const auto& s = smc.spec;
  if (!s.cni_type.has_value()) return "";
  const std::string& t = *s.cni_type;
  if (t == api::kCniTypeMacvlan) return MasterKey(s.macvlan);
  if (t == api::kCniTypeIPvlan) return MasterKey(s.ipvlan);
  if (t == api::kCniTypeVlan) return MasterKey(s.vlan);
  if (t == api::kCniTypeSriov && s.sriov.has_value()) {
    return s.sriov->resource_name.value_or("");
  }
  return "";
}

std::string MultusConfigResourceName(const api::SpiderMultusConfig& smc) {
  const auto& s = smc.spec;
  const std::string t = s.cni_type.value_or("");
  if (t == api::kCniTypeMacvlan && s.macvlan) return s.macvlan->rdma_resource_name.value_or("");
  if (t == api::kCniTypeIPvlan && s.ipvlan) return s.ipvlan->rdma_resource_name.value_or("");
  if (t == api::kCniTypeVlan && s.vlan) return s.vlan->rdma_resource_name.value_or("");
  if (t == api::kCniTypeSriov && s.sriov) return s.sriov->resource_name.value_or("");
  if (t == api::kCniTypeIBSriov && s.ibsriov) return s.ibsriov->resource_name.value_or("");
  return "";
}

absl::StatusOr<std::optional<Json>> InjectPodResources(
    const Json& pod, const std::map<std::string, std::string>& namespace_annotations,
    const std::vector<std::shared_ptr<const api::SpiderMultusConfig>>& multus_configs) {
  if (!pod.is_object()) return std::optional<Json>();
  std::string key;
  std::string value;
  bool found = false;
  for (std::string_view anno : {api::kAnnoRdmaResourceInject, api::kAnnoNetworkResourceInject}) {
    if (std::optional<std::string> v = StringAnnotation(pod, anno)) {
      key = std::string(anno), value = *v, found = true;
      break;
    }
    auto it = namespace_annotations.find(std::string(anno));
    if (it != namespace_annotations.end()) {
      key = std::string(anno), value = it->second, found = true;
      break;
    }
  }
  if (!found) return std::optional<Json>();

  std::vector<const api::SpiderMultusConfig*> matched;
  for (const auto& smc : multus_configs) {
    if (smc == nullptr) continue;
    auto it = smc->metadata.labels.find(key);
    if (it != smc->metadata.labels.end() && it->second == value) matched.push_back(smc.get());
  }
  if (matched.empty()) {
    return absl::NotFoundError(
        StrCat("no spidermultusconfigs with annotation: ", key, ":", value, " found"));
  }
  std::stable_sort(matched.begin(), matched.end(),
                   [](const api::SpiderMultusConfig* a, const api::SpiderMultusConfig* b) {
                     std::string ka = MultusConfigSortKey(*a);
                     std::string kb = MultusConfigSortKey(*b);
                     if (ka != kb) return ka < kb;
                     return StrCat(a->metadata.namespace_, "/", a->metadata.name) <
                            StrCat(b->metadata.namespace_, "/", b->metadata.name);
                   });

  std::string networks;
  std::vector<std::string> resources;  // distinct, in SMC order
  for (const api::SpiderMultusConfig* smc : matched) {
    if (absl::Status s = CheckInjectable(*smc); !s.ok()) return s;
    if (!networks.empty()) networks += ",";
    networks += StrCat(smc->metadata.namespace_, "/", smc->metadata.name);
    std::string r = MultusConfigResourceName(*smc);
    if (!r.empty() && std::find(resources.begin(), resources.end(), r) == resources.end()) {
      resources.push_back(std::move(r));
    }
  }

  Json out = pod;
  Json& md = out["metadata"];
  if (!md.is_object()) md = Json::object();
  Json& annos = md["annotations"];
  if (!annos.is_object()) annos = Json::object();
  annos[std::string(api::kMultusNetworks)] = networks;

  Json* containers = nullptr;
  if (Json* spec = out.contains("spec") ? &out["spec"] : nullptr; spec && spec->is_object()) {
    auto it = spec->find("containers");
    if (it != spec->end() && it->is_array() && !it->empty()) containers = &*it;
  }
  if (containers != nullptr) {
    for (const std::string& r : resources) {
      bool present = false;
      for (const Json& c : *containers) {
        const Json* res = Member(c, "resources");
        const Json* limits = res != nullptr ? Member(*res, "limits") : nullptr;
        if (limits != nullptr && Member(*limits, r) != nullptr) present = true;
      }
      if (present) continue;
      Json& first = (*containers)[0];
      if (!first.is_object()) continue;
      Json& res = first["resources"];
      if (!res.is_object()) res = Json::object();
      Json& limits = res["limits"];
      if (!limits.is_object()) limits = Json::object();
      limits[r] = "1";
    }
  }
  return std::optional<Json>(std::move(out));
}

}  // namespace spiderpool::op::webhook
