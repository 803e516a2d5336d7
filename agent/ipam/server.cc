#include "agent/ipam/server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <httplib.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "base/http_listen.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::ipam {
namespace {

// ---- GET bodies (see server.h) ------------------------------------------------------------

constexpr size_t kMaxGetBody = 64 * 1024;
// Set on a request (by us only: a client's copy is dropped) whose GET body could not be read.
constexpr char kBodyErrorHeader[] = "X-Spiderpool-Body-Error";

int PollFor(int fd, short events, absl::Duration timeout) {
  pollfd p{.fd = fd, .events = events, .revents = 0};
  const int ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(timeout), 1 << 30));
  int n;
  do {
    n = ::poll(&p, 1, std::max(ms, 0));
  } while (n < 0 && errno == EINTR);
  return n;
}

// One accepted connection, buffered like httplib's own SocketStream (its line reader reads one
// byte at a time), but kept for the whole connection.
class ConnStream : public httplib::Stream {
 public:
  ConnStream(int fd, absl::Duration read_timeout, absl::Duration write_timeout)
      : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  bool Buffered() const { return off_ < len_; }

  bool is_readable() const override { return Buffered() || PollFor(fd_, POLLIN, read_timeout_) > 0; }
  bool is_writable() const override { return PollFor(fd_, POLLOUT, write_timeout_) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (!Buffered()) {
      if (PollFor(fd_, POLLIN, read_timeout_) <= 0) return -1;
      if (size >= buf_.size()) return Recv(ptr, size);
      const ssize_t n = Recv(buf_.data(), buf_.size());
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();  // a unix socket has no peer address
    port = 0;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();
    port = 0;
  }
  int socket() const override { return fd_; }

 private:
  ssize_t Recv(char* ptr, size_t size) {
    ssize_t n;
    do {
      n = ::recv(fd_, ptr, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  int fd_;
  absl::Duration read_timeout_, write_timeout_;
  std::array<char, 4096> buf_{};
  size_t off_ = 0, len_ = 0;
};

absl::Status ReadExact(httplib::Stream& strm, size_t n, std::string* out) {
  const size_t start = out->size();
  out->resize(start + n);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = strm.read(out->data() + start + got, n - got);
    if (r <= 0) {
      out->resize(start + got);
      return absl::InvalidArgumentError("the request body ended early");
    }
    got += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadLine(httplib::Stream& strm) {
  std::string line;
  char c;
  while (true) {
    if (strm.read(&c, 1) != 1) return absl::InvalidArgumentError("the request body ended early");
    if (c == '\n') break;
    if (line.size() >= 1024) return absl::InvalidArgumentError("chunk header line too long");
    line.push_back(c);
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

absl::Status ReadChunkedBody(httplib::Stream& strm, std::string* body) {
  while (true) {
    SP_ASSIGN_OR_RETURN(std::string line, ReadLine(strm));
    std::string size_text = line.substr(0, line.find(';'));  // without chunk extensions
    absl::StripAsciiWhitespace(&size_text);
    if (size_text.empty() || size_text.size() > 8 ||
        !std::all_of(size_text.begin(), size_text.end(),
                     [](char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); })) {
      return absl::InvalidArgumentError(base::StrCat("bad chunk size \"", line, "\""));
    }
    const size_t size = std::strtoul(size_text.c_str(), nullptr, 16);
    if (size == 0) {
      while (true) {  // trailer fields up to the empty line
        SP_ASSIGN_OR_RETURN(std::string trailer, ReadLine(strm));
        if (trailer.empty()) return absl::OkStatus();
      }
    }
    if (body->size() + size > kMaxGetBody) {
      return absl::InvalidArgumentError(
          base::StrCat("request body larger than ", kMaxGetBody, " bytes"));
    }
    SP_RETURN_IF_ERROR(ReadExact(strm, size, body));
    SP_ASSIGN_OR_RETURN(std::string end, ReadLine(strm));
    if (!end.empty()) return absl::InvalidArgumentError("chunk not followed by CRLF");
  }
}

// Reads the body of a GET (httplib reads those of POST/PUT/PATCH/DELETE itself).
absl::Status ReadGetBody(httplib::Stream& strm, httplib::Request& req) {
  if (req.method != "GET") return absl::OkStatus();
  if (absl::EqualsIgnoreCase(req.get_header_value("Transfer-Encoding"), "chunked")) {
    return ReadChunkedBody(strm, &req.body);
  }
  if (!req.has_header("Content-Length")) return absl::OkStatus();
  size_t length = 0;
  if (!absl::SimpleAtoi(req.get_header_value("Content-Length"), &length)) {
    return absl::InvalidArgumentError("bad Content-Length");
  }
  if (length > kMaxGetBody) {
    return absl::InvalidArgumentError(
        base::StrCat("request body larger than ", kMaxGetBody, " bytes"));
  }
  return ReadExact(strm, length, &req.body);
}

// httplib::Server with its own connection loop (httplib's, with one ConnStream per connection)
// so that the body of a GET is read before routing. Overriding process_and_close_socket is
// what httplib's own SSLServer does.
class BodyReadingServer : public httplib::Server {
 private:
  bool process_and_close_socket(int sock) override {
    ConnStream strm(sock, Duration(read_timeout_sec_, read_timeout_usec_),
                    Duration(write_timeout_sec_, write_timeout_usec_));
    bool ret = false;
    for (size_t count = keep_alive_max_count_; count > 0 && WaitForRequest(strm); --count) {
      bool connection_closed = false;
      bool body_broken = false;
      ret = process_request(strm, /*close_connection=*/count == 1, connection_closed,
                            [&strm, &body_broken](httplib::Request& req) {
                              req.headers.erase(kBodyErrorHeader);
                              if (absl::Status s = ReadGetBody(strm, req); !s.ok()) {
                                // The rest of the stream is not a request: answer, then close.
                                body_broken = true;
                                req.set_header(kBodyErrorHeader, std::string(s.message()));
                                req.set_header("Connection", "close");
                              }
                            });
      if (!ret || connection_closed || body_broken) break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  static absl::Duration Duration(time_t sec, time_t usec) {
    return absl::Seconds(sec) + absl::Microseconds(usec);
  }

  // httplib's keep_alive(): the next request's first byte within the keep-alive timeout, or
  // the server stopping.
  bool WaitForRequest(const ConnStream& strm) const {
    if (strm.Buffered()) return true;
    const absl::Time deadline = absl::Now() + absl::Seconds(keep_alive_timeout_sec_);
    while (svr_sock_ != INVALID_SOCKET) {
      const int n = PollFor(strm.socket(), POLLIN, absl::Milliseconds(10));
      if (n > 0) return true;
      if (n < 0 || absl::Now() >= deadline) return false;
    }
    return false;
  }
};

template <typename Args>
absl::StatusOr<Args> DecodeArgs(const httplib::Request& req) {
  return ipamapi::FromJson<Args>(req.body);
}

// The JSON body (go-swagger's client); without one, the query parameters.
template <>
absl::StatusOr<ipamapi::GetCoordinatorArgs> DecodeArgs(const httplib::Request& req) {
  if (req.has_header(kBodyErrorHeader)) {
    return absl::InvalidArgumentError(req.get_header_value(kBodyErrorHeader));
  }
  ipamapi::GetCoordinatorArgs args;
  if (!absl::StripAsciiWhitespace(req.body).empty()) {
    SP_ASSIGN_OR_RETURN(args, ipamapi::FromJson<ipamapi::GetCoordinatorArgs>(req.body));
  }
  if (args.pod_namespace.empty()) args.pod_namespace = req.get_param_value("podNamespace");
  if (args.pod_name.empty()) args.pod_name = req.get_param_value("podName");
  return args;
}

void Reply(httplib::Response& res, int code, std::string body) {
  res.status = code;
  res.set_content(std::move(body), std::string(ipamapi::kContentType));
}

void ReplyError(httplib::Response& res, int code, std::string_view message) {
  Reply(res, code, ipamapi::ErrorJson(message));
}

// Admission: holds one of `max` slots for the lifetime of the object.
class Slot {
 public:
  Slot(std::atomic<int>& counter, int max) : counter_(counter) {
    admitted_ = counter_.fetch_add(1) < max;
  }
  ~Slot() { counter_.fetch_sub(1); }
  bool admitted() const { return admitted_; }

 private:
  std::atomic<int>& counter_;
  bool admitted_;
};

}  // namespace

IpamServer::IpamServer(ServerOptions options, IpamBackend* backend,
                       CoordinatorBackend* coordinator)
    : options_(std::move(options)),
      backend_(backend),
      coordinator_(coordinator),
      http_(std::make_unique<BodyReadingServer>()) {}

IpamServer::~IpamServer() { Stop(); }

absl::StatusOr<std::unique_ptr<IpamServer>> IpamServer::Start(ServerOptions options,
                                                              IpamBackend* backend,
                                                              CoordinatorBackend* coordinator) {
  if (options.socket_path.empty()) return absl::InvalidArgumentError("socket path is empty");
  if (options.socket_path.size() > 107) {
    return absl::InvalidArgumentError(
        base::StrCat("socket path ", options.socket_path, " is longer than 107 characters"));
  }
  std::unique_ptr<IpamServer> server(new IpamServer(std::move(options), backend, coordinator));
  const std::filesystem::path path(server->options_.socket_path);
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      return absl::UnavailableError(base::StrCat("creating ", path.parent_path().string(), ": ",
                                                 ec.message()));
    }
  }
  // Anyone who can write the directory can put their own socket where the plugin connects
  // (and read every pod's IPAM request): refuse a world-writable one.
  {
    const std::string dir = path.has_parent_path() ? path.parent_path().string() : ".";
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      return absl::UnavailableError(base::StrCat("stat ", dir, ": ", std::strerror(errno)));
    }
    if ((st.st_mode & S_IWOTH) != 0) {
      return absl::FailedPreconditionError(base::StrCat(
          "the socket directory ", dir, " is world-writable (mode ",
          absl::StrFormat("%04o", st.st_mode & 07777),
          "): any user could replace the agent's socket; use a directory only root can write"));
    }
  }
  // A socket file left by a previous agent, or the socket of the agent this one replaces in a
  // surge rollout (it keeps serving the connections it accepted; new ones come here).
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(
        base::StrCat("removing stale socket ", path.string(), ": ", std::strerror(errno)));
  }
  server->Install();
  server->http_->set_address_family(AF_UNIX);
  const int threads = server->options_.threads;
  server->http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // A burst of pod starts is queued, not refused (httplib alone listens with a backlog of 5).
  base::ListenBacklog backlog(*server->http_, nullptr);
  // The socket must never be reachable with a wider mode than 0600, not even for a moment:
  // bind under a restrictive umask (bind and listen happen together in httplib).
  const mode_t old_mask = ::umask(0177);
  // (The port is ignored for AF_UNIX, but 0 makes httplib ask the socket for its port and fail.)
  const bool bound = server->http_->bind_to_port(path.string(), 80);
  ::umask(old_mask);
  if (!bound) {
    return absl::UnavailableError(base::StrCat("cannot listen on unix socket ", path.string()));
  }
  SP_RETURN_IF_ERROR(base::Annotate(backlog.Raise(), path.string()));
  if (::chmod(path.c_str(), 0600) != 0) {
    return absl::UnavailableError(
        base::StrCat("chmod 0600 ", path.string(), ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::UnavailableError(base::StrCat("stat ", path.string(), ": ", std::strerror(errno)));
  }
  server->socket_id_ = {st.st_dev, st.st_ino};
  auto exited = std::make_shared<std::atomic<bool>>(false);
  server->thread_ = std::thread([s = server.get(), exited] {
    base::BlockSigpipeOnThisThread();  // inherited by httplib's worker threads
    s->http_->listen_after_bind();
    exited->store(true);
  });
  // Return only once the accept loop runs: httplib's stop() is a no-op before that, so a Stop()
  // right after Start() would otherwise leave the loop running and join() forever.
  while (!server->http_->is_running() && !exited->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (exited->load() && !server->http_->is_running()) {
    server->thread_.join();
    server->stopped_ = true;
    return absl::UnavailableError(base::StrCat("the accept loop on ", path.string(), " exited"));
  }
  SP_LOG(Info).Msg("IPAM server listening").KV("socket", path.string());
  return server;
}

void IpamServer::Stop() {
  if (stopped_.exchange(true)) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
  // Only our own socket file: in a surge rollout the path may already belong to the agent
  // that replaces this one.
  struct stat st {};
  if (::stat(options_.socket_path.c_str(), &st) == 0 &&
      std::pair(st.st_dev, st.st_ino) == socket_id_) {
    ::unlink(options_.socket_path.c_str());
  }
}

// Admission (429 beyond max_in_flight), readiness (503 unless `ready` is OK), body decoding
// (400), then `call` with the request deadline; its error becomes the status of
// ipamapi::HttpStatusFor.
template <typename Args, typename Call>
void IpamServer::Serve(const httplib::Request& req, httplib::Response& res, std::string_view what,
                       const absl::Status& ready, Call call) {
  Slot slot(in_flight_, options_.max_in_flight);
  if (!slot.admitted()) {
    ReplyError(res, ipamapi::kStatusTooManyRequests,
               "the agent has too many IPAM requests in flight; try again later");
    return;
  }
  if (!ready.ok()) {
    ReplyError(res, ipamapi::kStatusServiceUnavailable, base::FromAbsl(ready.message()));
    return;
  }
  absl::StatusOr<Args> args = DecodeArgs<Args>(req);
  if (!args.ok()) {
    ReplyError(res, ipamapi::kStatusBadRequest,
               base::StrCat("bad ", what, " request: ", base::FromAbsl(args.status().message())));
    return;
  }
  absl::StatusOr<std::string> body = call(*args, absl::Now() + options_.request_timeout);
  if (!body.ok()) {
    ReplyError(res, ipamapi::HttpStatusFor(body.status()), base::FromAbsl(body.status().message()));
    return;
  }
  Reply(res, ipamapi::kStatusOK, *std::move(body));
}

void IpamServer::Install() {
  const std::string healthy(ipamapi::kHealthyPath);
  const std::string ip(ipamapi::kIPPath);
  const std::string coordinator(ipamapi::kCoordinatorConfigPath);
  auto ipam_ready = [this] {
    return backend_->Ready() ? absl::OkStatus()
                             : absl::UnavailableError("the agent is starting: caches not synced");
  };

  http_->Get(healthy, [this](const httplib::Request&, httplib::Response& res) {
    if (backend_->Ready()) {
      Reply(res, ipamapi::kStatusOK, "{}");
    } else {
      ReplyError(res, ipamapi::kStatusServiceUnavailable, "the agent is starting: caches not synced");
    }
  });

  http_->Post(ip, [this, ipam_ready](const httplib::Request& req, httplib::Response& res) {
    Serve<ipamapi::IpamAddArgs>(req, res, "IPAM add", ipam_ready(),
                                [this](const ipamapi::IpamAddArgs& args,
                                       absl::Time deadline) -> absl::StatusOr<std::string> {
      absl::StatusOr<ipamapi::IpamAddResponse> out = backend_->Allocate(args, deadline);
      if (!out.ok()) return out.status();
      return ipamapi::ToJson(*out);
    });
  });

  http_->Delete(ip, [this, ipam_ready](const httplib::Request& req, httplib::Response& res) {
    Serve<ipamapi::IpamDelArgs>(req, res, "IPAM delete", ipam_ready(),
                                [this](const ipamapi::IpamDelArgs& args,
                                       absl::Time deadline) -> absl::StatusOr<std::string> {
      SP_RETURN_IF_ERROR(backend_->Release(args, deadline));
      return std::string("{}");
    });
  });

  http_->Get(coordinator, [this](const httplib::Request& req, httplib::Response& res) {
    if (coordinator_ == nullptr) {
      ReplyError(res, ipamapi::kStatusNotFound,
                 base::StrCat("this agent does not serve ", ipamapi::kCoordinatorConfigPath));
      return;
    }
    const absl::Status ready =
        coordinator_->Ready()
            ? absl::OkStatus()
            : absl::UnavailableError("the agent is starting: SpiderCoordinator cache not synced");
    Serve<ipamapi::GetCoordinatorArgs>(
        req, res, "coordinator config", ready,
        [this](const ipamapi::GetCoordinatorArgs& args,
               absl::Time) -> absl::StatusOr<std::string> {
          absl::StatusOr<ipamapi::CoordinatorConfig> out = coordinator_->GetCoordinatorConfig(args);
          if (!out.ok()) return out.status();
          return ipamapi::ToJson(*out);
        });
  });
}

}  // namespace spiderpool::agent::ipam
