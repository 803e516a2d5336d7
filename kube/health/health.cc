#include "kube/health/health.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "base/http_server.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::kube::health {
namespace {

constexpr char kTextPlain[] = "text/plain; charset=utf-8";

// Go's %q for the names in the "cannot be excluded" warning (plain ASCII names).
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

absl::Status ValidateCheckName(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        base::ToAbsl(base::StrCat("invalid health check name \"", name, "\"")));
  }
  return absl::OkStatus();
}

void SetText(base::HttpServerResponse& res, int status, const std::string& body) {
  res.status = status;
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.content_type = kTextPlain;
  res.body = body;
}

}  // namespace

absl::Status Ping() { return absl::OkStatus(); }

struct Server::Impl {
  explicit Impl(ServerOptions o)
      : options(std::move(o)),
        registry(options.registry != nullptr ? options.registry : &metrics::Registry::Default()) {}

  absl::Status AddCheck(Probe probe, std::string name, Check check) {
    SP_RETURN_IF_ERROR(ValidateCheckName(name));
    std::lock_guard<std::mutex> lock(mu);
    auto& checks = probe == Probe::kLiveness ? liveness : readiness;
    if (!checks.emplace(name, std::move(check)).second) {
      return absl::AlreadyExistsError(
          base::ToAbsl(base::StrCat("health check \"", name, "\" already exists")));
    }
    return absl::OkStatus();
  }

  std::map<std::string, Check> Snapshot(Probe probe) {
    std::lock_guard<std::mutex> lock(mu);
    return probe == Probe::kLiveness ? liveness : readiness;
  }

  // GET <path>: every check of `probe`, as kube-apiserver's healthz handler renders them.
  void ServeAggregate(Probe probe, const std::string& endpoint,
                      const base::HttpServerRequest& req, base::HttpServerResponse& res) {
    std::map<std::string, Check> checks = Snapshot(probe);
    if (checks.empty()) checks.emplace("ping", Ping);
    std::set<std::string> excluded;
    for (std::string& name : req.Params("exclude")) excluded.insert(std::move(name));
    bool verbose = req.HasParam("verbose");
    bool failed = false;
    std::string body;
    for (const auto& [name, check] : checks) {
      if (excluded.erase(name) > 0) {
        body += base::StrCat("[+]", name, " excluded: ok\n");
        continue;
      }
      absl::Status s = check();
      if (s.ok()) {
        body += base::StrCat("[+]", name, " ok\n");
        continue;
      }
      failed = true;
      SP_LOG(Warning)
          .Msg("health check failed")
          .KV("endpoint", endpoint)
          .KV("check", name)
          .KV("error", std::string(s.message()));
      body += base::StrCat("[-]", name, " failed: ",
                           options.show_failure_reasons ? std::string(s.message())
                                                        : std::string("reason withheld"),
                           "\n");
    }
    if (!excluded.empty()) {
      std::string names;
      for (const auto& n : excluded) names += (names.empty() ? "" : ",") + Quote(n);
      body += base::StrCat("warn: some health checks cannot be excluded: no matches for ", names,
                           "\n");
    }
    if (failed) {
      SetText(res, 500, base::StrCat(body, endpoint, " check failed\n"));
    } else if (!verbose) {
      SetText(res, 200, "ok");
    } else {
      SetText(res, 200, base::StrCat(body, endpoint, " check passed\n"));
    }
  }

  // GET <path>/<name>: one check, with its message on failure.
  void ServeOne(Probe probe, const std::string& name, base::HttpServerResponse& res) {
    std::map<std::string, Check> checks = Snapshot(probe);
    if (checks.empty()) checks.emplace("ping", Ping);
    auto it = checks.find(name);
    if (it == checks.end()) {
      SetText(res, 404, "404 page not found\n");
      return;
    }
    absl::Status s = it->second();
    if (s.ok()) {
      SetText(res, 200, "ok");
    } else {
      SetText(res, 500, base::StrCat("internal server error: ", std::string(s.message()), "\n"));
    }
  }

