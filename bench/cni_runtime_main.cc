// A node's container runtime for ipam_e2e (bench/cni_runtime.h): cni_runtime SOCKET
#include <cstdio>

#include "base/sigpipe.h"
#include "bench/cni_runtime.h"

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SOCKET\n", argv[0]);
    return 2;
  }
  const absl::Status s = spiderpool::bench::ServeCniRuntime(argv[1]);
  std::fprintf(stderr, "cni_runtime: %s\n", s.ToString().c_str());
  return 1;
}
