// Core's request path, in kube-apiserver's filter order: routing (the path and the verb), the
// request deadline (WithRequestDeadline: `timeout`, --request-timeout), injected and random
// faults, the latency model's waits (none outlasting the deadline or the client), then Serve.

#include <algorithm>

#include "base/strings.h"
#include "kube/testing/core.h"
#include "kube/testing/core_util.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing::internal {

using base::StrCat;

namespace {

// kube-apiserver's answer when a request's deadline passes (its timeout filter).
constexpr std::string_view kTimeoutMessage =
    "Timeout: request did not complete within requested timeout - context deadline exceeded";

// Go's time.ParseDuration: signed decimal numbers with units ns, us, ms, s, m, h ("1m30s",
// "500ms", "0"); absl's syntax is the same but also takes "inf", which Go does not.
bool ParseGoDuration(const std::string& text, absl::Duration* out) {
  if (text.find("inf") != std::string::npos) return false;
  return absl::ParseDuration(text, out);
}

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

// ---- faults ----

namespace {
bool FaultMatches(const FaultMatch& m, std::string_view verb, std::string_view plural,
                  std::string_view sub, std::string_view ns, std::string_view name) {
  if (!m.verb.empty() && m.verb != verb) return false;
  if (!m.resource.empty()) {
    size_t slash = m.resource.find('/');
    if (slash == std::string::npos) {
      if (m.resource != plural) return false;
    } else if (std::string_view(m.resource).substr(0, slash) != plural ||
               std::string_view(m.resource).substr(slash + 1) != sub) {
      return false;
    }
  }
  if (!m.namespace_name.empty() && m.namespace_name != ns) return false;
  if (!m.name.empty() && m.name != name) return false;
  return true;
}
}  // namespace

void Core::InjectDelay(absl::Duration delay, FaultMatch match) {
  std::lock_guard<std::mutex> l(faults_mu_);
  faults_.erase(std::remove_if(faults_.begin(), faults_.end(),
                               [&](const Fault& f) {
                                 return f.delay > absl::ZeroDuration() &&
                                        f.match.verb == match.verb &&
                                        f.match.resource == match.resource &&
                                        f.match.namespace_name == match.namespace_name &&
                                        f.match.name == match.name;
                               }),
                faults_.end());
  if (delay > absl::ZeroDuration()) {
    Fault f;
    f.match = std::move(match);
    f.delay = delay;
    faults_.push_back(std::move(f));
  }
}

void Core::FailNext(int n, int http_code, FaultMatch match, int retry_after_seconds) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> l(faults_mu_);
  Fault f;
  f.match = std::move(match);
  f.remaining = n;
  f.code = http_code;
  f.retry_after = retry_after_seconds;
  faults_.push_back(std::move(f));
}

void Core::ClearFaults() {
  std::lock_guard<std::mutex> l(faults_mu_);
  faults_.clear();
}

void Core::SetRandomFaults(RandomFaults faults) {
  std::lock_guard<std::mutex> l(faults_mu_);
  fault_rng_.seed(faults.seed);
  random_faults_ = std::move(faults);
}

FaultCounts Core::fault_counts() const {
  std::lock_guard<std::mutex> l(faults_mu_);
  return fault_counts_;
}

void Core::CountWatchClose(int64_t streams) {
  std::lock_guard<std::mutex> l(faults_mu_);
  ++fault_counts_.watch_closes;
  fault_counts_.watches_closed += streams;
}

void Core::CountConnectionCut(int64_t sockets) {
  std::lock_guard<std::mutex> l(faults_mu_);
  ++fault_counts_.connection_cuts;
  fault_counts_.connections_cut += sockets;
}

int Core::DrawRandomFault(const Target& t, std::string_view verb) {
  std::lock_guard<std::mutex> l(faults_mu_);
  const RandomFaults& f = random_faults_;
  if (f.conflict_rate <= 0 && f.too_many_requests_rate <= 0 && f.internal_error_rate <= 0 &&
      f.timeout_rate <= 0) {
    return 0;
  }
  if (!FaultMatches(f.match, verb, t.plural, t.sub, t.ns, t.name)) return 0;
  double x = std::uniform_real_distribution<double>(0, 1)(fault_rng_);
  const bool write = verb == "update" || verb == "patch";
  if (write && (x -= f.conflict_rate) < 0) {
    ++fault_counts_.conflicts;
    return 409;
  }
  if ((x -= f.too_many_requests_rate) < 0) {
    ++fault_counts_.too_many_requests;
    return 429;
  }
  if ((x -= f.internal_error_rate) < 0) {
    ++fault_counts_.internal_errors;
    return 500;
  }
  if (verb != "watch" && (x -= f.timeout_rate) < 0) {
    ++fault_counts_.timeouts;
    return 504;
  }
  return 0;
}

