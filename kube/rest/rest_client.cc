#include "kube/rest/rest_client.h"

#include <poll.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "base/http_client.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::kube {
namespace {

constexpr size_t kMaxErrorBody = 1 << 20;

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Parses every certificate of a PEM bundle.
absl::StatusOr<STACK_OF(X509)*> ParseCertificates(std::string_view pem, std::string_view what) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return absl::InternalError("BIO_new_mem_buf failed");
  STACK_OF(X509)* certs = sk_X509_new_null();
  while (true) {
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (cert == nullptr) break;
    sk_X509_push(certs, cert);
  }
  ERR_clear_error();  // the loop ends with a "no start line" error
  BIO_free(bio);
  if (sk_X509_num(certs) == 0) {
    sk_X509_free(certs);
    return absl::InvalidArgumentError(base::StrCat(what, ": no PEM certificate found"));
  }
  return certs;
}

// The TLS context every connection of one client shares: trusted roots (only Config::ca_pem,
// or the system roots), the client certificate and key, verification of the server.
struct TlsMaterial {
  SSL_CTX* ctx = nullptr;
  ~TlsMaterial() {
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }
};

class TokenSource {
 public:
  TokenSource(const Config& config, base::Clock& clock)
      : static_token_(Trim(config.bearer_token)),
        file_(config.bearer_token_file),
        period_(config.token_refresh_period),
        clock_(clock) {}

  bool from_file() const { return !file_.empty(); }

  // The token to send; `force` re-reads the file (after a 401).
  std::string Get(bool force, std::atomic<uint64_t>* reads) {
    if (file_.empty()) return static_token_;
    std::lock_guard<std::mutex> lock(mu_);
    absl::Time now = clock_.Now();
    if (force || !read_once_ || now - last_read_ >= period_) {
      read_once_ = true;
      last_read_ = now;
      reads->fetch_add(1);
      absl::StatusOr<std::string> text = ReadFileToString(file_);
      if (text.ok() && !Trim(*text).empty()) {
        cached_ = Trim(*text);
      } else {
        SP_LOG(Warning)
            .Msg("cannot read bearer token file, using the last known token")
            .KV("file", file_)
            .KV("error", text.ok() ? std::string("empty file") : base::StatusText(text.status()));
      }
    }
    return cached_.empty() ? static_token_ : cached_;
  }

 private:
  const std::string static_token_;
  const std::string file_;
  const absl::Duration period_;
  base::Clock& clock_;
  std::mutex mu_;
  bool read_once_ = false;   // guarded by mu_
  absl::Time last_read_;     // guarded by mu_
  std::string cached_;       // guarded by mu_
};

// One attempt's outcome.
using Attempt = base::HttpClientResult;
using Failure = base::HttpClientResult::Failure;

std::string RetryAfterOf(const Attempt& a) {
  auto it = a.headers.find("retry-after");
  return it == a.headers.end() ? "" : it->second;
}

// Retry-After in seconds when the answer asks for a retry (429 or 5xx with the header).
std::optional<int> RetryDelay(const Attempt& a) {
  if (a.status != 429 && a.status < 500) return std::nullopt;
  std::string h = Trim(RetryAfterOf(a));
  if (h.empty()) return std::nullopt;
  int secs = 0;
  for (char c : h) {
    if (c < '0' || c > '9') return std::nullopt;
    secs = secs * 10 + (c - '0');
    if (secs > 3600) return std::nullopt;
  }
  return secs;
}

}  // namespace

std::string Response::Header(std::string_view name) const {
  auto it = headers.find(absl::AsciiStrToLower(base::ToAbsl(name)));
  return it == headers.end() ? "" : it->second;
}

class RestClient::Impl {
 public:
  Impl(Config config_in, ServerAddress addr)
      : config(std::move(config_in)), addr(std::move(addr)), tokens(config, config.GetClock()) {}

