#include "agent/ipam/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <httplib.h>

#include "base/log.h"
#include "base/sigpipe.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::ipam {
namespace {

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

IpamServer::IpamServer(ServerOptions options, IpamBackend* backend)
    : options_(std::move(options)), backend_(backend), http_(std::make_unique<httplib::Server>()) {}

IpamServer::~IpamServer() { Stop(); }

absl::StatusOr<std::unique_ptr<IpamServer>> IpamServer::Start(ServerOptions options,
                                                              IpamBackend* backend) {
  if (options.socket_path.empty()) return absl::InvalidArgumentError("socket path is empty");
  if (options.socket_path.size() > 107) {
    return absl::InvalidArgumentError(
        base::StrCat("socket path ", options.socket_path, " is longer than 107 characters"));
  }
  std::unique_ptr<IpamServer> server(new IpamServer(std::move(options), backend));
  const std::filesystem::path path(server->options_.socket_path);
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      return absl::UnavailableError(base::StrCat("creating ", path.parent_path().string(), ": ",
                                                 ec.message()));
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
  // httplib listens with a backlog of 5: a burst of pod starts would see connections refused.
  // Remember the listening socket and raise its backlog after httplib's listen().
  int listen_fd = -1;
  server->http_->set_socket_options([&listen_fd](int sock) { listen_fd = sock; });
  // The socket must never be reachable with a wider mode than 0600, not even for a moment:
  // bind under a restrictive umask (bind and listen happen together in httplib).
  const mode_t old_mask = ::umask(0177);
  // (The port is ignored for AF_UNIX, but 0 makes httplib ask the socket for its port and fail.)
  const bool bound = server->http_->bind_to_port(path.string(), 80);
  ::umask(old_mask);
  if (!bound) {
    return absl::UnavailableError(base::StrCat("cannot listen on unix socket ", path.string()));
  }
  if (listen_fd < 0 || ::listen(listen_fd, SOMAXCONN) != 0) {
    return absl::UnavailableError(
        base::StrCat("raising the listen backlog of ", path.string(), ": ", std::strerror(errno)));
  }
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

// Admission (429 beyond max_in_flight), readiness (503), body decoding (400), then `call`
// with the request deadline; its error becomes the status of ipamapi::HttpStatusFor.
template <typename Args, typename Call>
void IpamServer::Serve(const httplib::Request& req, httplib::Response& res, std::string_view what,
                       Call call) {
  Slot slot(in_flight_, options_.max_in_flight);
  if (!slot.admitted()) {
    ReplyError(res, ipamapi::kStatusTooManyRequests,
               "the agent has too many IPAM requests in flight; try again later");
    return;
  }
  if (!backend_->Ready()) {
    ReplyError(res, ipamapi::kStatusServiceUnavailable, "the agent is starting: caches not synced");
    return;
  }
  absl::StatusOr<Args> args = ipamapi::FromJson<Args>(req.body);
  if (!args.ok()) {
    ReplyError(res, ipamapi::kStatusBadRequest,
               base::StrCat("bad IPAM ", what, " request: ", base::FromAbsl(args.status().message())));
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

  http_->Get(healthy, [this](const httplib::Request&, httplib::Response& res) {
    if (backend_->Ready()) {
      Reply(res, ipamapi::kStatusOK, "{}");
    } else {
      ReplyError(res, ipamapi::kStatusServiceUnavailable, "the agent is starting: caches not synced");
    }
  });

  http_->Post(ip, [this](const httplib::Request& req, httplib::Response& res) {
    Serve<ipamapi::IpamAddArgs>(req, res, "add", [this](const ipamapi::IpamAddArgs& args,
                                                        absl::Time deadline) -> absl::StatusOr<std::string> {
      absl::StatusOr<ipamapi::IpamAddResponse> out = backend_->Allocate(args, deadline);
      if (!out.ok()) return out.status();
      return ipamapi::ToJson(*out);
    });
  });

  http_->Delete(ip, [this](const httplib::Request& req, httplib::Response& res) {
    Serve<ipamapi::IpamDelArgs>(req, res, "delete", [this](const ipamapi::IpamDelArgs& args,
                                                           absl::Time deadline) -> absl::StatusOr<std::string> {
      SP_RETURN_IF_ERROR(backend_->Release(args, deadline));
      return std::string("{}");
    });
  });
}

}  // namespace spiderpool::agent::ipam
