#pragma once
// The `ifacer` plugin's whole flow, independent of the process (agent/cni/plugin_main.h reads
// the environment and stdin, writes stdout, exits). See README.md for the behaviour per command.
// The protocol steps shared with the other plugins (env checks, stdin, names, versions) are
// agent/cni/skel.h's RunSkel.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/cni/skel.h"
#include "agent/ifacer/links.h"

namespace spiderpool::agent::ifacer {

struct Hooks {
  // Reads stdin; not called for VERSION.
  std::function<bool(std::string* out, std::string* error)> read_stdin;
  // Opens the link operations (netlink in the calling thread's namespace); ADD only.
  std::function<absl::StatusOr<std::unique_ptr<LinkOps>>()> open_links;
};

cni::Outcome Run(const cni::Env& env, const Hooks& hooks);

// ADD's output: `prev` (the prevResult) with its cniVersion set to `cni_version`, or, first in
// the chain, an empty result of that version ({"cniVersion": v, "dns": {}}, what upstream's
// types.PrintResult of an empty result prints).
std::string AddResult(const std::optional<Json>& prev, const std::string& cni_version);

}  // namespace spiderpool::agent::ifacer
