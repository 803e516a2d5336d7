#include "kube/testing/apiserver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <csignal>
#include <fstream>
#include <random>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "base/certs.h"
#include "base/http_listen.h"
#include "base/http_server.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "httplib.h"
#include "kube/testing/controllers.h"
#include "kube/testing/core.h"
#include "kube/testing/errors.h"
#include "kube/testing/webhook_admission.h"

namespace spiderpool::kube::testing {

using base::Json;
using base::StrCat;

namespace {

// How often an idle watch stream checks whether its client hung up (kube-apiserver is told by
// its network poller; here every open watch wakes up this often: 200 ms cost 100 agents' ~800
// watches 4000 wake-ups a second).
constexpr absl::Duration kPeerPollInterval = absl::Seconds(1);

std::string RandomToken() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 32; ++i) out += kHex[rd() % 16];
  return out;
}

UserInfo AdminUser() {
  return {"loopback-admin", "", {"system:masters", "system:authenticated"}};
}

// True when the peer of `fd` has closed (or reset) the connection.
bool PeerClosed(int fd) {
  if (fd < 0) return false;
  struct pollfd p = {fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  int n = ::poll(&p, 1, 0);
  if (n <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    ssize_t r = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0;
  }
  return false;
}

struct X509Free { void operator()(X509* x) const { X509_free(x); } };
struct PkeyFree { void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); } };
struct BioFree { void operator()(BIO* b) const { BIO_free_all(b); } };

