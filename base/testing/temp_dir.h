#pragma once
// The tests' files: TempDir, the one scratch directory helper, and ReadFile.
// TempDir: Each object owns a fresh directory
// "/tmp/sp-<tag>-XXXXXX" and removes it, with everything in it, when it goes. It lives under
// /tmp rather than $TEST_TMPDIR because the tests bind unix sockets inside it, and a socket path
// must fit sockaddr_un's 108 bytes (Bazel's $TEST_TMPDIR alone can be longer). Failing to create
// the directory is a broken test set-up, not a test result: the constructor aborts with a message.

#include <string>
#include <string_view>

namespace spiderpool::base::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view tag = "test");
  // Removes the directory tree; errors are ignored (a test must not fail on its clean-up).
  ~TempDir();

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Join(std::string_view name) const;

 private:
  std::string path_;
};

// The whole content of the file at `path`; "" when it cannot be read (the test's assertion on
// the content then fails with what it expected).
std::string ReadFile(const std::string& path);

}  // namespace spiderpool::base::testing
