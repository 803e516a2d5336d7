#include "kube/testing/webhook_admission.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/escaping.h"
#include "api/labels.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing {

using base::Json;
using base::StrCat;

namespace {

constexpr int kDefaultTimeoutSeconds = 10;
constexpr int kMaxTimeoutSeconds = 30;
constexpr size_t kMaxResponseBytes = 32 << 20;

std::string Str(const Json& j, std::string_view key) {
  if (!j.is_object()) return "";
  auto it = j.find(std::string(key));
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const Json& Field(const Json& j, std::string_view key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(std::string(key));
  return it == j.end() ? kNull : *it;
}

std::vector<std::string> Strings(const Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const Json& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// `"text"` the way Go's %q prints plain ASCII.
std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string NewUuid() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  uint64_t a, b;
  {
    std::lock_guard<std::mutex> l(mu);
    a = rng();
    b = rng();
  }
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xffff),
                static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

bool IsIp(std::string_view host) {
  unsigned char buf[16];
  std::string h(host);
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

// "host:port" / "[v6]:port" -> host, port.
bool SplitHostPort(std::string_view hp, std::string* host, int* port) {
  size_t colon = hp.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= hp.size()) return false;
  std::string_view h = hp.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) return false;
  int p = 0;
  for (char c : hp.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    p = p * 10 + (c - '0');
    if (p > 65535) return false;
  }
  *host = std::string(h);
  *port = p;
  return true;
}

std::string JoinHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) return StrCat("[", host, "]:", port);
  return StrCat(host, ":", port);
}

// ---- TLS client ----------------------------------------------------------------------------

struct SslCtxFree { void operator()(SSL_CTX* c) const { SSL_CTX_free(c); } };
struct SslFree { void operator()(SSL* s) const { SSL_free(s); } };
struct X509Free { void operator()(X509* x) const { X509_free(x); } };

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status DeadlineExceeded() {
  return absl::DeadlineExceededError("context deadline exceeded");
}

// Waits until `fd` is ready for `events` or `deadline` passes (false).
bool WaitFd(int fd, short events, absl::Time deadline) {
  while (true) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    int64_t ms = absl::ToInt64Milliseconds(left) + 1;
    struct pollfd p = {fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, INT_MAX)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // the next syscall reports the error
  }
}

std::string ErrnoText(int err) {
  switch (err) {
    case ECONNREFUSED: return "connection refused";
    case ECONNRESET: return "connection reset by peer";
    case ENETUNREACH: return "network is unreachable";
    case EHOSTUNREACH: return "no route to host";
    case ETIMEDOUT: return "connection timed out";
    default: break;
  }
  std::string s = std::strerror(err);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

std::string SockaddrText(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    return JoinHostPort(buf, ntohs(in->sin_port));
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
  inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
  return JoinHostPort(buf, ntohs(in6->sin6_port));
}

absl::StatusOr<int> Dial(const std::string& host, int port, absl::Time deadline) {
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  if (::getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res) != 0 || !res) {
    return absl::UnavailableError(StrCat("dial tcp: lookup ", host, ": no such host"));
  }
  std::unique_ptr<struct addrinfo, decltype(&::freeaddrinfo)> guard(res, ::freeaddrinfo);
  std::string last = StrCat("dial tcp ", JoinHostPort(host, port), ": no addresses");
  for (struct addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                      ai->ai_protocol);
    if (fd < 0) {
      last = StrCat("dial tcp ", SockaddrText(ai->ai_addr), ": socket: ", ErrnoText(errno));
      continue;
    }
    auto fail = [&](int err) {
      ::close(fd);
      last = StrCat("dial tcp ", SockaddrText(ai->ai_addr), ": connect: ", ErrnoText(err));
    };
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        fail(errno);
        continue;
      }
      if (!WaitFd(fd, POLLOUT, deadline)) {
        ::close(fd);
        return DeadlineExceeded();
      }
      int soerr = 0;
      socklen_t len = sizeof(soerr);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (soerr != 0) {
        fail(soerr);
        continue;
      }
    }
    return fd;
  }
  return absl::UnavailableError(last);
}

// Certificate problems seen while verifying the chain; decided after the handshake in the
// order Go's x509.Certificate.Verify checks them (validity, host name, chain).
struct VerifyState {
  bool expired = false;
  int chain_error = X509_V_OK;
};

int g_verify_state_index = -1;
std::once_flag g_verify_state_once;

int VerifyCallback(int ok, X509_STORE_CTX* ctx) {
  if (ok) return 1;
  SSL* ssl = static_cast<SSL*>(
      X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* st = ssl ? static_cast<VerifyState*>(SSL_get_ex_data(ssl, g_verify_state_index))
                 : nullptr;
  int err = X509_STORE_CTX_get_error(ctx);
  if (st) {
    if (err == X509_V_ERR_CERT_HAS_EXPIRED || err == X509_V_ERR_CERT_NOT_YET_VALID) {
      st->expired = true;
    } else if (st->chain_error == X509_V_OK) {
      st->chain_error = err;
    }
  }
  return 1;  // decided after the handshake
}

std::vector<std::string> SubjectAltNames(X509* cert, bool ips) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (!ips && n->type == GEN_DNS) {
      const unsigned char* d = ASN1_STRING_get0_data(n->d.dNSName);
      out.emplace_back(reinterpret_cast<const char*>(d), ASN1_STRING_length(n->d.dNSName));
    } else if (ips && n->type == GEN_IPADD) {
      int len = ASN1_STRING_length(n->d.iPAddress);
      const unsigned char* d = ASN1_STRING_get0_data(n->d.iPAddress);
      char buf[INET6_ADDRSTRLEN] = {0};
      if (len == 4) inet_ntop(AF_INET, d, buf, sizeof(buf));
      if (len == 16) inet_ntop(AF_INET6, d, buf, sizeof(buf));
      if (buf[0]) out.emplace_back(buf);
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

std::string Join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? std::string(sep) : "") + v[i];
  return out;
}

