#include "base/testing/podman.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/status/status.h"
#include "base/strings.h"

namespace spiderpool::base::testing {

namespace {

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(StrCat("writing ", path));
  return absl::OkStatus();
}

}  // namespace

std::string PodmanSkipReason() {
  if (::geteuid() != 0) return "needs root (podman run)";
  for (const char* bin : {"/usr/bin/podman", "/usr/sbin/runc", "/bin/busybox"}) {
    if (::access(bin, X_OK) != 0) return StrCat(bin, " is not installed");
  }
  return "";
}

absl::StatusOr<PodmanSandbox> PodmanSandbox::Create(const std::string& dir,
                                                    std::optional<PodmanCniNetwork> network) {
  std::string containers =
      "[containers]\n"
      "default_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n"
      "[engine]\ncgroup_manager = \"cgroupfs\"\nruntime = \"runc\"\n";
  if (network.has_value()) {
    std::string dirs;
    for (const std::string& d : network->plugin_dirs) {
      dirs += StrCat(dirs.empty() ? "" : ", ", "\"", d, "\"");
    }
    containers += StrCat("[network]\nnetwork_backend = \"cni\"\nnetwork_config_dir = \"",
                         network->config_dir, "\"\ncni_plugin_dirs = [", dirs, "]\n");
  }
  if (absl::Status s = WriteFile(dir + "/containers.conf", containers); !s.ok()) return s;
  if (absl::Status s = WriteFile(dir + "/storage.conf",
                                 StrCat("[storage]\ndriver = \"vfs\"\nrunroot = \"", dir,
                                        "/run\"\ngraphroot = \"", dir, "/graph\"\n"));
      !s.ok()) {
    return s;
  }
  const std::string rootfs = dir + "/rootfs";
  std::error_code ec;
  std::filesystem::create_directories(rootfs + "/bin", ec);
  if (!ec) std::filesystem::copy_file("/bin/busybox", rootfs + "/bin/busybox", ec);
  if (ec) return absl::UnavailableError(StrCat("busybox rootfs in ", rootfs, ": ", ec.message()));
  return PodmanSandbox(dir, rootfs);
}

absl::StatusOr<ProcessResult> PodmanSandbox::Podman(std::vector<std::string> args) const {
  args.insert(args.begin(), "/usr/bin/podman");
  return RunProcess({.argv = std::move(args),
                     .env = {{"CONTAINERS_CONF", dir_ + "/containers.conf"},
                             {"CONTAINERS_STORAGE_CONF", dir_ + "/storage.conf"}},
                     .inherit_env = true,
                     .timeout = absl::Seconds(120)});
}

absl::StatusOr<ProcessResult> PodmanSandbox::Run(const std::vector<std::string>& options,
                                                 const std::vector<std::string>& command) const {
  std::vector<std::string> args = {"run", "--rm"};
  args.insert(args.end(), options.begin(), options.end());
  args.push_back("--rootfs");
  args.push_back(rootfs_);
  args.insert(args.end(), command.begin(), command.end());
  return Podman(std::move(args));
}

}  // namespace spiderpool::base::testing