  const Config config;
  const ServerAddress addr;
  TlsMaterial tls;
  TokenSource tokens;

  std::mutex pool_mu;
  std::vector<std::unique_ptr<base::HttpConnection>> idle;  // guarded by pool_mu

  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> throttled{0};
  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> dropped_idle{0};
  std::atomic<uint64_t> token_reads{0};

  static absl::Duration Bounded(absl::Duration d) {
    return d <= absl::ZeroDuration() ? absl::InfiniteDuration() : d;
  }

  // A connection (opened by its first request) whose reads wait at most `read_timeout`.
  std::unique_ptr<base::HttpConnection> NewClient(absl::Duration read_timeout) {
    base::HttpConnectionOptions o;
    o.host = addr.host;
    o.port = addr.port;
    o.tls = tls.ctx;
    o.connect_timeout = Bounded(config.timeout);
    o.write_timeout = Bounded(config.timeout);
    o.read_timeout = Bounded(read_timeout);
    connections.fetch_add(1);
    return std::make_unique<base::HttpConnection>(std::move(o));
  }

  // A pooled client (its keep-alive connection may have gone stale: *reused says so) or a
  // new one.
  // True if the server has closed this idle keep-alive connection (or sent anything on it:
  // an idle HTTP/1.1 connection has nothing to read), as urllib3's is_connection_dropped
  // checks before reuse. A request sent on it would be lost: a POST could not be resent.
  static bool Dropped(const base::HttpConnection& cli) {
    const int fd = cli.fd();
    if (fd < 0) return false;  // not open: it connects anew
    pollfd p{.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
    return ::poll(&p, 1, 0) != 0;
  }

  // An idle keep-alive connection that is still open, if there is one (`fresh`: never; after
  // a kept-alive one failed).
  std::unique_ptr<base::HttpConnection> Acquire(bool* reused, bool fresh = false) {
    while (!fresh) {
      std::unique_ptr<base::HttpConnection> cli;
      {
        std::lock_guard<std::mutex> lock(pool_mu);
        if (idle.empty()) break;
        cli = std::move(idle.back());
        idle.pop_back();
      }
      if (Dropped(*cli)) {
        dropped_idle.fetch_add(1);
        continue;  // closed outside the lock
      }
      *reused = true;
      return cli;
    }
    *reused = false;
    return NewClient(config.timeout);
  }

  // Drops every idle connection: one of them turned out closed by the server, and the others
  // are as old (a restarted or failed-over API server closes them all; Go's transport notices
  // each on its own read loop, we do not watch idle sockets).
  void DropIdle() {
    std::vector<std::unique_ptr<base::HttpConnection>> dropped;
    std::lock_guard<std::mutex> lock(pool_mu);
    dropped.swap(idle);
  }

  void Release(std::unique_ptr<base::HttpConnection> cli) {
    if (cli->fd() < 0) return;  // the server did not keep it open
    std::lock_guard<std::mutex> lock(pool_mu);
    if (static_cast<int>(idle.size()) < config.max_idle_connections) {
      idle.push_back(std::move(cli));
    }
  }

  // `server_timeout` > 0: also the `timeout` query parameter (unless the request has one),
  // as client-go sends its configured timeout, so that the server gives up when we do
  // (kube-apiserver answers 504 past it instead of working for a client that has left).
  std::string Target(const Request& r, absl::Duration server_timeout) const {
    std::string target = addr.base_path + r.path;
    char sep = target.find('?') == std::string::npos ? '?' : '&';
    auto add = [&](std::string_view k, std::string_view v) {
      target.push_back(sep);
      sep = '&';
      target += EscapeComponent(k);
      target.push_back('=');
      target += EscapeComponent(v);
    };
    bool has_timeout = false;
    for (const auto& [k, v] : r.query) {
      add(k, v);
      has_timeout = has_timeout || k == "timeout";
    }
    if (server_timeout > absl::ZeroDuration() && !has_timeout) {
      add("timeout", absl::FormatDuration(server_timeout));  // "30s": Go's duration syntax
    }
    return target;
  }

  base::HttpClientRequest BuildRequest(const Request& r, const std::string& token,
                                       absl::Duration server_timeout, bool keep_alive) const {
    base::HttpClientRequest h;
    h.method = r.method;
    h.target = Target(r, server_timeout);
    h.keep_alive = keep_alive;
    const bool own_accept = std::any_of(r.headers.begin(), r.headers.end(), [](const auto& kv) {
      return absl::EqualsIgnoreCase(kv.first, "Accept");
    });
    if (!own_accept) h.headers.emplace_back("Accept", "application/json");
    h.headers.emplace_back("User-Agent", config.user_agent);
    if (!token.empty()) h.headers.emplace_back("Authorization", "Bearer " + token);
    for (const auto& [k, v] : r.headers) h.headers.emplace_back(k, v);
    if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
      h.headers.emplace_back("Content-Type", r.content_type.empty()
                                                 ? std::string("application/json")
                                                 : r.content_type);
    }
    h.body = r.body;
    return h;
  }