  // GET <path> and GET <path>/<check> of every probe path (the fixed ones and the aliases),
  // and /metrics.
  void Route(const base::HttpServerRequest& req, base::HttpServerResponse& res) {
    if (req.method != "GET") {
      res.status = 404;
      return;
    }
    if (options.serve_metrics && req.path == "/metrics") {
      res.status = 200;
      res.content_type = std::string(metrics::kTextContentType);
      res.body = registry->Expose();
      return;
    }
    for (const auto& [path, probe, endpoint] : routes) {
      if (req.path == path) {
        ServeAggregate(probe, endpoint, req, res);
        return;
      }
      if (req.path.size() > path.size() + 1 && req.path.compare(0, path.size(), path) == 0 &&
          req.path[path.size()] == '/' &&
          req.path.find('/', path.size() + 1) == std::string::npos) {
        ServeOne(probe, req.path.substr(path.size() + 1), res);
        return;
      }
    }
    res.status = 404;
  }

  const ServerOptions options;
  metrics::Registry* const registry;
  std::vector<std::pair<std::string, Probe>> aliases;  // set before Start only
  struct RouteEntry {
    std::string path;
    Probe probe;
    std::string endpoint;
  };
  std::vector<RouteEntry> routes;  // set by Start
  std::unique_ptr<base::HttpServer> server;
  std::atomic<int> port{0};
  bool started = false;  // Start/Stop are called by the owner, not concurrently

  std::mutex mu;
  std::map<std::string, Check> liveness;   // guarded by mu
  std::map<std::string, Check> readiness;  // guarded by mu
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { Stop(); }

absl::Status Server::AddHealthzCheck(std::string name, Check check) {
  return impl_->AddCheck(Probe::kLiveness, std::move(name), std::move(check));
}

absl::Status Server::AddReadyzCheck(std::string name, Check check) {
  return impl_->AddCheck(Probe::kReadiness, std::move(name), std::move(check));
}

absl::Status Server::AddAlias(std::string path, Probe probe) {
  if (impl_->started) return absl::FailedPreconditionError("AddAlias after Start");
  if (path.empty() || path[0] != '/' || path.back() == '/') {
    return absl::InvalidArgumentError(base::ToAbsl(base::StrCat("invalid alias path ", path)));
  }
  impl_->aliases.emplace_back(std::move(path), probe);
  return absl::OkStatus();
}

absl::Status Server::Start() {
  Impl& s = *impl_;
  if (s.started) return absl::FailedPreconditionError("health server already started");
  s.started = true;

  s.routes.push_back({"/healthz", Probe::kLiveness, "healthz"});
  s.routes.push_back({"/livez", Probe::kLiveness, "livez"});
  s.routes.push_back({"/readyz", Probe::kReadiness, "readyz"});
  for (const auto& [path, probe] : s.aliases) {
    s.routes.push_back({path, probe, probe == Probe::kLiveness ? "healthz" : "readyz"});
  }
  base::HttpServerOptions http_options;
  http_options.threads = std::max(1, s.options.threads);
  http_options.reuse_port = s.options.share_port;
  absl::StatusOr<std::unique_ptr<base::HttpServer>> server = base::HttpServer::ListenTcp(
      s.options.address, s.options.port, http_options,
      [&s](const base::HttpServerRequest& req, base::HttpServerResponse& res) {
        s.Route(req, res);
      });
  if (!server.ok()) {
    return absl::UnavailableError(base::ToAbsl(
        base::StrCat("health server: cannot bind ", s.options.address, ":", s.options.port, ": ",
                     server.status().message())));
  }
  s.server = *std::move(server);
  s.port = s.server->port();
  SP_LOG(Info).Msg("health server listening").KV("address", s.options.address).KV("port",
                                                                                   s.port.load());
  return absl::OkStatus();
}

void Server::Stop() {
  Impl& s = *impl_;
  if (s.server == nullptr) return;
  s.server->Stop();
  s.server.reset();
  s.port = 0;
}

int Server::port() const { return impl_->port; }

}  // namespace spiderpool::kube::health
