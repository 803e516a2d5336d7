#include "multus/generate.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "api/core.h"
#include "api/spider.h"
#include "base/json.h"
#include "base/status.h"
#include "base/strings.h"
#include "multus/defaults.h"
#include "nlohmann/json.hpp"

namespace spiderpool::multus {
namespace {

// Insertion-ordered JSON: each plugin is built in the field order of upstream's Go struct, so
// the text matches what encoding/json writes. (Go writes maps, i.e. the top level and
// chainCNIJsonData items, with sorted keys; base::Json iterates sorted.)
using OJson = nlohmann::ordered_json;

// ---- Go encoding/json text -----------------------------------------------------------------

// Compact, like json.Marshal: no spaces, UTF-8 kept, and the HTML-safe escapes Go adds. Those
// characters only occur inside strings, so replacing them in the text is exact.
std::string GoMarshal(const OJson& j) {
  std::string text = j.dump(-1, ' ', false, OJson::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

absl::Status Invalid(std::string_view message) {
  return absl::InvalidArgumentError(base::ToAbsl(message));
}

// ---- Plugin entries ------------------------------------------------------------------------

// spiderpoolcmd.IPAMConfig (every field omitempty).
OJson Ipam(const std::optional<api::SpiderpoolPools>& pools, bool with_match_master_subnet) {
  OJson ipam = OJson::object();
  ipam["type"] = "spiderpool";
  if (pools.has_value()) {
    if (!pools->ipv4.empty()) ipam["default_ipv4_ippool"] = pools->ipv4;
    if (!pools->ipv6.empty()) ipam["default_ipv6_ippool"] = pools->ipv6;
    if (with_match_master_subnet && pools->match_master_subnet.value_or(false)) {
      ipam["match_master_subnet"] = true;
    }
  }
  return ipam;
}

OJson Bond(const api::BondConfig& bond) {
  OJson o = OJson::object();
  o["name"] = bond.name;
  o["mode"] = bond.mode;
  if (bond.options.has_value()) o["options"] = *bond.options;
  return o;
}

// IfacerNetConf: vlanID and interfaces omitempty.
OJson Ifacer(const std::vector<std::string>& masters, int32_t vlan_id,
             const std::optional<api::BondConfig>& bond) {
  OJson o = OJson::object();
  if (vlan_id != 0) o["vlanID"] = vlan_id;
  o["type"] = "ifacer";
  if (!masters.empty()) o["interfaces"] = masters;
  if (bond.has_value()) o["bond"] = Bond(*bond);
  return o;
}

// The interface the main plugin attaches to: the single master, or the bond ifacer builds.
absl::StatusOr<std::string> BaseMaster(std::string_view type,
                                       const std::vector<std::string>& masters,
                                       const std::optional<api::BondConfig>& bond) {
  if (masters.size() == 1) return masters[0];
  if (bond.has_value()) return bond->name;
  if (masters.empty()) return Invalid(base::StrCat("spec.", type, ".master is empty"));
  return Invalid(base::StrCat("spec.", type, ": the bond property is nil with multiple Interfaces"));
}

// CoordinatorConfig in upstream's field order; podRPFilter only when podCIDRType is set (an
// upstream quirk kept on purpose).
OJson Coordinator(const std::optional<api::CoordinatorSpec>& spec) {
  OJson o = OJson::object();
  if (!spec.has_value()) {
    o["type"] = "coordinator";
    return o;
  }
  const api::CoordinatorSpec& c = *spec;
  if (c.tx_queue_len.has_value()) o["txQueueLen"] = *c.tx_queue_len;
  if (!c.veth_link_address.value_or("").empty()) o["vethLinkAddress"] = *c.veth_link_address;
  if (c.tune_pod_routes.has_value()) o["tunePodRoutes"] = *c.tune_pod_routes;
  if (!c.pod_mac_prefix.value_or("").empty()) o["podMACPrefix"] = *c.pod_mac_prefix;
  if (!c.mode.value_or("").empty()) o["mode"] = *c.mode;
  o["type"] = "coordinator";
  if (!c.pod_default_route_nic.value_or("").empty()) {
    o["podDefaultRouteNic"] = *c.pod_default_route_nic;
  }
  if (c.pod_cidr_type.has_value() && c.pod_rp_filter.has_value()) {
    o["podRPFilter"] = *c.pod_rp_filter;
  }
  if (!c.hijack_cidr.empty()) o["hijackCIDR"] = c.hijack_cidr;
  if (!c.policy_routes.empty()) {
    OJson routes = OJson::array();
    for (const api::PolicyRoute& r : c.policy_routes) {
      OJson route = OJson::object();
      route["dst"] = r.dst;
      route["gw"] = r.gw;
      routes.push_back(std::move(route));
    }
    o["policyRoutes"] = std::move(routes);
  }
  if (c.veth_mtu.has_value()) o["vethMTU"] = *c.veth_mtu;
  return o;
}

absl::Status MissingConfig(std::string_view type, std::string_view field) {
  return Invalid(base::StrCat("cniType ", type, " needs spec.", field));
}

// macvlan and ipvlan: the main plugin (plus the ifacer entry when one is needed).
absl::Status MacvlanLike(std::string_view type, const api::SpiderMacvlanCniConfig& c,
                         bool disable_ipam, std::vector<OJson>* head) {
  SP_ASSIGN_OR_RETURN(std::string master, BaseMaster(type, c.master, c.bond));
  int32_t vlan_id = c.vlan_id.value_or(0);
  if (vlan_id != 0) master = base::StrCat(master, ".", vlan_id);
  if (vlan_id != 0 || c.master.size() >= 2) head->push_back(Ifacer(c.master, vlan_id, c.bond));
  OJson o = OJson::object();
  o["type"] = type;
  o["master"] = master;
  if (type == api::kCniTypeMacvlan) o["mode"] = "bridge";
  if (c.mtu.has_value()) o["mtu"] = *c.mtu;
  if (!disable_ipam) o["ipam"] = Ipam(c.ippools, false);
  head->push_back(std::move(o));
  return absl::OkStatus();
}

absl::Status Vlan(const api::SpiderVlanCniConfig& c, bool disable_ipam, std::vector<OJson>* head) {
  SP_ASSIGN_OR_RETURN(std::string master, BaseMaster(api::kCniTypeVlan, c.master, c.bond));
  // The vlan plugin makes the VLAN itself; ifacer only builds the bond.
  if (c.master.size() >= 2) head->push_back(Ifacer(c.master, 0, c.bond));
  OJson o = OJson::object();
  o["type"] = "vlan";
  o["master"] = master;
  if (!c.vlan_mode.value_or("").empty()) o["vlanMode"] = *c.vlan_mode;
  if (c.vlan_mode.value_or(std::string(kVlanModeManual)) != kVlanModeAuto && c.vlan_id.has_value()) {
    o["vlanId"] = *c.vlan_id;
  }
  if (c.mtu.has_value()) o["mtu"] = *c.mtu;
  if (!disable_ipam) o["ipam"] = Ipam(c.ippools, false);
  head->push_back(std::move(o));
  return absl::OkStatus();
}

OJson Sriov(const api::SpiderSRIOVCniConfig& c, bool disable_ipam) {
  OJson o = OJson::object();
  if (c.vlan_id.has_value()) o["vlan"] = *c.vlan_id;
  if (c.min_tx_rate_mbps.has_value()) o["min_tx_rate"] = *c.min_tx_rate_mbps;
  if (c.max_tx_rate_mbps.has_value()) o["max_tx_rate"] = *c.max_tx_rate_mbps;
  o["type"] = "sriov";
  if (!disable_ipam) o["ipam"] = Ipam(c.ippools, true);
  return o;
}

OJson IBSriov(const api::SpiderIBSriovCniConfig& c, bool disable_ipam) {
  OJson o = OJson::object();
  o["type"] = "ib-sriov";
  if (c.pkey.has_value()) o["pkey"] = *c.pkey;
  if (c.link_state.has_value()) o["link_state"] = *c.link_state;
  if (c.rdma_isolation.has_value()) o["rdmaIsolation"] = *c.rdma_isolation;
  if (c.enable_ib_kubernetes.has_value()) o["ibKubernetesEnabled"] = *c.enable_ib_kubernetes;
  if (!disable_ipam) o["ipam"] = Ipam(c.ippools, false);
  return o;
}

OJson Ipoib(const api::SpiderIpoibCniConfig& c, bool disable_ipam) {
  OJson o = OJson::object();
  o["type"] = "ipoib";
  if (!c.master.empty()) o["master"] = c.master;
  if (!disable_ipam) o["ipam"] = Ipam(c.ippools, false);
  return o;
}

OJson Ovs(const api::SpiderOvsCniConfig& c, bool disable_ipam) {
  OJson o = OJson::object();
  if (c.vlan.has_value()) o["vlan"] = *c.vlan;
  o["type"] = "ovs";
  o["bridge"] = c.bridge;
  if (!c.device_id.empty()) o["deviceID"] = c.device_id;
  if (!disable_ipam) o["ipam"] = Ipam(c.ippools, false);
  if (!c.trunk.empty()) {
    OJson trunks = OJson::array();
    for (const api::Trunk& t : c.trunk) {
      OJson tj = OJson::object();
      if (t.min_id.has_value()) tj["minID"] = *t.min_id;
      if (t.max_id.has_value()) tj["maxID"] = *t.max_id;
      if (t.id.has_value()) tj["id"] = *t.id;
      trunks.push_back(std::move(tj));
    }
    o["trunk"] = std::move(trunks);
  }
  return o;
}

struct Generated {
  std::string config;
  std::optional<std::string> resource_name;  // the k8s.v1.cni.cncf.io/resourceName annotation
};

absl::StatusOr<Generated> Generate(const api::SpiderMultusConfig& smc, std::string_view nad_name) {
  const api::MultusCNIConfigSpec& s = smc.spec;
  const std::string type = s.cni_type.value_or(std::string(api::kCniTypeCustom));
  const auto& anno = smc.metadata.annotations;
  Generated out;

  if (type == api::kCniTypeCustom) {
    const std::string& custom = s.custom_cni.has_value() ? *s.custom_cni : out.config;
    if (!custom.empty() && !base::ParseJson(custom).ok()) {
      return Invalid("customCniConfig isn't a valid JSON encoding");
    }
    out.config = custom;
    return out;
  }

  // chainCNIJsonData items, then the coordinator; the main plugin goes in front.
  std::vector<OJson> tail;
  for (const std::string& item : s.chain_cni_json_data) {
    auto plugin = base::ParseJson(item);
    if (!plugin.ok()) {
      return Invalid(base::StrCat("failed to unmarshal chain cni config ", item, ": ",
                                  base::FromAbsl(plugin.status().message())));
    }
    tail.push_back(OJson(*plugin));
  }
  if (s.enable_coordinator.value_or(true)) tail.push_back(Coordinator(s.coordinator));
  const bool disable_ipam = s.disable_ipam.value_or(false);

  std::vector<OJson> head;
  if (type == api::kCniTypeMacvlan || type == api::kCniTypeIPvlan) {
    const auto& c = type == api::kCniTypeMacvlan ? s.macvlan : s.ipvlan;
    if (!c.has_value()) return MissingConfig(type, type);
    SP_RETURN_IF_ERROR(MacvlanLike(type, *c, disable_ipam, &head));
  } else if (type == api::kCniTypeVlan) {
    if (!s.vlan.has_value()) return MissingConfig(type, "vlan");
    SP_RETURN_IF_ERROR(Vlan(*s.vlan, disable_ipam, &head));
  } else if (type == api::kCniTypeSriov) {
    if (!s.sriov.has_value()) return MissingConfig(type, "sriov");
    out.resource_name = s.sriov->resource_name;
    head.push_back(Sriov(*s.sriov, disable_ipam));
    if (s.sriov->rdma_isolation.value_or(false)) {
      OJson rdma = OJson::object();
      rdma["type"] = "rdma";
      head.push_back(std::move(rdma));
    }
    if (s.sriov->mtu.value_or(0) > 0) {
      OJson tuning = OJson::object();
      tuning["type"] = "tuning";
      tuning["mtu"] = *s.sriov->mtu;
      tail.push_back(std::move(tuning));
    }
  } else if (type == api::kCniTypeIBSriov) {
    if (!s.ibsriov.has_value()) return MissingConfig(type, "ibsriov");
    out.resource_name = s.ibsriov->resource_name;
    head.push_back(IBSriov(*s.ibsriov, disable_ipam));
  } else if (type == api::kCniTypeIPoIB) {
    if (!s.ipoib.has_value()) return MissingConfig(type, "ipoib");
    head.push_back(Ipoib(*s.ipoib, disable_ipam));
  } else if (type == api::kCniTypeOvs) {
    if (!s.ovs.has_value()) return MissingConfig(type, "ovs");
    head.push_back(Ovs(*s.ovs, disable_ipam));
    if (!s.ovs->device_id.empty()) {
      out.resource_name = base::StrCat(kOvsResourcePrefix, "/", s.ovs->bridge);
    }
  } else {
    return Invalid(base::StrCat("unrecognized CNI type ", type));
  }

  OJson plugins = OJson::array();
  for (OJson& p : head) plugins.push_back(std::move(p));
  for (OJson& p : tail) plugins.push_back(std::move(p));

  // Upstream marshals a map: keys sorted.
  OJson conf = OJson::object();
  auto version = anno.find(std::string(api::kAnnoMultusCNIVersion));
  conf["cniVersion"] =
      version != anno.end() ? version->second : std::string(api::kDefaultCNIVersion);
  auto config_name = anno.find(std::string(api::kAnnoCNIConfigName));
  conf["name"] = config_name != anno.end() && !config_name->second.empty()
                     ? config_name->second
                     : std::string(nad_name);
  conf["plugins"] = std::move(plugins);
  out.config = GoMarshal(conf);
  return out;
}

const api::SpiderMultusConfig& Prepared(const api::SpiderMultusConfig& smc,
                                        const Options& options,
                                        std::optional<api::SpiderMultusConfig>* copy) {
  if (!options.apply_defaults) return smc;
  copy->emplace(smc);
  DefaultSpiderMultusConfig(&**copy);
  return **copy;
}

}  // namespace

std::string NADName(const api::SpiderMultusConfig& smc) {
  auto it = smc.metadata.annotations.find(std::string(api::kAnnoMultusCRName));
  return it != smc.metadata.annotations.end() ? it->second : smc.metadata.name;
}

absl::StatusOr<std::string> GenerateCNIConfig(const api::SpiderMultusConfig& smc,
                                              const Options& options) {
  std::optional<api::SpiderMultusConfig> copy;
  const api::SpiderMultusConfig& in = Prepared(smc, options, &copy);
  SP_ASSIGN_OR_RETURN(Generated g, Generate(in, NADName(in)));
  return std::move(g.config);
}

absl::StatusOr<api::NetworkAttachmentDefinition> GenerateNAD(const api::SpiderMultusConfig& smc,
                                                             const Options& options) {
  std::optional<api::SpiderMultusConfig> copy;
  const api::SpiderMultusConfig& in = Prepared(smc, options, &copy);
  std::string name = NADName(in);
  if (name.empty()) return Invalid("the NetworkAttachmentDefinition name is empty");
  SP_ASSIGN_OR_RETURN(Generated g, Generate(in, name));
  api::NetworkAttachmentDefinition nad;
  nad.SetTypeMeta();
  nad.metadata.name = std::move(name);
  nad.metadata.namespace_ = in.metadata.namespace_;
  nad.metadata.annotations = in.metadata.annotations;
  if (g.resource_name.has_value()) {
    nad.metadata.annotations[std::string(api::kMultusResourceName)] = *g.resource_name;
  }
  nad.spec.config = std::move(g.config);
  return nad;
}

absl::StatusOr<api::NetworkAttachmentDefinition> BuildDesiredNAD(
    const api::SpiderMultusConfig& smc, const Options& options) {
  SP_ASSIGN_OR_RETURN(api::NetworkAttachmentDefinition nad, GenerateNAD(smc, options));
  nad.metadata.owner_references.push_back(api::MakeOwnerReference(smc));
  return nad;
}

bool CNIConfigsEqual(std::string_view a, std::string_view b) {
  if (a == b) return true;
  auto ja = base::ParseJson(a);
  auto jb = base::ParseJson(b);
  return ja.ok() && jb.ok() && *ja == *jb;
}

namespace {

bool AnnotationsNeedUpdate(const api::ObjectMeta& desired, const api::ObjectMeta& actual) {
  for (const auto& [key, value] : desired.annotations) {
    auto it = actual.annotations.find(key);
    if (it == actual.annotations.end() || it->second != value) return true;
  }
  const std::string resource(api::kMultusResourceName);
  return !desired.annotations.count(resource) && actual.annotations.count(resource);
}

bool OwnerNeedsUpdate(const api::ObjectMeta& desired, const api::ObjectMeta& actual) {
  const api::OwnerReference* want = desired.ControllerRef();
  return want != nullptr && !api::IsControlledBy(actual, want->uid);
}

}  // namespace

bool NADNeedsUpdate(const api::NetworkAttachmentDefinition& desired,
                    const api::NetworkAttachmentDefinition& actual) {
  return !CNIConfigsEqual(desired.spec.config, actual.spec.config) ||
         AnnotationsNeedUpdate(desired.metadata, actual.metadata) ||
         OwnerNeedsUpdate(desired.metadata, actual.metadata);
}

bool ApplyDesiredNAD(const api::NetworkAttachmentDefinition& desired,
                     api::NetworkAttachmentDefinition* actual) {
  bool changed = false;
  if (!CNIConfigsEqual(desired.spec.config, actual->spec.config)) {
    actual->spec.config = desired.spec.config;
    changed = true;
  }
  if (AnnotationsNeedUpdate(desired.metadata, actual->metadata)) {
    for (const auto& [key, value] : desired.metadata.annotations) {
      actual->metadata.annotations[key] = value;
    }
    const std::string resource(api::kMultusResourceName);
    if (!desired.metadata.annotations.count(resource)) {
      actual->metadata.annotations.erase(resource);
    }
    changed = true;
  }
  if (OwnerNeedsUpdate(desired.metadata, actual->metadata)) {
    const api::OwnerReference& want = *desired.metadata.ControllerRef();
    std::vector<api::OwnerReference> kept;
    for (api::OwnerReference& r : actual->metadata.owner_references) {
      if (r.controller.value_or(false) || r.uid == want.uid) continue;
      kept.push_back(std::move(r));
    }
    kept.push_back(want);
    actual->metadata.owner_references = std::move(kept);
    changed = true;
  }
  return changed;
}

}  // namespace spiderpool::multus
