#pragma once
// Test-only: runs real CNI plugin binaries on a conflist the way libcni (and so Multus) does,
// optionally inside a "node" network namespace (`ip netns exec`).

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/json.h"

namespace spiderpool::multus::testing {

struct ProcessResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
};

// Runs argv[0] (an absolute path) with exactly `env`, writing `input` to its stdin and
// collecting stdout/stderr. Fails only if the process cannot be started.
absl::StatusOr<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env,
                                         std::string_view input = "");

// The absolute path of `ip` (iproute2), "" if there is none.
std::string IpBinary();

// The CNI_* environment of one attachment, and where the plugins run.
struct CniArgs {
  std::string container_id;
  std::string netns;  // CNI_NETNS, e.g. /var/run/netns/<name>
  std::string ifname;
  // CNI_PATH: directories separated by ':'. A plugin `type` is looked up in them in order (as
  // libcni does), and the plugins exec their delegates (IPAM) from the same list.
  std::string cni_path = "/usr/lib/cni";
  std::string args;  // CNI_ARGS ("IgnoreUnknown=1;K8S_POD_NAMESPACE=...;...")
  // When set, every plugin runs as `ip netns exec <run_in_netns> <plugin>`: the named netns is
  // the "node" the plugins change (the coordinator adds a veth, routes and rules there).
  std::string run_in_netns;
  // With run_in_netns: this directory is bind-mounted over /var/log for the plugin (in the
  // private mount namespace `ip netns exec` creates), so the plugins' default log files
  // (/var/log/spidernet/{spiderpool,coordinator}.log) land in it instead of on the machine.
  std::string var_log_dir;
};

// libcni's conflist semantics. ADD runs the plugins in order, each with the list's name and
// cniVersion injected and the previous plugin's result as prevResult; returns the last result.
// DEL runs them in reverse; from cniVersion 0.4.0 on each gets `add_result` as prevResult (what
// libcni replays from its cache). A plugin error becomes an Internal status with its output.
absl::StatusOr<base::Json> ConflistAdd(const base::Json& conflist, const CniArgs& args);
absl::Status ConflistDel(const base::Json& conflist, const CniArgs& args,
                         const base::Json& add_result);

// The one change the node test makes to a generated conflist: our plugins talk to the agent
// on /var/run/spidernet/spiderpool.sock unless told otherwise, and a test cannot own that path
// (it may be a real agent's, and tests run side by side). So every `spiderpool` IPAM block gets
// `ipam_unix_socket_path` and every `coordinator` entry gets `ipam_unix_socket_path` = `socket`
// (the keys a user sets for an agent listening elsewhere). Nothing else is touched.
base::Json UseAgentSocket(base::Json conflist, std::string_view socket);

}  // namespace spiderpool::multus::testing