std::unique_ptr<X509, X509Free> PemToX509(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::unique_ptr<EVP_PKEY, PkeyFree> PemToKey(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return std::unique_ptr<EVP_PKEY, PkeyFree>(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

std::string X509ToPem(X509* x) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(bio.get(), x) != 1) return "";
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace

class LoopbackApiServer::Impl {
 public:
  LoopbackOptions options;
  base::CertAndKey ca;
  base::CertAndKey serving;
  std::vector<std::string> tokens;
  std::unique_ptr<internal::Core> core;
  std::unique_ptr<internal::Controllers> controllers;
  std::shared_ptr<Admission> default_admission;
  std::unique_ptr<httplib::SSLServer> server;
  std::thread listen_thread;
  int port = 0;
  std::atomic<bool> stopping{false};
  // Requests served, by HTTP method (GET, POST, PUT, PATCH, DELETE, other).
  std::atomic<int64_t> method_counts[6] = {};
  std::mutex stop_mu;
  bool stopped = false;  // guarded by stop_mu

  std::optional<UserInfo> Authenticate(const httplib::Request& req) const {
    std::string authz = req.get_header_value("Authorization");
    if (authz.size() > 7 && (authz.compare(0, 7, "Bearer ") == 0 ||
                             authz.compare(0, 7, "bearer ") == 0)) {
      std::string token = authz.substr(7);
      while (!token.empty() && token.back() == ' ') token.pop_back();
      for (const std::string& t : tokens) {
        if (t == token) return AdminUser();
      }
      return std::nullopt;
    }
    if (options.accept_client_certificates && req.ssl) {
      SSL* ssl = const_cast<SSL*>(req.ssl);
      std::unique_ptr<X509, X509Free> peer(SSL_get1_peer_certificate(ssl));
      if (peer && SSL_get_verify_result(ssl) == X509_V_OK) {
        auto info = base::ParseCertificate(X509ToPem(peer.get()));
        if (info.ok() && !info->common_name.empty()) {
          UserInfo u{info->common_name, "", info->organizations};
          u.groups.push_back("system:authenticated");
          return u;
        }
      }
    }
    return std::nullopt;
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    static constexpr const char* kMethods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
    int m = 5;
    for (int i = 0; i < 5; ++i) {
      if (req.method == kMethods[i]) m = i;
    }
    method_counts[m].fetch_add(1, std::memory_order_relaxed);
    if (options.log_requests) {
      SP_LOG(Info).Msg("request").KV("method", req.method).KV("target", req.target);
    }
    auto user = Authenticate(req);
    if (!user) {
      res.status = 401;
      res.set_content(base::DumpJson(UnauthorizedStatus().ToJson()), "application/json");
      return;
    }
    internal::HttpRequest r;
    r.method = req.method;
    r.path = req.path;
    for (const auto& [k, v] : req.params) r.params.emplace(k, v);
    r.body = req.body;
    r.content_type = req.get_header_value("Content-Type");
    r.accept = req.get_header_value("Accept");
    r.user = *std::move(user);
    r.network = true;
    const int peer_fd = req.ssl ? SSL_get_fd(req.ssl) : -1;
    r.peer_gone = [peer_fd] { return PeerClosed(peer_fd); };
    internal::HttpResponse out = core->Handle(r);
    res.status = out.code;
    for (const auto& [k, v] : out.headers) res.set_header(k, v);
    if (!out.watch) {
      res.set_content(std::move(out.body), out.content_type);
      return;
    }
    struct StreamState {
      std::shared_ptr<internal::Watcher> w;
      absl::Time next_bookmark;
    };
    auto st = std::make_shared<StreamState>();
    st->w = out.watch;
    st->next_bookmark = absl::Now() + options.bookmark_interval;
    internal::Core* c = core.get();
    std::atomic<bool>* stop_flag = &stopping;
    absl::Duration interval = options.bookmark_interval;
    // ";stream=watch" keeps httplib from gzip-compressing the stream (it compresses exactly
    // "application/json" when the client accepts gzip, and the deflate buffer would hold
    // small events such as bookmarks back; kubectl 1.35's watch-list then times out).
    res.set_chunked_content_provider(
        "application/json;stream=watch",
        [st, c, fd = peer_fd, stop_flag, interval](size_t, httplib::DataSink& sink) -> bool {
          internal::Watcher& w = *st->w;
          while (true) {
            absl::Time now = absl::Now();
            absl::Time wake = std::min(w.deadline, now + kPeerPollInterval);
            if (w.bookmarks) wake = std::min(wake, st->next_bookmark);
            bool finished = false;
            std::vector<internal::WatchItem> items = w.Wait(wake, &finished);
            if (!items.empty()) {
              std::string data;
              for (const internal::WatchItem& i : items) data += w.Render(i);
              if (!sink.write(data.data(), data.size())) return false;
              return true;
            }
            if (finished || stop_flag->load()) {
              sink.done();
              return true;
            }
            now = absl::Now();
            if (now >= w.deadline) {
              sink.done();
              return true;
            }
            if (w.bookmarks && now >= st->next_bookmark) {
              st->next_bookmark = now + interval;
              c->EnqueueBookmark(st->w);
              continue;
            }
            if (PeerClosed(fd)) return false;
          }
        },
        [st, c](bool) { c->RemoveWatcher(st->w); });
  }

  void Stop() {
    std::lock_guard<std::mutex> l(stop_mu);
    if (stopped) return;
    stopped = true;
    stopping = true;
    if (controllers) controllers->Stop();
    core->CloseWatches();
    server->stop();
    if (listen_thread.joinable()) listen_thread.join();
  }
};

absl::StatusOr<std::unique_ptr<LoopbackApiServer>> LoopbackApiServer::Start(
    LoopbackOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (!options.ca_cert_pem.empty() || !options.ca_key_pem.empty()) {
    impl->ca = {options.ca_cert_pem, options.ca_key_pem};
  } else {
    auto ca = base::GenerateCA("loopback-apiserver-ca", absl::Hours(24 * 365));
    if (!ca.ok()) return ca.status();
    impl->ca = *std::move(ca);
  }
  std::vector<std::string> ips = {"127.0.0.1", "::1"};
  std::vector<std::string> dns = {"localhost", "kubernetes", "kubernetes.default",
                                  "kubernetes.default.svc"};
  unsigned char buf[16];
  if (options.host != "127.0.0.1" && options.host != "::1" &&
      (inet_pton(AF_INET, options.host.c_str(), buf) == 1 ||
       inet_pton(AF_INET6, options.host.c_str(), buf) == 1)) {
    ips.push_back(options.host);
  }
  auto serving = base::GenerateServingCert(impl->ca, "loopback-apiserver", dns, ips,
                                           absl::Hours(24 * 365));
  if (!serving.ok()) return serving.status();
  impl->serving = *std::move(serving);
  impl->tokens = options.tokens.empty() ? std::vector<std::string>{RandomToken()} : options.tokens;

  internal::CoreOptions co;
  co.watch_history_size = options.watch_history_size;
  co.watch_queue_capacity = options.watch_queue_capacity;
  co.list_snapshots = options.list_snapshots;
  co.clock = options.clock;
  co.schema_validator_factory = options.schema_validator_factory
                                    ? options.schema_validator_factory
                                    : DefaultSchemaValidatorFactory();
  co.admission = options.admission;
  co.omit_builtin_versions = options.omit_builtin_versions;
  co.watch_min_request_timeout = options.watch_min_request_timeout;
  co.latency = options.latency;
  co.request_timeout = options.request_timeout;
  co.watch_history_bytes = options.watch_history_bytes;
  impl->core = std::make_unique<internal::Core>(std::move(co));
  if (!options.admission && options.admission_webhooks) {
    // The core owns the plugin and outlives every call into it.
    internal::Core* core = impl->core.get();
    WebhookAdmissionOptions wo;
    wo.lister = [core](std::string_view group, std::string_view version, std::string_view plural,
                       std::string_view ns) { return core->ListObjects(group, version, plural, ns); };
    wo.service_resolver = options.service_resolver;
    impl->default_admission = std::make_shared<WebhookAdmission>(std::move(wo));
    impl->core->SetAdmission(impl->default_admission);
  }

  auto cert = PemToX509(impl->serving.cert_pem);
  auto key = PemToKey(impl->serving.key_pem);
  auto ca_cert = PemToX509(impl->ca.cert_pem);
  if (!cert || !key || !ca_cert) return absl::InternalError("cannot load generated certificates");
  bool client_certs = options.accept_client_certificates;
  impl->server = std::make_unique<httplib::SSLServer>(
      [&cert, &key, &ca_cert, client_certs](SSL_CTX& ctx) -> bool {
        SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
        if (SSL_CTX_use_certificate(&ctx, cert.get()) != 1) return false;
        if (SSL_CTX_use_PrivateKey(&ctx, key.get()) != 1) return false;
        if (SSL_CTX_check_private_key(&ctx) != 1) return false;
        if (client_certs) {
          X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
          if (X509_STORE_add_cert(store, ca_cert.get()) != 1) return false;
          STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
          sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca_cert.get())));
          SSL_CTX_set_client_CA_list(&ctx, names);
          // Ask for (but do not require) a client certificate.
          SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
        }
        return true;
      });
  // Headers and body are written separately; without TCP_NODELAY every answer waits for
  // Nagle + delayed ACK (~40 ms).
  impl->server->set_tcp_nodelay(true);
  if (!impl->server->is_valid()) return absl::InternalError("cannot set up the TLS server");
  int threads = std::max(options.worker_threads, 4);
  impl->server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl->server->set_keep_alive_timeout(
      std::max<time_t>(1, absl::ToInt64Seconds(options.keep_alive_idle_timeout)));
  impl->server->set_keep_alive_max_count(1000);
  Impl* raw = impl.get();
  auto handler = [raw](const httplib::Request& req, httplib::Response& res) {
    raw->Serve(req, res);
  };
  impl->server->Get(".*", handler);
  impl->server->Post(".*", handler);
  impl->server->Put(".*", handler);
  impl->server->Patch(".*", handler);
  impl->server->Delete(".*", handler);
  impl->server->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        res.status = 500;
        res.set_content(base::DumpJson(InternalErrorStatus("unexpected exception").ToJson()),
                        "application/json");
      });

  // kube-apiserver listens with the kernel's somaxconn, not httplib's 5: a burst of new
  // connections (agents' first requests) is queued, not dropped for a 1 s SYN retransmit.
  base::ListenBacklog backlog(*impl->server);
  if (options.port == 0) {
    impl->port = impl->server->bind_to_any_port(options.host);
  } else {
    impl->port = impl->server->bind_to_port(options.host, options.port) ? options.port : -1;
  }
  if (impl->port <= 0) {
    return absl::UnavailableError(StrCat("cannot bind ", options.host, ":", options.port));
  }
  if (absl::Status raised = backlog.Raise(); !raised.ok()) return raised;
  impl->core->SetServerAddress(StrCat(options.host, ":", impl->port));
  if (options.run_controllers) {
    impl->controllers =
        std::make_unique<internal::Controllers>(impl->core.get(), impl->ca.cert_pem);
    impl->controllers->Start();
  }
  impl->listen_thread = std::thread([raw] {
    // Inherited by httplib's worker threads: a client that hangs up mid-response (a watch
    // reader, a kubectl ^C) is an EPIPE there, whatever SIGPIPE's disposition in the process
    // that embeds the server.
    base::BlockSigpipeOnThisThread();
    raw->server->listen_after_bind();
  });
  // stop() is a no-op until the listener runs: wait for it so Stop() can never hang.
  for (int i = 0; i < 10000 && !impl->server->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!impl->server->is_running()) {
    impl->server->stop();
    impl->listen_thread.detach();
    return absl::InternalError("the HTTPS listener did not start");
  }
  return std::unique_ptr<LoopbackApiServer>(new LoopbackApiServer(std::move(impl)));
}

