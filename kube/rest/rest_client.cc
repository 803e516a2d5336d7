#include "kube/rest/rest_client.h"

#include <arpa/inet.h>
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

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/status.h"
#include "base/strings.h"
#include "httplib.h"

namespace spiderpool::kube {
namespace {

constexpr size_t kMaxErrorBody = 1 << 20;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
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

// The verification failure of the last TLS handshake on this thread (X509_V_OK if none):
// handshakes run on the requesting thread, so a thread_local carries it out of OpenSSL.
thread_local long last_verify_error = X509_V_OK;

int RecordVerifyResult(int preverify_ok, X509_STORE_CTX* ctx) {
  if (preverify_ok != 1 && last_verify_error == X509_V_OK) {
    last_verify_error = X509_STORE_CTX_get_error(ctx);
  }
  return preverify_ok;
}

bool IsIpAddress(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

struct TlsMaterial {
  // Trusted roots, shared by every connection: only Config::ca_pem, or the system roots.
  X509_STORE* trust = nullptr;
  X509* client_cert = nullptr;
  STACK_OF(X509)* client_chain = nullptr;  // intermediates after the leaf
  EVP_PKEY* client_key = nullptr;

  ~TlsMaterial() {
    if (trust != nullptr) X509_STORE_free(trust);
    if (client_chain != nullptr) sk_X509_pop_free(client_chain, X509_free);
    if (client_cert != nullptr) X509_free(client_cert);
    if (client_key != nullptr) EVP_PKEY_free(client_key);
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
struct Attempt {
  httplib::Error error = httplib::Error::Success;
  bool timed_out = false;
  long verify_error = 0;  // X509_V_OK
  int code = 0;
  std::string body;
  std::multimap<std::string, std::string> headers;
  bool ok() const { return error == httplib::Error::Success; }
};

std::string RetryAfterOf(const Attempt& a) {
  auto it = a.headers.find("retry-after");
  return it == a.headers.end() ? "" : it->second;
}

// Retry-After in seconds when the answer asks for a retry (429 or 5xx with the header).
std::optional<int> RetryDelay(const Attempt& a) {
  if (a.code != 429 && a.code < 500) return std::nullopt;
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
  auto it = headers.find(Lower(name));
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
  std::vector<std::unique_ptr<httplib::ClientImpl>> idle;  // guarded by pool_mu

  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> throttled{0};
  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> dropped_idle{0};
  std::atomic<uint64_t> token_reads{0};

  static std::chrono::microseconds ToMicros(absl::Duration d) {
    if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) d = absl::Hours(24);
    return std::chrono::microseconds(absl::ToInt64Microseconds(d));
  }

  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> NewClient(absl::Duration read_timeout,
                                                                 bool keep_alive) {
    std::unique_ptr<httplib::ClientImpl> cli;
    if (addr.tls) {
      auto ssl = std::make_unique<httplib::SSLClient>(addr.host, addr.port, tls.client_cert,
                                                      tls.client_key);
      if (!ssl->is_valid()) {
        return absl::InternalError(
            base::StrCat("cannot set up TLS client (client certificate/key): ", OpenSslError()));
      }
      SSL_CTX* ctx = ssl->ssl_context();
      // An idle connection (a watch between events, a pooled keep-alive one) gives its
      // ~34 KB of record buffers back: an agent holds ~15 connections.
      SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
      if (tls.client_chain != nullptr) {
        for (int i = 0; i < sk_X509_num(tls.client_chain); ++i) {
          SSL_CTX_add1_chain_cert(ctx, sk_X509_value(tls.client_chain, i));
        }
      }
      // We verify with OpenSSL directly: httplib's own verification would also trust (and
      // re-read, ~40ms per connection) the system bundle even when a CA is given.
      ssl->enable_server_certificate_verification(false);
      if (!config.insecure_skip_tls_verify) {
        SSL_CTX_set1_cert_store(ctx, tls.trust);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, RecordVerifyResult);
        X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
        if (IsIpAddress(addr.host)) {
          X509_VERIFY_PARAM_set1_ip_asc(param, addr.host.c_str());
        } else {
          X509_VERIFY_PARAM_set1_host(param, addr.host.c_str(), addr.host.size());
        }
      }
      cli = std::move(ssl);
    } else {
      cli = std::make_unique<httplib::ClientImpl>(addr.host, addr.port);
    }
    cli->set_keep_alive(keep_alive);
    cli->set_tcp_nodelay(true);  // headers and body are separate writes: avoid Nagle stalls
    cli->set_url_encode(false);
    cli->set_follow_location(false);
    cli->set_connection_timeout(ToMicros(config.timeout));
    cli->set_write_timeout(ToMicros(config.timeout));
    cli->set_read_timeout(ToMicros(read_timeout));
    connections.fetch_add(1);
    return cli;
  }

  // A pooled client (its keep-alive connection may have gone stale: *reused says so) or a
  // new one.
  // True if the server has closed this idle keep-alive connection (or sent anything on it:
  // an idle HTTP/1.1 connection has nothing to read), as urllib3's is_connection_dropped
  // checks before reuse. A request sent on it would be lost: a POST could not be resent.
  static bool Dropped(const httplib::ClientImpl& cli) {
    const int fd = static_cast<int>(cli.socket());
    if (fd < 0) return false;  // not open: httplib connects anew
    pollfd p{.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
    return ::poll(&p, 1, 0) != 0;
  }

  // An idle keep-alive connection that is still open, if there is one (`fresh`: never; after
  // a kept-alive one failed).
  absl::StatusOr<std::unique_ptr<httplib::ClientImpl>> Acquire(bool* reused, bool fresh = false) {
    while (!fresh) {
      std::unique_ptr<httplib::ClientImpl> cli;
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
    return NewClient(config.timeout, /*keep_alive=*/true);
  }

  // Drops every idle connection: one of them turned out closed by the server, and the others
  // are as old (a restarted or failed-over API server closes them all; Go's transport notices
  // each on its own read loop, we do not watch idle sockets).
  void DropIdle() {
    std::vector<std::unique_ptr<httplib::ClientImpl>> dropped;
    std::lock_guard<std::mutex> lock(pool_mu);
    dropped.swap(idle);
  }

  void Release(std::unique_ptr<httplib::ClientImpl> cli) {
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

  httplib::Request BuildRequest(const Request& r, const std::string& token,
                                absl::Duration server_timeout) const {
    httplib::Request h;
    h.method = r.method;
    h.path = Target(r, server_timeout);
    const bool own_accept = std::any_of(r.headers.begin(), r.headers.end(), [](const auto& kv) {
      return absl::EqualsIgnoreCase(kv.first, "Accept");
    });
    if (!own_accept) h.headers.emplace("Accept", "application/json");
    h.headers.emplace("User-Agent", config.user_agent);
    if (!token.empty()) h.headers.emplace("Authorization", "Bearer " + token);
    for (const auto& [k, v] : r.headers) h.headers.emplace(k, v);
    if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
      h.headers.emplace("Content-Type",
                        r.content_type.empty() ? std::string("application/json") : r.content_type);
    }
    h.body = r.body;
    return h;
  }

  // Sends one attempt on `cli`. The request in flight is aborted when `stop` fires.
  Attempt Send(httplib::ClientImpl& cli, httplib::Request& hreq, std::stop_token stop,
               absl::Duration read_timeout) {
    Attempt a;
    if (stop.stop_requested()) {
      a.error = httplib::Error::Canceled;
      return a;
    }
    requests.fetch_add(1);
    std::optional<std::stop_callback<std::function<void()>>> on_stop;
    if (stop.stop_possible()) {
      on_stop.emplace(stop, std::function<void()>([&cli] { cli.stop(); }));
    }
    if (!hreq.response_handler) {
      hreq.response_handler = [&stop](const httplib::Response&) {
        return !stop.stop_requested();
      };
    }
    auto start = std::chrono::steady_clock::now();
    httplib::Response hres;
    httplib::Error err = httplib::Error::Success;
    last_verify_error = X509_V_OK;
    // httplib writes with plain send()/SSL_write(): a connection the server closed (an idle
    // keep-alive timeout, a restart) must be an error to retry, not a SIGPIPE.
    bool sent;
    {
      base::ScopedSigpipeBlock no_sigpipe;
      sent = cli.send(hreq, hres, err);
    }
    a.verify_error = last_verify_error;
    on_stop.reset();
    if (stop.stop_requested()) {
      a.error = httplib::Error::Canceled;
      return a;
    }
    a.code = hres.status;
    for (const auto& [k, v] : hres.headers) a.headers.emplace(Lower(k), v);
    a.body = std::move(hres.body);
    if (!sent) {
      a.error = err == httplib::Error::Success ? httplib::Error::Unknown : err;
      auto elapsed = std::chrono::steady_clock::now() - start;
      if (err == httplib::Error::ConnectionTimeout ||
          (err == httplib::Error::Read &&
           elapsed >= ToMicros(read_timeout) - std::chrono::milliseconds(50))) {
        a.timed_out = true;
      }
    }
    return a;
  }

  absl::Status TransportError(const Attempt& a, const Request& r, bool reused) const {
    std::string where = base::StrCat(r.method, " ", config.server, r.path);
    if (a.error == httplib::Error::Canceled) {
      return absl::CancelledError(base::StrCat(where, ": cancelled"));
    }
    if (a.timed_out) {
      absl::Status s = absl::DeadlineExceededError(
          base::StrCat(where, ": timed out (", httplib::to_string(a.error), ")"));
      s.SetPayload(base::ToAbsl(kClientTimeoutPayload), absl::Cord("1"));
      return s;
    }
    if (a.verify_error != X509_V_OK) {
      return absl::FailedPreconditionError(
          base::StrCat(where, ": TLS verification of the server certificate failed: ",
                       X509_verify_cert_error_string(a.verify_error)));
    }
    return absl::UnavailableError(base::StrCat(where, ": ", httplib::to_string(a.error),
                                               reused ? " (kept-alive connection)"
                                                      : " (new connection)"));
  }
};

absl::StatusOr<std::shared_ptr<RestClient>> RestClient::Create(Config config) {
  absl::StatusOr<ServerAddress> addr = ParseServerUrl(config.server);
  if (!addr.ok()) return addr.status();
  if (config.max_retries < 0) config.max_retries = 0;
  if (config.max_idle_connections < 0) config.max_idle_connections = 0;
  auto impl = std::make_unique<Impl>(config, *addr);
  TlsMaterial& tls = impl->tls;
  if (addr->tls && !config.insecure_skip_tls_verify) {
    tls.trust = X509_STORE_new();
    if (tls.trust == nullptr) return absl::InternalError("X509_STORE_new failed");
    if (!config.ca_pem.empty()) {
      SP_ASSIGN_OR_RETURN(STACK_OF(X509) * roots, ParseCertificates(config.ca_pem, "CA"));
      for (int i = 0; i < sk_X509_num(roots); ++i) {
        X509_STORE_add_cert(tls.trust, sk_X509_value(roots, i));
      }
      sk_X509_pop_free(roots, X509_free);
      ERR_clear_error();  // duplicates in a bundle are harmless
    } else if (X509_STORE_set_default_paths(tls.trust) != 1) {
      return absl::InternalError(
          base::StrCat("cannot load the system CA certificates: ", OpenSslError()));
    }
  }
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return absl::InvalidArgumentError("client certificate and key must be given together");
  }
  if (!config.client_cert_pem.empty()) {
    SP_ASSIGN_OR_RETURN(STACK_OF(X509) * chain,
                        ParseCertificates(config.client_cert_pem, "client certificate"));
    tls.client_cert = sk_X509_shift(chain);
    tls.client_chain = chain;
    BIO* bio = BIO_new_mem_buf(config.client_key_pem.data(),
                               static_cast<int>(config.client_key_pem.size()));
    tls.client_key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (tls.client_key == nullptr) {
      return absl::InvalidArgumentError(
          base::StrCat("client key: cannot parse PEM private key: ", OpenSslError()));
    }
    if (X509_check_private_key(tls.client_cert, tls.client_key) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError("client key does not match the client certificate");
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
    httplib::Request hreq = impl_->BuildRequest(request, token, config_.timeout);
    bool reused = false;
    SP_ASSIGN_OR_RETURN(std::unique_ptr<httplib::ClientImpl> cli, impl_->Acquire(&reused, fresh));
    Attempt a = impl_->Send(*cli, hreq, request.stop, config_.timeout);
    if (!a.ok()) {
      // The connection is in an unknown state: do not reuse it.
      cli.reset();
      // A kept-alive connection the server closed meanwhile (Go's net/http rule): if the
      // request could not even be written, the server never saw it and ANY method is safe to
      // resend at once on a fresh connection; if the answer could not be read, only a GET is.
      // The other idle connections are as old: dropped, and the resend opens a new one (else
      // after an API server restart each request would try every dead idle connection in
      // turn). Other transport failures are the caller's to retry.
      const bool not_sent = a.error == httplib::Error::Write;
      const bool no_answer = a.error == httplib::Error::Read && request.method == "GET";
      if (reused && (not_sent || no_answer) && !a.timed_out && attempt < config_.max_retries) {
        impl_->DropIdle();
        fresh = true;
        SP_VLOG(1).Msg("resending on a fresh connection").KV("method", request.method)
            .KV("path", request.path);
        continue;
      }
      if (reused && (a.error == httplib::Error::Write || a.error == httplib::Error::Read)) {
        impl_->DropIdle();
      }
      return impl_->TransportError(a, request, reused);
    }
    impl_->Release(std::move(cli));
    if (a.code == 401 && impl_->tokens.from_file() && !refreshed_token) {
      refreshed_token = true;
      impl_->tokens.Get(/*force=*/true, &impl_->token_reads);
      --attempt;  // a token refresh is not a retry
      continue;
    }
    if (std::optional<int> delay = RetryDelay(a);
        delay.has_value() && attempt < config_.max_retries) {
      SP_VLOG(2).Msg("server asked to retry").KV("code", a.code).KV("after_s", *delay)
          .KV("path", request.path);
      if (*delay > 0 && !clock.SleepFor(absl::Seconds(*delay), request.stop)) {
        return absl::CancelledError(base::StrCat(request.method, " ", request.path, ": cancelled"));
      }
      continue;
    }
    Response out;
    out.code = a.code;
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
    httplib::Request hreq = impl_->BuildRequest(request, token, absl::ZeroDuration());
    SP_ASSIGN_OR_RETURN(std::unique_ptr<httplib::ClientImpl> cli,
                        impl_->NewClient(read_timeout, /*keep_alive=*/false));

    int code = 0;
    std::string error_body;
    WatchStreamDecoder decoder;
    absl::Status stream_status;
    bool callback_stopped = false;
    hreq.response_handler = [&](const httplib::Response& r) {
      code = r.status;
      return !stop.stop_requested();
    };
    hreq.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (stop.stop_requested()) return false;
      if (code != 200) {
        if (error_body.size() < kMaxErrorBody) error_body.append(data, n);
        return true;
      }
      std::vector<WatchEvent> events;
      absl::Status s = decoder.Feed(std::string_view(data, n), &events);
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
    Attempt a = impl_->Send(*cli, hreq, stop, read_timeout);
    cli.reset();
    if (stop.stop_requested()) return absl::OkStatus();
    if (!stream_status.ok()) return stream_status;
    if (callback_stopped) return absl::OkStatus();
    if (code == 0 || (code == 200 && !a.ok())) {
      if (a.ok()) a.error = httplib::Error::Unknown;
      return impl_->TransportError(a, request, /*reused=*/false);
    }
    if (code != 200) {
      a.code = code;
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
