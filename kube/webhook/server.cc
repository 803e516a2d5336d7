#include "kube/webhook/server.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "api/codec.h"
#include "base/http_server.h"
#include "base/http_socket.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/metrics/metrics.h"
#include "kube/webhook/json_patch.h"

namespace spiderpool::kube::webhook {

using base::Json;
using base::StrCat;

// ---- TLS material ---------------------------------------------------------------------------

struct AdmissionServer::TlsMaterial {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  STACK_OF(X509)* chain = nullptr;  // intermediates after the leaf, may be empty
  std::string cert_pem;
  std::string key_pem;

  TlsMaterial() = default;
  TlsMaterial(const TlsMaterial&) = delete;
  TlsMaterial& operator=(const TlsMaterial&) = delete;
  ~TlsMaterial() {
    if (chain != nullptr) sk_X509_pop_free(chain, X509_free);
    if (key != nullptr) EVP_PKEY_free(key);
    if (cert != nullptr) X509_free(cert);
  }
};

namespace {

absl::StatusOr<std::shared_ptr<const AdmissionServer::TlsMaterial>> ParseMaterial(
    const base::CertAndKey& ck) {
  auto m = std::make_shared<AdmissionServer::TlsMaterial>();
  m->cert_pem = ck.cert_pem;
  m->key_pem = ck.key_pem;
  {
    BIO* bio = BIO_new_mem_buf(ck.cert_pem.data(), static_cast<int>(ck.cert_pem.size()));
    if (bio == nullptr) return absl::InternalError("BIO_new_mem_buf failed");
    m->cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (m->cert == nullptr) {
      BIO_free(bio);
      ERR_clear_error();
      return absl::InvalidArgumentError("the serving certificate is not a PEM certificate");
    }
    m->chain = sk_X509_new_null();
    while (X509* extra = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      sk_X509_push(m->chain, extra);
    }
    ERR_clear_error();  // the loop ends with a "no start line" error
    BIO_free(bio);
  }
  {
    BIO* bio = BIO_new_mem_buf(ck.key_pem.data(), static_cast<int>(ck.key_pem.size()));
    if (bio == nullptr) return absl::InternalError("BIO_new_mem_buf failed");
    m->key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (m->key == nullptr) {
      ERR_clear_error();
      return absl::InvalidArgumentError("the serving key is not a PEM private key");
    }
  }
  if (X509_check_private_key(m->cert, m->key) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the serving key does not match the certificate");
  }
  return std::shared_ptr<const AdmissionServer::TlsMaterial>(std::move(m));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot open ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(StrCat("cannot read ", path));
  return ss.str();
}

std::string ReasonFor(int status) {
  switch (status) {
    case 400: return "BadRequest";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    default: return "InternalError";
  }
}

bool IsJsonContentType(std::string_view ct) {
  size_t semi = ct.find(';');
  std::string_view media = ct.substr(0, semi);
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  return media == "application/json";
}

HttpReply ReviewReply(const api::AdmissionReview& review) {
  HttpReply r;
  r.status = 200;
  r.content_type = "application/json";
  r.body = base::DumpJson(api::Encode(review));
  return r;
}

api::AdmissionResponse ResponseFor(std::string_view uid, const Decision& d) {
  api::AdmissionResponse out;
  if (d.allowed) {
    out = api::Allow(uid);
    if (d.status.has_value()) out.result = d.status;
  } else if (d.status.has_value()) {
    out = api::DenyWithStatus(uid, *d.status);
  } else {
    out = api::Deny(uid, 403, "denied by the admission webhook");
  }
  out.warnings = d.warnings;
  return out;
}

// The string at obj[key], or "" (absent / not a string).
std::string StringAt(const Json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace

HttpReply ErrorReply(int status, std::string_view message) {
  Json s = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", Json::object()},
            {"status", "Failure"},
            {"message", std::string(message)},
            {"reason", ReasonFor(status)},
            {"code", status}};
  return HttpReply{.status = status, .content_type = "application/json",
                   .body = base::DumpJson(s)};
}

Decision Decision::Deny(api::Status status) {
  Decision d;
  d.allowed = false;
  if (status.status.empty()) status.status = "Failure";
  d.status = std::move(status);
  return d;
}

Decision Decision::Deny(int32_t code, std::string_view message) {
  api::AdmissionResponse r = api::Deny("", code, message);
  return Deny(*r.result);
}

// ---- the listener ---------------------------------------------------------------------------

struct AdmissionServer::Listener {
  SSL_CTX* ctx = nullptr;
  std::unique_ptr<base::HttpServer> server;  // before ctx goes
  ~Listener() {
    server.reset();
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }
};

namespace {

// OpenSSL's certificate callback: runs in every handshake, before the server certificate is
// chosen; installs the server's current certificate on this connection.
int SelectCertificate(SSL* ssl, void* arg) {
  auto* server = static_cast<AdmissionServer*>(arg);
  std::shared_ptr<const AdmissionServer::TlsMaterial> m = server->CurrentMaterial();
  if (m == nullptr) return 0;
  if (SSL_use_cert_and_key(ssl, m->cert, m->key, m->chain, /*override=*/1) != 1) {
    SP_LOG(Error).Msg("cannot use the serving certificate").KV("err", base::OpenSslErrorText());
    return 0;
  }
  return 1;
}

constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

}  // namespace

AdmissionServer::AdmissionServer(ServerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock::Get()) {}

AdmissionServer::~AdmissionServer() { Stop(); }

void AdmissionServer::Validating(std::string path, ValidatingHandler handler) {
  std::unique_lock<std::shared_mutex> l(handlers_mu_);
  mutating_.erase(path);
  validating_[std::move(path)] = std::move(handler);
}

void AdmissionServer::Mutating(std::string path, MutatingHandler handler) {
  std::unique_lock<std::shared_mutex> l(handlers_mu_);
  validating_.erase(path);
  mutating_[std::move(path)] = std::move(handler);
}

std::vector<std::string> AdmissionServer::Paths() const {
  std::shared_lock<std::shared_mutex> l(handlers_mu_);
  std::vector<std::string> out;
  for (const auto& [p, h] : mutating_) out.push_back(p);
  for (const auto& [p, h] : validating_) out.push_back(p);
  return out;
}

std::shared_ptr<const AdmissionServer::TlsMaterial> AdmissionServer::CurrentMaterial() const {
  std::lock_guard<std::mutex> l(cert_mu_);
  return material_;
}

std::string AdmissionServer::CertificatePem() const {
  auto m = CurrentMaterial();
  return m == nullptr ? "" : m->cert_pem;
}

absl::StatusOr<base::CertAndKey> AdmissionServer::ReadSource() const {
  if (options_.cert_provider) return options_.cert_provider();
  if (!options_.cert_file.empty() || !options_.key_file.empty()) {
    base::CertAndKey ck;
    SP_ASSIGN_OR_RETURN(ck.cert_pem, ReadFile(options_.cert_file));
    SP_ASSIGN_OR_RETURN(ck.key_pem, ReadFile(options_.key_file));
    return ck;
  }
  return absl::FailedPreconditionError(
      "no serving certificate source (cert_file/key_file or cert_provider)");
}

absl::Status AdmissionServer::Install(const base::CertAndKey& cert, bool count_reload) {
  {
    auto current = CurrentMaterial();
    if (current != nullptr && current->cert_pem == cert.cert_pem &&
        current->key_pem == cert.key_pem) {
      return absl::OkStatus();
    }
  }
  SP_ASSIGN_OR_RETURN(std::shared_ptr<const TlsMaterial> m, ParseMaterial(cert));
  bool replaced = false;
  {
    std::lock_guard<std::mutex> l(cert_mu_);
    replaced = material_ != nullptr;
    material_ = std::move(m);
  }
  if (replaced && count_reload) {
    stats_.cert_reloads.fetch_add(1);
    SP_LOG(Info).Msg("webhook serving certificate reloaded");
  }
  return absl::OkStatus();
}

absl::Status AdmissionServer::ReloadCertificate() {
  SP_ASSIGN_OR_RETURN(base::CertAndKey ck, ReadSource());
  return Install(ck, /*count_reload=*/true);
}

absl::Status AdmissionServer::SetCertificate(const base::CertAndKey& cert) {
  return Install(cert, /*count_reload=*/true);
}

void AdmissionServer::ReloadLoop(std::stop_token stop) {
  std::string last_error;
  while (clock_.SleepFor(options_.cert_reload_interval, stop)) {
    absl::Status s = ReloadCertificate();
    std::string err = s.ok() ? "" : std::string(s.message());
    if (!s.ok() && err != last_error) {
      SP_LOG(Warning).Msg("cannot reload the webhook serving certificate; keeping the current one")
          .KV("err", err);
    }
    last_error = err;
  }
}

absl::Status AdmissionServer::Start() {
  std::lock_guard<std::mutex> l(run_mu_);
  if (listener_ != nullptr) return absl::FailedPreconditionError("already started");
  const bool has_source = options_.cert_provider || !options_.cert_file.empty() ||
                          !options_.key_file.empty();
  if (has_source) {
    absl::Status s = ReloadCertificate();
    if (!s.ok() && CurrentMaterial() == nullptr) {
      return base::Annotate(s, "loading the webhook serving certificate");
    }
  }
  if (CurrentMaterial() == nullptr) {
    return absl::FailedPreconditionError("no webhook serving certificate");
  }

  auto listener = std::make_unique<Listener>();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError("cannot set up the TLS context");
  listener->ctx = ctx;
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    return absl::InternalError("cannot set up the TLS context");
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return absl::InternalError("cannot set up the TLS context (ciphers)");
  }
  SSL_CTX_set_cert_cb(ctx, &SelectCertificate, this);
  // No TLS 1.3 session tickets: kube-apiserver's webhook client does not resume sessions,
  // so the two ticket messages after every handshake would be wasted work.
  SSL_CTX_set_num_tickets(ctx, 0);
  // An idle kept-alive connection (kube-apiserver keeps them) gives its buffers back.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);

