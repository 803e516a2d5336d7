#pragma once
// The `coordinator` plugin's whole flow, independent of the process (main.cc reads the
// environment and stdin, writes stdout, exits). Env/Outcome/RunHooks are the IPAM plugin's.

#include "agent/cni/plugin.h"

namespace spiderpool::agent::coordinator {

cni::Outcome Run(const cni::Env& env, const cni::RunHooks& hooks);

}  // namespace spiderpool::agent::coordinator