  // Sends one attempt on `cli`. The request in flight is aborted when `stop` fires.
  // `on_status` (may be null) sees the status code before the body.
  Attempt Send(base::HttpConnection& cli, const base::HttpClientRequest& hreq,
               std::stop_token stop, const std::function<void(int)>& on_status = nullptr,
               const std::function<bool(std::string_view)>& on_body = nullptr) {
    if (stop.stop_requested()) {
      Attempt a;
      a.failure = Failure::kCanceled;
      return a;
    }
    requests.fetch_add(1);
    std::optional<std::stop_callback<std::function<void()>>> on_stop;
    if (stop.stop_possible()) {
      on_stop.emplace(stop, std::function<void()>([&cli] { cli.Cancel(); }));
    }
    Attempt a = cli.RoundTrip(
        hreq,
        [&](int code) {
          if (on_status) on_status(code);
          return !stop.stop_requested();
        },
        on_body);
    on_stop.reset();
    if (stop.stop_requested()) a.failure = Failure::kCanceled;
    return a;
  }

  absl::Status TransportError(const Attempt& a, const Request& r, bool reused) const {
    std::string where = base::StrCat(r.method, " ", config.server, r.path);
    if (a.failure == Failure::kCanceled) {
      return absl::CancelledError(base::StrCat(where, ": cancelled"));
    }
    if (a.timed_out) {
      absl::Status s =
          absl::DeadlineExceededError(base::StrCat(where, ": timed out (", a.error, ")"));
      s.SetPayload(base::ToAbsl(kClientTimeoutPayload), absl::Cord("1"));
      return s;
    }
    if (a.verify_error != X509_V_OK) {
      return absl::FailedPreconditionError(
          base::StrCat(where, ": TLS verification of the server certificate failed: ",
                       X509_verify_cert_error_string(a.verify_error)));
    }
    return absl::UnavailableError(base::StrCat(
        where, ": ", a.error, reused ? " (kept-alive connection)" : " (new connection)"));
  }
};