LoopbackApiServer::LoopbackApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LoopbackApiServer::~LoopbackApiServer() { Stop(); }

void LoopbackApiServer::Stop() { impl_->Stop(); }

std::string LoopbackApiServer::url() const {
  std::string host = impl_->options.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return StrCat("https://", host, ":", impl_->port);
}

int LoopbackApiServer::port() const { return impl_->port; }
const std::string& LoopbackApiServer::ca_pem() const { return impl_->ca.cert_pem; }
const std::string& LoopbackApiServer::token() const { return impl_->tokens.front(); }

std::string LoopbackApiServer::KubeconfigYaml() const {
  std::string ca_b64;
  absl::Base64Escape(base::ToAbsl(impl_->ca.cert_pem), &ca_b64);
  return StrCat("apiVersion: v1\n"
                "kind: Config\n"
                "clusters:\n"
                "- name: loopback\n"
                "  cluster:\n"
                "    server: ",
                url(),
                "\n"
                "    certificate-authority-data: ",
                ca_b64,
                "\n"
                "users:\n"
                "- name: loopback\n"
                "  user:\n"
                "    token: ",
                token(),
                "\n"
                "contexts:\n"
                "- name: loopback\n"
                "  context:\n"
                "    cluster: loopback\n"
                "    user: loopback\n"
                "    namespace: default\n"
                "current-context: loopback\n"
                "preferences: {}\n");
}

