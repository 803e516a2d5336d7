// `ifacer`: the CNI meta plugin that creates host bond / VLAN interfaces before the main plugin
// runs. Everything but process plumbing is in plugin.cc: here we read the environment and
// stdin, print the outcome and exit.

#include <unistd.h>

#include <cerrno>
#include <string>

#include "agent/ifacer/netlink_ops.h"
#include "agent/ifacer/plugin.h"
#include "base/sigpipe.h"

namespace {

constexpr size_t kMaxStdin = 16 << 20;

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

bool ReadStdin(std::string* out, std::string* error) {
  char buf[64 * 1024];
  while (true) {
    ssize_t n = read(0, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = "read failed";
      return false;
    }
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > kMaxStdin) {
      *error = "network config larger than 16 MiB";
      return false;
    }
  }
}

}  // namespace

int main() {
  spiderpool::base::IgnoreSigpipe();
  namespace ifacer = spiderpool::agent::ifacer;
  ifacer::Hooks hooks{.read_stdin = ReadStdin, .open_links = ifacer::NewNetlinkOps};
  spiderpool::agent::cni::Outcome out =
      ifacer::Run(spiderpool::agent::cni::Env::FromProcess(), hooks);
  WriteAll(2, out.stderr_text);
  WriteAll(1, out.stdout_text);
  return out.exit_code;
}