absl::StatusOr<std::shared_ptr<RestClient>> RestClient::Create(Config config) {
  absl::StatusOr<ServerAddress> addr = ParseServerUrl(config.server);
  if (!addr.ok()) return addr.status();
  if (config.max_retries < 0) config.max_retries = 0;
  if (config.max_idle_connections < 0) config.max_idle_connections = 0;
  auto impl = std::make_unique<Impl>(config, *addr);
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return absl::InvalidArgumentError("client certificate and key must be given together");
  }
  // Parsed even for a plain-HTTP server: a bad certificate or key is a configuration error.
  std::unique_ptr<STACK_OF(X509), void (*)(STACK_OF(X509)*)> client_chain(
      nullptr, [](STACK_OF(X509)* c) { sk_X509_pop_free(c, X509_free); });
  std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> client_key(nullptr, EVP_PKEY_free);
  if (!config.client_cert_pem.empty()) {
    SP_ASSIGN_OR_RETURN(STACK_OF(X509) * chain,
                        ParseCertificates(config.client_cert_pem, "client certificate"));
    client_chain.reset(chain);
    BIO* bio = BIO_new_mem_buf(config.client_key_pem.data(),
                               static_cast<int>(config.client_key_pem.size()));
    client_key.reset(PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr));
    BIO_free(bio);
    if (client_key == nullptr) {
      return absl::InvalidArgumentError(
          base::StrCat("client key: cannot parse PEM private key: ", base::OpenSslErrorText()));
    }
    if (X509_check_private_key(sk_X509_value(chain, 0), client_key.get()) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError("client key does not match the client certificate");
    }
  }
  if (addr->tls) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) {
      return absl::InternalError(base::StrCat("SSL_CTX_new: ", base::OpenSslErrorText()));
    }
    impl->tls.ctx = ctx;
    // An idle connection (a watch between events, a pooled keep-alive one) gives its ~34 KB
    // of record buffers back: an agent holds ~15 connections. A peer closing without
    // close_notify ends the stream like one that sent it (our answers are length-framed).
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (config.insecure_skip_tls_verify) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    } else {
      // Only the given CA when there is one (never the system bundle besides it).
      X509_STORE* trust = SSL_CTX_get_cert_store(ctx);
      if (!config.ca_pem.empty()) {
        SP_ASSIGN_OR_RETURN(STACK_OF(X509) * roots, ParseCertificates(config.ca_pem, "CA"));
        for (int i = 0; i < sk_X509_num(roots); ++i) {
          X509_STORE_add_cert(trust, sk_X509_value(roots, i));
        }
        sk_X509_pop_free(roots, X509_free);
        ERR_clear_error();  // duplicates in a bundle are harmless
      } else if (X509_STORE_set_default_paths(trust) != 1) {
        return absl::InternalError(
            base::StrCat("cannot load the system CA certificates: ", base::OpenSslErrorText()));
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);  // the host: per connection
    }
    if (client_chain != nullptr) {
      if (SSL_CTX_use_certificate(ctx, sk_X509_value(client_chain.get(), 0)) != 1 ||
          SSL_CTX_use_PrivateKey(ctx, client_key.get()) != 1) {
        return absl::InvalidArgumentError(
            base::StrCat("client certificate: ", base::OpenSslErrorText()));
      }
      for (int i = 1; i < sk_X509_num(client_chain.get()); ++i) {
        SSL_CTX_add1_chain_cert(ctx, sk_X509_value(client_chain.get(), i));
      }
    }
  }
  std::shared_ptr<RestClient> client(new RestClient(std::move(config), std::move(impl)));
  return client;
}

RestClient::RestClient(Config config, std::unique_ptr<Impl> impl)
    : config_(std::move(config)),
      limiter_(config_.qps, config_.burst, config_.GetClock()),
      impl_(std::move(impl)) {}

RestClient::~RestClient() = default;

RestClientStats RestClient::stats() const {
  RestClientStats s;
  s.requests = impl_->requests.load();
  s.retries = impl_->retries.load();
  s.throttled = impl_->throttled.load();
  s.connections = impl_->connections.load();
  s.token_reads = impl_->token_reads.load();
  s.dropped_idle = impl_->dropped_idle.load();
  return s;
}

