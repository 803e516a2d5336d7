#include "kube/health/health.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "base/http_listen.h"
#include "base/log.h"
#include "base/sigpipe.h"
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

// httplib routes are regular expressions: match a configured path literally.
std::string RegexEscape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (std::string_view(".^$|()[]{}*+?\\").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

void SetText(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(body, kTextPlain);
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
  void ServeAggregate(Probe probe, const std::string& endpoint, const httplib::Request& req,
                      httplib::Response& res) {
    std::map<std::string, Check> checks = Snapshot(probe);
    if (checks.empty()) checks.emplace("ping", Ping);
    std::set<std::string> excluded;
    for (size_t i = 0, n = req.get_param_value_count("exclude"); i < n; ++i) {
      excluded.insert(req.get_param_value("exclude", i));
    }
    bool verbose = req.has_param("verbose");
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
  void ServeOne(Probe probe, const std::string& name, httplib::Response& res) {
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

  void Route(const std::string& literal_path, Probe probe, const std::string& endpoint) {
    std::string path = RegexEscape(literal_path);
    server.Get(path, [this, probe, endpoint](const httplib::Request& req, httplib::Response& res) {
      ServeAggregate(probe, endpoint, req, res);
    });
    server.Get(path + "/([^/]+)",
               [this, probe](const httplib::Request& req, httplib::Response& res) {
                 ServeOne(probe, req.matches[1].str(), res);
               });
  }

  const ServerOptions options;
  metrics::Registry* const registry;
  httplib::Server server;
  std::vector<std::pair<std::string, Probe>> aliases;  // set before Start only
  std::atomic<int> port{0};
  std::atomic<bool> listen_returned{false};
  bool started = false;  // Start/Stop are called by the owner, not concurrently
  bool stopped = false;
  std::jthread thread;

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

  s.Route("/healthz", Probe::kLiveness, "healthz");
  s.Route("/livez", Probe::kLiveness, "livez");
  s.Route("/readyz", Probe::kReadiness, "readyz");
  for (const auto& [path, probe] : s.aliases) {
    s.Route(path, probe, probe == Probe::kLiveness ? "healthz" : "readyz");
  }
  if (s.options.serve_metrics) {
    s.server.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
      res.status = 200;
      res.set_content(s.registry->Expose(), std::string(metrics::kTextContentType));
    });
  }
  // httplib's default sets SO_REUSEPORT, which lets a second process bind the same port
  // and silently share the probes; SO_REUSEADDR alone only permits quick restarts.
  base::ListenBacklog backlog(s.server, [share = s.options.share_port](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (share) setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
  });
  int threads = std::max(1, s.options.threads);
  s.server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

  int port = s.options.port;
  if (port == 0) {
    port = s.server.bind_to_any_port(s.options.address);
  } else if (!s.server.bind_to_port(s.options.address, port)) {
    port = -1;
  }
  if (port <= 0) {
    s.stopped = true;
    return absl::UnavailableError(base::ToAbsl(base::StrCat(
        "health server: cannot bind ", s.options.address, ":", s.options.port)));
  }
  if (absl::Status raised = backlog.Raise(); !raised.ok()) {
    s.stopped = true;
    return raised;
  }
  s.port = port;
  s.thread = std::jthread([&s] {
    base::BlockSigpipeOnThisThread();  // inherited by httplib's worker threads
    s.server.listen_after_bind();
    s.listen_returned = true;
  });
  // httplib's stop() is a no-op until the accept loop runs: wait for it so that a Stop()
  // right after Start() cannot be lost. The socket is already bound and listening, so
  // clients can connect meanwhile.
  while (!s.server.is_running() && !s.listen_returned) std::this_thread::yield();
  SP_LOG(Info).Msg("health server listening").KV("address", s.options.address).KV("port", port);
  return absl::OkStatus();
}

void Server::Stop() {
  Impl& s = *impl_;
  if (!s.started || s.stopped) return;
  s.stopped = true;
  s.server.stop();
  if (s.thread.joinable()) s.thread.join();
  s.port = 0;
}

int Server::port() const { return impl_->port; }

}  // namespace spiderpool::kube::health
