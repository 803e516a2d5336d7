#pragma once
// The probe and metrics HTTP server of a binary: /healthz (alias /livez) and /readyz
// aggregate named checks the way kube-apiserver and controller-runtime do, /metrics serves
// a metrics::Registry in Prometheus text format. Runs on its own thread.
//
//   GET /readyz            200 "ok" | 500 + per-check listing, "readyz check failed"
//   GET /readyz?verbose    200 "[+]informers ok\n…readyz check passed\n"
//   GET /readyz?exclude=x  skips check x ("[+]x excluded: ok")
//   GET /readyz/informers  one check: 200 "ok" | 500 "internal server error: <message>"
//   GET /metrics           text/plain; version=0.0.4; charset=utf-8
//
// The aggregate listing prints "[-]name failed: reason withheld" (kube-apiserver: the
// endpoints are unauthenticated); the single-check path and the log carry the message.
// Without any check registered, a probe reports a built-in "ping" check.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "kube/metrics/metrics.h"

namespace spiderpool::kube::health {

// A health check: OK when healthy. Runs on a server thread for every probe request, so it
// must be thread-safe and quick. The server must be stopped before what it captures dies.
using Check = std::function<absl::Status()>;

// Always healthy; what controller-runtime's healthz.Ping is.
absl::Status Ping();

enum class Probe {
  kLiveness,   // /healthz and /livez
  kReadiness,  // /readyz
};

struct ServerOptions {
  std::string address = "0.0.0.0";
  int port = 0;  // 0 = any free port (see Server::port())
  // Served on /metrics. nullptr = metrics::Registry::Default().
  metrics::Registry* registry = nullptr;
  bool serve_metrics = true;
  // Print check error messages in the aggregate listing instead of "reason withheld".
  bool show_failure_reasons = false;
  int threads = 4;  // request worker threads
  // SO_REUSEPORT: a second process may bind the same port and the kernel spreads connections
  // over both. Only for a host-network DaemonSet rolled with maxSurge (old and new pod on one
  // node during the hand-over, both healthy); otherwise a second binder is an error.
  bool share_port = false;
};

class Server {
 public:
  explicit Server(ServerOptions options = {});
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers a check; allowed before and after Start. Names are non-empty without '/';
  // a duplicate name for the same probe is AlreadyExists.
  absl::Status AddHealthzCheck(std::string name, Check check);  // liveness
  absl::Status AddReadyzCheck(std::string name, Check check);   // readiness
  // Serves `probe` on another path too (e.g. Spiderpool's "/v1/runtime/liveness"), with
  // the same query parameters and "/<check>" sub-paths. Before Start only.
  absl::Status AddAlias(std::string path, Probe probe);

  // Binds address:port and starts serving on an owned thread. Fails if the address cannot
  // be bound or the server was started before.
  absl::Status Start();
  // Stops serving and joins the thread. Idempotent; a stopped server cannot be restarted.
  void Stop();
  // The bound port once started (the real one when options.port was 0), else 0.
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spiderpool::kube::health
