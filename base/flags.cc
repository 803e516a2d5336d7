#include "base/flags.h"

#include <algorithm>
#include <cstdlib>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "base/log.h"

namespace spiderpool::base {

std::vector<std::string> ParseFlags(int argc, char** argv, const char* usage) {
  absl::SetProgramUsageMessage(usage);
  std::vector<std::string> storage;
  storage.reserve(argc);
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && arg.rfind("--", 0) == 0) {
      const size_t end = std::min(arg.find('='), arg.size());
      for (size_t k = 2; k < end; ++k) {
        if (arg[k] == '-') arg[k] = '_';
      }
    }
    storage.push_back(std::move(arg));
  }
  std::vector<char*> args;
  for (std::string& s : storage) args.push_back(s.data());
  std::vector<char*> rest = absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  return {rest.begin(), rest.end()};
}

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

absl::Status SetLogLevelFromEnv(const char* name) {
  const std::string value = EnvOr(name, "");
  if (value.empty()) return absl::OkStatus();
  LogLevel level;
  if (!ParseLogLevel(value, &level)) {
    return absl::InvalidArgumentError(std::string("$") + name + "=\"" + value +
                                      "\": not a log level (debug, info, warn, error)");
  }
  SetLogLevel(level);
  return absl::OkStatus();
}

}  // namespace spiderpool::base
