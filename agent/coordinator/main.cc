// `coordinator`: the chained CNI plugin binary (see README.md). The flow is in plugin.cc, the
// process plumbing (stdin, stdout, watchdog) in agent/cni/plugin_main.cc.

#include "agent/cni/plugin_main.h"
#include "agent/coordinator/plugin.h"

namespace cni = spiderpool::agent::cni;

int main() {
  cni::PluginMain([](const cni::Env& env, const cni::ProcessHooks& hooks) {
    return spiderpool::agent::coordinator::Run(env, cni::RunHooks{hooks});
  });
}
