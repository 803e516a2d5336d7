#pragma once
// An HTTPS-only admission webhook server (what controller-runtime's webhook.Server is): TLS 1.2+,
// AdmissionReview admission.k8s.io/v1 in and out, handlers registered per path.
//
//   webhook::AdmissionServer server({.port = 5722, .cert_file = ".../tls.crt",
//                                    .key_file = ".../tls.key"});
//   server.Validating("/validate-x", [](const api::AdmissionRequest& req) {
//     return webhook::Decision::Allow();
//   });
//   server.Mutating("/mutate-x", [](const api::AdmissionRequest& req) {
//     base::Json obj = req.object;
//     obj["metadata"]["labels"]["a"] = "b";
//     return webhook::Mutation::Patched(std::move(obj));  // the server computes the JSON patch
//   });
//   absl::Status s = server.Start();  // binds and serves on background threads
//
// HTTP answers (never a crash on any input; see review_fuzz_test):
//   POST <registered path>, a v1 AdmissionReview with a request -> 200 + AdmissionReview whose
//       response carries the request uid, allowed, status, warnings, and for mutating handlers
//       on CREATE/UPDATE the RFC 6902 patch (base64, patchType JSONPatch) from request.object
//       to the handler's object;
//   GET /webhook-health-check -> 200 "ok";
//   body not JSON / not an AdmissionReview / no request or uid / apiVersion not
//       admission.k8s.io/v1 or kind not AdmissionReview / Content-Type not application/json
//       -> 400 with a metav1.Status body (reason BadRequest) saying why;
//   body over max_request_bytes -> 413; unknown path -> 404; other methods -> 405.
//
// Serving certificate: from cert_file/key_file (PEM; a mounted kubernetes.io/tls Secret) or
// from `cert_provider`. It is looked up again every cert_reload_interval (and on
// ReloadCertificate()); SetCertificate() installs one directly. A changed certificate is used
// from the next TLS handshake on, without restarting the listener: every handshake picks the
// current certificate in OpenSSL's certificate callback (SSL_CTX_set_cert_cb +
// SSL_use_cert_and_key), so the server's SSL_CTX never has to be replaced (base::HttpServer
// serves the HTTPS). Connections
// already open keep the certificate they were established with.
//
// Thread-safety: every method may be called from any thread; handlers run concurrently on the
// server's worker threads and must be thread-safe.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/admission.h"
#include "api/meta.h"
#include "base/certs.h"
#include "base/clock.h"
#include "base/json.h"

namespace spiderpool::kube::webhook {

inline constexpr std::string_view kHealthCheckPath = "/webhook-health-check";
// controller-runtime's limit on an AdmissionReview body.
inline constexpr size_t kDefaultMaxRequestBytes = 7 * 1024 * 1024;

// The answer of a validating handler (and the verdict part of a mutating one).
struct Decision {
  bool allowed = true;
  // Denied: the Status kube-apiserver relays (code, reason, message, details). Allowed: usually
  // unset.
  std::optional<api::Status> status;
  std::vector<std::string> warnings;

  static Decision Allow() { return Decision{}; }
  static Decision Deny(api::Status status);
  // A Failure status with `code` (403, 422, 500, ...), its standard reason and `message`.
  static Decision Deny(int32_t code, std::string_view message);
};

// The answer of a mutating handler.
struct Mutation {
  Decision decision;
  // The object to store; null = unchanged. Only used when allowed on CREATE/UPDATE.
  base::Json object;
  // Optional: the request object decoded and re-encoded by the handler's types WITHOUT any
  // mutation. Patch operations that merely reproduce that round trip (fields the types do not
  // model) are dropped (DropRoundTripOperations).
  base::Json round_trip;

