#pragma once
// Test helper: the real file system (cdi::PosixFileSystem) with one operation failing on its
// n-th call, and optionally short writes, for checking that no failure leaves a partial or temp
// file behind. Header-only, testonly.

#include <map>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "dra/cdi/writer.h"

namespace spiderpool::dra::checkpoint::testing {

class FaultyFs : public cdi::FileSystem {
 public:
  // "mkdir" "create" "write" "fsync" "close" "rename" "fsyncdir" "unlink"; "" = none.
  std::string fail_op;
  int fail_at = 0;  // 1-based call number of fail_op that fails (counted from the last Arm)
  size_t short_write = 0;
  std::map<std::string, int> calls;

  void Arm(std::string op, int at) {
    fail_op = std::move(op);
    fail_at = at;
    calls.clear();
  }
  void Disarm() { fail_op.clear(); }

  absl::Status MkdirAll(const std::string& d) override {
    if (auto s = Hit("mkdir"); !s.ok()) return s;
    return real()->MkdirAll(d);
  }
  absl::StatusOr<int> CreateTemp(const std::string& d, const std::string& p,
                                 std::string* path) override {
    if (auto s = Hit("create"); !s.ok()) return s;
    return real()->CreateTemp(d, p, path);
  }
  absl::StatusOr<size_t> Write(int fd, std::string_view data) override {
    if (auto s = Hit("write"); !s.ok()) return s;
    if (short_write > 0 && data.size() > short_write) data = data.substr(0, short_write);
    return real()->Write(fd, data);
  }
  absl::Status Fsync(int fd) override {
    if (auto s = Hit("fsync"); !s.ok()) return s;
    return real()->Fsync(fd);
  }
  absl::Status Close(int fd) override {
    absl::Status closed = real()->Close(fd);  // a failed close(2) still closes
    if (auto s = Hit("close"); !s.ok()) return s;
    return closed;
  }
  absl::Status Rename(const std::string& a, const std::string& b) override {
    if (auto s = Hit("rename"); !s.ok()) return s;
    return real()->Rename(a, b);
  }
  absl::Status FsyncDir(const std::string& d) override {
    if (auto s = Hit("fsyncdir"); !s.ok()) return s;
    return real()->FsyncDir(d);
  }
  absl::Status Unlink(const std::string& p) override {
    if (auto s = Hit("unlink"); !s.ok()) return s;
    return real()->Unlink(p);
  }

 private:
  static cdi::FileSystem* real() { return cdi::PosixFileSystem(); }
  absl::Status Hit(const std::string& op) {
    int n = ++calls[op];
    if (op == fail_op && n == fail_at) return absl::InternalError("injected " + op + " failure");
    return absl::OkStatus();
  }
};

}  // namespace spiderpool::dra::checkpoint::testing
