#pragma once
// podman 4.3 as a real container runtime in tests (environment.md): its own containers.conf
// (runc, cgroupfs, the ulimits this host needs; optionally the CNI network backend) and
// storage.conf (vfs, run/graph roots inside the sandbox), and a busybox-static rootfs.
//
//   if (std::string why = PodmanSkipReason(); !why.empty()) GTEST_SKIP() << why;
//   auto podman = PodmanSandbox::Create(tmp_dir);
//   auto r = podman->Run({"--network=none", "--device", "vendor/class=x"}, {"/bin/busybox", "env"});

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/subprocess.h"

namespace spiderpool::base::testing {

// "" when podman can run here (root; podman, runc and busybox installed), else why not.
std::string PodmanSkipReason();

// podman's CNI network backend: where the conflists are and where the plugins are.
struct PodmanCniNetwork {
  std::string config_dir;
  std::vector<std::string> plugin_dirs;
};

class PodmanSandbox {
 public:
  // Writes the configuration files and the rootfs under `dir` (which must exist).
  static absl::StatusOr<PodmanSandbox> Create(const std::string& dir,
                                              std::optional<PodmanCniNetwork> network = {});

  // `podman <args>` with the sandbox's configuration (120 s timeout).
  absl::StatusOr<ProcessResult> Podman(std::vector<std::string> args) const;
  // `podman run --rm <options> --rootfs <rootfs> <command...>` (podman wants every option
  // before --rootfs, which takes the rootfs as its positional argument).
  absl::StatusOr<ProcessResult> Run(const std::vector<std::string>& options,
                                    const std::vector<std::string>& command) const;

  const std::string& rootfs() const { return rootfs_; }

 private:
  PodmanSandbox(std::string dir, std::string rootfs)
      : dir_(std::move(dir)), rootfs_(std::move(rootfs)) {}
  std::string dir_;
  std::string rootfs_;
};

}  // namespace spiderpool::base::testing
