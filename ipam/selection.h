#pragma once
// Candidate-pool selection for one CNI ADD (reference §2.2 rules, §2.3 filters, §2.4 order):
//
//   SelectionRequest req{.pod = ..., .namespace_ = ..., .node = ..., .if_name = "eth0", ...};
//   SP_ASSIGN_OR_RETURN(Selection sel, SelectPools(req, config, pools));
//   for (const NicCandidates& nic : sel.nics)   // try nic.ipv4_pools in order, same for v6
//
// Pure: every input is a plain struct or an api::SpiderIPPool the caller took from its
// informer cache. The first matching rule wins:
//   1. ipam.spidernet.io/subnets | subnet (enable_spider_subnet && enable_auto_pool): the
//      application's auto pool(s), found among `pools` by their owner labels
//   2. pod ipam.spidernet.io/ippools (several NICs)
//   3. pod ipam.spidernet.io/ippool
//   4. namespace ipam.spidernet.io/default-ipv4-ippool / default-ipv6-ippool
//   5. the CNI config's default_ipv4_ippool / default_ipv6_ippool
//   6. every pool with spec.default=true
// Names in rules 2–5 may be shell patterns (Go filepath.Match: * ? [a-z] [^x] \x), matched
// against the pools of that IP version. Then, per NIC and family: families switched off are
// dropped silently; duplicates and unknown pools are errors; each pool is filtered
// (terminating, disabled, ipVersion, nodeName/nodeAffinity, namespaceName/namespaceAffinity,
// podAffinity, multusName) and the survivors are ordered (podAffinity first, then nodeName >
// nodeAffinity > neither, namespaceName > namespaceAffinity > neither, multusName; ties keep
// the order the rule gave, where upstream's order is undefined).
//
// Error codes: InvalidArgument for bad annotations/input (message as upstream, e.g. "wrong
// input, invalid format of Pod annotation 'ipam.spidernet.io/ippools': interface net1 must
// be specified"); NotFound for a named pool that does not exist ("failed to get original
// IPPool X: spiderippools.spiderpool.spidernet.io \"X\" not found"); FailedPrecondition
// for ErrNoAvailablePool ("no IPPool available, all IPv4 IPPools [a b] of eth0 filtered
// out: [unmatched Node name of IPPool a, disabled IPPool b]" or "no IPPool available, no
// pool selection rules of any type are specified"); Unavailable when rule 1's auto pool does
// not exist yet or is not at its desired size (retry later; upstream polls 25 x 2s).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/labels.h"
#include "api/spider_ippool.h"
#include "ipam/annotations.h"

