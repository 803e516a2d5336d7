#pragma once
// Test-only: runs real CNI plugin binaries on a conflist the way libcni (and so Multus) does,
// plus the substitutions the node test needs while parts of the chain are not built yet.

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

// The CNI_* environment of one attachment.
struct CniArgs {
  std::string container_id;
  std::string netns;  // CNI_NETNS, e.g. /var/run/netns/<name>
  std::string ifname;
  std::string cni_path = "/usr/lib/cni";
  std::string args;  // CNI_ARGS ("IgnoreUnknown=1;K8S_POD_NAMESPACE=...;...")
};

// libcni's conflist semantics. ADD runs the plugins in order, each with the list's name and
// cniVersion injected and the previous plugin's result as prevResult; returns the last result.
// DEL runs them in reverse; from cniVersion 0.4.0 on each gets `add_result` as prevResult (what
// libcni replays from its cache). A plugin error becomes an Internal status with its output.
absl::StatusOr<base::Json> ConflistAdd(const base::Json& conflist, const CniArgs& args);
absl::Status ConflistDel(const base::Json& conflist, const CniArgs& args,
                         const base::Json& add_result);

// TEMPORARY until the `spiderpool` IPAM plugin lands: every plugin's ipam block of type
// "spiderpool" becomes host-local handing out exactly `ip` from `subnet`, keeping its state in
// `data_dir`. To exercise the real plugin later, stop calling this (and give the test an agent).
base::Json UseHostLocalIpamInsteadOfSpiderpool(base::Json conflist, std::string_view subnet,
                                               std::string_view ip, std::string_view data_dir);

// TEMPORARY until the `coordinator` plugin is built: removes the coordinator entry.
base::Json DropCoordinatorPlugin(base::Json conflist);

}  // namespace spiderpool::multus::testing
