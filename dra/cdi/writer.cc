#include "dra/cdi/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::dra::cdi {
namespace {

using base::StrCat;

absl::Status Errno(std::string_view what, std::string_view path, int err) {
  std::string msg = StrCat(what, " ", path, ": ", strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

class Posix : public FileSystem {
 public:
  absl::Status MkdirAll(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return absl::InternalError(StrCat("mkdir ", dir, ": ", ec.message()));
    return absl::OkStatus();
  }
  absl::StatusOr<int> CreateTemp(const std::string& dir, const std::string& prefix,
                                 std::string* path) override {
    std::string tmpl = StrCat(dir, "/", prefix, "XXXXXX");
    int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0) return Errno("create temp file in", dir, errno);
    // mkstemp creates 0600; runtimes read as root, but keep the usual 0644 for tools.
    (void)::fchmod(fd, 0644);
    *path = tmpl;
    return fd;
  }
  absl::StatusOr<size_t> Write(int fd, std::string_view data) override {
    for (;;) {
      ssize_t n = ::write(fd, data.data(), data.size());
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return Errno("write", StrCat("fd ", fd), errno);
    }
  }
  absl::Status Fsync(int fd) override {
    if (::fsync(fd) != 0) return Errno("fsync", StrCat("fd ", fd), errno);
    return absl::OkStatus();
  }
  absl::Status Close(int fd) override {
    if (::close(fd) != 0 && errno != EINTR) return Errno("close", StrCat("fd ", fd), errno);
    return absl::OkStatus();
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Errno("rename", StrCat(from, " to ", to), errno);
    return absl::OkStatus();
  }
  absl::Status FsyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Errno("open", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return Errno("fsync", dir, err);
    return absl::OkStatus();
  }
  absl::Status Unlink(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Errno("unlink", path, errno);
    return absl::OkStatus();
  }
};

}  // namespace

FileSystem* PosixFileSystem() {
  static auto* fs = new Posix();
  return fs;
}

std::string SpecFileName(std::string_view claim_uid) {
  return StrCat(kVendor, "-", kClass, "_", claim_uid, ".yaml");
}

std::string SpecWriter::PathFor(std::string_view claim_uid) const {
  return StrCat(dir_, "/", SpecFileName(claim_uid));
}

absl::Status SpecWriter::Write(const Spec& spec) {
  // The UID becomes a path component: never let it escape the directory.
  SP_RETURN_IF_ERROR(base::Annotate(ValidateDeviceName(spec.claim_uid), "claimUID"));
  const std::string data = ToYaml(spec.json);
  const std::string target = PathFor(spec.claim_uid);
  SP_RETURN_IF_ERROR(base::Annotate(fs_->MkdirAll(dir_), StrCat("writing CDI spec ", target)));
  std::string tmp;
  // A leading dot: runtimes only load *.json / *.yaml, so a temp file is never read as a spec.
  auto created = fs_->CreateTemp(dir_, StrCat(".", SpecFileName(spec.claim_uid), ".tmp-"), &tmp);
  if (!created.ok()) return base::Annotate(created.status(), StrCat("writing CDI spec ", target));
  const int fd = *created;
  auto fail = [&](absl::Status s, bool open) {
    if (open) (void)fs_->Close(fd);
    (void)fs_->Unlink(tmp);
    return base::Annotate(s, StrCat("writing CDI spec ", target));
  };
  for (std::string_view rest = data; !rest.empty();) {
    auto n = fs_->Write(fd, rest);
    if (!n.ok()) return fail(n.status(), true);
    if (*n == 0) return fail(absl::InternalError("write returned 0"), true);
    rest.remove_prefix(std::min(*n, rest.size()));
  }
  if (auto s = fs_->Fsync(fd); !s.ok()) return fail(s, true);
  if (auto s = fs_->Close(fd); !s.ok()) return fail(s, false);
  if (auto s = fs_->Rename(tmp, target); !s.ok()) return fail(s, false);
  // The new content is in place; a failed directory fsync only means the rename may not be
  // durable across a crash yet.
  return base::Annotate(fs_->FsyncDir(dir_), StrCat("writing CDI spec ", target));
}

absl::Status SpecWriter::Remove(std::string_view claim_uid) {
  SP_RETURN_IF_ERROR(base::Annotate(ValidateDeviceName(claim_uid), "claimUID"));
  const std::string target = PathFor(claim_uid);
  absl::Status s = fs_->Unlink(target);
  if (absl::IsNotFound(s)) return absl::OkStatus();
  if (!s.ok()) return base::Annotate(s, StrCat("removing CDI spec ", target));
  return base::Annotate(fs_->FsyncDir(dir_), StrCat("removing CDI spec ", target));
}

}  // namespace spiderpool::dra::cdi
