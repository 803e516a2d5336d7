// compose.h for spiderpool-agent: no DRA code; asked for DRA, it becomes spiderpool-agent-dra.

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/flags/flag.h"
#include "agent/dra/compose.h"
#include "agent/dra/flags.h"

namespace spiderpool::agent::dra {

absl::Status ExecDraAgentIfAsked(char** argv) {
  if (!absl::GetFlag(FLAGS_dra_enabled) && !absl::GetFlag(FLAGS_device_plugin_enabled)) {
    return absl::OkStatus();
  }
  std::vector<std::string> dirs;
  char self[PATH_MAX];
  if (const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1); n > 0) {
    const std::string exe(self, static_cast<size_t>(n));
    dirs.push_back(exe.substr(0, exe.rfind('/') + 1));
  }
  if (const std::string arg0 = argv[0]; arg0.find('/') != std::string::npos) {
    const std::string dir = arg0.substr(0, arg0.rfind('/') + 1);
    if (dirs.empty() || dirs.front() != dir) dirs.push_back(dir);
  }
  std::string tried;
  for (const std::string& dir : dirs) {
    const std::string path = dir + "spiderpool-agent-dra";
    ::execv(path.c_str(), argv);
    tried += (tried.empty() ? "" : ", ") + path + ": " + std::strerror(errno);
  }
  return absl::NotFoundError(
      "--dra-enabled/--device-plugin-enabled need spiderpool-agent-dra: " + tried);
}

absl::Status AddToManager(kube::Manager&, const NodeParts&) { return absl::OkStatus(); }

}  // namespace spiderpool::agent::dra
