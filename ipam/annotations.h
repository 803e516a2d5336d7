#pragma once
// Parsers for the pod / namespace annotations IPAM reads (reference §2.2, §2.3, §2.7). All
// input is untrusted user text: every function returns a Status with upstream's message and
// never throws. Unknown JSON keys are ignored (Go's encoding/json behaviour).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/spider_types.h"

namespace spiderpool::ipam {

using Annotations = std::map<std::string, std::string>;

// The default NIC name (upstream constant ClusterDefaultInterfaceName).
inline constexpr std::string_view kDefaultInterface = "eth0";

// ipam.spidernet.io/ippool: {"ipv4":[...],"ipv6":[...]}.
struct AnnoPodIPPool {
  std::vector<std::string> ipv4;
  std::vector<std::string> ipv6;
};
// ipam.spidernet.io/ippools: [{"interface":..,"ipv4":[..],"ipv6":[..],"cleangateway":bool}].
struct AnnoIPPoolItem {
  std::string interface_;
  std::vector<std::string> ipv4;
  std::vector<std::string> ipv6;
  bool clean_gateway = false;
};
// ipam.spidernet.io/subnet(s): {"interface":..,"ipv4":[..],"ipv6":[..]}.
struct AnnoSubnetItem {
  std::string interface_;
  std::vector<std::string> ipv4;
  std::vector<std::string> ipv6;
};

// Errors: InvalidArgument "wrong input, invalid format of Pod annotation
// 'ipam.spidernet.io/ippool': <json error>".
absl::StatusOr<AnnoPodIPPool> ParsePodIPPoolAnnotation(std::string_view value);
absl::StatusOr<std::vector<AnnoIPPoolItem>> ParsePodIPPoolsAnnotation(std::string_view value);

// Upstream validateAndMutateMultipleNICAnnotations: at least one item ("value requires at
// least one item"); NIC names all set or all unset ("NIC should be either all specified or
// all unspecified"); unset names become "0","1",...; no duplicates ("duplicate interface
// X"); with names, `current_nic` must be one ("interface X must be specified"). Messages are
// returned bare; SelectPools prefixes them like upstream.
absl::Status ValidateAndMutateMultiNIC(std::vector<AnnoIPPoolItem>& items,
                                       std::string_view current_nic);
// True when ipam.spidernet.io/ippools is present, parses, is non-empty and names no NIC
// (upstream IsMultipleNicWithNoName).
bool IsMultipleNicWithNoName(const Annotations& pod_annotations);

// ipam.spidernet.io/routes: [{"dst":"CIDR","gw":"IP"}], dst and gw of one family. Absent ->
// empty. Error: "wrong input, invalid format of Pod annotation 'ipam.spidernet.io/routes':
// ...".
absl::StatusOr<std::vector<api::Route>> ParsePodRoutesAnnotation(const Annotations& pod_annotations);

// Namespace ipam.spidernet.io/default-ipv4-ippool / -ipv6-ippool (JSON arrays). Absent ->
// empty.
struct NamespaceDefaultPools {
  std::vector<std::string> ipv4;
  std::vector<std::string> ipv6;
};
absl::StatusOr<NamespaceDefaultPools> ParseNamespaceDefaultPools(
    const Annotations& namespace_annotations);

// ipam.spidernet.io/subnets (wins) or ipam.spidernet.io/subnet, plus
// ipam.spidernet.io/ippool-ip-number and ipam.spidernet.io/ippool-reclaim (upstream
// GetSubnetAnnoConfig). nullopt when neither subnet annotation is present. Only the first
// subnet per family is kept; a single item without interface gets "eth0".
struct SubnetAnnotation {
  std::vector<AnnoSubnetItem> multiple;   // from "subnets"
  std::optional<AnnoSubnetItem> single;   // from "subnet"
  std::optional<int64_t> flexible_ip_number;  // "+N", or the cluster default when absent
  int64_t assign_ip_number = 0;               // "N"
  bool reclaim_ip_pool = true;
};
absl::StatusOr<std::optional<SubnetAnnotation>> ParseSubnetAnnotation(
    const Annotations& pod_annotations, int64_t cluster_default_flexible_ip_number);
// "N" -> {false, N}; "+N" -> {true, N} (upstream GetPoolIPNumber; error "invalid input 'x'").
absl::StatusOr<std::pair<bool, int64_t>> ParsePoolIPNumber(std::string_view value);

// ---- Multus ---------------------------------------------------------------------------------

// One element of k8s.v1.cni.cncf.io/networks.
struct NetworkSelection {
  std::string name;
  std::string namespace_;  // defaulted to the pod's namespace
  std::string interface_;  // "interface" (may be empty)
};
// Parses k8s.v1.cni.cncf.io/networks: the JSON list form ('[{"name":..,"namespace":..,
// "interface":..}]') or the comma form ("ns/name@if, name2"), as spiderpool's
// ParsePodNetworkAnnotation does (an empty value is an error).
absl::StatusOr<std::vector<NetworkSelection>> ParseNetworksAnnotation(
    std::string_view value, std::string_view default_namespace);
// "ns/name@if" -> {ns, name, if}; each part must be a DNS-1123 label when non-empty.
struct NetworkObjectName {
  std::string namespace_;
  std::string name;
  std::string interface_;
};
absl::StatusOr<NetworkObjectName> ParseNetworkObjectName(std::string_view text);

// The NAD ("ns/name") the pod uses for `nic` (upstream selectByPod's multus part):
// - "eth0" or "0": v1.multus-cni.io/default-network, else `cluster_network` (error when
//   unset: "cluster-network multus isn't set"); a missing namespace is `agent_namespace`.
// - other NICs: the k8s.v1.cni.cncf.io/networks entry whose interface (default
//   "net<idx+1>") is `nic`, or whose index+1 is `nic` ("1","2",...); a missing namespace is
//   the pod's.
absl::StatusOr<std::string> NetworkForNIC(const Annotations& pod_annotations,
                                          std::string_view pod_namespace, std::string_view nic,
                                          const std::optional<std::string>& cluster_network,
                                          std::string_view agent_namespace);

}  // namespace spiderpool::ipam
