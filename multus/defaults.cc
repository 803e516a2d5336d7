#include "multus/defaults.h"

#include "api/spider.h"

#include <optional>
#include <string>
#include <string_view>

namespace spiderpool::multus {
namespace {

template <typename T, typename U>
void Default(std::optional<T>& field, U value) {
  if (!field.has_value()) field = T(value);
}

// ---- CRD schema defaults (charts/spiderpool/crds/..._spidermultusconfigs.yaml) --------------

void CrdPools(std::optional<api::SpiderpoolPools>& pools) {
  if (pools.has_value()) Default(pools->match_master_subnet, false);
}

void CrdCoordinator(std::optional<api::CoordinatorSpec>& c) {
  if (!c.has_value()) return;
  Default(c->mode, "auto");
  Default(c->tune_pod_routes, true);
  Default(c->host_rule_table, 500);
  Default(c->pod_rp_filter, 0);
  Default(c->tx_queue_len, 0);
  Default(c->veth_mtu, 1500);
}

// ---- The mutating webhook ------------------------------------------------------------------

void WebhookPools(std::optional<api::SpiderpoolPools>& pools) {
  // Upstream sets {ipv4: [], ipv6: []}; empty lists are the same as absent here.
  if (!pools.has_value()) pools = api::SpiderpoolPools{};
}

void WebhookBond(std::optional<api::BondConfig>& bond) {
  if (bond.has_value()) Default(bond->options, "");
}

void WebhookMacvlan(std::optional<api::SpiderMacvlanCniConfig>& c) {
  if (!c.has_value()) return;
  Default(c->vlan_id, 0);
  Default(c->mtu, 0);
  Default(c->rdma_resource_name, "");
  WebhookBond(c->bond);
  WebhookPools(c->ippools);
}

void WebhookVlan(std::optional<api::SpiderVlanCniConfig>& c) {
  if (!c.has_value()) return;
  Default(c->vlan_mode, kVlanModeManual);
  // vlanID must stay unset in auto mode (the webhook rejects it there).
  if (*c->vlan_mode == kVlanModeManual) Default(c->vlan_id, 0);
  Default(c->mtu, 0);
  Default(c->rdma_resource_name, "");
  WebhookBond(c->bond);
  WebhookPools(c->ippools);
}

void WebhookSriov(std::optional<api::SpiderSRIOVCniConfig>& c) {
  if (!c.has_value()) return;
  Default(c->vlan_id, 0);
  Default(c->mtu, 0);
  Default(c->min_tx_rate_mbps, 0);
  Default(c->max_tx_rate_mbps, 0);
  Default(c->rdma_isolation, false);
  WebhookPools(c->ippools);
}

void WebhookIBSriov(std::optional<api::SpiderIBSriovCniConfig>& c) {
  if (!c.has_value()) return;
  Default(c->pkey, "");
  Default(c->link_state, "enable");
  Default(c->rdma_isolation, true);
  Default(c->enable_ib_kubernetes, false);
  WebhookPools(c->ippools);
}

void WebhookIpoib(std::optional<api::SpiderIpoibCniConfig>& c) {
  if (c.has_value()) WebhookPools(c->ippools);
}

void WebhookOvs(std::optional<api::SpiderOvsCniConfig>& c) {
  if (!c.has_value()) return;
  Default(c->vlan, 0);
  WebhookPools(c->ippools);
}

void WebhookCoordinator(std::optional<api::CoordinatorSpec>& c) {
  if (!c.has_value()) {
    api::CoordinatorSpec d;
    d.mode = "auto";
    d.veth_link_address = "";
    d.pod_mac_prefix = "";
    d.pod_default_route_nic = "";
    d.pod_rp_filter = 0;
    d.tune_pod_routes = true;
    c = std::move(d);
    return;
  }
  // A partial block: note tunePodRoutes false here (the CRD default, applied first by a real
  // API server, usually set it to true already).
  Default(c->mode, "auto");
  Default(c->pod_mac_prefix, "");
  Default(c->pod_default_route_nic, "");
  Default(c->tune_pod_routes, false);
  Default(c->tx_queue_len, 0);
  Default(c->pod_rp_filter, 0);
}

}  // namespace

void ApplyCrdDefaults(api::SpiderMultusConfig* smc) {
  api::MultusCNIConfigSpec& s = smc->spec;
  Default(s.cni_type, api::kCniTypeCustom);
  Default(s.enable_coordinator, true);
  Default(s.disable_ipam, false);
  if (s.macvlan.has_value()) {
    Default(s.macvlan->mtu, 0);
    CrdPools(s.macvlan->ippools);
  }
  if (s.ipvlan.has_value()) {
    Default(s.ipvlan->mtu, 0);
    CrdPools(s.ipvlan->ippools);
  }
  if (s.vlan.has_value()) {
    Default(s.vlan->mtu, 0);
    Default(s.vlan->vlan_mode, kVlanModeManual);
    CrdPools(s.vlan->ippools);
  }
  if (s.sriov.has_value()) {
    Default(s.sriov->mtu, 0);
    Default(s.sriov->rdma_isolation, false);
    CrdPools(s.sriov->ippools);
  }
  if (s.ibsriov.has_value()) {
    Default(s.ibsriov->link_state, "enable");
    Default(s.ibsriov->rdma_isolation, true);
    Default(s.ibsriov->enable_ib_kubernetes, false);
    CrdPools(s.ibsriov->ippools);
  }
  if (s.ipoib.has_value()) CrdPools(s.ipoib->ippools);
  if (s.ovs.has_value()) CrdPools(s.ovs->ippools);
  CrdCoordinator(s.coordinator);
}

void ApplyWebhookDefaults(api::SpiderMultusConfig* smc) {
  api::MultusCNIConfigSpec& s = smc->spec;
  // The webhook runs before the schema is enforced, so cniType may still be unset.
  Default(s.cni_type, api::kCniTypeCustom);
  const std::string& type = *s.cni_type;
  if (type == api::kCniTypeMacvlan) {
    WebhookMacvlan(s.macvlan);
  } else if (type == api::kCniTypeIPvlan) {
    WebhookMacvlan(s.ipvlan);
  } else if (type == api::kCniTypeVlan) {
    WebhookVlan(s.vlan);
  } else if (type == api::kCniTypeSriov) {
    WebhookSriov(s.sriov);
  } else if (type == api::kCniTypeIBSriov) {
    WebhookIBSriov(s.ibsriov);
  } else if (type == api::kCniTypeIPoIB) {
    WebhookIpoib(s.ipoib);
  } else if (type == api::kCniTypeOvs) {
    WebhookOvs(s.ovs);
  } else if (type == api::kCniTypeCustom) {
    Default(s.custom_cni, "");
  }
  // A custom config carries no coordinator.
  if (type == api::kCniTypeCustom) {
    s.coordinator.reset();
    s.enable_coordinator = false;
  } else {
    WebhookCoordinator(s.coordinator);
  }
  // chainCNIJsonData defaults to [] upstream: the same as empty here.

  // The resource-inject annotations are copied into labels of the same key, so the pod
  // webhook can list the SMCs by label selector.
  for (std::string_view key : {api::kAnnoRdmaResourceInject, api::kAnnoNetworkResourceInject}) {
    auto it = smc->metadata.annotations.find(std::string(key));
    if (it != smc->metadata.annotations.end()) smc->metadata.labels[it->first] = it->second;
  }
}

void DefaultSpiderMultusConfig(api::SpiderMultusConfig* smc) {
  ApplyCrdDefaults(smc);
  ApplyWebhookDefaults(smc);
  ApplyCrdDefaults(smc);
}

}  // namespace spiderpool::multus