std::optional<ApiStatus> Core::TakeFault(const Target& t, std::string_view verb,
                                         absl::Duration* delay) {
  std::lock_guard<std::mutex> l(faults_mu_);
  *delay = absl::ZeroDuration();
  std::optional<ApiStatus> out;
  for (auto it = faults_.begin(); it != faults_.end();) {
    if (!FaultMatches(it->match, verb, t.plural, t.sub, t.ns, t.name)) {
      ++it;
      continue;
    }
    if (it->delay > absl::ZeroDuration()) {
      *delay = std::max(*delay, it->delay);
      ++it;
      continue;
    }
    if (!out && it->remaining > 0) {
      out = StatusForCode(it->code, t.group, t.plural, t.name, it->retry_after);
      if (--it->remaining == 0) {
        it = faults_.erase(it);
        continue;
      }
    }
    ++it;
  }
  return out;
}

// ---- routing ----

std::optional<ApiStatus> Core::ResolveLocked(Target* t) {
  ResourceState* rs = FindLocked(t->group, t->plural);
  if (!rs) return ResourceNotFoundStatus();
  auto v = rs->versions.find(t->version);
  if (v == rs->versions.end()) return ResourceNotFoundStatus();
  if (rs->namespaced) {
    if (!t->ns_in_path && !t->name.empty()) return ResourceNotFoundStatus();
  } else if (t->ns_in_path) {
    return ResourceNotFoundStatus();
  }
  if (!t->sub.empty() && (t->sub != "status" || !v->second.info.has_status)) {
    return ResourceNotFoundStatus();
  }
  t->info = v->second.info;
  t->custom = rs->custom;
  t->selectable_fields = v->second.selectable_fields;
  return std::nullopt;
}

HttpResponse Core::Handle(const HttpRequest& req) {
  HttpResponse r = Dispatch(req);
  return r;
}

