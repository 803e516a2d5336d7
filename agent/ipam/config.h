#pragma once
// The agent's IPAM settings: the `conf.yml` key of ConfigMap `spiderpool-conf` (reference
// §2.11), mounted into the agent, plus the agent's own limits. Unknown keys are kept (the file
// is shared with the controller and carries keys the agent does not use).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/codec.h"

namespace spiderpool::agent::ipam {

inline constexpr char kDefaultSocketPath[] = "/var/run/spidernet/spiderpool.sock";

struct IPAMConfig {
  std::string ipam_unix_socket_path = kDefaultSocketPath;
  bool enable_ipv4 = true;
  bool enable_ipv6 = false;
  bool enable_stateful_set = true;
  bool enable_kubevirt_static_ip = true;
  bool enable_spider_subnet = true;
  bool enable_auto_pool_for_application = true;
  bool enable_ip_conflict_detection = false;
  bool enable_gateway_detection = false;
  int64_t cluster_subnet_default_flexible_ip_number = 1;
  api::Json unknown;

  // Ours (not in upstream's file): bounds of the agent's work.
  // Records per pool (upstream SPIDERPOOL_IPPOOL_MAX_ALLOCATED_IPS).
  int64_t max_allocated_ips_per_pool = 5000;
  // Requests admitted at once; more get 429 (the plugin answers CNI code 11).
  int64_t max_pending_requests = 1000;
  // How long one ADD/DEL may take before the agent gives up (the plugin's own timeout is
  // longer, so the agent always answers first).
  int64_t request_timeout_seconds = 50;
  // How long an ADD waits for an auto pool the controller creates for the workload.
  int64_t wait_auto_pool_seconds = 50;
  // IPs a node reserves ahead per pool, so that most ADDs need no pool write
  // (agent/ipam/blocks.h); 0 = off: every ADD writes its record before it returns.
  int64_t node_ip_block_size = 64;  // as a Calico block (/26)
  // IPs a node keeps reserved, with no pod waiting, in each pool its pods are expected to use,
  // so that the first pods of a Deployment need no pool write either (blocks.h point 8); 0 =
  // none. Given back when the pool runs out of unreserved IPs.
  int64_t node_ip_block_standing = 8;  // one kubelet batch

  template <typename V>
  void Visit(V& v) {
    v.Field("ipamUnixSocketPath", ipam_unix_socket_path);
    v.Field("enableIPv4", enable_ipv4);
    v.Field("enableIPv6", enable_ipv6);
    v.Field("enableStatefulSet", enable_stateful_set);
    v.Field("enableKubevirtStaticIP", enable_kubevirt_static_ip);
    v.Field("enableSpiderSubnet", enable_spider_subnet);
    v.Field("enableAutoPoolForApplication", enable_auto_pool_for_application);
    v.Field("enableIPConflictDetection", enable_ip_conflict_detection);
    v.Field("enableGatewayDetection", enable_gateway_detection);
    v.Field("clusterSubnetDefaultFlexibleIPNumber", cluster_subnet_default_flexible_ip_number,
            {.minimum = 0});
    v.Field("maxAllocatedIPsPerPool", max_allocated_ips_per_pool, {.minimum = 1});
    v.Field("maxPendingRequests", max_pending_requests, {.minimum = 1});
    v.Field("requestTimeoutSeconds", request_timeout_seconds, {.minimum = 1});
    v.Field("waitAutoPoolSeconds", wait_auto_pool_seconds, {.minimum = 0});
    v.Field("nodeIPBlockSize", node_ip_block_size, {.minimum = 0, .maximum = 256});
    v.Field("nodeIPBlockStanding", node_ip_block_standing, {.minimum = 0, .maximum = 256});
    v.Unknown(unknown);
  }

  absl::Duration request_timeout() const { return absl::Seconds(request_timeout_seconds); }
};

// Parses conf.yml (YAML or JSON). Missing keys keep the defaults above; errors name the key.
absl::StatusOr<IPAMConfig> ParseIPAMConfig(std::string_view text);

}  // namespace spiderpool::agent::ipam
