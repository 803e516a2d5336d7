#pragma once
// Where a cluster's pod and service CIDRs are written down, and how to read them: pure
// functions over objects already fetched (no API calls), used by the SpiderCoordinator
// controller (controller.h). Every function accepts anything the server may hand back and
// never throws; values that are not CIDRs are skipped (as upstream does).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/core.h"
#include "base/json.h"

namespace spiderpool::op::coordinator {

// The CIDRs of a comma- (and/or whitespace-) separated list, trimmed, in order, without
// duplicates; entries that do not parse as a CIDR are dropped.
std::vector<std::string> ParseCIDRList(std::string_view text);

// The value of `--<flag>` in a container's command + args (`--flag=v` or `--flag v`; shell
// strings such as `sh -c "kube-apiserver --flag=v"` are split on whitespace), parsed with
// ParseCIDRList. The first container of `pod` that carries the flag wins. nullopt when no
// container has the flag at all; an empty list when it has one without a CIDR.
std::optional<std::vector<std::string>> FlagCIDRs(const api::Pod& pod, std::string_view flag);

// kubeadm-config: data["ClusterConfiguration"] (YAML) networking.<field> (podSubnet or
// serviceSubnet), parsed with ParseCIDRList. nullopt when the key, the YAML or the field is
// missing (or not a string).
std::optional<std::vector<std::string>> KubeadmNetworkingCIDRs(const api::ConfigMap& cm,
                                                               std::string_view field);

// Cilium's cluster-pool CIDRs from cilium-config: `cluster-pool-ipv4-cidr` then
// `cluster-pool-ipv6-cidr` (each a space/comma separated list).
struct CiliumConfigCIDRs {
  std::string ipam_mode;  // data["ipam"]; "" means Cilium's default, cluster-pool
  std::vector<std::string> cidrs;
  std::vector<std::string> invalid;  // entries of those keys that are no CIDR
};
CiliumConfigCIDRs CiliumClusterPoolCIDRs(const api::ConfigMap& cm);
// IPAM modes whose CIDRs are the cilium-config cluster-pool keys.
bool CiliumUsesClusterPool(std::string_view ipam_mode);

// spec.cidr of every Calico IPPool (crd.projectcalico.org/v1) in the list object `list` that
// is not disabled (spec.disabled) and not being deleted.
std::vector<std::string> CalicoPoolCIDRs(const base::Json& list);
// Whether `list` holds any IPPool that is not being deleted (enabled or not).
bool HasLiveItems(const base::Json& list);

// spec.cidrs of every ServiceCIDR (networking.k8s.io) in the list object `list` that is not
// being deleted.
std::vector<std::string> ServiceCIDRObjectCIDRs(const base::Json& list);

}  // namespace spiderpool::op::coordinator