  base::HttpServerOptions http_options;
  http_options.tls = ctx;
  http_options.threads = std::max(options_.worker_threads, 2);
  http_options.keep_alive_timeout = std::max(options_.keep_alive_timeout, absl::Seconds(1));
  http_options.keep_alive_max = 100000;
  http_options.read_timeout = std::max(options_.read_timeout, absl::Seconds(1));
  http_options.write_timeout = http_options.read_timeout;
  http_options.max_body = options_.max_request_bytes;
  http_options.too_large = [this](base::HttpServerResponse& res) {
    stats_.bad_requests.fetch_add(1);
    HttpReply r = ErrorReply(413, StrCat("request entity is too large; limit is ",
                                         options_.max_request_bytes, " bytes"));
    res.status = r.status;
    res.content_type = r.content_type;
    res.body = std::move(r.body);
  };
  // A burst of admission calls is queued in the SOMAXCONN backlog, not dropped.
  absl::StatusOr<std::unique_ptr<base::HttpServer>> server = base::HttpServer::ListenTcp(
      options_.host, options_.port, http_options,
      [this](const base::HttpServerRequest& req, base::HttpServerResponse& res) {
        HttpRequest in;
        in.method = req.method;
        in.path = req.path;
        in.content_type = req.Header("Content-Type");
        in.body = req.body;
        HttpReply out = Handle(in);
        res.status = out.status;
        res.content_type = std::move(out.content_type);
        res.body = std::move(out.body);
      });
  if (!server.ok()) {
    return absl::UnavailableError(StrCat("cannot bind ", options_.host, ":", options_.port, ": ",
                                         server.status().message()));
  }
  listener->server = *std::move(server);
  const int port = listener->server->port();
  port_.store(port);
  listener_ = std::move(listener);
  if (has_source && options_.cert_reload_interval > absl::ZeroDuration()) {
    reload_thread_ = std::jthread([this](std::stop_token stop) { ReloadLoop(stop); });
  }
  SP_LOG(Info).Msg("admission webhook server listening")
      .KV("address", StrCat(options_.host, ":", port));
  return absl::OkStatus();
}

void AdmissionServer::Stop() {
  std::unique_ptr<Listener> listener;
  {
    std::lock_guard<std::mutex> l(run_mu_);
    listener = std::move(listener_);
  }
  if (reload_thread_.joinable()) {
    reload_thread_.request_stop();
    reload_thread_.join();
  }
  if (listener == nullptr) return;
  listener->server->Stop();
}

bool AdmissionServer::running() const {
  std::lock_guard<std::mutex> l(run_mu_);
  return listener_ != nullptr;
}

int AdmissionServer::port() const { return port_.load(); }

ServerStats AdmissionServer::stats() const {
  return ServerStats{.requests = stats_.requests.load(),
                     .denied = stats_.denied.load(),
                     .bad_requests = stats_.bad_requests.load(),
                     .cert_reloads = stats_.cert_reloads.load()};
}

// ---- request handling -----------------------------------------------------------------------

namespace {

// controller-runtime's webhook request counter, by webhook path and HTTP status code. A review
// answered with an internal error (a denial whose status code is >= 500) counts as code 500.
void CountRequest(std::string_view webhook, int code) {
  static kube::metrics::Family<kube::metrics::Counter>& requests =
      kube::metrics::Registry::Default().AddCounter(
          "controller_runtime_webhook_requests_total",
          "Total number of admission requests by HTTP status code.");
  requests.WithLabels({{"code", std::to_string(code)}, {"webhook", std::string(webhook)}}).Inc();
}

}  // namespace

HttpReply AdmissionServer::Handle(const HttpRequest& request) const {
  HttpReply reply;
  if (request.path == kHealthCheckPath) {
    if (request.method == "GET" || request.method == "HEAD") {
      reply.status = 200;
      reply.content_type = "text/plain; charset=utf-8";
      reply.body = "ok";
      CountRequest(request.path, reply.status);
      return reply;
    }
    reply = ErrorReply(405, StrCat("method ", request.method, " not allowed on ",
                                   kHealthCheckPath));
  } else {
    reply = HandleReview(request);
  }
  if (reply.status >= 400 && reply.status < 500) stats_.bad_requests.fetch_add(1);
  // Answered reviews are counted in HandleReview; unknown paths under one label.
  if (request.path == kHealthCheckPath || reply.status != 200) {
    CountRequest(reply.status == 404 ? std::string_view("unknown") : request.path, reply.status);
  }
  return reply;
}

HttpReply AdmissionServer::HandleReview(const HttpRequest& request) const {
  ValidatingHandler validating;
  MutatingHandler mutating;
  {
    std::shared_lock<std::shared_mutex> l(handlers_mu_);
    if (auto it = validating_.find(request.path); it != validating_.end()) {
      validating = it->second;
    } else if (auto mt = mutating_.find(request.path); mt != mutating_.end()) {
      mutating = mt->second;
    }
  }
  if (!validating && !mutating) {
    return ErrorReply(404, StrCat("no admission webhook at ", request.path));
  }
  if (request.method != "POST") {
    return ErrorReply(405, StrCat("method ", request.method, " not allowed; POST an "
                                  "AdmissionReview"));
  }
  if (request.body.size() > options_.max_request_bytes) {
    return ErrorReply(413, StrCat("request entity is too large; limit is ",
                                  options_.max_request_bytes, " bytes"));
  }
  if (request.body.empty()) return ErrorReply(400, "request body is empty");
  if (!IsJsonContentType(request.content_type)) {
    return ErrorReply(400, StrCat("contentType=", request.content_type,
                                  ", expected application/json"));
  }
  absl::StatusOr<Json> parsed = base::ParseJson(request.body);
  if (!parsed.ok()) {
    return ErrorReply(400, StrCat("couldn't decode the AdmissionReview: ",
                                  base::FromAbsl(parsed.status().message())));
  }
  if (!parsed->is_object()) {
    return ErrorReply(400, "couldn't decode the AdmissionReview: not a JSON object");
  }
  const std::string api_version = StringAt(*parsed, "apiVersion");
  const std::string kind = StringAt(*parsed, "kind");
  if (api_version != api::kAdmissionApiVersion || kind != api::kAdmissionReviewKind) {
    return ErrorReply(400, StrCat("unsupported AdmissionReview apiVersion \"", api_version,
                                  "\" kind \"", kind, "\": this webhook serves ",
                                  api::kAdmissionApiVersion, " ", api::kAdmissionReviewKind));
  }
  absl::StatusOr<api::AdmissionReview> review = api::Decode<api::AdmissionReview>(*parsed);
  if (!review.ok()) {
    return ErrorReply(400, StrCat("couldn't decode the AdmissionReview: ",
                                  base::FromAbsl(review.status().message())));
  }
  if (absl::Status s = api::ValidateRequestReview(*review); !s.ok()) {
    return ErrorReply(400, base::FromAbsl(s.message()));
  }
  const api::AdmissionRequest& req = *review->request;

  api::AdmissionResponse response;
  if (validating) {
    response = ResponseFor(req.uid, validating(req));
  } else {
    Mutation m = mutating(req);
    response = ResponseFor(req.uid, m.decision);
    const bool patchable = req.operation == api::kOperationCreate ||
                           req.operation == api::kOperationUpdate;
    if (m.decision.allowed && patchable && req.object.is_object() && m.object.is_object()) {
      Json patch = CreateJsonPatch(req.object, m.object);
      if (!m.round_trip.is_null() && !patch.empty()) {
        patch = DropRoundTripOperations(patch, CreateJsonPatch(req.object, m.round_trip));
      }
      if (!patch.empty()) {
        absl::StatusOr<api::AdmissionResponse> with_patch = api::AllowWithPatch(req.uid, patch);
        if (!with_patch.ok()) {
          response = api::Deny(req.uid, 500, StrCat("cannot encode the JSON patch: ",
                                                    base::FromAbsl(
                                                        with_patch.status().message())));
        } else {
          with_patch->warnings = response.warnings;
          with_patch->result = response.result;
          response = *std::move(with_patch);
        }
      }
    }
  }
  stats_.requests.fetch_add(1);
  if (!response.allowed) stats_.denied.fetch_add(1);
  CountRequest(request.path,
               !response.allowed && response.result && response.result->code >= 500 ? 500 : 200);
  return ReviewReply(api::MakeResponseReview(*review, std::move(response)));
}

}  // namespace spiderpool::kube::webhook
