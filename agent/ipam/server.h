#pragma once
// The agent's IPAM endpoint: HTTP/JSON over a unix socket (agent/ipamapi is the contract).
//
// The socket is created with mode 0600 (root only: whoever can talk to it can take and free
// addresses), a stale socket file is replaced, and the parent directory is created. The server
// sheds load: at most `max_in_flight` requests are admitted at once, the rest get 429 (the
// plugin turns that into CNI error 11 "try again later"); before the backend is Ready() every
// IPAM call gets 503.
//
// GET /v1/coordinator/config carries its JSON body on a GET (go-swagger's client does that):
// base::HttpServer reads the body of every request (Content-Length or chunked, at most 1 MiB:
// beyond, 413 and the connection is closed) before routing.

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/ipamapi/ipamapi.h"
#include "base/http_server.h"


namespace spiderpool::agent::ipam {

// What the server calls; implemented by IpamService (and by fakes in tests).
class IpamBackend {
 public:
  virtual ~IpamBackend() = default;
  virtual bool Ready() const = 0;
  virtual absl::StatusOr<ipamapi::IpamAddResponse> Allocate(const ipamapi::IpamAddArgs& args,
                                                            absl::Time deadline) = 0;
  virtual absl::Status Release(const ipamapi::IpamDelArgs& args, absl::Time deadline) = 0;
};

// What the server calls for GET /v1/coordinator/config; implemented by
// CoordinatorConfigSource (coordinator.h) and by fakes in tests.
class CoordinatorBackend {
 public:
  virtual ~CoordinatorBackend() = default;
  // False until the caches it reads have synced (the endpoint answers 503 until then).
  virtual bool Ready() const = 0;
  // Errors map through ipamapi::HttpStatusFor: a SpiderCoordinator that is missing or not
  // Synced is FailedPrecondition (500, upstream's answer), a bad request InvalidArgument (400).
  virtual absl::StatusOr<ipamapi::CoordinatorConfig> GetCoordinatorConfig(
      const ipamapi::GetCoordinatorArgs& args) = 0;
};

struct ServerOptions {
  std::string socket_path;
  // Concurrent requests (a waiting ADD holds one). More requests queue in the server (up to
  // max_in_flight), and requests for one pool are written together anyway.
  int threads = 10;
  int max_in_flight = 1000;   // beyond this: 429
  absl::Duration request_timeout = absl::Seconds(50);
};

class IpamServer {
 public:
  // Binds the socket (so the file exists with its final mode when this returns) and starts
  // serving on a thread of its own. Without a `coordinator`, GET /v1/coordinator/config
  // answers 404.
  static absl::StatusOr<std::unique_ptr<IpamServer>> Start(
      ServerOptions options, IpamBackend* backend, CoordinatorBackend* coordinator = nullptr);
  ~IpamServer();  // Stop()
  void Stop();    // stops accepting, waits for requests in flight, removes the socket file

  const std::string& socket_path() const { return options_.socket_path; }

 private:
  IpamServer(ServerOptions options, IpamBackend* backend, CoordinatorBackend* coordinator);
  void Route(const base::HttpServerRequest& req, base::HttpServerResponse& res);
  template <typename Args, typename Call>
  void Serve(const base::HttpServerRequest& req, base::HttpServerResponse& res,
             std::string_view what, const absl::Status& ready, Call call);

  ServerOptions options_;
  IpamBackend* backend_;
  CoordinatorBackend* coordinator_;  // may be null
  std::unique_ptr<base::HttpServer> http_;
  std::pair<dev_t, ino_t> socket_id_{};  // the socket file we bound (Stop removes only it)
  std::atomic<int> in_flight_{0};
  std::atomic<bool> stopped_{false};
};

}  // namespace spiderpool::agent::ipam