// x509.HostnameError.Error().
std::string HostnameErrorText(X509* cert, const std::string& host) {
  if (IsIp(host)) {
    std::vector<std::string> ips = SubjectAltNames(cert, true);
    if (ips.empty()) {
      return StrCat("x509: cannot validate certificate for ", host,
                    " because it doesn't contain any IP SANs");
    }
    return StrCat("x509: certificate is valid for ", Join(ips, ", "), ", not ", host);
  }
  std::vector<std::string> dns = SubjectAltNames(cert, false);
  if (dns.empty()) {
    return StrCat("x509: certificate is not valid for any names, but wanted to match ", host);
  }
  return StrCat("x509: certificate is valid for ", Join(dns, ", "), ", not ", host);
}

std::string ChainErrorText(int err) {
  switch (err) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_UNTRUSTED:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return "x509: certificate signed by unknown authority";
    case X509_V_ERR_INVALID_PURPOSE:
      return "x509: certificate specifies an incompatible key usage";
    default:
      return StrCat("x509: ", X509_verify_cert_error_string(err));
  }
}

std::string OpenSslErrorText() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "EOF";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// Runs one SSL operation to completion (WANT_READ / WANT_WRITE handled by polling).
// Returns the operation's result (> 0), 0 for a clean EOF, or an error.
template <typename Op>
absl::StatusOr<int> SslIo(SSL* ssl, int fd, absl::Time deadline, Op op) {
  while (true) {
    ERR_clear_error();
    int r = op();
    if (r > 0) return r;
    int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
      if (!WaitFd(fd, POLLIN, deadline)) return DeadlineExceeded();
      continue;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
      if (!WaitFd(fd, POLLOUT, deadline)) return DeadlineExceeded();
      continue;
    }
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e == SSL_ERROR_SYSCALL) {
      if (errno != 0 && errno != EAGAIN) {
        return absl::UnavailableError(StrCat("read: ", ErrnoText(errno)));
      }
      return 0;
    }
    return absl::UnavailableError(OpenSslErrorText());
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Incremental HTTP/1.1 response parsing. Returns true once `buf` holds a complete response.
bool ParseResponse(const std::string& buf, bool eof, HttpsReply* out, absl::Status* err) {
  size_t hdr_end = buf.find("\r\n\r\n");
  if (hdr_end == std::string::npos) {
    if (eof) *err = absl::UnavailableError(buf.empty() ? "EOF" : "malformed HTTP response");
    return eof;
  }
  std::string_view head(buf.data(), hdr_end);
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  // "HTTP/1.1 200 OK"
  size_t sp = status_line.find(' ');
  if (status_line.substr(0, 5) != "HTTP/" || sp == std::string_view::npos ||
      status_line.size() < sp + 4) {
    *err = absl::UnavailableError(StrCat("malformed HTTP response ", GoQuote(status_line)));
    return true;
  }
  int code = 0;
  for (char c : status_line.substr(sp + 1, 3)) {
    if (c < '0' || c > '9') {
      *err = absl::UnavailableError(StrCat("malformed HTTP status code ",
                                           GoQuote(status_line.substr(sp + 1, 3))));
      return true;
    }
    code = code * 10 + (c - '0');
  }
  int64_t content_length = -1;
  bool chunked = false;
  std::string content_type;
  size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key = Lower(std::string(line.substr(0, colon)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (key == "content-length") {
      int64_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9' || n > static_cast<int64_t>(kMaxResponseBytes)) {
          n = -1;
          break;
        }
        n = n * 10 + (c - '0');
      }
      content_length = n;
    } else if (key == "transfer-encoding") {
      chunked = Lower(std::string(value)).find("chunked") != std::string::npos;
    } else if (key == "content-type") {
      content_type = std::string(value);
    }
  }
  out->status = code;
  out->content_type = content_type;
  std::string_view body(buf.data() + hdr_end + 4, buf.size() - hdr_end - 4);
  if (chunked) {
    std::string decoded;
    size_t p = 0;
    while (true) {
      size_t le = body.find("\r\n", p);
      if (le == std::string_view::npos) break;
      size_t size = 0;
      std::string_view hex = body.substr(p, le - p);
      size_t semi = hex.find(';');
      if (semi != std::string_view::npos) hex = hex.substr(0, semi);
      bool bad = hex.empty();
      for (char c : hex) {
        int v = (c >= '0' && c <= '9') ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (v < 0 || size > kMaxResponseBytes) {
          bad = true;
          break;
        }
        size = size * 16 + static_cast<size_t>(v);
      }
      if (bad) {
        *err = absl::UnavailableError("malformed chunked encoding");
        return true;
      }
      if (size == 0) {
        out->body = std::move(decoded);
        return true;  // trailers (if any) are ignored
      }
      if (body.size() < le + 2 + size + 2) break;
      decoded.append(body.substr(le + 2, size));
      p = le + 2 + size + 2;
    }
    if (eof) *err = absl::UnavailableError("unexpected EOF");
    return eof;
  }
  if (content_length >= 0) {
    if (body.size() >= static_cast<size_t>(content_length)) {
      out->body = std::string(body.substr(0, static_cast<size_t>(content_length)));
      return true;
    }
    if (eof) *err = absl::UnavailableError("unexpected EOF");
    return eof;
  }
  if (eof) out->body = std::string(body);
  return eof;
}

}  // namespace