absl::Status LoopbackApiServer::WriteKubeconfig(const std::string& path) const {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return absl::UnavailableError(StrCat("cannot write ", tmp));
    f << KubeconfigYaml();
    if (!f.flush()) return absl::UnavailableError(StrCat("cannot write ", tmp));
  }
  ::chmod(tmp.c_str(), 0600);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<std::string, std::string>> LoopbackApiServer::IssueClientCertificate(
    std::string_view user, const std::vector<std::string>& groups) const {
  auto c = base::GenerateClientCert(impl_->ca, user, groups, absl::Hours(24 * 365));
  if (!c.ok()) return c.status();
  return std::make_pair(c->cert_pem, c->key_pem);
}

absl::Status LoopbackApiServer::RegisterResource(ResourceInfo info, SchemaValidator validator) {
  return impl_->core->RegisterResource(std::move(info), std::move(validator), false);
}

std::vector<ResourceInfo> LoopbackApiServer::Resources() const {
  return impl_->core->Resources();
}

void LoopbackApiServer::SetAdmission(std::shared_ptr<Admission> admission) {
  impl_->core->SetAdmission(std::move(admission));
}

std::shared_ptr<Admission> LoopbackApiServer::DefaultAdmission() const {
  return impl_->default_admission;
}

LoopbackApiServer::CallResult LoopbackApiServer::Call(std::string_view method,
                                                      std::string_view path_and_query,
                                                      const Json& body,
                                                      std::string_view content_type) {
  internal::HttpRequest r;
  r.method = std::string(method);
  size_t q = path_and_query.find('?');
  // Escapes decoded as Go's net/url does for kube-apiserver: an invalid one is a 400.
  absl::StatusOr<std::string> path = base::PercentDecode(path_and_query.substr(0, q));
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params =
      q == std::string_view::npos ? std::vector<std::pair<std::string, std::string>>()
                                  : base::ParseQuery(path_and_query.substr(q + 1));
  if (!path.ok() || !params.ok()) {
    const absl::Status& bad = !path.ok() ? path.status() : params.status();
    return {400, BadRequestStatus(std::string(bad.message())).ToJson()};
  }
  r.path = *std::move(path);
  for (auto& [k, v] : *params) r.params.emplace(std::move(k), std::move(v));
  if (!body.is_null()) r.body = base::DumpJson(body);
  r.content_type = std::string(content_type);
  r.user = AdminUser();
  for (auto [it, end] = r.params.equal_range("watch"); it != end; ++it) {
    if (it->second == "true" || it->second == "1") {
      return {400, BadRequestStatus("watch is not supported by Call(); use HTTPS").ToJson()};
    }
  }
  if (r.path.find("/watch/") != std::string::npos) {
    return {400, BadRequestStatus("watch is not supported by Call(); use HTTPS").ToJson()};
  }
  internal::HttpResponse out = impl_->core->Handle(r);
  CallResult res;
  res.code = out.code;
  auto parsed = base::ParseJson(out.body);
  res.body = parsed.ok() ? *std::move(parsed) : Json(out.body);
  return res;
}