absl::StatusOr<Response> RestClient::DoRaw(const Request& request) {
  base::Clock& clock = config_.GetClock();
  bool refreshed_token = false;
  bool fresh = false;  // resending after a kept-alive connection turned out closed
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) impl_->retries.fetch_add(1);
    absl::Duration wait = limiter_.Reserve();
    if (wait > absl::ZeroDuration()) {
      impl_->throttled.fetch_add(1);
      if (!clock.SleepFor(wait, request.stop)) {
        return absl::CancelledError(base::StrCat(request.method, " ", request.path, ": cancelled"));
      }
    }
    std::string token = impl_->tokens.Get(/*force=*/false, &impl_->token_reads);
    base::HttpClientRequest hreq =
        impl_->BuildRequest(request, token, config_.timeout, /*keep_alive=*/true);
    bool reused = false;
    std::unique_ptr<base::HttpConnection> cli = impl_->Acquire(&reused, fresh);
    Attempt a = impl_->Send(*cli, hreq, request.stop);
    if (!a.ok()) {
      // The connection is in an unknown state: do not reuse it.
      cli.reset();
      // A kept-alive connection the server closed meanwhile (Go's net/http rule): if the
      // request could not even be written, the server never saw it and ANY method is safe to
      // resend at once on a fresh connection; if the answer could not be read, only a GET is.
      // The other idle connections are as old: dropped, and the resend opens a new one (else
      // after an API server restart each request would try every dead idle connection in
      // turn). Other transport failures are the caller's to retry.
      const bool not_sent = a.failure == Failure::kWrite;
      const bool no_answer = a.failure == Failure::kRead && request.method == "GET";
      if (reused && (not_sent || no_answer) && !a.timed_out && attempt < config_.max_retries) {
        impl_->DropIdle();
        fresh = true;
        SP_VLOG(1).Msg("resending on a fresh connection").KV("method", request.method)
            .KV("path", request.path);
        continue;
      }
      if (reused && (a.failure == Failure::kWrite || a.failure == Failure::kRead)) {
        impl_->DropIdle();
      }
      return impl_->TransportError(a, request, reused);
    }
    impl_->Release(std::move(cli));
    if (a.status == 401 && impl_->tokens.from_file() && !refreshed_token) {
      refreshed_token = true;
      impl_->tokens.Get(/*force=*/true, &impl_->token_reads);
      --attempt;  // a token refresh is not a retry
      continue;
    }
    if (std::optional<int> delay = RetryDelay(a);
        delay.has_value() && attempt < config_.max_retries) {
      SP_VLOG(2).Msg("server asked to retry").KV("code", a.status).KV("after_s", *delay)
          .KV("path", request.path);
      if (*delay > 0 && !clock.SleepFor(absl::Seconds(*delay), request.stop)) {
        return absl::CancelledError(base::StrCat(request.method, " ", request.path, ": cancelled"));
      }
      continue;
    }
    Response out;
    out.code = a.status;
    out.body = std::move(a.body);
    out.headers = std::move(a.headers);
    return out;
  }
}

absl::StatusOr<Response> RestClient::Do(const Request& request) {
  SP_ASSIGN_OR_RETURN(Response r, DoRaw(request));
  if (r.code >= 200 && r.code < 300) return r;
  return StatusFromResponse(r.code, r.body, r.Header("Retry-After"));
}

absl::Status RestClient::Watch(const api::ResourceInfo& resource, std::string_view namespace_name,
                               const WatchOptions& options, const WatchCallback& callback,
                               std::stop_token stop) {
  return Watch(ResourcePath(resource, namespace_name), options, callback, std::move(stop));
}