absl::StatusOr<HttpsReply> HttpsPost(const HttpsTarget& target, std::string_view body,
                                     absl::Time deadline) {
  std::call_once(g_verify_state_once, [] {
    g_verify_state_index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  });
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return absl::InternalError("cannot create a TLS context");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (target.ca_pem.empty()) {
    SSL_CTX_set_default_verify_paths(ctx.get());
  } else {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    BIO* bio = BIO_new_mem_buf(target.ca_pem.data(), static_cast<int>(target.ca_pem.size()));
    int added = 0;
    while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      if (X509_STORE_add_cert(store, x) == 1) ++added;
      X509_free(x);
    }
    BIO_free(bio);
    ERR_clear_error();
    if (added == 0) {
      return absl::InvalidArgumentError(
          "unable to load root certificates: unable to parse bytes as PEM block");
    }
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, VerifyCallback);

  SP_ASSIGN_OR_RETURN(int raw_fd, Dial(target.dial_host, target.dial_port, deadline));
  Fd fd(raw_fd);
  std::unique_ptr<SSL, SslFree> ssl(SSL_new(ctx.get()));
  if (!ssl) return absl::InternalError("cannot create a TLS session");
  VerifyState vs;
  SSL_set_ex_data(ssl.get(), g_verify_state_index, &vs);
  SSL_set_fd(ssl.get(), fd.get());
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_set_alpn_protos(ssl.get(), kAlpn, sizeof(kAlpn));
  const bool ip_name = IsIp(target.server_name);
  if (!ip_name) SSL_set_tlsext_host_name(ssl.get(), target.server_name.c_str());

  auto hs = SslIo(ssl.get(), fd.get(), deadline, [&] { return SSL_connect(ssl.get()); });
  if (!hs.ok()) {
    if (absl::IsDeadlineExceeded(hs.status())) return hs.status();
    return absl::UnavailableError(
        StrCat("remote error: tls: handshake failure (", base::FromAbsl(hs.status().message()),
               ")"));
  }
  if (*hs == 0) return absl::UnavailableError("EOF");
  std::unique_ptr<X509, X509Free> leaf(SSL_get1_peer_certificate(ssl.get()));
  if (!leaf) {
    return absl::UnavailableError("tls: failed to verify certificate: no certificate presented");
  }
  std::string verify_error;
  if (vs.expired) {
    verify_error = "x509: certificate has expired or is not yet valid";
  } else if (ip_name ? X509_check_ip_asc(leaf.get(), target.server_name.c_str(), 0) != 1
                     : X509_check_host(leaf.get(), target.server_name.data(),
                                       target.server_name.size(),
                                       X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS |
                                           X509_CHECK_FLAG_NEVER_CHECK_SUBJECT,
                                       nullptr) != 1) {
    verify_error = HostnameErrorText(leaf.get(), target.server_name);
  } else if (vs.chain_error != X509_V_OK) {
    verify_error = ChainErrorText(vs.chain_error);
  }
  if (!verify_error.empty()) {
    return absl::UnavailableError(StrCat("tls: failed to verify certificate: ", verify_error));
  }

  std::string request = StrCat("POST ", target.path_and_query, " HTTP/1.1\r\n",
                               "Host: ", target.host_header, "\r\n",
                               "User-Agent: kube-apiserver-admission\r\n",
                               "Accept: application/json, */*\r\n",
                               "Content-Type: application/json\r\n",
                               "Content-Length: ", body.size(), "\r\n",
                               "Connection: close\r\n\r\n");
  request.append(body);
  size_t off = 0;
  while (off < request.size()) {
    SP_ASSIGN_OR_RETURN(int n, SslIo(ssl.get(), fd.get(), deadline, [&] {
                          return SSL_write(ssl.get(), request.data() + off,
                                           static_cast<int>(request.size() - off));
                        }));
    if (n == 0) return absl::UnavailableError("write: broken pipe");
    off += static_cast<size_t>(n);
  }

  std::string buf;
  char chunk[16384];
  HttpsReply reply;
  while (true) {
    SP_ASSIGN_OR_RETURN(int n, SslIo(ssl.get(), fd.get(), deadline, [&] {
                          return SSL_read(ssl.get(), chunk, sizeof(chunk));
                        }));
    if (n > 0) buf.append(chunk, static_cast<size_t>(n));
    if (buf.size() > kMaxResponseBytes) {
      return absl::ResourceExhaustedError("the webhook response is too large");
    }
    absl::Status perr;
    if (ParseResponse(buf, n == 0, &reply, &perr)) {
      if (!perr.ok()) return perr;
      return reply;
    }
  }
}