std::vector<Json> LoopbackApiServer::ListObjects(std::string_view group, std::string_view version,
                                                 std::string_view plural,
                                                 std::string_view ns) const {
  return impl_->core->ListObjects(group, version, plural, ns);
}

std::vector<std::vector<base::Json>> LoopbackApiServer::ListObjectsAtOnce(
    const std::vector<ObjectsQuery>& queries) const {
  return impl_->core->ListObjectsAtOnce(queries);
}

int64_t LoopbackApiServer::CurrentResourceVersion() const {
  return impl_->core->CurrentResourceVersion();
}

size_t LoopbackApiServer::OpenWatches() const { return impl_->core->OpenWatches(); }

bool LoopbackApiServer::WaitForWatches(size_t n, absl::Duration timeout) const {
  return impl_->core->WaitForWatches(n, timeout);
}

void LoopbackApiServer::InjectDelay(absl::Duration delay, FaultMatch match) {
  impl_->core->InjectDelay(delay, std::move(match));
}

void LoopbackApiServer::FailNext(int n, int http_code, FaultMatch match, int retry_after_seconds) {
  impl_->core->FailNext(n, http_code, std::move(match), retry_after_seconds);
}

void LoopbackApiServer::ClearFaults() { impl_->core->ClearFaults(); }

RequestCounts LoopbackApiServer::request_counts() const {
  auto get = [this](int i) { return impl_->method_counts[i].load(std::memory_order_relaxed); };
  return {.get = get(0), .post = get(1), .put = get(2), .patch = get(3), .delete_ = get(4),
          .other = get(5), .timed_out = impl_->core->timed_out(),
          .abandoned = impl_->core->abandoned()};
}
void LoopbackApiServer::CloseWatches() {
  impl_->core->CountWatchClose(static_cast<int64_t>(impl_->core->OpenWatches()));
  impl_->core->CloseWatches();
}

void LoopbackApiServer::SetRandomFaults(RandomFaults faults) {
  impl_->core->SetRandomFaults(std::move(faults));
}

FaultCounts LoopbackApiServer::fault_counts() const { return impl_->core->fault_counts(); }

void LoopbackApiServer::SetLatencyModel(LatencyModel model) {
  impl_->core->SetLatencyModel(model);
}

LatencyModel LoopbackApiServer::latency_model() const { return impl_->core->latency_model(); }
size_t LoopbackApiServer::WritesWaitingForTurn() const {
  return impl_->core->WritesWaitingForTurn();
}

int LoopbackApiServer::CutConnections() {
  // Every socket of this process whose local port is the server's and that is not the
  // listener is a connection the server accepted (a client's local port is never ours).
  int cut = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &fd)) continue;
    sockaddr_storage addr = {};
    socklen_t len = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    int port = 0;
    if (addr.ss_family == AF_INET) {
      port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
    }
    if (port != impl_->port) continue;
    int listening = 0;
    socklen_t optlen = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || listening) {
      continue;
    }
    if (::shutdown(fd, SHUT_RDWR) == 0) ++cut;
  }
  impl_->core->CountConnectionCut(cut);
  return cut;
}
void LoopbackApiServer::CompactHistory() { impl_->core->CompactHistory(); }

}  // namespace spiderpool::kube::testing
