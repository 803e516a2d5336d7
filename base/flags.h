#pragma once
// Command-line parsing for our binaries: absl flags, accepting Kubernetes-style dashes
// (--node-name) for absl's underscores (--node_name). Exits with usage on bad flags.

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace spiderpool::base {

// Returns the positional arguments (argv[0] first), as absl::ParseCommandLine does.
std::vector<std::string> ParseFlags(int argc, char** argv, const char* usage);

// $name when set and non-empty, else `fallback` (flag defaults from a pod's environment).
std::string EnvOr(const char* name, std::string fallback);

// Sets the log level (base/log.h) from $name, e.g. SPIDERPOOL_LOG_LEVEL, which the chart sets
// from `debug.logLevel`: debug, info, warn, error (fatal and panic log as error). Unset or
// empty: the level stays. Unknown: InvalidArgument naming the variable and its value.
absl::Status SetLogLevelFromEnv(const char* name);

}  // namespace spiderpool::base