// ---- matching ----------------------------------------------------------------------------

std::string AdmissionNamespace(const AdmissionAttributes& attrs) {
  if (attrs.resource.group.empty() && attrs.resource.plural == "namespaces") {
    return attrs.operation == AdmissionOperation::kCreate ? "" : attrs.name;
  }
  return attrs.namespace_name;
}

bool IsExemptAdmissionConfigurationResource(const ResourceInfo& resource) {
  if (resource.group != "admissionregistration.k8s.io") return false;
  const std::string& k = resource.kind;
  return k == "ValidatingWebhookConfiguration" || k == "MutatingWebhookConfiguration" ||
         k == "ValidatingAdmissionPolicy" || k == "ValidatingAdmissionPolicyBinding" ||
         k == "MutatingAdmissionPolicy" || k == "MutatingAdmissionPolicyBinding";
}

bool WebhookRuleMatches(const Json& rule, const AdmissionAttributes& attrs) {
  const bool is_namespace = attrs.resource.group.empty() && attrs.resource.plural == "namespaces";
  const std::string ns = AdmissionNamespace(attrs);
  std::string scope = Str(rule, "scope");
  if (scope == "Namespaced") {
    if (is_namespace || ns.empty()) return false;
  } else if (scope == "Cluster") {
    if (!is_namespace && !ns.empty()) return false;
  } else if (!scope.empty() && scope != "*") {
    return false;
  }
  auto any_of = [](const std::vector<std::string>& v, std::string_view want) {
    return Contains(v, "*") || Contains(v, want);
  };
  if (!any_of(Strings(Field(rule, "operations")), AdmissionOperationName(attrs.operation))) {
    return false;
  }
  if (!any_of(Strings(Field(rule, "apiGroups")), attrs.resource.group)) return false;
  if (!any_of(Strings(Field(rule, "apiVersions")), attrs.resource.version)) return false;
  for (const std::string& r : Strings(Field(rule, "resources"))) {
    size_t slash = r.find('/');
    std::string res = r.substr(0, slash);
    std::string sub = slash == std::string::npos ? "" : r.substr(slash + 1);
    if ((res == "*" || res == attrs.resource.plural) && (sub == "*" || sub == attrs.subresource)) {
      return true;
    }
  }
  return false;
}

base::Json BuildAdmissionReview(const AdmissionAttributes& attrs, const Json& object,
                                std::string_view uid, std::string_view version) {
  const ResourceInfo& r = attrs.resource;
  Json gvk = {{"group", r.group}, {"version", r.version}, {"kind", r.kind}};
  Json gvr = {{"group", r.group}, {"version", r.version}, {"resource", r.plural}};
  Json user = {{"username", attrs.user.username}};
  if (!attrs.user.uid.empty()) user["uid"] = attrs.user.uid;
  if (!attrs.user.groups.empty()) user["groups"] = attrs.user.groups;
  Json options = attrs.options;
  if (options.is_object() && Str(options, "kind") == "PatchOptions") {
    // kube-apiserver admits a PATCH as an UPDATE with the patch options as UpdateOptions.
    options["kind"] = "UpdateOptions";
  }
  Json req = {{"uid", uid},
              {"kind", gvk},
              {"resource", gvr},
              {"requestKind", gvk},
              {"requestResource", gvr},
              {"operation", AdmissionOperationName(attrs.operation)},
              {"userInfo", user},
              {"object", object},
              {"oldObject", attrs.old_object},
              {"dryRun", attrs.dry_run},
              {"options", options}};
  if (!attrs.subresource.empty()) {
    req["subResource"] = attrs.subresource;
    req["requestSubResource"] = attrs.subresource;
  }
  if (!attrs.name.empty()) req["name"] = attrs.name;
  std::string ns = AdmissionNamespace(attrs);
  if (!ns.empty()) req["namespace"] = ns;
  return {{"kind", "AdmissionReview"},
          {"apiVersion", StrCat("admission.k8s.io/", version)},
          {"request", std::move(req)}};
}

ApiStatus WebhookDeniedStatus(std::string_view webhook_name, const Json& status) {
  ApiStatus s;
  int64_t code = 0;
  const Json& c = Field(status, "code");
  if (c.is_number_integer()) code = c.get<int64_t>();
  // Rejections are never < 400 (kube-apiserver forces 400). Codes above 599 are not valid
  // HTTP statuses for our HTTP stack: they become 500.
  s.code = code < 400 ? 400 : code > 599 ? 500 : static_cast<int>(code);
  s.reason = Str(status, "reason");
  std::string denied = StrCat("admission webhook ", GoQuote(webhook_name), " denied the request");
  std::string message = Str(status, "message");
  if (!message.empty()) {
    s.message = StrCat(denied, ": ", message);
  } else if (!s.reason.empty()) {
    s.message = StrCat(denied, ": ", s.reason);
  } else {
    s.message = StrCat(denied, " without explanation");
  }
  const Json& d = Field(status, "details");
  if (d.is_object()) {
    s.name = Str(d, "name");
    s.group = Str(d, "group");
    s.kind = Str(d, "kind");
    const Json& ra = Field(d, "retryAfterSeconds");
    if (ra.is_number_integer() && ra.get<int64_t>() > 0 && ra.get<int64_t>() < INT_MAX) {
      s.retry_after_seconds = static_cast<int>(ra.get<int64_t>());
    }
    const Json& causes = Field(d, "causes");
    if (causes.is_array()) {
      for (const Json& cause : causes) {
        s.causes.push_back({Str(cause, "reason"), Str(cause, "message"), Str(cause, "field")});
      }
    }
  }
  return s;
}

