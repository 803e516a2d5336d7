#pragma once
// Adapter: libcni skel's generic steps for a plugin that is not the IPAM plugin, built on
// agent/cni/cni.h. agent/cni/plugin.cc has the same steps inlined in its Run(); they should
// move to agent/cni as one function both plugins call (see README.md).

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "agent/cni/cni.h"
#include "agent/cni/plugin.h"

namespace spiderpool::agent::ifacer {

// What the generic steps leave for the plugin's own command handler.
struct SkelRequest {
  std::string command;      // ADD, DEL, CHECK, GC, STATUS
  cni::Json json;           // stdin, a JSON object
  std::string cni_version;  // the config's (kLatestVersion when absent)
  std::string echo;         // the version to echo in errors ("" when the config has none)
};

// Runs skel's checks in its order: no CNI_COMMAND -> about text (exit 0); required env per
// command (4); VERSION -> version info; unknown command (4); stdin (5); JSON object, string
// cniVersion/name, network name (6/7); container ID and interface name (3/4); CHECK needs
// cniVersion >= 0.4.0 (1); supported version (1). Returns the outcome to print when the
// invocation ends here, else fills *req.
std::optional<cni::Outcome> RunSkel(const cni::Env& env, std::string_view about,
                                    const std::function<bool(std::string*, std::string*)>& read_stdin,
                                    SkelRequest* req);

cni::Outcome Fail(const cni::CniError& e, std::string_view cni_version);
cni::Outcome Succeed(std::string out = "");

}  // namespace spiderpool::agent::ifacer
