#pragma once
// Pure decisions of the SpiderSubnet auto-pool controller (reference §1.1, §1.2, §2.7, §2.8;
// upstream pkg/applicationcontroller + pkg/subnetmanager): which applications get auto pools,
// how many IPs each pool wants, what the pool object looks like, and which subnet IPs it
// holds after a scale. No I/O; controller.h does the reads and writes.
//
//   Application app = ApplicationOf(deployment);
//   if (SkipReason(app).empty()) {
//     SP_ASSIGN_OR_RETURN(std::vector<AutoPoolWant> wants, WantedAutoPools(app, config));
//     for (const AutoPoolWant& w : wants) ... PlanPoolIPs(...) -> NewAutoPool / RefreshAutoPool
//   }

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "api/apps.h"
#include "api/spider.h"
#include "base/ip.h"
#include "ipam/annotations.h"

namespace spiderpool::op::subnet {

// ---- Applications ---------------------------------------------------------------------------

// A built-in workload as the controller sees it (upstream PodTopController + the pod template).
struct Application {
  std::string api_version;  // "apps/v1" | "batch/v1"
  std::string kind;         // Deployment | ReplicaSet | StatefulSet | DaemonSet | Job | CronJob
  std::string namespace_;
  std::string name;
  std::string uid;
  ::spiderpool::ipam::Annotations pod_annotations;  // the pod template's annotations
  // Pods the app wants: spec.replicas (nil = 1, the API server's default), DaemonSet
  // status.desiredNumberScheduled, Job/CronJob JobPodNumber(parallelism, completions).
  int64_t replicas = 0;
  bool host_network = false;  // the pod template's spec.hostNetwork
  // Kind of the app's controller owner reference ("" when none).
  std::string controller_kind;
  bool deleting = false;  // metadata.deletionTimestamp is set
};

Application ApplicationOf(const api::Deployment& d);
Application ApplicationOf(const api::ReplicaSet& rs);
Application ApplicationOf(const api::StatefulSet& sts);
Application ApplicationOf(const api::DaemonSet& ds);
Application ApplicationOf(const api::Job& job);
Application ApplicationOf(const api::CronJob& cj);

// Upstream CalculateJobPodNum: completions when set (0 -> 1), else parallelism (0 -> 1), else 1.
int64_t JobPodNumber(std::optional<int32_t> parallelism, std::optional<int32_t> completions);

// True when the annotations carry ipam.spidernet.io/subnets or ipam.spidernet.io/subnet.
bool HasSubnetAnnotation(const ::spiderpool::ipam::Annotations& pod_annotations);

// "" when the controller makes auto pools for `app`; else why not: "hostNetwork", no subnet
// annotation, or a ReplicaSet/Job with a controller owner (its pods belong to the owner, which
// the agent resolves as the pod's top controller: a Deployment/CronJob handled here, or a
// third-party controller whose pools the agent makes itself).
std::string SkipReason(const Application& app);

// Upstream ApplicationNamespacedName, the `application` of a controlledIPPools record:
// "apps_v1_Deployment_ns_name" ("v1_Pod_ns_name" for a core kind).
std::string ApplicationString(std::string_view api_version, std::string_view kind,
                              std::string_view ns, std::string_view name);
inline std::string ApplicationString(const Application& app) {
  return ApplicationString(app.api_version, app.kind, app.namespace_, app.name);
}

// The identity labels an auto pool carries (owner-application-gv/kind/namespace/name/uid,
// ippool-reclaim), read back. nullopt for a pool without owner-application-name.
struct PoolOwner {
  std::string gv;  // ApplicationLabelGV: "apps_v1"
  std::string kind;
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string subnet;    // owner-spider-subnet
  bool reclaim = false;  // ippool-reclaim == "true"
};
std::optional<PoolOwner> PoolOwnerOf(const api::SpiderIPPool& pool);
// "gv/kind/ns/name": the key that ties pools to their application (an informer index value).
std::string IdentityKey(std::string_view gv, std::string_view kind, std::string_view ns,
                        std::string_view name);
std::string IdentityKey(const Application& app);

// ---- What an application wants ---------------------------------------------------------------

struct WantConfig {
  bool enable_ipv4 = true;
  bool enable_ipv6 = false;
  int64_t cluster_subnet_default_flexible_ip_number = 1;
};

// One auto pool: app × NIC × family.
struct AutoPoolWant {
  std::string subnet;  // SpiderSubnet name (the first of the family in the annotation)
  int ip_version = 4;
  std::string if_name;
  int64_t ip_number = 0;  // desired pool size: replicas + flexible, or the fixed number
  // The pool's ipam.spidernet.io/ippool-ip-number annotation: "+N" (flexible) or "N".
  std::string ip_number_annotation;
  bool reclaim = true;
};

// The auto pools `app` wants, from its pod template's subnet annotations (ipam's
// ParseSubnetAnnotation: ipam.spidernet.io/subnets wins over subnet; ippool-ip-number "N" or
// "+N", default "+cluster_subnet_default_flexible_ip_number"; ippool-reclaim default true), one
// per NIC item and enabled family with a subnet. Empty without subnet annotations. Errors are
// the parser's (InvalidArgument, upstream's messages).
absl::StatusOr<std::vector<AutoPoolWant>> WantedAutoPools(const Application& app,
                                                          const WantConfig& config);

// ---- The pool object -------------------------------------------------------------------------

// Labels of an auto pool (upstream ReconcileAutoIPPool): owner-spider-subnet,
// owner-application-gv/kind/namespace/name/uid, interface, ippool-reclaim, ip-version
// (IPv4|IPv6) and ippool-cidr (`cidr_label`). They are what ipam::FindAutoPool matches.
std::map<std::string, std::string> AutoPoolLabels(const Application& app, const AutoPoolWant& want,
                                                  const std::string& cidr_label);
// podAffinity: the app's identity (app-api-group/-api-version/-kind/-namespace/-name), which
// ipam's PoolFilterReason matches against the pod's top controller.
api::LabelSelector AutoPoolPodAffinity(const Application& app);

// A new auto pool named `name` with `ips` (already merged) from `subnet`: labels and
// podAffinity as above, annotation ippool-ip-number, the subnet as controller owner
// (blockOwnerDeletion), finalizer spiderpool.spidernet.io, spec ipVersion / subnet CIDR /
// gateway / routes from the subnet. Already in the form the mutating webhook would give it.
absl::StatusOr<api::SpiderIPPool> NewAutoPool(const std::string& name, const Application& app,
                                              const AutoPoolWant& want,
                                              const api::SpiderSubnet& subnet,
                                              std::vector<std::string> ips);
// Brings an existing auto pool in line (owner uid and reclaim labels refreshed: a kept pool is
// adopted by a new app of the same kind/ns/name; ippool-ip-number annotation; spec.ips).
// Returns true if anything changed.
bool RefreshAutoPool(api::SpiderIPPool* pool, const Application& app, const AutoPoolWant& want,
                     const std::vector<std::string>& ips);

// ---- Subnet IP planning ----------------------------------------------------------------------

// The key of the record that holds a pool's released IPs until the pool no longer lists them
// (see PlanPoolIPs). Never a valid pool name ('/').
inline constexpr std::string_view kReleasingSuffix = "/releasing";
std::string ReleasingKey(std::string_view pool_name);
// The pool a controlledIPPools key belongs to ("p/releasing" -> "p"; "p" -> "p").
std::string PoolOfKey(std::string_view key);

// Every set is merged, sorted, of the subnet's family.
struct PlanInput {
  std::vector<base::IPRange> subnet_usable;        // subnet spec.ips - excludeIPs
  std::vector<base::IPRange> reserved;             // SpiderReservedIPs
  std::vector<base::IPRange> others;               // controlledIPPools records of other pools
  std::vector<base::IPRange> entry;                // this pool's record
  std::vector<base::IPRange> releasing;            // this pool's releasing record
  std::optional<std::vector<base::IPRange>> pool;  // the pool's spec.ips; nullopt: no pool yet
  std::vector<base::IPRange> allocated;            // the pool's status.allocatedIPs
  int64_t desired = 0;
};

struct Plan {
  // The pool's IPs from now on (= its record in controlledIPPools).
  std::vector<base::IPRange> target;
  // IPs this pool holds (its records) or lists (its spec.ips) but no longer wants: recorded
  // under ReleasingKey until the pool's spec.ips is known (read live) not to list them, then
  // freed. Nothing the pool may still hand out is ever free in the subnet.
  std::vector<base::IPRange> releasing;
  // IPs claimed from the subnet's free set (ascending).
  std::vector<base::IPRange> claimed;
  // Unallocated IPs the pool listed although another pool's record holds them (dropped).
  std::vector<base::IPRange> conflicts_dropped;
  // > 0 when the pool stays above `desired` because its other IPs are allocated.
  int64_t over_desired = 0;
};

// The IPs a pool holds after scaling to `desired` (upstream preAllocateIPsFromSubnet, with the
// crash and shrink cases made safe):
//   base = the pool's spec.ips (or its record when the pool does not exist yet);
//   grow:   first the pool's own recorded-but-unlisted IPs, then the lowest free subnet IPs
//           (usable - reserved - every record); not enough -> ResourceExhausted "insufficient
//           subnet FreeIPs, required 'N' but only left 'M'" and nothing changes;
//   shrink: drop the lowest IPs that are not allocated (upstream's choice), never an allocated
//           one; if too few are free the pool stays larger (over_desired);
//   repair: pool IPs missing from its record are claimed again; one held by another pool is
//           dropped when unallocated, and is FailedPrecondition when allocated.
absl::StatusOr<Plan> PlanPoolIPs(const PlanInput& in);

// The `n` lowest addresses of merged `ranges` (all of them when there are fewer).
std::vector<base::IPRange> TakeLowest(const std::vector<base::IPRange>& ranges, absl::uint128 n);

// Parses a list of ranges of `family` and merges it; InvalidArgument naming `what`.
absl::StatusOr<std::vector<base::IPRange>> ParseMerged(const std::vector<std::string>& texts,
                                                       base::IPFamily family,
                                                       std::string_view what);
// The IPs of status.allocatedIPs, merged.
absl::StatusOr<std::vector<base::IPRange>> AllocatedRanges(const api::SpiderIPPool& pool,
                                                           base::IPFamily family);

}  // namespace spiderpool::op::subnet