// ---- service resolution ----------------------------------------------------------------------

ServiceResolver ClusterServiceResolver(ObjectLister lister) {
  return [lister = std::move(lister)](std::string_view ns, std::string_view name,
                                      int port) -> absl::StatusOr<std::string> {
    Json svc;
    for (Json& s : lister("", "v1", "services", ns)) {
      if (Str(Field(s, "metadata"), "name") == name) {
        svc = std::move(s);
        break;
      }
    }
    if (svc.is_null()) return absl::NotFoundError(StrCat("service ", GoQuote(name), " not found"));
    std::string dial = Str(Field(Field(svc, "metadata"), "annotations"),
                           kServiceDialAddressAnnotation);
    if (!dial.empty()) {
      std::string h;
      int p = 0;
      if (!SplitHostPort(dial, &h, &p)) {
        return absl::InvalidArgumentError(
            StrCat("invalid ", kServiceDialAddressAnnotation, " annotation ", GoQuote(dial)));
      }
      return JoinHostPort(h, p);
    }
    const Json& spec = Field(svc, "spec");
    std::string type = Str(spec, "type");
    if (type == "ExternalName") return JoinHostPort(Str(spec, "externalName"), port);
    if (!type.empty() && type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer") {
      return absl::InvalidArgumentError(StrCat("unsupported service type ", GoQuote(type)));
    }
    std::string cluster_ip = Str(spec, "clusterIP");
    if (cluster_ip == "None") {
      return absl::InvalidArgumentError("cannot route to service with ClusterIP \"None\"");
    }
    bool has_port = false;
    const Json& ports = Field(spec, "ports");
    if (ports.is_array()) {
      for (const Json& p : ports) {
        const Json& pv = Field(p, "port");
        if (pv.is_number_integer() && pv.get<int64_t>() == port) has_port = true;
      }
    }
    if (!has_port) {
      return absl::NotFoundError(
          StrCat("no service port ", port, " found for service ", GoQuote(name)));
    }
    if (cluster_ip.empty()) {
      return absl::UnavailableError(StrCat("service ", ns, "/", name,
                                           " has no clusterIP (set the ",
                                           kServiceDialAddressAnnotation, " annotation)"));
    }
    return JoinHostPort(cluster_ip, port);
  };
}

// ---- the plugin ------------------------------------------------------------------------------

