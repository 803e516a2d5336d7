#include "base/testing/temp_dir.h"

#include <stdlib.h>  // mkdtemp (POSIX)

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

namespace spiderpool::base::testing {

TempDir::TempDir(std::string_view tag) {
  std::string tmpl = "/tmp/sp-";
  tmpl.append(tag);
  tmpl += "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    // Not a test failure: a test cannot run without its directory, and the constructor of a
    // fixture member has no way to report one.
    std::fprintf(stderr, "TempDir: mkdtemp(%s): %s\n", tmpl.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = std::move(tmpl);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Join(std::string_view name) const {
  std::string out = path_;
  out += '/';
  out.append(name);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace spiderpool::base::testing