HttpResponse Core::Dispatch(const HttpRequest& req) {
  Target t;
  std::vector<std::string> seg = SplitPath(req.path);
  std::vector<std::string> rest;
  if (seg.empty()) {
    t.kind = Target::kRoot;
  } else if (seg.size() == 1 && seg[0] == "version") {
    t.kind = Target::kVersion;
  } else if (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "livez" || seg[0] == "readyz")) {
    t.kind = Target::kHealth;
  } else if (seg[0] == "openapi") {
    t.kind = Target::kOpenApi;
  } else if (seg[0] == "api") {
    if (seg.size() == 1) {
      t.kind = Target::kApi;
    } else if (seg[1] != "v1") {
      t.kind = Target::kNotFound;
    } else {
      t.version = "v1";
      t.kind = seg.size() == 2 ? Target::kGroupVersion : Target::kResource;
      rest.assign(seg.begin() + 2, seg.end());
    }
  } else if (seg[0] == "apis") {
    if (seg.size() == 1) {
      t.kind = Target::kApis;
    } else {
      t.group = seg[1];
      if (seg.size() == 2) {
        t.kind = Target::kGroup;
      } else {
        t.version = seg[2];
        t.kind = seg.size() == 3 ? Target::kGroupVersion : Target::kResource;
        rest.assign(seg.begin() + 3, seg.end());
      }
    }
  }
  if (t.kind == Target::kResource) {
    if (!rest.empty() && rest[0] == "watch") {
      t.legacy_watch = true;
      rest.erase(rest.begin());
    }
    if (rest.size() >= 3 && rest[0] == "namespaces" &&
        !(rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"))) {
      t.ns_in_path = true;
      t.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
    if (rest.empty() || rest.size() > 3) {
      t.kind = Target::kNotFound;
    } else {
      t.plural = rest[0];
      if (rest.size() >= 2) t.name = rest[1];
      if (rest.size() == 3) t.sub = rest[2];
    }
  }

  // The verb, as Kubernetes names it.
  std::string verb;
  bool watch = false;
  if (t.kind != Target::kResource) {
    verb = req.method == "GET" ? "get" : "";
  } else if (req.method == "GET") {
    watch = t.legacy_watch || ParamTrue(req, "watch");
    verb = !t.name.empty() && !t.legacy_watch ? "get" : watch ? "watch" : "list";
    if (t.legacy_watch && !t.name.empty()) watch = true;
  } else if (!t.legacy_watch) {
    if (req.method == "POST" && t.name.empty()) verb = "create";
    if (req.method == "PUT" && !t.name.empty()) verb = "update";
    if (req.method == "PATCH" && !t.name.empty()) verb = "patch";
    if (req.method == "DELETE") verb = t.name.empty() ? "deletecollection" : "delete";
    if (req.method == "DELETE" && !t.sub.empty()) verb = "";
  }

  // kube-apiserver's WithRequestDeadline: a non-watch request must be answered within
  // --request-timeout, or within its `timeout` query parameter (a Go duration, as client-go
  // sends its configured timeout) when that is shorter and positive.
  absl::Time deadline = absl::InfiniteFuture();
  if (req.network && !watch) {
    absl::Duration timeout = options_.request_timeout;
    auto it = req.params.find("timeout");
    if (it != req.params.end() && !it->second.empty()) {
      absl::Duration asked;
      if (!ParseGoDuration(it->second, &asked)) {
        return StatusResp(BadRequestStatus(
            StrCat("invalid timeout specified in the request URL - time: invalid duration \"",
                   it->second, "\"")));
      }
      if (asked > absl::ZeroDuration() && asked < timeout) timeout = asked;
    }
    if (timeout > absl::ZeroDuration()) deadline = clock_->Now() + timeout;
  }

  std::optional<ApiStatus> resolve_error;
  if (t.kind == Target::kResource) {
    std::lock_guard<std::mutex> l(mu_);
    resolve_error = ResolveLocked(&t);
  }

  if (!req.faults_taken) {
    absl::Duration delay;
    std::optional<ApiStatus> fault = TakeFault(t, verb, &delay);
    if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
    if (fault) return StatusResp(*fault);
  }
  if (req.network && !req.faults_taken && t.kind == Target::kResource && !resolve_error) {
    const int code = DrawRandomFault(t, verb);
    if (code == 504) {
      // Performed, then the answer is lost: kube-apiserver's timeout filter.
      HttpRequest performed = req;
      performed.faults_taken = true;
      (void)Handle(performed);
      absl::Duration hold;
      {
        std::lock_guard<std::mutex> l(faults_mu_);
        hold = random_faults_.timeout_delay;
      }
      absl::SleepFor(hold);
      return StatusResp(TimeoutStatus(kTimeoutMessage));
    }
    if (code != 0) {
      int retry_after = 0;
      if (code == 429) {
        std::lock_guard<std::mutex> l(faults_mu_);
        retry_after = random_faults_.retry_after_seconds;
      }
      return StatusResp(StatusForCode(code, t.group, t.plural, t.name, retry_after));
    }
  }

  // The latency model (off by default): wait until the request may be served; a write of one
  // object waits for its turn, and one that landed keeps the object for the commit time. None
  // of these waits outlasts the request's deadline (kube-apiserver's timeout filter answers 504)
  // or its client (a cancelled request context: the write is never attempted).
  // Sleeps until `until`; false (the request is answered 504) if the deadline comes first.
  auto sleep_within_deadline = [&](absl::Time until) {
    clock_->SleepUntil(std::min(until, deadline));
    return until <= deadline;
  };
  if (req.network) {
    const absl::Time ready = latency_.RequestReadyAt(clock_->Now(), verb);
    if (ready > absl::InfinitePast() && !sleep_within_deadline(ready)) return DeadlineExceeded();
  }
  std::optional<LatencyState::Turn> turn;
  if (req.network && t.kind == Target::kResource && !resolve_error && !t.name.empty() &&
      (verb == "update" || verb == "patch" || verb == "delete")) {
    bool client_left = false;
    auto give_up = [&] {
      client_left = req.peer_gone && req.peer_gone();
      return client_left || clock_->Now() >= deadline;
    };
    if (latency_.WaitForTurn(StrCat(t.group, "/", t.plural, "/", t.ns, "/", t.name), give_up,
                             &turn) == LatencyState::TurnWait::kGaveUp) {
      if (!client_left) return DeadlineExceeded();
      abandoned_.fetch_add(1, std::memory_order_relaxed);
      return StatusResp(TimeoutStatus(kTimeoutMessage));  // nobody reads it
    }
  }
  HttpResponse out = Serve(req, t, verb, seg, resolve_error);
  if (turn && out.code < 300) {
    // Performed; an answer later than the deadline is lost, as the timeout filter's is.
    if (!sleep_within_deadline(clock_->Now() + turn->hold())) return DeadlineExceeded();
  }
  return out;
}

HttpResponse Core::DeadlineExceeded() {
  timed_out_.fetch_add(1, std::memory_order_relaxed);
  return StatusResp(TimeoutStatus(kTimeoutMessage));
}

HttpResponse Core::Serve(const HttpRequest& req, const Target& t, const std::string& verb,
                         const std::vector<std::string>& seg,
                         const std::optional<ApiStatus>& resolve_error) {
  switch (t.kind) {
    case Target::kNotFound:
      return StatusResp(ResourceNotFoundStatus());
    case Target::kOpenApi:
      if (verb.empty()) return StatusResp(ResourceNotFoundStatus());
      return OpenApi(req, seg);
    case Target::kResource:
      break;
    default:
      if (verb.empty()) {
        return StatusResp(MethodNotAllowedStatus(
            "the server does not allow this method on the requested resource"));
      }
      return Discovery(req, t);
  }
  if (resolve_error) return StatusResp(*resolve_error);
  if (verb.empty()) {
    return StatusResp(
        MethodNotAllowedStatus("the server does not allow this method on the requested resource"));
  }
  if (verb == "get") return Get(req, t);
  if (verb == "list") return List(req, t);
  if (verb == "watch") return Watch(req, t);
  if (verb == "create") return Create(req, t);
  if (verb == "update") return Update(req, t, false);
  if (verb == "patch") return Update(req, t, true);
  if (verb == "delete") return Delete(req, t);
  return DeleteCollection(req, t);
}

}  // namespace spiderpool::kube::testing::internal
