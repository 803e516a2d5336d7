#include "base/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/strings/ascii.h"
#include "base/http_socket.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/strings.h"

namespace spiderpool::base {
namespace {

namespace http = boost::beast::http;

constexpr size_t kMaxHeader = 16 * 1024;
// How often an idle kept-alive connection checks whether a new connection waits for a worker.
constexpr absl::Duration kIdleSlice = absl::Milliseconds(50);

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> Decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      const int hi = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return absl::InvalidArgumentError(
            StrCat("invalid URL escape \"", text.substr(i, 3), "\""));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

absl::Status Errno(std::string_view what) {
  return absl::UnavailableError(StrCat(what, ": ", std::strerror(errno)));
}

http::response<http::string_body> ToBeast(HttpServerResponse out, bool keep_alive) {
  http::response<http::string_body> res;
  res.version(11);
  res.result(static_cast<unsigned>(out.status));
  if (!out.content_type.empty()) res.set(http::field::content_type, out.content_type);
  for (const auto& [k, v] : out.headers) res.insert(k, v);
  res.body() = std::move(out.body);
  res.prepare_payload();
  res.keep_alive(keep_alive);
  return res;
}

// Writes an answer on a connection about to close (a request we refuse unread).
void RefuseAndClose(SocketStream& stream, HttpServerResponse out) {
  http::response<http::string_body> res = ToBeast(std::move(out), /*keep_alive=*/false);
  boost::beast::error_code ec;
  http::write(stream, res, ec);
}

void RefuseAndClose(SocketStream& stream, http::status status, std::string_view text) {
  RefuseAndClose(stream, HttpServerResponse{.status = static_cast<int>(status),
                                            .content_type = "text/plain; charset=utf-8",
                                            .body = std::string(text)});
}

}  // namespace

absl::StatusOr<std::string> PercentDecode(std::string_view text) {
  return Decode(text, /*plus_is_space=*/false);
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseQuery(
    std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    absl::StatusOr<std::string> key = Decode(part.substr(0, eq), true);
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> value =
        eq == std::string_view::npos ? std::string() : Decode(part.substr(eq + 1), true);
    if (!value.ok()) return value.status();
    out.emplace_back(*std::move(key), *std::move(value));
  }
  return out;
}

std::string HttpServerRequest::Param(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return v;
  }
  return "";
}

bool HttpServerRequest::HasParam(std::string_view name) const {
  for (const auto& kv : query) {
    if (kv.first == name) return true;
  }
  return false;
}

std::vector<std::string> HttpServerRequest::Params(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : query) {
    if (k == name) out.push_back(v);
  }
  return out;
}

std::string HttpServerRequest::Header(std::string_view name) const {
  auto it = headers.find(absl::AsciiStrToLower(ToAbsl(name)));
  return it == headers.end() ? "" : it->second;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::ListenTcp(const std::string& address,
                                                                  int port,
                                                                  HttpServerOptions options,
                                                                  HttpHandler handler) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(StrCat("listen address \"", address,
                                             "\" is not an IP address"));
  }
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(StrCat("listen port ", port, " is out of range"));
  }
  const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (options.reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    absl::Status s = Errno(StrCat("listening on ", address, ":", port));
    ::close(fd);
    return s;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  const int bound_port = ntohs(bound.ss_family == AF_INET
                                   ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                   : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  std::unique_ptr<HttpServer> server(
      new HttpServer(fd, bound_port, std::move(options), std::move(handler)));
  if (absl::Status s = server->Start(); !s.ok()) return s;
  return server;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::ListenUnix(const std::string& path,
                                                                   unsigned mode,
                                                                   HttpServerOptions options,
                                                                   HttpHandler handler) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        StrCat("unix socket path \"", path, "\" is empty or longer than ",
               sizeof(addr.sun_path) - 1, " bytes"));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  const mode_t old_mask = ::umask(static_cast<mode_t>(~mode & 0777));
  const int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int bind_errno = errno;
  ::umask(old_mask);
  if (bound != 0 || ::listen(fd, SOMAXCONN) != 0) {
    errno = bound != 0 ? bind_errno : errno;
    absl::Status s = Errno(StrCat("listening on unix socket ", path));
    ::close(fd);
    return s;
  }
  std::unique_ptr<HttpServer> server(
      new HttpServer(fd, 0, std::move(options), std::move(handler)));
  if (absl::Status s = server->Start(); !s.ok()) return s;
  return server;
}

HttpServer::HttpServer(int listen_fd, int port, HttpServerOptions options, HttpHandler handler)
    : listen_fd_(listen_fd), port_(port), options_(std::move(options)),
      handler_(std::move(handler)) {}

HttpServer::~HttpServer() {
  Stop();
  ::close(listen_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

absl::Status HttpServer::Start() {
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) {
    stopped_ = true;
    return Errno("eventfd");
  }
  acceptor_ = std::thread([this] { AcceptLoop(); });
  const int threads = std::max(1, options_.threads);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof(one));
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void HttpServer::AcceptLoop() {
  BlockSigpipeOnThisThread();
  while (!stopping_.load()) {
    pollfd p[2] = {{.fd = listen_fd_, .events = POLLIN, .revents = 0},
                   {.fd = stop_fd_, .events = POLLIN, .revents = 0}};
    const int r = ::poll(p, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      SP_LOG(Error).Msg("HTTP server: poll failed").KV("error", std::strerror(errno));
      return;
    }
    if (p[1].revents != 0) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      // EMFILE and the like: the connection waits in the backlog; try again shortly.
      SP_LOG(Warning).Msg("HTTP server: accept failed").KV("error", std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      accepted_.push_back(fd);
    }
    cv_.notify_one();
  }
}

void HttpServer::WorkerLoop() {
  BlockSigpipeOnThisThread();
  while (true) {
    int fd;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !accepted_.empty() || closed_; });
      if (accepted_.empty()) return;
      fd = accepted_.front();
      accepted_.pop_front();
    }
    Serve(fd);
  }
}

