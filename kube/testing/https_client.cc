#include "kube/testing/https_client.h"

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

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing {

using base::StrCat;

std::string JoinHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) return StrCat("[", host, "]:", port);
  return StrCat(host, ":", port);
}

namespace {

constexpr size_t kMaxResponseBytes = 32 << 20;

bool IsIp(std::string_view host) {
  unsigned char buf[16];
  std::string h(host);
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

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

// x509.HostnameError.Error().
std::string HostnameErrorText(X509* cert, const std::string& host) {
  if (IsIp(host)) {
    std::vector<std::string> ips = SubjectAltNames(cert, true);
    if (ips.empty()) {
      return StrCat("x509: cannot validate certificate for ", host,
                    " because it doesn't contain any IP SANs");
    }
    return StrCat("x509: certificate is valid for ", absl::StrJoin(ips, ", "), ", not ", host);
  }
  std::vector<std::string> dns = SubjectAltNames(cert, false);
  if (dns.empty()) {
    return StrCat("x509: certificate is not valid for any names, but wanted to match ", host);
  }
  return StrCat("x509: certificate is valid for ", absl::StrJoin(dns, ", "), ", not ", host);
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
    *err = absl::UnavailableError(StrCat("malformed HTTP response ", Quote(status_line)));
    return true;
  }
  int code = 0;
  for (char c : status_line.substr(sp + 1, 3)) {
    if (c < '0' || c > '9') {
      *err = absl::UnavailableError(StrCat("malformed HTTP status code ",
                                           Quote(status_line.substr(sp + 1, 3))));
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

}  // namespace spiderpool::kube::testing
