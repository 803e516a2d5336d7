#pragma once
// A small HTTP/1.1 server on a TCP port or a unix socket, plain or TLS (Boost.Beast parser and
// serializer on base::SocketStream): the agent's IPAM socket, every binary's health/metrics
// port and the controller's admission webhooks (kube/webhook).
//
// One thread accepts; `threads` workers each serve one connection at a time, request after
// request while the client keeps it alive (at most keep_alive_max requests, the next one
// within keep_alive_timeout); further connections wait in the accept queue, and an idle
// kept-alive connection is closed as soon as one waits (a client such as kube-apiserver that
// keeps many connections open must not starve a new one for a keep-alive timeout). Every request's
// body is read before the handler runs, whatever the method (a GET may carry one), up to
// max_body bytes (beyond: 413); a request Beast cannot parse gets 400; both close the
// connection. Listens with the kernel's SOMAXCONN backlog, as Go servers do.
//
// Stop(): no new connections; idle keep-alive connections are closed; the requests being
// served are answered (with `Connection: close`); then the threads are joined.
#include <openssl/ssl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace spiderpool::base {

struct HttpServerRequest {
  std::string method;  // as sent: "GET", "POST", ...
  std::string path;    // percent-decoded, without the query
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::multimap<std::string, std::string> headers;         // names in lower case
  std::string body;

  // The first value of a query parameter ("" if absent), and all of them.
  std::string Param(std::string_view name) const;
  bool HasParam(std::string_view name) const;
  std::vector<std::string> Params(std::string_view name) const;
  std::string Header(std::string_view name) const;  // "" if absent
};

struct HttpServerResponse {
  int status = 200;
  std::string content_type;  // none if empty
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

using HttpHandler = std::function<void(const HttpServerRequest&, HttpServerResponse&)>;

struct HttpServerOptions {
  int threads = 4;
  absl::Duration read_timeout = absl::Seconds(5);   // one read within a request
  absl::Duration write_timeout = absl::Seconds(5);  // one write of the answer
  absl::Duration keep_alive_timeout = absl::Seconds(5);
  int keep_alive_max = 100;
  size_t max_body = 1 << 20;
  // TCP only: SO_REUSEPORT (another process may bind the same port; the kernel spreads
  // connections over both). Without it a second binder fails (SO_REUSEADDR only).
  bool reuse_port = false;
  // HTTPS: each connection's TLS handshake (within read_timeout) with this context (not
  // owned; it must outlive the server). Null: plain HTTP.
  SSL_CTX* tls = nullptr;
  // The answer to a body over max_body (default: 413, text/plain); the connection closes.
  std::function<void(HttpServerResponse&)> too_large;
};

// Splits "a=1&b=%20x+y" into decoded pairs ('+' is a space, as Go's url.ParseQuery);
// InvalidArgument on a bad percent escape.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseQuery(
    std::string_view query);
// Decodes %XX escapes (no '+' rule: a path); InvalidArgument on a bad escape.
absl::StatusOr<std::string> PercentDecode(std::string_view text);

class HttpServer {
 public:
  // `address` "0.0.0.0", "::", "127.0.0.1", ...; port 0 = any free port (see port()).
  static absl::StatusOr<std::unique_ptr<HttpServer>> ListenTcp(const std::string& address,
                                                               int port,
                                                               HttpServerOptions options,
                                                               HttpHandler handler);
  // A unix socket at `path` (which must not exist), created with mode `mode` (bound under the
  // matching umask: never reachable with a wider mode, not even for a moment).
  static absl::StatusOr<std::unique_ptr<HttpServer>> ListenUnix(const std::string& path,
                                                                unsigned mode,
                                                                HttpServerOptions options,
                                                                HttpHandler handler);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }  // 0 for a unix socket
  void Stop();

 private:
  HttpServer(int listen_fd, int port, HttpServerOptions options, HttpHandler handler);
  absl::Status Start();
  void AcceptLoop();
  void WorkerLoop();
  void Serve(int fd);
  // Waits for the first byte of the next request: false on timeout, hangup or Stop(), and,
  // for a `kept_alive` connection (one that has been served), as soon as a new connection
  // waits for a worker.
  bool WaitForRequest(int fd, bool kept_alive);

  const int listen_fd_;
  const int port_;
  const HttpServerOptions options_;
  const HttpHandler handler_;
  int stop_fd_ = -1;  // an eventfd, readable once Stop() began
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> accepted_;  // guarded by mu_
  bool closed_ = false;       // guarded by mu_: no more connections will be queued
  std::thread acceptor_;
  std::vector<std::thread> workers_;
  bool stopped_ = false;  // Stop() is called by the owner, not concurrently
};

}  // namespace spiderpool::base