absl::Status RestClient::Watch(std::string_view path, const WatchOptions& options,
                               const WatchCallback& callback, std::stop_token stop) {
  Request request;
  request.method = "GET";
  request.path = std::string(path);
  request.query.emplace_back("watch", "true");
  if (!options.resource_version.empty()) {
    request.query.emplace_back("resourceVersion", options.resource_version);
  }
  if (options.allow_watch_bookmarks) request.query.emplace_back("allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) {
    request.query.emplace_back("timeoutSeconds", std::to_string(options.timeout_seconds));
  }
  if (!options.label_selector.empty()) {
    request.query.emplace_back("labelSelector", options.label_selector);
  }
  if (!options.field_selector.empty()) {
    request.query.emplace_back("fieldSelector", options.field_selector);
  }
  if (options.metadata_only) request.headers.emplace_back("Accept", kMetadataAccept);
  absl::Duration read_timeout = options.timeout_seconds > 0
                                    ? absl::Seconds(options.timeout_seconds + 30)
                                    : config_.watch_read_timeout;
  base::Clock& clock = config_.GetClock();
  bool refreshed_token = false;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) impl_->retries.fetch_add(1);
    absl::Duration wait = limiter_.Reserve();
    if (wait > absl::ZeroDuration()) {
      impl_->throttled.fetch_add(1);
      if (!clock.SleepFor(wait, stop)) return absl::OkStatus();
    }
    std::string token = impl_->tokens.Get(/*force=*/false, &impl_->token_reads);
    base::HttpClientRequest hreq =
        impl_->BuildRequest(request, token, absl::ZeroDuration(), /*keep_alive=*/false);
    std::unique_ptr<base::HttpConnection> cli = impl_->NewClient(read_timeout);

    int code = 0;
    std::string error_body;
    WatchStreamDecoder decoder;
    absl::Status stream_status;
    bool callback_stopped = false;
    auto on_body = [&](std::string_view data) {
      if (stop.stop_requested()) return false;
      if (code != 200) {
        if (error_body.size() < kMaxErrorBody) error_body.append(data);
        return true;
      }
      std::vector<WatchEvent> events;
      absl::Status s = decoder.Feed(data, &events);
      for (WatchEvent& e : events) {
        if (e.type == WatchEventType::kError) {
          stream_status = StatusFromStatusJson(e.object);
          return false;
        }
        if (!callback(std::move(e))) {
          callback_stopped = true;
          return false;
        }
        if (stop.stop_requested()) return false;
      }
      if (!s.ok()) {
        stream_status = s;
        return false;
      }
      return true;
    };
    Attempt a = impl_->Send(*cli, hreq, stop, [&code](int c) { code = c; }, on_body);
    cli.reset();
    if (stop.stop_requested()) return absl::OkStatus();
    if (!stream_status.ok()) return stream_status;
    if (callback_stopped) return absl::OkStatus();
    if (code == 0 || (code == 200 && !a.ok())) {
      if (a.ok()) {
        a.failure = Failure::kRead;
        a.error = "no answer";
      }
      return impl_->TransportError(a, request, /*reused=*/false);
    }
    if (code != 200) {
      if (code == 401 && impl_->tokens.from_file() && !refreshed_token) {
        refreshed_token = true;
        impl_->tokens.Get(/*force=*/true, &impl_->token_reads);
        --attempt;
        continue;
      }
      if (std::optional<int> delay = RetryDelay(a);
          delay.has_value() && attempt < config_.max_retries) {
        if (*delay > 0 && !clock.SleepFor(absl::Seconds(*delay), stop)) return absl::OkStatus();
        continue;
      }
      return StatusFromResponse(code, error_body, RetryAfterOf(a));
    }
    if (!decoder.Idle()) {
      return absl::DataLossError("watch stream ended inside an object");
    }
    return absl::OkStatus();
  }
}

std::string EscapeComponent(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string EscapePathSegment(std::string_view segment) { return EscapeComponent(segment); }

std::string ResourcePath(const api::ResourceInfo& resource, std::string_view namespace_name,
                         std::string_view name, std::string_view subresource) {
  std::string path = resource.group.empty()
                         ? base::StrCat("/api/", resource.version)
                         : base::StrCat("/apis/", resource.group, "/", resource.version);
  if (resource.namespaced && !namespace_name.empty()) {
    path += base::StrCat("/namespaces/", EscapePathSegment(namespace_name));
  }
  path += base::StrCat("/", resource.plural);
  if (!name.empty()) {
    path += base::StrCat("/", EscapePathSegment(name));
    if (!subresource.empty()) path += base::StrCat("/", subresource);
  }
  return path;
}

}  // namespace spiderpool::kube
