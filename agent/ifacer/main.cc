// `ifacer`: the CNI meta plugin that creates host bond / VLAN interfaces before the main plugin
// runs. The flow is in plugin.cc, the process plumbing (stdin, stdout) in
// agent/cni/plugin_main.cc; ifacer arms no watchdog (netlink calls are local).

#include "agent/cni/plugin_main.h"
#include "agent/ifacer/netlink_ops.h"
#include "agent/ifacer/plugin.h"

namespace cni = spiderpool::agent::cni;
namespace ifacer = spiderpool::agent::ifacer;

int main() {
  cni::PluginMain([](const cni::Env& env, const cni::ProcessHooks& hooks) {
    return ifacer::Run(env, {.read_stdin = hooks.read_stdin, .open_links = ifacer::NewNetlinkOps});
  });
}
