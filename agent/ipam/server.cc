#include "agent/ipam/server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::ipam {
namespace {

// A request body (the IPAM arguments, a coordinator query) is a few hundred bytes; beyond
// this the server answers 413 and closes the connection.
constexpr size_t kMaxBody = 1 << 20;

template <typename Args>
absl::StatusOr<Args> DecodeArgs(const base::HttpServerRequest& req) {
  return ipamapi::FromJson<Args>(req.body);
}

// The JSON body (go-swagger's client); without one, the query parameters.
template <>
absl::StatusOr<ipamapi::GetCoordinatorArgs> DecodeArgs(const base::HttpServerRequest& req) {
  ipamapi::GetCoordinatorArgs args;
  if (!absl::StripAsciiWhitespace(req.body).empty()) {
    SP_ASSIGN_OR_RETURN(args, ipamapi::FromJson<ipamapi::GetCoordinatorArgs>(req.body));
  }
  if (args.pod_namespace.empty()) args.pod_namespace = req.Param("podNamespace");
  if (args.pod_name.empty()) args.pod_name = req.Param("podName");
  return args;
}

void Reply(base::HttpServerResponse& res, int code, std::string body) {
  res.status = code;
  res.content_type = std::string(ipamapi::kContentType);
  res.body = std::move(body);
}

void ReplyError(base::HttpServerResponse& res, int code, std::string_view message) {
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
      coordinator_(coordinator) {}

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
  base::HttpServerOptions http_options;
  http_options.threads = server->options_.threads;
  http_options.max_body = kMaxBody;
  // A burst of pod starts is queued in the listen backlog (SOMAXCONN), not refused; the
  // socket is never reachable with a wider mode than 0600, not even for a moment.
  absl::StatusOr<std::unique_ptr<base::HttpServer>> http = base::HttpServer::ListenUnix(
      path.string(), 0600, http_options,
      [s = server.get()](const base::HttpServerRequest& req, base::HttpServerResponse& res) {
        s->Route(req, res);
      });
  if (!http.ok()) return http.status();
  server->http_ = *std::move(http);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::UnavailableError(base::StrCat("stat ", path.string(), ": ", std::strerror(errno)));
  }
  server->socket_id_ = {st.st_dev, st.st_ino};
  SP_LOG(Info).Msg("IPAM server listening").KV("socket", path.string());
  return server;
}

void IpamServer::Stop() {
  if (stopped_.exchange(true)) return;
  if (http_ != nullptr) http_->Stop();
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
void IpamServer::Serve(const base::HttpServerRequest& req, base::HttpServerResponse& res,
                       std::string_view what,
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

void IpamServer::Route(const base::HttpServerRequest& req, base::HttpServerResponse& res) {
  const auto ipam_ready = [this] {
    return backend_->Ready() ? absl::OkStatus()
                             : absl::UnavailableError("the agent is starting: caches not synced");
  };
  if (req.method == "GET" && req.path == ipamapi::kHealthyPath) {
    if (const absl::Status ready = ipam_ready(); ready.ok()) {
      Reply(res, ipamapi::kStatusOK, "{}");
    } else {
      ReplyError(res, ipamapi::kStatusServiceUnavailable, base::FromAbsl(ready.message()));
    }
  } else if (req.method == "POST" && req.path == ipamapi::kIPPath) {
    Serve<ipamapi::IpamAddArgs>(req, res, "IPAM add", ipam_ready(),
                                [this](const ipamapi::IpamAddArgs& args,
                                       absl::Time deadline) -> absl::StatusOr<std::string> {
      absl::StatusOr<ipamapi::IpamAddResponse> out = backend_->Allocate(args, deadline);
      if (!out.ok()) return out.status();
      return ipamapi::ToJson(*out);
    });
  } else if (req.method == "DELETE" && req.path == ipamapi::kIPPath) {
    Serve<ipamapi::IpamDelArgs>(req, res, "IPAM delete", ipam_ready(),
                                [this](const ipamapi::IpamDelArgs& args,
                                       absl::Time deadline) -> absl::StatusOr<std::string> {
      SP_RETURN_IF_ERROR(backend_->Release(args, deadline));
      return std::string("{}");
    });
  } else if (req.method == "GET" && req.path == ipamapi::kCoordinatorConfigPath) {
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
  } else {
    res.status = 404;  // no body, as before
  }
}

}  // namespace spiderpool::agent::ipam
