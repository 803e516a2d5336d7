#pragma once
// SpiderIPPool, SpiderSubnet and SpiderReservedIP (spiderpool.spidernet.io/v2beta1; cluster
// scoped). Reference: docs/reference/spiderpool.md §1.1–1.3.
//
// The IP bookkeeping lives in status strings holding JSON (upstream's design, kept for API
// compatibility): SpiderIPPool.status.allocatedIPs maps IP -> {pod, podUid} and
// SpiderSubnet.status.controlledIPPools maps pool name -> {ips, application}. The structs keep
// the raw strings; ParsePoolIPAllocations()/SerializePoolIPAllocations() (and the subnet pair)
// convert them to typed maps with field-path errors.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/codec.h"
#include "api/meta.h"
#include "api/spider_types.h"

namespace spiderpool::api {

// ---- SpiderIPPool -------------------------------------------------------------------------

struct IPPoolSpec {
  std::optional<int64_t> ip_version;  // 4 | 6; the mutating webhook fills it from `subnet`
  std::string subnet;                 // CIDR, canonical form (webhook rule)
  std::vector<std::string> ips;       // IPs or "a-b" ranges inside `subnet`
  std::vector<std::string> exclude_ips;
  std::optional<std::string> gateway;
  std::optional<std::vector<Route>> routes;  // nil (inherit from subnet) != [] (no routes)
  std::optional<LabelSelector> pod_affinity;
  std::optional<LabelSelector> namespace_affinity;
  std::vector<std::string> namespace_name;
  std::optional<LabelSelector> node_affinity;
  std::vector<std::string> node_name;
  std::vector<std::string> multus_name;  // "ns/name" (bare name: spiderpool's namespace)
  std::optional<bool> default_;          // a cluster default pool
  std::optional<bool> disable;           // no new allocations
  template <typename V>
  void Visit(V& v) {
    v.Field("ipVersion", ip_version, {.enum_values = {"4", "6"}});
    v.Field("subnet", subnet, {.required = true, .format = Format::kCIDR});
    v.Field("ips", ips, {.format = Format::kIPRange});
    v.Field("excludeIPs", exclude_ips, {.format = Format::kIPRange});
    v.Field("gateway", gateway, {.format = Format::kIP});
    v.Field("routes", routes);
    v.Field("podAffinity", pod_affinity);
    v.Field("namespaceAffinity", namespace_affinity);
    v.Field("namespaceName", namespace_name);
    v.Field("nodeAffinity", node_affinity);
    v.Field("nodeName", node_name);
    v.Field("multusName", multus_name);
    v.Field("default", default_);
    v.Field("disable", disable);
  }
};

struct IPPoolStatus {
  std::optional<std::string> allocated_ips;  // JSON: {"<ip>": {"pod": "ns/name", "podUid": ...}}
  std::optional<int64_t> total_ip_count;
  std::optional<int64_t> allocated_ip_count;  // pod records (node reservations are not pods')
  // Our extensions, so that `kubectl get sp` adds up without parsing allocatedIPs
  // (allocated + reserved + free == total; api/pool_counts.h computes all four):
  // IPs held back from pods (node reservations, SpiderReservedIP addresses no record holds),
  std::optional<int64_t> reserved_ip_count;
  // and IPs the next pod can get.
  std::optional<int64_t> free_ip_count;
  template <typename V>
  void Visit(V& v) {
    v.Field("allocatedIPs", allocated_ips);
    v.Field("totalIPCount", total_ip_count, {.minimum = 0});
    v.Field("allocatedIPCount", allocated_ip_count, {.minimum = 0});
    v.Field("reservedIPCount", reserved_ip_count, {.minimum = 0});
    v.Field("freeIPCount", free_ip_count, {.minimum = 0});
  }
};

// One record of status.allocatedIPs. Upstream writes only pod/podUid (older versions also
// "interface"); node/containerID/interface are our additions, optional, and ignored by
// upstream readers (Go drops unknown keys). Other keys are kept in `unknown`.
struct PoolIPAllocation {
  std::string pod;      // "ns/name" (the VM name for KubeVirt)
  std::string pod_uid;  // "podUid"
  std::optional<std::string> node;          // "node": the pod's node when allocated
  std::optional<std::string> container_id;  // "containerID": the CNI container ID
  std::optional<std::string> interface_;    // "interface": the pod NIC (eth0, net1, ...)
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    // Both empty only in a node reservation (IsNodeReservation; PoolState rejects the rest).
    v.Field("pod", pod, {.required = true, .allow_empty = true});
    v.Field("podUid", pod_uid, {.required = true, .allow_empty = true});
    v.Field("node", node);
    v.Field("containerID", container_id);
    v.Field("interface", interface_);
    v.Unknown(unknown);
  }
  friend bool operator==(const PoolIPAllocation& a, const PoolIPAllocation& b) {
    return a.pod == b.pod && a.pod_uid == b.pod_uid && a.node == b.node &&
           a.container_id == b.container_id && a.interface_ == b.interface_ &&
           (a.unknown == b.unknown || (a.unknown.empty() && b.unknown.empty()));
  }
};
using PoolIPAllocations = std::map<std::string, PoolIPAllocation>;  // ip -> record

