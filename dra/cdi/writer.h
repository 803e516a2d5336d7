#pragma once
// Atomic CDI spec files: `<dir>/k8s.netresources.spidernet.io-claim_<claimUID>.yaml`, written
// as temp file in the same directory + fsync + rename + fsync(dir). A failed Write never
// leaves a partial file: the target holds either the old or the new complete content, and the
// temp file is removed. The file system sits behind FileSystem so tests can inject failures.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dra/cdi/spec.h"

namespace spiderpool::dra::cdi {

// The few syscalls the writer uses. Errors are absl::Status with errno text.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual absl::Status MkdirAll(const std::string& dir) = 0;
  // mkstemp("<dir>/<prefix>XXXXXX"); sets *path.
  virtual absl::StatusOr<int> CreateTemp(const std::string& dir, const std::string& prefix,
                                         std::string* path) = 0;
  // One write(2): may write less than asked.
  virtual absl::StatusOr<size_t> Write(int fd, std::string_view data) = 0;
  virtual absl::Status Fsync(int fd) = 0;
  virtual absl::Status Close(int fd) = 0;
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  virtual absl::Status FsyncDir(const std::string& dir) = 0;
  // absl::NotFoundError when the path does not exist.
  virtual absl::Status Unlink(const std::string& path) = 0;
};

// The real file system (process-wide singleton).
FileSystem* PosixFileSystem();

// "k8s.netresources.spidernet.io-claim_<claimUID>.yaml"
std::string SpecFileName(std::string_view claim_uid);

class SpecWriter {
 public:
  explicit SpecWriter(std::string dir = kDefaultSpecDir, FileSystem* fs = PosixFileSystem())
      : dir_(std::move(dir)), fs_(fs) {}

  const std::string& dir() const { return dir_; }
  std::string PathFor(std::string_view claim_uid) const;

  // Creates the directory if needed and replaces the claim's spec file atomically (YAML).
  absl::Status Write(const Spec& spec);
  // Removes the claim's spec file; OK when it is already gone.
  absl::Status Remove(std::string_view claim_uid);

 private:
  std::string dir_;
  FileSystem* fs_;
};

}  // namespace spiderpool::dra::cdi