namespace {

struct Hook {
  std::string configuration;
  Json spec;
};

std::vector<Hook> LoadHooks(const ObjectLister& lister, bool mutating) {
  std::vector<Json> configs =
      lister("admissionregistration.k8s.io", "v1",
             mutating ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations", "");
  std::stable_sort(configs.begin(), configs.end(), [](const Json& a, const Json& b) {
    return Str(Field(a, "metadata"), "name") < Str(Field(b, "metadata"), "name");
  });
  std::vector<Hook> out;
  for (const Json& c : configs) {
    const Json& hooks = Field(c, "webhooks");
    if (!hooks.is_array()) continue;
    for (const Json& h : hooks) {
      if (h.is_object()) out.push_back({Str(Field(c, "metadata"), "name"), h});
    }
  }
  return out;
}

// A selector field of a webhook: null/absent is {} (kube-apiserver defaults it).
absl::StatusOr<api::Selector> HookSelector(const Json& hook, std::string_view key) {
  const Json& sel = Field(hook, key);
  if (sel.is_null()) return api::Selector::Everything();
  return api::Selector::FromJson(sel);
}

// ShouldCallHook: nullopt = skip; a status = answer it; true = call.
struct MatchOutcome {
  bool call = false;
  std::optional<ApiStatus> error;
};

MatchOutcome Match(const Hook& hook, const AdmissionAttributes& attrs, const Json& object,
                   const ObjectLister& lister) {
  MatchOutcome out;
  std::optional<ApiStatus> ns_error;
  // namespaceSelector
  bool ns_match = true;
  const std::string ns = AdmissionNamespace(attrs);
  const bool is_namespace = attrs.resource.group.empty() && attrs.resource.plural == "namespaces";
  if (!ns.empty() || is_namespace) {
    auto sel = HookSelector(hook.spec, "namespaceSelector");
    if (!sel.ok()) {
      ns_error = InternalErrorStatus(base::FromAbsl(sel.status().message()));
      ns_match = false;
    } else if (!sel->Empty()) {
      api::Labels labels;
      bool found = false;
      if (is_namespace && attrs.subresource.empty() &&
          (attrs.operation == AdmissionOperation::kCreate ||
           attrs.operation == AdmissionOperation::kUpdate)) {
        labels = api::LabelsOf(object);
        found = true;
      } else {
        for (const Json& n : lister("", "v1", "namespaces", "")) {
          if (Str(Field(n, "metadata"), "name") == ns) {
            labels = api::LabelsOf(n);
            found = true;
            break;
          }
        }
      }
      if (!found) {
        ns_error = NotFoundStatus("", "namespaces", ns);
        ns_match = false;
      } else {
        ns_match = sel->Matches(labels);
      }
    }
  }
  if (!ns_match && !ns_error) return out;
  // objectSelector
  auto osel = HookSelector(hook.spec, "objectSelector");
  std::optional<ApiStatus> obj_error;
  if (!osel.ok()) {
    obj_error = InternalErrorStatus(base::FromAbsl(osel.status().message()));
  } else if (!osel->Empty()) {
    auto matches = [&](const Json& o) { return o.is_object() && osel->Matches(api::LabelsOf(o)); };
    if (!matches(object) && !matches(attrs.old_object)) return out;
  }
  // rules
  bool rule_match = false;
  const Json& rules = Field(hook.spec, "rules");
  if (rules.is_array()) {
    for (const Json& r : rules) {
      if (WebhookRuleMatches(r, attrs)) {
        rule_match = true;
        break;
      }
    }
  }
  if (!rule_match) return out;
  if (ns_error) {
    out.error = ns_error;
    return out;
  }
  if (obj_error) {
    out.error = obj_error;
    return out;
  }
  out.call = true;
  return out;
}

// What calling one webhook produced.
struct CallOutcome {
  enum Kind { kAllowed, kRejected, kCallError, kError } kind = kAllowed;
  ApiStatus status;           // kRejected / kError
  std::string call_error;     // kCallError: the reason, after `failed calling webhook "x": `
  Json patch;                 // kAllowed from a mutating webhook: the JSON patch (or null)
};

CallOutcome CallError(std::string reason) {
  CallOutcome o;
  o.kind = CallOutcome::kCallError;
  o.call_error = std::move(reason);
  return o;
}

CallOutcome ErrorOutcome(ApiStatus s) {
  CallOutcome o;
  o.kind = CallOutcome::kError;
  o.status = std::move(s);
  return o;
}

// apimachinery's generic message for a non-2xx answer without a Status body.
std::string GenericServerMessage(int code, const std::string& body) {
  switch (code) {
    case 400: return "the server rejected our request for an unknown reason";
    case 401: return "Unauthorized";
    case 403: return "the server does not allow access to the requested resource";
    case 404: return "the server could not find the requested resource";
    case 409: return "the server reported a conflict";
    case 429: return "the server has received too many requests and has asked us to try again later";
    case 500: {
      std::string trimmed = body.substr(0, 256);
      return StrCat("an error on the server (", GoQuote(trimmed.empty() ? "unknown" : trimmed),
                    ") has prevented the request from succeeding");
    }
    case 503: return "the server is currently unable to handle the request";
    case 504: return "the server was unable to return a response in the time allotted, but may still be processing the request";
    default:
      return StrCat("the server responded with the status code ", code,
                    " but did not return more information");
  }
}

}  // namespace

WebhookAdmission::WebhookAdmission(WebhookAdmissionOptions options)
    : options_(std::move(options)) {
  if (!options_.service_resolver) {
    options_.service_resolver = ClusterServiceResolver(options_.lister);
  }
}

std::optional<ApiStatus> WebhookAdmission::Mutate(const AdmissionAttributes& attrs, Json* object) {
  return Run(true, attrs, object);
}

std::optional<ApiStatus> WebhookAdmission::Validate(const AdmissionAttributes& attrs,
                                                    const Json& object) {
  Json copy = object;
  return Run(false, attrs, &copy);
}

std::optional<ApiStatus> WebhookAdmission::Run(bool mutating, const AdmissionAttributes& attrs,
                                               Json* object) {
  if (!options_.lister || IsExemptAdmissionConfigurationResource(attrs.resource)) {
    return std::nullopt;
  }
  std::vector<Hook> hooks = LoadHooks(options_.lister, mutating);
  if (hooks.empty()) return std::nullopt;

  auto call = [this, mutating, &attrs](const Hook& hook, const Json& obj) -> CallOutcome {
    const Json& h = hook.spec;
    const std::string name = Str(h, "name");
    if (attrs.dry_run) {
      const Json& se = Field(h, "sideEffects");
      if (!se.is_string()) return CallError("Webhook SideEffects is nil");
      std::string s = se.get<std::string>();
      if (s != "None" && s != "NoneOnDryRun") {
        return ErrorOutcome(BadRequestStatus(
            StrCat("admission webhook ", GoQuote(name), " does not support dry run")));
      }
    }
    std::string version;
    for (const std::string& v : Strings(Field(h, "admissionReviewVersions"))) {
      if (v == "v1" || v == "v1beta1") {
        version = v;
        break;
      }
    }
    if (version.empty()) {
      return CallError(
          "could not create admission objects: webhook does not accept known AdmissionReview "
          "versions (v1, v1beta1)");
    }
    // Client configuration.
    const Json& cc = Field(h, "clientConfig");
    HttpsTarget target;
    std::string url_base;  // for messages: scheme://host[:port]path
    std::string service_ns, service_name;
    int service_port = 443;
    std::string ca_b64 = Str(cc, "caBundle");
    if (!ca_b64.empty()) {
      std::string pem;
      if (!absl::Base64Unescape(base::ToAbsl(ca_b64), &pem)) {
        return CallError("could not get REST client: illegal base64 data in caBundle");
      }
      target.ca_pem = pem;
    }
    const Json& svc = Field(cc, "service");
    std::string path;
    if (svc.is_object()) {
      service_ns = Str(svc, "namespace");
      service_name = Str(svc, "name");
      const Json& p = Field(svc, "port");
      if (p.is_number_integer() && p.get<int64_t>() > 0 && p.get<int64_t>() <= 65535) {
        service_port = static_cast<int>(p.get<int64_t>());
      }
      path = Str(svc, "path");
      target.server_name = StrCat(service_name, ".", service_ns, ".svc");
      target.host_header = JoinHostPort(target.server_name, service_port);
      url_base = StrCat("https://", target.host_header, path);
    } else {
      std::string url = Str(cc, "url");
      if (url.empty()) {
        return CallError(
            "could not get REST client: webhook configuration must have either service or URL");
      }
      if (url.rfind("https://", 0) != 0) {
        return CallError(StrCat("could not get REST client: Unparsable URL: ", GoQuote(url),
                                ": 'https' is the only allowed URL scheme"));
      }
      std::string rest = url.substr(8);
      size_t slash = rest.find('/');
      std::string hostport = rest.substr(0, slash);
      path = slash == std::string::npos ? "" : rest.substr(slash);
      size_t q = path.find_first_of("?#");
      if (q != std::string::npos) path = path.substr(0, q);
      std::string host;
      int port = 443;
      if (!SplitHostPort(hostport, &host, &port)) {
        host = hostport;
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
          host = host.substr(1, host.size() - 2);
        }
        port = 443;
      }
      if (host.empty()) {
        return CallError(StrCat("could not get REST client: Unparsable URL: ", GoQuote(url)));
      }
      target.dial_host = host;
      target.dial_port = port;
      target.server_name = host;
      target.host_header = hostport;
      url_base = StrCat("https://", hostport, path);
    }
    int timeout = kDefaultTimeoutSeconds;
    const Json& ts = Field(h, "timeoutSeconds");
    if (ts.is_number_integer()) {
      timeout = static_cast<int>(std::clamp<int64_t>(ts.get<int64_t>(), 1, kMaxTimeoutSeconds));
    }
    target.path_and_query = StrCat(path.empty() ? "/" : path, "?timeout=", timeout, "s");
    const std::string url_text = StrCat(url_base, "?timeout=", timeout, "s");
    const absl::Time deadline = absl::Now() + absl::Seconds(timeout);
    auto transport = [&](std::string_view err) {
      return CallError(StrCat("failed to call webhook: Post ", GoQuote(url_text), ": ", err));
    };
    if (svc.is_object()) {
      auto addr = options_.service_resolver(service_ns, service_name, service_port);
      if (!addr.ok()) return transport(base::FromAbsl(addr.status().message()));
      if (!SplitHostPort(*addr, &target.dial_host, &target.dial_port)) {
        return transport(StrCat("invalid resolved address ", GoQuote(*addr)));
      }
    }

    const std::string uid = NewUuid();
    Json review = BuildAdmissionReview(attrs, obj, uid, version);
    calls_.fetch_add(1);
    auto reply = HttpsPost(target, base::DumpJson(review), deadline);
    if (!reply.ok()) {
      if (absl::IsInvalidArgument(reply.status())) {  // CA bundle
        return CallError(
            StrCat("could not get REST client: ", base::FromAbsl(reply.status().message())));
      }
      return transport(base::FromAbsl(reply.status().message()));
    }
    if (reply->status < 200 || reply->status > 206) {
      auto parsed = base::ParseJson(reply->body);
      std::string msg;
      if (parsed.ok() && Str(*parsed, "kind") == "Status") msg = Str(*parsed, "message");
      if (msg.empty()) msg = GenericServerMessage(reply->status, reply->body);
      return CallError(StrCat("failed to call webhook: ", msg));
    }
    auto parsed = base::ParseJson(reply->body);
    if (!parsed.ok()) {
      return CallError(StrCat("failed to call webhook: ", base::FromAbsl(parsed.status().message())));
    }
    const Json& resp = Field(*parsed, "response");
    if (!parsed->is_object()) {
      return CallError("failed to call webhook: json: cannot unmarshal the response into an "
                       "AdmissionReview");
    }
    if (!resp.is_object()) return CallError("received invalid webhook response: webhook response was absent");
    const Json& allowed = Field(resp, "allowed");
    const Json& patch_type = Field(resp, "patchType");
    const Json& patch = Field(resp, "patch");
    if ((!allowed.is_null() && !allowed.is_boolean()) ||
        (!patch_type.is_null() && !patch_type.is_string()) ||
        (!patch.is_null() && !patch.is_string()) ||
        (!Field(resp, "uid").is_null() && !Field(resp, "uid").is_string())) {
      return CallError(
          "failed to call webhook: json: cannot unmarshal the response into an AdmissionReview");
    }
    std::string patch_bytes;
    if (patch.is_string() && !absl::Base64Unescape(base::ToAbsl(patch.get<std::string>()),
                                                   &patch_bytes)) {
      return CallError("failed to call webhook: illegal base64 data in response.patch");
    }
    std::string ptype = patch_type.is_string() ? patch_type.get<std::string>() : "";
    if (version == "v1") {
      std::string got_uid = Str(resp, "uid");
      if (got_uid != uid) {
        return CallError(StrCat("received invalid webhook response: expected response.uid=",
                                GoQuote(uid), ", got ", GoQuote(got_uid)));
      }
      std::string av = Str(*parsed, "apiVersion");
      std::string kind = Str(*parsed, "kind");
      if (av != "admission.k8s.io/v1" || kind != "AdmissionReview") {
        size_t slash = av.find('/');
        std::string gv = slash == std::string::npos ? StrCat("/", av) : av;
        return CallError(StrCat(
            "received invalid webhook response: expected webhook response of "
            "admission.k8s.io/v1, Kind=AdmissionReview, got ",
            gv, ", Kind=", kind));
      }
      if (mutating) {
        if (!patch_bytes.empty() && patch_type.is_null()) {
          return CallError("received invalid webhook response: webhook returned response.patch "
                           "but not response.patchType");
        }
        if (patch_bytes.empty() && !patch_type.is_null()) {
          return CallError("received invalid webhook response: webhook returned "
                           "response.patchType but not response.patch");
        }
        if (!patch_type.is_null() && ptype.empty()) {
          return CallError(StrCat("received invalid webhook response: webhook returned invalid "
                                  "response.patchType of ", GoQuote(ptype)));
        }
      } else {
        if (!patch_bytes.empty()) {
          return CallError("received invalid webhook response: validating webhook may not "
                           "return response.patch");
        }
        if (!patch_type.is_null()) {
          return CallError("received invalid webhook response: validating webhook may not "
                           "return response.patchType");
        }
      }
    } else if (mutating && !patch_bytes.empty()) {
      ptype = "JSONPatch";  // v1beta1 did not check the patch type
    }
    if (!allowed.is_boolean() || !allowed.get<bool>()) {
      CallOutcome o;
      o.kind = CallOutcome::kRejected;
      o.status = WebhookDeniedStatus(name, Field(resp, "status"));
      return o;
    }
    CallOutcome o;
    if (!mutating || patch_bytes.empty()) return o;
    auto p = base::ParseJson(patch_bytes);
    if (!p.ok() || !p->is_array()) {
      return CallError(StrCat("received undecodable patch in webhook response: ",
                              p.ok() ? "json: cannot unmarshal into a JSON patch"
                                     : base::FromAbsl(p.status().message())));
    }
    if (p->empty()) return o;
    if (ptype != "JSONPatch") {
      return CallError(StrCat("unsupported patch type ", GoQuote(ptype)));
    }
    o.patch = *std::move(p);
    return o;
  };

