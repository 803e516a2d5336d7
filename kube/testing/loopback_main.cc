// loopback-apiserver: the loopback API server as a standalone process, for demos and manual
// testing with kubectl.
//
//   loopback-apiserver [--host 127.0.0.1] [--port 0] [--token TOKEN]
//                      [--kubeconfig-out PATH] [--bookmark-interval-ms N] [--v]
//
// Prints "url=https://127.0.0.1:PORT" (and "kubeconfig=PATH") on stdout once it is serving,
// and runs until SIGTERM or SIGINT.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "base/log.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "kube/testing/apiserver.h"

namespace {

void Usage() {
  std::cerr << "usage: loopback-apiserver [--host H] [--port N] [--token T] "
               "[--kubeconfig-out PATH] [--bookmark-interval-ms N] [--v]\n";
}

bool ParseIntFlag(const std::string& s, int* out) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0 || v > 65535 * 1000) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  using spiderpool::kube::testing::LoopbackApiServer;
  using spiderpool::kube::testing::LoopbackOptions;
  LoopbackOptions options;
  std::string kubeconfig;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg != "--v" && arg != "--help" && arg != "-h") {
      if (i + 1 >= argc) {
        Usage();
        return 2;
      }
      value = argv[++i];
    }
    int n = 0;
    if (arg == "--port" && ParseIntFlag(value, &n) && n <= 65535) {
      options.port = n;
    } else if (arg == "--host") {
      options.host = value;
    } else if (arg == "--token") {
      options.tokens.push_back(value);
    } else if (arg == "--kubeconfig-out") {
      kubeconfig = value;
    } else if (arg == "--bookmark-interval-ms" && ParseIntFlag(value, &n) && n > 0) {
      options.bookmark_interval = absl::Milliseconds(n);
    } else if (arg == "--v") {
      options.log_requests = true;
    } else {
      Usage();
      return 2;
    }
  }

  // Block the stop signals before any thread starts, then wait for them synchronously.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto server = LoopbackApiServer::Start(options);
  if (!server.ok()) {
    std::cerr << "loopback-apiserver: " << server.status() << "\n";
    return 1;
  }
  if (!kubeconfig.empty()) {
    absl::Status s = (*server)->WriteKubeconfig(kubeconfig);
    if (!s.ok()) {
      std::cerr << "loopback-apiserver: " << s << "\n";
      return 1;
    }
  }
  std::cout << "url=" << (*server)->url() << "\n";
  if (!kubeconfig.empty()) std::cout << "kubeconfig=" << kubeconfig << "\n";
  std::cout.flush();

  int sig = 0;
  sigwait(&set, &sig);
  SP_LOG(Info).Msg("stopping").KV("signal", sig);
  (*server)->Stop();
  return 0;
}
