// `spiderpool`: the CNI IPAM plugin binary. The flow is in plugin.cc, the process plumbing
// (stdin, stdout, watchdog) in plugin_main.cc.

#include "agent/cni/plugin.h"
#include "agent/cni/plugin_main.h"

namespace cni = spiderpool::agent::cni;

int main() {
  cni::PluginMain([](const cni::Env& env, const cni::ProcessHooks& hooks) {
    return cni::Run(env, cni::RunHooks{hooks});
  });
}
