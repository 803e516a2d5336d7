#pragma once
// SpiderMultusConfig (spiderpool.spidernet.io/v2beta1; namespaced, short name `smc`, no
// status): one CNI configuration, turned into a Multus NetworkAttachmentDefinition by the
// controller. Reference §1.5. Go pointers are std::optional: the mutating webhook's defaults
// (and "unset means inherit from the SpiderCoordinator") depend on set-vs-unset.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/meta.h"
#include "api/spider_types.h"

namespace spiderpool::api {

inline constexpr std::string_view kCniTypeMacvlan = "macvlan";
inline constexpr std::string_view kCniTypeIPvlan = "ipvlan";
inline constexpr std::string_view kCniTypeVlan = "vlan";
inline constexpr std::string_view kCniTypeSriov = "sriov";
inline constexpr std::string_view kCniTypeOvs = "ovs";
inline constexpr std::string_view kCniTypeIBSriov = "ib-sriov";
inline constexpr std::string_view kCniTypeIPoIB = "ipoib";
inline constexpr std::string_view kCniTypeCustom = "custom";

// macvlan and ipvlan share one shape.
struct SpiderMacvlanCniConfig {
  std::vector<std::string> master;  // >= 1; >= 2 needs `bond`
  std::optional<int32_t> mtu;       // 0 = kernel default
  std::optional<int32_t> vlan_id;   // "vlanID", 0..4094
  std::optional<BondConfig> bond;
  std::optional<std::string> rdma_resource_name;
  std::optional<SpiderpoolPools> ippools;
  template <typename V>
  void Visit(V& v) {
    v.Field("master", master, {.required = true});
    v.Field("mtu", mtu, {.minimum = 0});
    v.Field("vlanID", vlan_id, {.minimum = 0, .maximum = 4094});
    v.Field("bond", bond);
    v.Field("rdmaResourceName", rdma_resource_name);
    v.Field("ippools", ippools);
  }
};
using SpiderIPvlanCniConfig = SpiderMacvlanCniConfig;

// cniType vlan (upstream 2026): the vlan CNI plugin on a master NIC or bond.
struct SpiderVlanCniConfig {
  std::vector<std::string> master;
  std::optional<int32_t> mtu;
  std::optional<std::string> vlan_mode;  // manual (default) | auto
  std::optional<int32_t> vlan_id;        // required for manual, forbidden for auto (webhook)
  std::optional<BondConfig> bond;
  std::optional<std::string> rdma_resource_name;
  std::optional<SpiderpoolPools> ippools;
  template <typename V>
  void Visit(V& v) {
    v.Field("master", master, {.required = true});
    v.Field("mtu", mtu, {.minimum = 0});
    v.Field("vlanMode", vlan_mode, {.enum_values = {"manual", "auto"}});
    v.Field("vlanID", vlan_id, {.minimum = 0, .maximum = 4094});
    v.Field("bond", bond);
    v.Field("rdmaResourceName", rdma_resource_name);
    v.Field("ippools", ippools);
  }
};

struct SpiderSRIOVCniConfig {
  std::optional<std::string> resource_name;  // required by the webhook
  std::optional<int32_t> vlan_id;
  std::optional<int32_t> mtu;  // applied by a chained tuning plugin
  std::optional<int64_t> min_tx_rate_mbps;
  std::optional<int64_t> max_tx_rate_mbps;
  std::optional<bool> rdma_isolation;
  std::optional<SpiderpoolPools> ippools;
  template <typename V>
  void Visit(V& v) {
    v.Field("resourceName", resource_name);
    v.Field("vlanID", vlan_id, {.minimum = 0, .maximum = 4094});
    v.Field("mtu", mtu, {.minimum = 0});
    v.Field("minTxRateMbps", min_tx_rate_mbps, {.minimum = 0});
    v.Field("maxTxRateMbps", max_tx_rate_mbps, {.minimum = 0});
    v.Field("rdmaIsolation", rdma_isolation);
    v.Field("ippools", ippools);
  }
};

struct SpiderIBSriovCniConfig {
  std::optional<std::string> resource_name;  // required by the webhook
  std::optional<std::string> pkey;
  std::optional<std::string> link_state;  // auto | enable (default) | disable
  std::optional<bool> rdma_isolation;     // default true
  std::optional<bool> enable_ib_kubernetes;
  std::optional<SpiderpoolPools> ippools;
  template <typename V>
  void Visit(V& v) {
    v.Field("resourceName", resource_name);
    v.Field("pkey", pkey);
    v.Field("linkState", link_state, {.enum_values = {"auto", "enable", "disable"}});
    v.Field("rdmaIsolation", rdma_isolation);
    v.Field("enableIbKubernetes", enable_ib_kubernetes);
    v.Field("ippools", ippools);
  }
};

struct SpiderIpoibCniConfig {
  std::string master;  // required by the webhook
  std::optional<SpiderpoolPools> ippools;
  template <typename V>
  void Visit(V& v) {
    v.Field("master", master);
    v.Field("ippools", ippools);
  }
};

struct Trunk {
  std::optional<int64_t> min_id;
  std::optional<int64_t> max_id;
  std::optional<int64_t> id;
  template <typename V>
  void Visit(V& v) {
    v.Field("minID", min_id, {.minimum = 0, .maximum = 4094});
    v.Field("maxID", max_id, {.minimum = 0, .maximum = 4094});
    v.Field("id", id, {.minimum = 0, .maximum = 4094});
  }
};

struct SpiderOvsCniConfig {
  std::string bridge;
  std::optional<int32_t> vlan;
  std::vector<Trunk> trunk;
  std::string device_id;  // "deviceID": PCI address of a VF
  std::optional<SpiderpoolPools> ippools;
  template <typename V>
  void Visit(V& v) {
    v.Field("bridge", bridge, {.required = true});
    v.Field("vlan", vlan);
    v.Field("trunk", trunk);
    v.Field("deviceID", device_id);
    v.Field("ippools", ippools);
  }
};

struct MultusCNIConfigSpec {
  std::optional<std::string> cni_type;  // CRD default "custom"
  std::optional<SpiderMacvlanCniConfig> macvlan;
  std::optional<SpiderIPvlanCniConfig> ipvlan;
  std::optional<SpiderVlanCniConfig> vlan;
  std::optional<SpiderSRIOVCniConfig> sriov;
  std::optional<SpiderIBSriovCniConfig> ibsriov;
  std::optional<SpiderIpoibCniConfig> ipoib;
  std::optional<SpiderOvsCniConfig> ovs;
  std::optional<bool> enable_coordinator;  // default true; forced false for custom
  std::optional<bool> disable_ipam;        // default false
  std::optional<CoordinatorSpec> coordinator;
  std::vector<std::string> chain_cni_json_data;  // each one extra plugin config (JSON text)
  std::optional<std::string> custom_cni;         // raw JSON NAD config, custom only
  template <typename V>
  void Visit(V& v) {
    v.Field("cniType", cni_type,
            {.enum_values = {"macvlan", "ipvlan", "vlan", "sriov", "ovs", "ib-sriov", "ipoib",
                             "custom"}});
    v.Field("macvlan", macvlan);
    v.Field("ipvlan", ipvlan);
    v.Field("vlan", vlan);
    v.Field("sriov", sriov);
    v.Field("ibsriov", ibsriov);
    v.Field("ipoib", ipoib);
    v.Field("ovs", ovs);
    v.Field("enableCoordinator", enable_coordinator);
    v.Field("disableIPAM", disable_ipam);
    v.Field("coordinator", coordinator);
    v.Field("chainCNIJsonData", chain_cni_json_data);
    v.Field("customCNI", custom_cni);
  }
};

struct SpiderMultusConfig {
  SP_API_OBJECT_HEAD(SpiderMultusConfig)
  MultusCNIConfigSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};
using SpiderMultusConfigList = List<SpiderMultusConfig>;

}  // namespace spiderpool::api
