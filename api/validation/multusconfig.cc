// SpiderMultusConfig: upstream pkg/multuscniconfig/multusconfig_validate.go (reference §1.5,
// §5) and SpiderClaimParameter (reference §1.7).

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "api/names.h"
#include "api/validation/internal.h"
#include "api/validation/validation.h"
#include "base/json.h"
#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces)

namespace {

constexpr std::string_view kMultusConfigKind = "SpiderMultusConfig";
constexpr std::string_view kClaimParameterKind = "SpiderClaimParameter";
const std::vector<std::string> kCNIVersions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0"};

Result NewResult(std::string_view kind, std::string_view name) {
  Result r;
  r.group = std::string(kGroup);
  r.kind = std::string(kind);
  r.name = std::string(name);
  return r;
}

std::string AnnotationPath(std::string_view key) { return Key("metadata.annotations", key); }

const std::string* Annotation(const api::ObjectMeta& m, std::string_view key) {
  auto it = m.annotations.find(std::string(key));
  return it == m.annotations.end() ? nullptr : &it->second;
}

// The JSON name of each cniType's config block.
std::string_view ConfigField(std::string_view cni_type) {
  if (cni_type == api::kCniTypeMacvlan) return "spec.macvlan";
  if (cni_type == api::kCniTypeIPvlan) return "spec.ipvlan";
  if (cni_type == api::kCniTypeVlan) return "spec.vlan";
  if (cni_type == api::kCniTypeSriov) return "spec.sriov";
  if (cni_type == api::kCniTypeIBSriov) return "spec.ibsriov";
  if (cni_type == api::kCniTypeIPoIB) return "spec.ipoib";
  if (cni_type == api::kCniTypeOvs) return "spec.ovs";
  return "spec.customCNI";
}

// Whether a config block other than `cni_type`'s is set (checkExistedConfig).
bool OtherConfigSet(const api::MultusCNIConfigSpec& s, std::string_view cni_type) {
  return (cni_type != api::kCniTypeMacvlan && s.macvlan.has_value()) ||
         (cni_type != api::kCniTypeIPvlan && s.ipvlan.has_value()) ||
         (cni_type != api::kCniTypeVlan && s.vlan.has_value()) ||
         (cni_type != api::kCniTypeSriov && s.sriov.has_value()) ||
         (cni_type != api::kCniTypeIBSriov && s.ibsriov.has_value()) ||
         (cni_type != api::kCniTypeIPoIB && s.ipoib.has_value()) ||
         (cni_type != api::kCniTypeOvs && s.ovs.has_value()) ||
         (cni_type != api::kCniTypeCustom && s.custom_cni.has_value());
}

void CheckVlanID(const std::optional<int32_t>& vlan_id, const std::string& path, ErrorList* errs) {
  if (!vlan_id.has_value() || (*vlan_id >= 0 && *vlan_id <= 4094)) return;
  errs->push_back(Invalid(path, BadValue::Int(*vlan_id),
                          StrCat("invalid vlanId ", *vlan_id,
                                 ", please make sure vlanId in range [0,4094]")));
}

void CheckMTU(const std::optional<int32_t>& mtu, const std::string& path, ErrorList* errs) {
  if (!mtu.has_value() || *mtu >= 0) return;
  errs->push_back(Invalid(path, BadValue::Int(*mtu),
                          "mtu must not be negative (0 keeps the kernel default)"));
}

// validateVlanCNIConfig: masters, and a named bond for several of them.
void CheckMasters(const std::vector<std::string>& master, const std::optional<api::BondConfig>& bond,
                  const std::string& base, ErrorList* errs) {
  if (master.empty()) {
    errs->push_back(Required(Child(base, "master"), "master can't be empty"));
    return;
  }
  for (size_t i = 0; i < master.size(); ++i) {
    if (master[i].empty()) {
      errs->push_back(Required(Index(Child(base, "master"), i), "master can't be empty"));
    }
  }
  if (master.size() < 2) return;
  if (!bond.has_value()) {
    errs->push_back(Required(Child(base, "bond"),
                             "the bond property is nil with multiple Interfaces: set bond.name "
                             "and bond.mode, or use one master"));
  } else if (bond->name.empty()) {
    errs->push_back(Required(Child(base, "bond.name"), "bond name can't be empty"));
  }
}

void CheckMatchMasterSubnet(const std::optional<api::SpiderpoolPools>& pools,
                            std::string_view cni_type, const std::string& base,
                            ErrorList* errs) {
  if (!pools.has_value() || !pools->match_master_subnet.value_or(false)) return;
  errs->push_back(Invalid(Child(base, "ippools.matchMasterSubnet"), BadValue::Bool(true),
                          StrCat("MatchMasterSubnet feature is not supported for ", cni_type)));
}

bool HasPools(const std::optional<api::SpiderpoolPools>& pools) {
  return pools.has_value() && (!pools->ipv4.empty() || !pools->ipv6.empty());
}

// The pod resource-inject annotations need a resource to inject and a pool to allocate from
// (ValidateRdmaResouce / ValidateNetworkResouce).
void CheckResourceInject(const api::SpiderMultusConfig& smc, const std::optional<std::string>& resource,
                         const std::string& resource_path,
                         const std::optional<api::SpiderpoolPools>& pools, const std::string& base,
                         ErrorList* errs) {
  bool has_resource = resource.has_value() && !resource->empty();
  if (Annotation(smc.metadata, api::kAnnoRdmaResourceInject) != nullptr) {
    if (!has_resource) {
      errs->push_back(Required(resource_path,
                               StrCat("the annotation ", api::kAnnoRdmaResourceInject,
                                      " needs a resource to inject: set ", resource_path)));
    }
    if (!HasPools(pools)) {
      errs->push_back(Required(Child(base, "ippools"),
                               StrCat("the annotation ", api::kAnnoRdmaResourceInject,
                                      " needs at least one IPv4 or IPv6 IPPool in ippools")));
    }
  }
  if (Annotation(smc.metadata, api::kAnnoNetworkResourceInject) != nullptr && has_resource &&
      !HasPools(pools)) {
    errs->push_back(Required(Child(base, "ippools"),
                             StrCat("the annotation ", api::kAnnoNetworkResourceInject,
                                    " with a resource name needs at least one IPv4 or IPv6 "
                                    "IPPool in ippools")));
  }
}

// libcni.ConfFromBytes: a JSON object with a non-empty string "type".
std::string CNIConfError(const std::string& text) {
  auto j = base::ParseJson(text);
  if (!j.ok()) {
    return StrCat("error parsing configuration: ", base::FromAbsl(j.status().message()));
  }
  if (!j->is_object()) {
    return "error parsing configuration: json: cannot unmarshal non-object into Go value of type "
           "types.NetConf";
  }
  auto t = j->find("type");
  if (t != j->end() && !t->is_string() && !t->is_null()) {
    return "error parsing configuration: json: cannot unmarshal non-string into Go struct field "
           "NetConf.type of type string";
  }
  if (t == j->end() || t->is_null() || t->get_ref<const std::string&>().empty()) {
    return "error parsing configuration: missing 'type'";
  }
  return "";
}

// validateCNIConfig.
void CheckCNIConfig(const api::SpiderMultusConfig& smc, ErrorList* errs) {
  const api::MultusCNIConfigSpec& s = smc.spec;
  if (!s.cni_type.has_value()) {
    errs->push_back(Invalid("spec.cniType", BadValue::Null(), "CniType must not be nil"));
    return;
  }
  const std::string& type = *s.cni_type;
  const std::string base(ConfigField(type));
  bool inject = Annotation(smc.metadata, api::kAnnoRdmaResourceInject) != nullptr ||
                Annotation(smc.metadata, api::kAnnoNetworkResourceInject) != nullptr;
  auto missing = [&] { errs->push_back(Required(base, StrCat("no ", base, " specified"))); };

  if (type == api::kCniTypeMacvlan || type == api::kCniTypeIPvlan) {
    const auto& cfg = type == api::kCniTypeMacvlan ? s.macvlan : s.ipvlan;
    if (!cfg.has_value()) {
      missing();
    } else {
      CheckVlanID(cfg->vlan_id, Child(base, "vlanID"), errs);
      CheckMTU(cfg->mtu, Child(base, "mtu"), errs);
      CheckMatchMasterSubnet(cfg->ippools, type, base, errs);
      CheckMasters(cfg->master, cfg->bond, base, errs);
      CheckResourceInject(smc, cfg->rdma_resource_name, Child(base, "rdmaResourceName"),
                          cfg->ippools, base, errs);
    }
  } else if (type == api::kCniTypeVlan) {
    if (!s.vlan.has_value()) {
      missing();
    } else {
      const api::SpiderVlanCniConfig& cfg = *s.vlan;
      std::string mode_path = Child(base, "vlanMode");
      std::string id_path = Child(base, "vlanID");
      if (!cfg.vlan_mode.has_value()) {
        errs->push_back(Required(mode_path, "vlanMode must be set: manual or auto"));
      } else if (*cfg.vlan_mode == "manual") {
        if (!cfg.vlan_id.has_value()) {
          errs->push_back(Required(id_path, "vlanId must not be nil when vlanMode is manual"));
        }
      } else if (*cfg.vlan_mode == "auto") {
        if (cfg.vlan_id.has_value()) {
          errs->push_back(Forbidden(id_path, "vlanId must not be specified when vlanMode is auto"));
        }
      } else {
        errs->push_back(NotSupported(mode_path, BadValue::String(*cfg.vlan_mode), {"manual", "auto"}));
      }
      CheckVlanID(cfg.vlan_id, id_path, errs);
      CheckMTU(cfg.mtu, Child(base, "mtu"), errs);
      CheckMatchMasterSubnet(cfg.ippools, type, base, errs);
      CheckMasters(cfg.master, cfg.bond, base, errs);
      CheckResourceInject(smc, cfg.rdma_resource_name, Child(base, "rdmaResourceName"),
                          cfg.ippools, base, errs);
    }
  } else if (type == api::kCniTypeSriov) {
    if (!s.sriov.has_value()) {
      missing();
    } else {
      const api::SpiderSRIOVCniConfig& cfg = *s.sriov;
      CheckVlanID(cfg.vlan_id, Child(base, "vlanID"), errs);
      CheckMTU(cfg.mtu, Child(base, "mtu"), errs);
      if (cfg.min_tx_rate_mbps.has_value() && cfg.max_tx_rate_mbps.has_value() &&
          *cfg.min_tx_rate_mbps > *cfg.max_tx_rate_mbps) {
        errs->push_back(Invalid(Child(base, "minTxRateMbps"), BadValue::Int(*cfg.min_tx_rate_mbps),
                                "minTxRateMbps must be less than maxTxRateMbps"));
      }
      if (!cfg.resource_name.has_value() || cfg.resource_name->empty()) {
        errs->push_back(Required(Child(base, "resourceName"),
                                 StrCat("no ", base, ".resourceName specified: name the SR-IOV "
                                                     "device-plugin resource of the VFs")));
      }
      CheckResourceInject(smc, cfg.resource_name, Child(base, "resourceName"), cfg.ippools, base,
                          errs);
    }
  } else if (type == api::kCniTypeIBSriov) {
    if (!s.ibsriov.has_value()) {
      missing();
    } else {
      const api::SpiderIBSriovCniConfig& cfg = *s.ibsriov;
      if (!cfg.resource_name.has_value() || cfg.resource_name->empty()) {
        errs->push_back(Required(Child(base, "resourceName"),
                                 StrCat("no ", base, ".resourceName specified: name the SR-IOV "
                                                     "device-plugin resource of the VFs")));
      }
      CheckResourceInject(smc, cfg.resource_name, Child(base, "resourceName"), cfg.ippools, base,
                          errs);
    }
  } else if (type == api::kCniTypeIPoIB) {
    if (!s.ipoib.has_value()) {
      missing();
    } else {
      const api::SpiderIpoibCniConfig& cfg = *s.ipoib;
      if (cfg.master.empty()) {
        errs->push_back(Required(Child(base, "master"), StrCat("no ", base, ".master specified")));
      }
      std::optional<std::string> master;
      if (!cfg.master.empty()) master = cfg.master;
      CheckResourceInject(smc, master, Child(base, "master"), cfg.ippools, base, errs);
    }
  } else if (type == api::kCniTypeOvs) {
    if (inject) {
      errs->push_back(Forbidden("spec.cniType", StrCat("the cniType ", type,
                                                       " does not support RDMA resource or "
                                                       "network resource injected")));
    }
    if (!s.ovs.has_value()) {
      missing();
    } else {
      const api::SpiderOvsCniConfig& cfg = *s.ovs;
      if (cfg.bridge.empty()) {
        errs->push_back(Required(Child(base, "bridge"), "bridge can't be empty"));
      }
      if (cfg.vlan.has_value()) CheckVlanID(cfg.vlan, Child(base, "vlan"), errs);
      for (size_t i = 0; i < cfg.trunk.size(); ++i) {
        const api::Trunk& t = cfg.trunk[i];
        std::string tp = Index(Child(base, "trunk"), i);
        if (t.min_id.has_value() && *t.min_id > 4094) {
          errs->push_back(Invalid(Child(tp, "minID"), BadValue::Int(*t.min_id),
                                  "incorrect trunk minID parameter"));
        }
        if (t.max_id.has_value() && *t.max_id > 4094) {
          errs->push_back(Invalid(Child(tp, "maxID"), BadValue::Int(*t.max_id),
                                  "incorrect trunk maxID parameter"));
        }
        if (t.min_id.has_value() && t.max_id.has_value() && *t.max_id < *t.min_id) {
          errs->push_back(Invalid(Child(tp, "maxID"), BadValue::Int(*t.max_id),
                                  "minID is greater than maxID in trunk parameter"));
        }
        if (t.id.has_value() && *t.id > 4096) {
          errs->push_back(
              Invalid(Child(tp, "id"), BadValue::Int(*t.id), "incorrect trunk id parameter"));
        }
      }
    }
  } else if (type == api::kCniTypeCustom) {
    if (inject) {
      errs->push_back(Forbidden("spec.cniType", StrCat("the cniType ", type,
                                                       " does not support RDMA resource or "
                                                       "network resource injected")));
    }
    if (s.custom_cni.has_value() && !s.custom_cni->empty() &&
        !base::ParseJson(*s.custom_cni).ok()) {
      errs->push_back(Forbidden("spec.customCNI", "customCNI isn't a valid JSON encoding"));
    }
  } else {
    errs->push_back(NotSupported("spec.cniType", BadValue::String(type),
                                 {"macvlan", "ipvlan", "vlan", "sriov", "ovs", "ib-sriov", "ipoib",
                                  "custom"}));
    return;
  }
  if (OtherConfigSet(s, type)) {
    errs->push_back(Forbidden("spec.cniType", StrCat("the cniType ", type, " only supports ",
                                                     base, ", please remove other CNI configs")));
  }
}

// validateAnnotation: the NAD name (cr-name or the SMC's own) and the CNI version.
void CheckAnnotations(const api::SpiderMultusConfig& smc, const Context& ctx, ErrorList* errs) {
  const std::string* cr_name = Annotation(smc.metadata, api::kAnnoMultusCRName);
  std::string nad_name = smc.metadata.name;
  std::string nad_path = "metadata.name";
  bool name_ok = true;
  if (cr_name != nullptr) {
    nad_name = *cr_name;
    nad_path = AnnotationPath(api::kAnnoMultusCRName);
    // Go's %v of the []string: "[msg1 msg2]".
    if (std::vector<std::string> msgs = api::IsDns1123Subdomain(*cr_name); !msgs.empty()) {
      name_ok = false;
      errs->push_back(Invalid(nad_path, BadValue::String(*cr_name),
                              StrCat("invalid custom net-attach-def resource name, err: [",
                                     absl::StrJoin(msgs, " "), "]")));
    }
  }
  if (name_ok && ctx.net_attach_def_owners) {
    const std::string& ns = smc.metadata.namespace_;
    auto owners = ctx.net_attach_def_owners(ns, nad_name);
    if (!owners.ok()) {
      errs->push_back(Internal(nad_path, StrCat("failed to retrieve net-attach-def ", ns, "/",
                                                nad_name,
                                                ", unable to determine conflicts with existing "
                                                "resources. error: ",
                                                base::FromAbsl(owners.status().message()))));
    } else if (owners->has_value()) {
      for (const api::OwnerReference& o : **owners) {
        if (o.kind != kMultusConfigKind || o.name == smc.metadata.name) continue;
        errs->push_back(Invalid(nad_path, BadValue::String(nad_name),
                                StrCat("the net-attach-def ", ns, "/", nad_name,
                                       " already exists and is managed by SpiderMultusConfig ",
                                       ns, "/", o.name, ".")));
        break;
      }
    }
  }
  const std::string* version = Annotation(smc.metadata, api::kAnnoMultusCNIVersion);
  if (version != nullptr) {
    bool known = false;
    for (const std::string& v : kCNIVersions) known = known || v == *version;
    if (!known) {
      errs->push_back(Invalid(AnnotationPath(api::kAnnoMultusCNIVersion), BadValue::String(*version),
                              StrCat("unsupported CNI version ", *version,
                                     ", supported versions: 0.3.0, 0.3.1, 0.4.0, 1.0.0")));
    }
  }
}

Result ValidateMultusConfig(const api::SpiderMultusConfig* old_smc,
                            const api::SpiderMultusConfig& smc, const Context& ctx) {
  Result r = NewResult(kMultusConfigKind, smc.metadata.name);
  ErrorList* errs = &r.errors;
  if (old_smc != nullptr) {
    const std::string* old_name = Annotation(old_smc->metadata, api::kAnnoMultusCRName);
    const std::string* new_name = Annotation(smc.metadata, api::kAnnoMultusCRName);
    std::string path = AnnotationPath(api::kAnnoMultusCRName);
    if (old_name != nullptr && new_name != nullptr && *old_name != *new_name) {
      errs->push_back(Invalid(path, BadValue::String(*old_name),
                              StrCat("it's unsupported to change customized Multus net-attach-def "
                                     "resource name from '",
                                     *old_name, "' to '", *new_name, "'")));
    } else if (old_name == nullptr && new_name != nullptr) {
      errs->push_back(Invalid(path, BadValue::String(*new_name),
                              StrCat("it's unsupported to changed Multus net-attach-def '",
                                     old_smc->metadata.name, "' to customized name '", *new_name,
                                     "'")));
    }
  }
  CheckAnnotations(smc, ctx, errs);
  CheckCNIConfig(smc, errs);
  if (smc.spec.coordinator.has_value()) {
    ErrorList c = ValidateCoordinatorSpec(*smc.spec.coordinator, "spec.coordinator",
                                          /*require_optional_fields=*/false);
    errs->insert(errs->end(), c.begin(), c.end());
  }
  for (size_t i = 0; i < smc.spec.chain_cni_json_data.size(); ++i) {
    const std::string& cf = smc.spec.chain_cni_json_data[i];
    std::string err = CNIConfError(cf);
    if (err.empty()) continue;
    errs->push_back(Forbidden(Index("spec.chainCNIJsonData", i), StrCat("invalid ", cf, ": ", err)));
  }
  return r;
}

// One NIC of a claim: multusName set and the SpiderMultusConfig present.
void CheckClaimNic(const api::ClaimNic& nic, std::string_view claim_ns, const std::string& path,
                   const Context& ctx, ErrorList* errs) {
  std::string name_path = Child(path, "multusName");
  if (nic.multus_name.empty()) {
    errs->push_back(Required(name_path, "multusName must not be empty: name the "
                                        "SpiderMultusConfig that configures this NIC"));
    return;
  }
  if (!ctx.multus_config_exists) return;
  std::string ns = nic.namespace_.empty() ? std::string(claim_ns) : nic.namespace_;
  auto exists = ctx.multus_config_exists(ns, nic.multus_name);
  if (!exists.ok()) {
    errs->push_back(Internal(name_path, StrCat("failed to get SpiderMultusConfig ", ns, "/",
                                               nic.multus_name, ": ",
                                               base::FromAbsl(exists.status().message()))));
  } else if (!*exists) {
    errs->push_back(NotFound(name_path, BadValue::String(nic.multus_name),
                             StrCat("SpiderMultusConfig ", ns, "/", nic.multus_name,
                                    " does not exist: create it first or fix multusName")));
  }
}

Result ValidateClaimParameter(const api::SpiderClaimParameter& scp, const Context& ctx) {
  Result r = NewResult(kClaimParameterKind, scp.metadata.name);
  if (scp.spec.default_nic.has_value()) {
    CheckClaimNic(*scp.spec.default_nic, scp.metadata.namespace_, "spec.defaultNic", ctx,
                  &r.errors);
  }
  for (size_t i = 0; i < scp.spec.secondary_nics.size(); ++i) {
    CheckClaimNic(scp.spec.secondary_nics[i], scp.metadata.namespace_,
                  Index("spec.secondaryNics", i), ctx, &r.errors);
  }
  return r;
}

}  // namespace

Result ValidateMultusConfigCreate(const api::SpiderMultusConfig& smc, const Context& ctx) {
  return ValidateMultusConfig(nullptr, smc, ctx);
}

Result ValidateMultusConfigUpdate(const api::SpiderMultusConfig& old_smc,
                                  const api::SpiderMultusConfig& smc, const Context& ctx) {
  return ValidateMultusConfig(&old_smc, smc, ctx);
}

Result ValidateClaimParameterCreate(const api::SpiderClaimParameter& scp, const Context& ctx) {
  return ValidateClaimParameter(scp, ctx);
}

Result ValidateClaimParameterUpdate(const api::SpiderClaimParameter& /*old_scp*/,
                                    const api::SpiderClaimParameter& scp, const Context& ctx) {
  return ValidateClaimParameter(scp, ctx);
}

}  // namespace spiderpool::api::validation