namespace spiderpool::ipam {

// The pod's top controller (upstream PodTopController). For a bare pod: api_version "v1",
// kind "Pod", and the pod's own name/uid.
struct PodOwner {
  std::string api_version;  // "apps/v1", "batch/v1", "v1", "kubevirt.io/v1", ...
  std::string kind;         // Deployment | ReplicaSet | StatefulSet | DaemonSet | Job | CronJob
                            // | Pod | VirtualMachineInstance | <third-party>
  std::string namespace_;
  std::string name;
  std::string uid;
  // Desired replica count of the app (Deployment/ReplicaSet/StatefulSet replicas, DaemonSet
  // desiredNumberScheduled, Job parallelism/completions rule). Only rule 1 uses it, to check
  // that the auto pool has reached its size; unset skips that check.
  std::optional<int64_t> replicas;
};

struct PodInfo {
  std::string namespace_;
  std::string name;
  std::string uid;
  api::Labels labels;
  Annotations annotations;
  PodOwner owner;
};

struct NamespaceInfo {
  api::Labels labels;
  Annotations annotations;
};

struct NodeInfo {
  std::string name;
  api::Labels labels;
};

struct SelectionConfig {
  bool enable_ipv4 = true;
  bool enable_ipv6 = false;
  bool enable_spider_subnet = true;
  bool enable_auto_pool_for_application = true;
  int64_t cluster_subnet_default_flexible_ip_number = 1;
  // Where spiderpool runs: the namespace of bare multusName entries and of a default network
  // given without one.
  std::string agent_namespace = "kube-system";
  // The multus cluster network (ConfigMap key clusterNetwork), used for eth0 when the pod has
  // no v1.multus-cni.io/default-network annotation.
  std::optional<std::string> multus_cluster_network;
};

struct SelectionRequest {
  PodInfo pod;
  NamespaceInfo namespace_;
  NodeInfo node;
  std::string if_name;  // the NIC of this ADD (CNI_IFNAME)
  // The CNI config's IPAM block.
  std::vector<std::string> default_ipv4_pools;  // default_ipv4_ippool
  std::vector<std::string> default_ipv6_pools;  // default_ipv6_ippool
  bool clean_gateway = false;                   // clean_gateway
  // The NAD ("ns/name") of each NIC, for multusName filtering. NICs missing here are worked
  // out from the pod annotations with NetworkForNIC() (upstream's way), only when some
  // candidate pool has multusName.
  std::map<std::string, std::string> nad_by_nic;
};

enum class SelectionRule {
  kSubnetAnnotation = 1,      // ipam.spidernet.io/subnets | subnet (auto pools)
  kPodIPPoolsAnnotation = 2,  // ipam.spidernet.io/ippools
  kPodIPPoolAnnotation = 3,   // ipam.spidernet.io/ippool
  kNamespaceDefault = 4,      // namespace default-ipv4-ippool / default-ipv6-ippool
  kCNIDefault = 5,            // CNI default_ipv4_ippool / default_ipv6_ippool
  kClusterDefault = 6,        // spec.default=true
};

// The pools one NIC may draw from, best first (an ordered fallback list per family).
struct NicCandidates {
  // The NIC; with an ippools annotation that names no NIC these are "0","1",... ("0" is
  // the pod's eth0).
  std::string if_name;
  std::vector<std::string> ipv4_pools;  // empty: no IPv4 for this NIC
  std::vector<std::string> ipv6_pools;
  bool clean_gateway = false;
};

struct Selection {
  SelectionRule rule = SelectionRule::kClusterDefault;
  // One entry, except for rule 2 (one per annotation item, in annotation order). Upstream
  // allocates every listed NIC on the first ADD.
  std::vector<NicCandidates> nics;
  // Rule 2 without NIC names (upstream IsMultipleNicWithNoName): the results are ordered by
  // index and "0" is reported as eth0.
  bool multiple_nic_no_name = false;
};

absl::StatusOr<Selection> SelectPools(const SelectionRequest& request,
                                      const SelectionConfig& config,
                                      const std::vector<const api::SpiderIPPool*>& pools);

// ---- Pieces, public for the agent/controller and for tests --------------------------------

// Why `pool` cannot serve `nic` of this pod, or "" when it can (upstream selectByPod, same
// order and messages: "terminating IPPool X", "disabled IPPool X", "expect an IPv4 IPPool,
// but the version of the IPPool X is IPv6", "unmatched Node name of IPPool X", "unmatched
// Node affinity of IPPool X", "unmatched Namespace name of IPPool X", "unmatched Namespace
// affinity of IPPool X", "unmatched Pod affinity of IPPool X", "unmatched Pod annifity of
// auto-created IPool X" [sic], "interface eth0 IPPool X specified multusName [a b] unmacthed
// multusCR ns/name" [sic]). `nad` is the NAD of the NIC ("ns/name"), or an error text when it
// could not be worked out (returned as the reason when multusName is set).
std::string PoolFilterReason(const api::SpiderIPPool& pool, int ip_version,
                             const SelectionRequest& request, const SelectionConfig& config,
                             std::string_view nic, const absl::StatusOr<std::string>& nad);

// The pool's nodeName (if set) names `node`, else its nodeAffinity (if set) matches the node's
// labels. (The node part of PoolFilterReason; also used for the DRA device model.)
bool PoolAdmitsNode(const api::SpiderIPPool& pool, const NodeInfo& node);

// Upstream ByPoolPriority: true when `a` must be tried before `b`.
bool PoolPriorityLess(const api::SpiderIPPool& a, const api::SpiderIPPool& b);

// Go filepath.Match (pool names contain no '/'). InvalidArgument "syntax error in pattern"
// for a malformed pattern.
absl::StatusOr<bool> WildcardMatch(std::string_view pattern, std::string_view name);
// Upstream HasWildcardInStr: contains '*' or '?', or both '[' and ']'.
bool HasWildcard(std::string_view name);

// ---- Auto pools (rule 1, §2.7) -------------------------------------------------------------

// auto<4|6>-<app name>-<nic>-<first 5 chars of the UID's last '-' group>, lower-cased, the
// app name cut so the whole fits 253 characters (upstream AutoPoolName; upstream's cut is
// one character short, giving invalid 254-character names, fixed here).
std::string AutoPoolName(std::string_view app_name, int ip_version, std::string_view if_name,
                         std::string_view app_uid);
// "apps/v1" -> "apps_v1", "v1" -> "v1" (upstream ApplicationLabelGV).
std::string ApplicationLabelGV(std::string_view api_version);
// True for the controllers the spiderpool-controller makes auto pools for itself
// (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob under apps/v1 or batch/v1);
// for the others ("third-party") the agent creates or scales the pool.
bool IsBuiltinController(const PodOwner& owner);
// A pool made from a subnet for an app (upstream IsAutoCreatedIPPool: it carries the
// ipam.spidernet.io/owner-application-name label).
bool IsAutoCreatedPool(const api::SpiderIPPool& pool);

// The auto pool rule 1 wants for one family of one NIC.
struct AutoPoolRef {
  std::string subnet;     // the SpiderSubnet (first of the family in the annotation)
  int ip_version = 4;
  std::string if_name;
  std::string pool_name;  // AutoPoolName(owner.name, ip_version, if_name, owner.uid)
  // The labels the pool carries, by which it is found (owner-spider-subnet, owner-application
  // gv/kind/namespace/name[/uid for built-in controllers], interface, ip-version IPv4|IPv6).
  std::map<std::string, std::string> match_labels;
  // Desired size (replicas + flexible, or the fixed number); nullopt when replicas are
  // unknown. Third-party controllers require a fixed ippool-ip-number.
  std::optional<int64_t> desired_ip_number;
  bool reclaim = true;  // ipam.spidernet.io/ippool-reclaim
};
// Rule 1's wanted auto pools for `request.if_name` (one per enabled family named in the
// annotation); empty when the pod has no subnet annotation. Errors as SelectPools' rule 1
// ("SpiderSubnet feature doesn't support no-controller pod", annotation errors, "it's invalid
// to use 'ipam.spidernet.io/subnets' or 'ipam.spidernet.io/subnet' annotation when Auto-Pool
// feature is disabled").
absl::StatusOr<std::vector<AutoPoolRef>> AutoPoolRefsForPod(const SelectionRequest& request,
                                                            const SelectionConfig& config);
// The existing pool among `pools` that serves `ref` (upstream findAppAutoPool /
// applyThirdControllerAutoPool lookup), or nullptr. InvalidArgument when several match.
absl::StatusOr<const api::SpiderIPPool*> FindAutoPool(
    const AutoPoolRef& ref, const PodOwner& owner,
    const std::vector<const api::SpiderIPPool*>& pools);

}  // namespace spiderpool::ipam
