#pragma once
// The DRA flavour of spiderpool-agent as one composition unit. Two implementations of this
// header, one per binary (agent/BUILD.bazel):
//   - compose.cc, only in spiderpool-agent-dra: NIC discovery -> this node's ResourceSlices
//     and/or the device-plugin resources (NodeDevices), the claims' networkData
//     (NetworkDataReporter), the kubelet DRA plugin with the claim driver (dra/kubeletplugin,
//     dra/driver);
//   - compose_ipam_only.cc, in spiderpool-agent: none of that code (no gRPC, protobuf or libnl
//     mapped); asked for it, it execs spiderpool-agent-dra.
// Both read the flags of flags.h.

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "agent/ipam/caches.h"
#include "base/ip.h"
#include "kube/controller/manager.h"
#include "kube/events/recorder.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/rest_client.h"

namespace spiderpool::agent::dra {

// Right after the flags are parsed. spiderpool-agent: with --dra-enabled or
// --device-plugin-enabled it becomes spiderpool-agent-dra, looked up beside the running binary
// (/proc/self/exe), then beside argv[0] (a runfiles or install symlink): same pid, same
// arguments. Returns only when no exec succeeded (NotFound, naming the paths tried).
// spiderpool-agent-dra: OK at once.
absl::Status ExecDraAgentIfAsked(char** argv);

struct NodeParts {
  std::shared_ptr<kube::RestClient> rest;
  std::string node_name;
  // The shared caches: pools and this node (devices' sizes; handlers refresh the slices),
  // SpiderEndpoints (networkData). Registered on before they run; they outlive the manager.
  ipam::Caches* caches = nullptr;
  // This node's handed-out reservations of a pool (IpamService::HandedOutReservations; as
  // node_devices.h's HandedOutFn, not included here: it would pull the DRA stack in).
  std::function<std::set<base::IPAddress>(const std::string& pool)> handed_out;
  kube::EventRecorder* recorder = nullptr;  // Warning Events of failed prepares
  kube::metrics::Registry* registry = nullptr;
};

// spiderpool-agent-dra, with --dra-enabled and/or --device-plugin-enabled: adds to `manager`,
// in this order (an ordered manager stops them in the reverse order: the kubelet plugin's
// sockets go first, so the kubelet moves to a newer instance before anything it may call is
// torn down) "NIC discovery", "DRA network data", "DRA kubelet plugin". The plugin prints
// dra_registration_socket=, dra_socket= (and dra_health_port=) on stdout once it serves.
// Errors: bad --dra-declared-subnets / --dra-resource-names. spiderpool-agent: adds nothing.
absl::Status AddToManager(kube::Manager& manager, const NodeParts& parts);

}  // namespace spiderpool::agent::dra