bool HttpServer::WaitForRequest(int fd, bool kept_alive) {
  pollfd p[2] = {{.fd = fd, .events = POLLIN, .revents = 0},
                 {.fd = stop_fd_, .events = POLLIN, .revents = 0}};
  const absl::Time deadline = absl::Now() + options_.keep_alive_timeout;
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    // A kept-alive connection looks up every slice whether a new one waits for a worker.
    const absl::Duration slice = kept_alive ? std::min(left, kIdleSlice) : left;
    const int r = ::poll(p, 2, static_cast<int>(absl::ToInt64Milliseconds(
                                   absl::Ceil(slice, absl::Milliseconds(1)))));
    if (r < 0 && errno == EINTR) continue;
    // A request already sent is served even while stopping (then answered with close).
    if (r != 0) return r > 0 && (p[0].revents & POLLIN) != 0;
    if (kept_alive) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepted_.empty()) return false;  // idle: the worker goes to the waiting one
    }
  }
}

void HttpServer::Serve(int fd) {
  SSL* ssl = nullptr;
  if (options_.tls != nullptr) {
    ssl = SSL_new(options_.tls);
    if (ssl == nullptr) {
      SP_LOG(Error).Msg("HTTPS server: SSL_new failed").KV("error", OpenSslErrorText());
      ::close(fd);
      return;
    }
    SSL_set_fd(ssl, fd);
    SSL_set_accept_state(ssl);
  }
  SocketStream stream(fd, ssl);
  stream.set_read_timeout(options_.read_timeout);
  stream.set_write_timeout(options_.write_timeout);
  if (ssl != nullptr) {
    long unused = 0;
    if (absl::Status s = stream.Handshake(options_.read_timeout, &unused); !s.ok()) {
      SP_VLOG(1).Msg("HTTPS server: TLS handshake failed").KV("error", std::string(s.message()));
      return;
    }
  }
  boost::beast::flat_buffer buffer;
  for (int count = 1; count <= std::max(1, options_.keep_alive_max); ++count) {
    if (buffer.size() == 0 && !stream.Pending() && !WaitForRequest(fd, count > 1)) break;
    http::request_parser<http::string_body> parser;
    parser.header_limit(kMaxHeader);
    parser.body_limit(options_.max_body);
    boost::beast::error_code ec;
    http::read_header(stream, buffer, parser, ec);
    if (!ec && parser.get()[http::field::expect] == "100-continue" && !parser.is_done()) {
      http::response<http::empty_body> go_on{http::status::continue_, 11};
      http::write(stream, go_on, ec);
    }
    if (!ec && !parser.is_done()) http::read(stream, buffer, parser, ec);
    if (ec == http::error::body_limit) {
      if (options_.too_large) {
        HttpServerResponse out;
        options_.too_large(out);
        RefuseAndClose(stream, std::move(out));
      } else {
        RefuseAndClose(stream, http::status::payload_too_large,
                       StrCat("request body larger than ", options_.max_body, " bytes\n"));
      }
      break;
    }
    if (ec && ec.category() == boost::beast::error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      RefuseAndClose(stream, http::status::bad_request, StrCat("bad request: ", ec.message(),
                                                               "\n"));
      break;
    }
    if (ec) break;  // the client left, or timed out
    http::request<http::string_body> msg = parser.release();
    HttpServerRequest req;
    req.method = std::string(msg.method_string());
    const std::string_view target(msg.target().data(), msg.target().size());
    const size_t q = target.find('?');
    absl::StatusOr<std::string> path = PercentDecode(target.substr(0, q));
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> query =
        q == std::string_view::npos ? std::vector<std::pair<std::string, std::string>>()
                                    : ParseQuery(target.substr(q + 1));
    if (!path.ok() || !query.ok()) {
      RefuseAndClose(stream, http::status::bad_request,
                     StrCat("bad request target: ",
                            (!path.ok() ? path.status() : query.status()).message(), "\n"));
      break;
    }
    req.path = *std::move(path);
    req.query = *std::move(query);
    for (const auto& field : msg) {
      req.headers.emplace(absl::AsciiStrToLower(ToAbslView(field.name_string())),
                          std::string(field.value()));
    }
    req.body = std::move(msg.body());

    HttpServerResponse out;
    out.status = 404;
    handler_(req, out);

    const bool keep = msg.keep_alive() && count < options_.keep_alive_max && !stopping_.load();
    http::response<http::string_body> res = ToBeast(std::move(out), keep);
    http::write(stream, res, ec);
    if (ec || !keep) break;
  }
  if (ssl != nullptr) SSL_shutdown(ssl);  // close_notify, best effort (non-blocking)
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace spiderpool::base
