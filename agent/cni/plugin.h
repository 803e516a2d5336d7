#pragma once
// The `spiderpool` IPAM plugin's whole flow, independent of the process (plugin_main.h reads
// the environment and stdin, writes stdout, exits). See README.md for the behaviour per command.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "agent/cni/netprobe.h"
#include "agent/cni/skel.h"

namespace spiderpool::agent::cni {

// The process's hooks, plus the IPAM plugin's own.
struct RunHooks : ProcessHooks {
  // IP conflict / gateway detection and announcements on ADD (only used when the agent's answer
  // sets enableIPConflictDetection / enableGatewayDetection for an IP of CNI_IFNAME).
  // nullptr = netprobe::SystemProber().
  netprobe::Prober* prober = nullptr;
};

Outcome Run(const Env& env, const RunHooks& hooks);

}  // namespace spiderpool::agent::cni