  auto failure = [](const Hook& hook, const CallOutcome& o) -> std::optional<ApiStatus> {
    const std::string name = Str(hook.spec, "name");
    switch (o.kind) {
      case CallOutcome::kAllowed:
        return std::nullopt;
      case CallOutcome::kRejected:
      case CallOutcome::kError:
        return o.status;
      case CallOutcome::kCallError:
        if (Str(hook.spec, "failurePolicy") == "Ignore") {
          SP_LOG(Warning)
              .Msg("Failed calling webhook, failing open")
              .KV("webhook", name)
              .KV("err", o.call_error);
          return std::nullopt;
        }
        SP_LOG(Warning)
            .Msg("Failed calling webhook, failing closed")
            .KV("webhook", name)
            .KV("err", o.call_error);
        return InternalErrorStatus(
            StrCat("failed calling webhook ", GoQuote(name), ": ", o.call_error));
    }
    return std::nullopt;
  };

  if (mutating) {
    for (const Hook& hook : hooks) {
      MatchOutcome m = Match(hook, attrs, *object, options_.lister);
      if (m.error) return m.error;
      if (!m.call) continue;
      CallOutcome o = call(hook, *object);
      if (auto err = failure(hook, o)) return err;
      if (o.patch.is_null()) continue;
      const std::string name = Str(hook.spec, "name");
      if (!object->is_object()) {
        return InternalErrorStatus(StrCat("admission webhook ", GoQuote(name),
                                          " attempted to modify the object, which is not "
                                          "supported for this operation"));
      }
      auto patched = base::ApplyJsonPatch(*object, o.patch);
      if (!patched.ok()) return InternalErrorStatus(base::FromAbsl(patched.status().message()));
      if (!patched->is_object()) {
        return InternalErrorStatus(
            StrCat("admission webhook ", GoQuote(name), " patched the object into a non-object"));
      }
      *object = *std::move(patched);
    }
    return std::nullopt;
  }

  // Validating: every matching webhook is called in parallel; the first failure in webhook
  // order is answered.
  std::vector<const Hook*> relevant;
  for (const Hook& hook : hooks) {
    MatchOutcome m = Match(hook, attrs, *object, options_.lister);
    if (m.error) return m.error;
    if (m.call) relevant.push_back(&hook);
  }
  if (relevant.empty()) return std::nullopt;
  std::vector<CallOutcome> outcomes(relevant.size());
  if (relevant.size() == 1) {
    outcomes[0] = call(*relevant[0], *object);
  } else {
    std::vector<std::jthread> threads;
    threads.reserve(relevant.size());
    for (size_t i = 0; i < relevant.size(); ++i) {
      threads.emplace_back([&, i] { outcomes[i] = call(*relevant[i], *object); });
    }
  }  // joined
  for (size_t i = 0; i < relevant.size(); ++i) {
    if (auto err = failure(*relevant[i], outcomes[i])) return err;
  }
  return std::nullopt;
}

}  // namespace spiderpool::kube::testing