  static Mutation Unchanged() { return Mutation{}; }
  static Mutation Patched(base::Json object, base::Json round_trip = nullptr) {
    Mutation m;
    m.object = std::move(object);
    m.round_trip = std::move(round_trip);
    return m;
  }
  static Mutation Denied(Decision d) {
    Mutation m;
    m.decision = std::move(d);
    return m;
  }
};

using ValidatingHandler = std::function<Decision(const api::AdmissionRequest&)>;
using MutatingHandler = std::function<Mutation(const api::AdmissionRequest&)>;

// Returns the current serving certificate and key (PEM).
using CertProvider = std::function<absl::StatusOr<base::CertAndKey>()>;

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 5722;  // 0 = any free port (see port())
  // Serving certificate: PEM files, or a provider (exactly one; or neither, and call
  // SetCertificate before Start).
  std::string cert_file;
  std::string key_file;
  CertProvider cert_provider;
  // How often the files / provider are looked at again; zero = only on ReloadCertificate().
  absl::Duration cert_reload_interval = absl::Seconds(10);
  size_t max_request_bytes = kDefaultMaxRequestBytes;
  int worker_threads = 8;
  absl::Duration read_timeout = absl::Seconds(10);
  absl::Duration keep_alive_timeout = absl::Seconds(30);
  base::Clock* clock = nullptr;  // drives the reload loop; null = RealClock
};

// A request and answer independent of the transport (for tests and fuzzing).
struct HttpRequest {
  std::string method = "POST";
  std::string path;  // without the query
  std::string content_type = "application/json";
  std::string body;
};
struct HttpReply {
  int status = 200;
  std::string content_type;
  std::string body;
};

struct ServerStats {
  uint64_t requests = 0;        // admission reviews answered with 200
  uint64_t denied = 0;          // ... of which not allowed
  uint64_t bad_requests = 0;    // 4xx answers
  uint64_t cert_reloads = 0;    // certificates installed after the first
};

class AdmissionServer {
 public:
  explicit AdmissionServer(ServerOptions options);
  ~AdmissionServer();  // Stop()
  AdmissionServer(const AdmissionServer&) = delete;
  AdmissionServer& operator=(const AdmissionServer&) = delete;

  // Registers a handler (before or after Start). A path registered twice keeps the last one.
  void Validating(std::string path, ValidatingHandler handler);
  void Mutating(std::string path, MutatingHandler handler);
  std::vector<std::string> Paths() const;

  // Loads the certificate (FailedPrecondition without one), binds host:port and serves on
  // background threads; starts the reload loop. Unavailable if the port cannot be bound.
  absl::Status Start();
  // Stops serving (open connections are closed) and joins the threads. Idempotent.
  void Stop();
  bool running() const;
  int port() const;  // the bound port after Start

  // Reads the configured source now and installs its certificate if it changed. An invalid
  // certificate (unparsable, key mismatch) is refused and the current one kept.
  absl::Status ReloadCertificate();
  // Installs a certificate directly (checks it as above).
  absl::Status SetCertificate(const base::CertAndKey& cert);
  // The certificate served now (PEM; empty before the first one).
  std::string CertificatePem() const;

  // The request handling, without HTTP/TLS.
  HttpReply Handle(const HttpRequest& request) const;

  ServerStats stats() const;

  // Opaque to callers; defined in server.cc.
  struct TlsMaterial;
  std::shared_ptr<const TlsMaterial> CurrentMaterial() const;

 private:
  HttpReply HandleReview(const HttpRequest& request) const;
  absl::Status Install(const base::CertAndKey& cert, bool count_reload);
  absl::StatusOr<base::CertAndKey> ReadSource() const;
  void ReloadLoop(std::stop_token stop);

  ServerOptions options_;
  base::Clock& clock_;

  mutable std::shared_mutex handlers_mu_;
  std::map<std::string, ValidatingHandler, std::less<>> validating_;  // guarded by handlers_mu_
  std::map<std::string, MutatingHandler, std::less<>> mutating_;      // guarded by handlers_mu_

  mutable std::mutex cert_mu_;
  std::shared_ptr<const TlsMaterial> material_;  // guarded by cert_mu_

  struct Stats {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> denied{0};
    std::atomic<uint64_t> bad_requests{0};
    std::atomic<uint64_t> cert_reloads{0};
  };
  mutable Stats stats_;

  struct Listener;
  mutable std::mutex run_mu_;
  std::unique_ptr<Listener> listener_;  // guarded by run_mu_
  std::jthread reload_thread_;
  std::atomic<int> port_{0};
};

// The HTTP answer for a rejected request: a metav1.Status JSON with code/reason/message.
HttpReply ErrorReply(int status, std::string_view message);

}  // namespace spiderpool::kube::webhook