// A node reservation: `{"pod":"","podUid":"","node":"<node>"}` — an IP the agent of <node>
// holds for pods it is about to start (agent/ipam/blocks.h). The agent turns it into a pod
// record shortly after handing the IP out (the pod's SpiderEndpoint is the record meanwhile) or
// gives it back when idle; the GC frees the reservations of nodes that no longer exist.
// Not counted in allocatedIPCount (no pod holds it); not free either.
inline bool IsNodeReservation(const PoolIPAllocation& rec) {
  return rec.pod.empty() && rec.pod_uid.empty() && rec.node.has_value() && !rec.node->empty();
}

struct SpiderIPPool {
  SP_API_OBJECT_HEAD(SpiderIPPool)
  IPPoolSpec spec;  // required: spec.subnet is, and encoding always writes it
  IPPoolStatus status;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec, {.required = true});
    v.Field("status", status);
  }

  // status.allocatedIPs as a typed map (empty when unset).
  absl::StatusOr<PoolIPAllocations> AllocatedIPs() const;
  // Writes status.allocatedIPs (unset when empty, as upstream does) and
  // status.allocatedIPCount = allocations.size(). freeIPCount is left to the caller, who knows
  // the usable set.
  void SetAllocatedIPs(const PoolIPAllocations& allocations);
};
using SpiderIPPoolList = List<SpiderIPPool>;

// Parses a status.allocatedIPs string. Unset, "", "null" and "{}" give an empty map. Every
// problem is reported, with paths like `status.allocatedIPs[10.0.0.300]: "10.0.0.300" is not
// an IP` or `status.allocatedIPs[10.0.0.1].podUid: Required value`.
absl::StatusOr<PoolIPAllocations> ParsePoolIPAllocations(const std::optional<std::string>& text);
// Compact JSON with keys sorted; nullopt for an empty map.
std::optional<std::string> SerializePoolIPAllocations(const PoolIPAllocations& allocations);

// ---- SpiderSubnet -------------------------------------------------------------------------

struct SubnetSpec {
  std::optional<int64_t> ip_version;
  std::string subnet;
  std::vector<std::string> ips;
  std::vector<std::string> exclude_ips;
  std::optional<std::string> gateway;
  std::optional<std::vector<Route>> routes;
  template <typename V>
  void Visit(V& v) {
    v.Field("ipVersion", ip_version, {.enum_values = {"4", "6"}});
    v.Field("subnet", subnet, {.required = true, .format = Format::kCIDR});
    v.Field("ips", ips, {.format = Format::kIPRange});
    v.Field("excludeIPs", exclude_ips, {.format = Format::kIPRange});
    v.Field("gateway", gateway, {.format = Format::kIP});
    v.Field("routes", routes);
  }
};

struct SubnetStatus {
  std::optional<std::string> controlled_ip_pools;  // JSON: {"<pool>": {"ips": [...], ...}}
  std::optional<int64_t> total_ip_count;
  std::optional<int64_t> allocated_ip_count;  // IPs handed to pools, not to pods
  std::optional<int64_t> free_ip_count;       // our extension, as on SpiderIPPool
  template <typename V>
  void Visit(V& v) {
    v.Field("controlledIPPools", controlled_ip_pools);
    v.Field("totalIPCount", total_ip_count, {.minimum = 0});
    v.Field("allocatedIPCount", allocated_ip_count, {.minimum = 0});
    v.Field("freeIPCount", free_ip_count, {.minimum = 0});
  }
};

// One record of status.controlledIPPools.
struct PoolIPPreAllocation {
  std::vector<std::string> ips;            // ranges handed to the pool
  std::optional<std::string> application;  // "<apiGroup>_<version>_<Kind>_<ns>_<name>"
  template <typename V>
  void Visit(V& v) {
    v.Field("ips", ips, {.format = Format::kIPRange});
    v.Field("application", application);
  }
  friend bool operator==(const PoolIPPreAllocation&, const PoolIPPreAllocation&) = default;
};
using PoolIPPreAllocations = std::map<std::string, PoolIPPreAllocation>;  // pool -> record

struct SpiderSubnet {
  SP_API_OBJECT_HEAD(SpiderSubnet)
  SubnetSpec spec;  // required, as on SpiderIPPool
  SubnetStatus status;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec, {.required = true});
    v.Field("status", status);
  }

  absl::StatusOr<PoolIPPreAllocations> ControlledIPPools() const;
  // Writes status.controlledIPPools (unset when empty). Counts are left to the caller.
  void SetControlledIPPools(const PoolIPPreAllocations& pools);
};
using SpiderSubnetList = List<SpiderSubnet>;

absl::StatusOr<PoolIPPreAllocations> ParsePoolIPPreAllocations(
    const std::optional<std::string>& text);
std::optional<std::string> SerializePoolIPPreAllocations(const PoolIPPreAllocations& pools);

// ---- SpiderReservedIP ---------------------------------------------------------------------

struct ReservedIPSpec {
  std::optional<int64_t> ip_version;  // filled in from ips[0]
  std::vector<std::string> ips;
  template <typename V>
  void Visit(V& v) {
    v.Field("ipVersion", ip_version, {.enum_values = {"4", "6"}});
    v.Field("ips", ips, {.format = Format::kIPRange});
  }
};

struct SpiderReservedIP {
  SP_API_OBJECT_HEAD(SpiderReservedIP)
  ReservedIPSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};
using SpiderReservedIPList = List<SpiderReservedIP>;

}  // namespace spiderpool::api
