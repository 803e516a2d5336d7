#pragma once
// Command-line parsing for our binaries: absl flags, accepting Kubernetes-style dashes
// (--node-name) for absl's underscores (--node_name). Exits with usage on bad flags.

#include <string>
#include <vector>

namespace spiderpool::base {

// Returns the positional arguments (argv[0] first), as absl::ParseCommandLine does.
std::vector<std::string> ParseFlags(int argc, char** argv, const char* usage);

}  // namespace spiderpool::base
