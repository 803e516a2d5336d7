#pragma once
// One HTTP/1.1 client connection (plain TCP or TLS) on base::SocketStream with Boost.Beast:
// the transport of kube/rest's RestClient, which pools these for keep-alive.
//
// The connection is opened by the first RoundTrip; after an answer the server lets us keep
// (keep-alive, nothing unread), the next RoundTrip reuses it, else it is closed. Cancel() from
// any thread ends a RoundTrip in progress (Failure::kCanceled) and every later one.
#include <openssl/ssl.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>

#include "absl/time/time.h"
#include "base/http_socket.h"

namespace spiderpool::base {

struct HttpClientRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, already escaped
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;  // not copied: it must outlive RoundTrip
  bool keep_alive = true;
};

struct HttpClientResult {
  enum class Failure {
    kNone,
    kConnect,   // no connection (connect or TLS handshake failed): nothing was sent
    kWrite,     // the request could not be written: the server never saw all of it
    kRead,      // no complete answer
    kCanceled,  // Cancel(), or a callback of RoundTrip returned false
  };
  Failure failure = Failure::kNone;
  bool timed_out = false;  // the failure was a connect, read or write timeout
  long verify_error = 0;   // X509_V_OK, or why the server's certificate was refused
  std::string error;       // what failed, for messages
  int status = 0;
  std::multimap<std::string, std::string> headers;  // names in lower case
  std::string body;  // unless RoundTrip was given on_body
  bool ok() const { return failure == Failure::kNone; }
};

struct HttpConnectionOptions {
  std::string host;  // name or address (IPv6 without brackets)
  int port = 0;
  SSL_CTX* tls = nullptr;  // null: plain HTTP; else not owned, must outlive the connection
  // With tls: send the host as SNI and check the certificate names it (or its IP address), when
  // the context verifies the peer at all (SSL_VERIFY_PEER).
  bool verify_host = true;
  absl::Duration connect_timeout = absl::Seconds(30);  // TCP connect and TLS handshake
  absl::Duration read_timeout = absl::Seconds(30);     // one read (an idle stream)
  absl::Duration write_timeout = absl::Seconds(30);
};

class HttpConnection {
 public:
  explicit HttpConnection(HttpConnectionOptions options);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // The socket, or -1 while not connected.
  int fd() const;

  // Sends `request` and reads its answer. `on_status(code)` runs once the header is read and
  // `on_body(bytes)` for each piece of the body as it arrives (then the result has no body);
  // either returning false ends the exchange with kCanceled.
  HttpClientResult RoundTrip(const HttpClientRequest& request,
                             const std::function<bool(int)>& on_status = nullptr,
                             const std::function<bool(std::string_view)>& on_body = nullptr);

  void Cancel();  // any thread

 private:
  HttpClientResult Fail(HttpClientResult::Failure failure, const boost::beast::error_code& ec,
                        std::string_view what);
  void Close();

  const HttpConnectionOptions options_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;                 // guards the pointer (Cancel vs open and close)
  std::unique_ptr<SocketStream> stream_;  // null while not connected
  boost::beast::flat_buffer buffer_;      // bytes read past the last answer
};

}  // namespace spiderpool::base
