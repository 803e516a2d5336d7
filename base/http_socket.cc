#include "base/http_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <boost/asio/error.hpp>

#include "base/sigpipe.h"
#include "base/strings.h"

namespace spiderpool::base {
namespace {

namespace aerr = boost::asio::error;

void SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// poll() with a deadline (InfiniteFuture: none), resumed after EINTR; 0 on timeout.
int PollUntil(pollfd* p, nfds_t n, absl::Time deadline) {
  while (true) {
    int ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return 0;
      ms = static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(absl::Ceil(
                                                  left, absl::Milliseconds(1))),
                                              1 << 30));
    }
    const int r = ::poll(p, n, ms);
    if (r >= 0 || errno != EINTR) return r;
  }
}

absl::Time DeadlineAfter(absl::Duration timeout) {
  return timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
}

}  // namespace

std::string OpenSslErrorText() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

SocketStream::SocketStream(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) { SetNonBlocking(fd_); }

SocketStream::~SocketStream() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ::close(fd_);
}

void SocketStream::Unreachable() { std::abort(); }

void SocketStream::Cancel() {
  cancelled_.store(true);
  ::shutdown(fd_, SHUT_RDWR);  // wakes a poll() on fd_ in another thread
}

short SocketStream::TlsWantEvents(int err) {
  if (err == SSL_ERROR_WANT_READ) return POLLIN;
  if (err == SSL_ERROR_WANT_WRITE) return POLLOUT;
  return 0;
}

boost::beast::error_code SocketStream::TlsFailure(int err) const {
  if (cancelled_.load()) return aerr::operation_aborted;
  if (err == SSL_ERROR_ZERO_RETURN) return aerr::eof;
  if (err == SSL_ERROR_SYSCALL && errno != 0) {
    return boost::beast::error_code(errno, boost::system::system_category());
  }
  ERR_clear_error();
  return aerr::connection_reset;  // a broken TLS record stream
}

bool SocketStream::Wait(short events, absl::Duration timeout, boost::beast::error_code& ec) {
  if (cancelled_.load()) {
    ec = aerr::operation_aborted;
    return false;
  }
  pollfd p{.fd = fd_, .events = events, .revents = 0};
  const int r = PollUntil(&p, 1, DeadlineAfter(timeout));
  if (cancelled_.load()) {
    ec = aerr::operation_aborted;
    return false;
  }
  if (r == 0) {
    ec = aerr::timed_out;
    return false;
  }
  if (r < 0) {
    ec = boost::beast::error_code(errno, boost::system::system_category());
    return false;
  }
  return true;  // ready, or an error/hangup the next call reports
}

size_t SocketStream::ReadSome(void* data, size_t size, boost::beast::error_code& ec) {
  const int chunk = static_cast<int>(std::min<size_t>(size, 1 << 30));
  while (true) {
    if (cancelled_.load()) {
      ec = aerr::operation_aborted;
      return 0;
    }
    short wait_for = POLLIN;
    if (ssl_ == nullptr) {
      const ssize_t n = ::recv(fd_, data, static_cast<size_t>(chunk), 0);
      if (n > 0) {
        ec = {};
        return static_cast<size_t>(n);
      }
      if (n == 0) {
        if (cancelled_.load()) {
          ec = aerr::operation_aborted;
        } else {
          ec = aerr::eof;
        }
        return 0;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        ec = boost::beast::error_code(errno, boost::system::system_category());
        return 0;
      }
    } else {
      ERR_clear_error();
      size_t n = 0;
      if (SSL_read_ex(ssl_, data, static_cast<size_t>(chunk), &n) == 1) {
        ec = {};
        return n;
      }
      const int err = SSL_get_error(ssl_, 0);
      wait_for = TlsWantEvents(err);
      if (wait_for == 0) {
        ec = TlsFailure(err);
        return 0;
      }
    }
    if (!Wait(wait_for, read_timeout_, ec)) return 0;
  }
}

size_t SocketStream::WriteSome(const Pieces& pieces, boost::beast::error_code& ec) {
  while (true) {
    if (cancelled_.load()) {
      ec = aerr::operation_aborted;
      return 0;
    }
    short wait_for = POLLOUT;
    if (ssl_ == nullptr) {
      iovec iov[Pieces::kMax];
      for (int i = 0; i < pieces.n; ++i) {
        iov[i].iov_base = const_cast<void*>(pieces.data[i]);
        iov[i].iov_len = pieces.size[i];
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(pieces.n);
      const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n >= 0) {
        ec = {};
        return static_cast<size_t>(n);
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        ec = cancelled_.load() ? boost::beast::error_code(aerr::operation_aborted)
                               : boost::beast::error_code(errno, boost::system::system_category());
        return 0;
      }
    } else {
      // One TLS record per piece: the HTTP serializer hands over headers and body apart.
      ERR_clear_error();
      size_t n = 0;
      int ok;
      {
        ScopedSigpipeBlock no_sigpipe;  // the socket BIO writes with write(2)
        ok = SSL_write_ex(ssl_, pieces.data[0], pieces.size[0], &n);
      }
      if (ok == 1) {
        ec = {};
        return n;
      }
      const int err = SSL_get_error(ssl_, 0);
      wait_for = TlsWantEvents(err);
      if (wait_for == 0) {
        ec = TlsFailure(err);
        return 0;
      }
    }
    if (!Wait(wait_for, write_timeout_, ec)) return 0;
  }
}

absl::Status SocketStream::Handshake(absl::Duration timeout, long* verify_error) {
  *verify_error = X509_V_OK;
  if (ssl_ == nullptr) return absl::FailedPreconditionError("TLS handshake on a plain socket");
  const bool client = SSL_is_server(ssl_) == 0;
  const absl::Time deadline = DeadlineAfter(timeout);
  while (true) {
    ERR_clear_error();
    int r;
    {
      ScopedSigpipeBlock no_sigpipe;
      r = SSL_do_handshake(ssl_);
    }
    if (r == 1) return absl::OkStatus();
    const int err = SSL_get_error(ssl_, r);
    const short want = TlsWantEvents(err);
    if (want == 0) {
      if (cancelled_.load()) return absl::CancelledError("TLS handshake cancelled");
      const long v = client ? SSL_get_verify_result(ssl_) : X509_V_OK;
      if (v != X509_V_OK) {
        *verify_error = v;
        ERR_clear_error();
        return absl::FailedPreconditionError(StrCat(
            "TLS verification of the server certificate failed: ",
            X509_verify_cert_error_string(v)));
      }
      if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
        return absl::UnavailableError(StrCat(
            "TLS handshake: ", errno != 0 ? std::strerror(errno) : "connection closed by peer"));
      }
      return absl::UnavailableError(StrCat("TLS handshake: ", OpenSslErrorText()));
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) return absl::DeadlineExceededError("TLS handshake timed out");
    boost::beast::error_code ec;
    if (!Wait(want, deadline - now, ec)) {
      if (ec == aerr::operation_aborted) return absl::CancelledError("TLS handshake cancelled");
      return absl::DeadlineExceededError("TLS handshake timed out");
    }
  }
}

absl::StatusOr<int> ConnectTcp(const std::string& host, int port, absl::Duration timeout,
                               const std::atomic<bool>* cancelled) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0) {
    return absl::UnavailableError(StrCat("resolving ", host, ": ", ::gai_strerror(rc)));
  }
  const absl::Time deadline = DeadlineAfter(timeout);
  std::string last_error = "no address";
  bool timed_out = false;
  int result = -1;
  for (addrinfo* ai = list; ai != nullptr && result < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                            ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      // Waits in slices so that a cancellation is seen while the peer does not answer.
      while (true) {
        if (cancelled != nullptr && cancelled->load()) {
          ::close(fd);
          ::freeaddrinfo(list);
          return absl::CancelledError("connect cancelled");
        }
        const absl::Time slice = std::min(deadline, absl::Now() + absl::Milliseconds(50));
        pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
        const int r = PollUntil(&p, 1, slice);
        if (r > 0) {
          int so_error = 0;
          socklen_t len = sizeof(so_error);
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
          rc = so_error == 0 ? 0 : -1;
          errno = so_error;
          break;
        }
        if (r < 0 || absl::Now() >= deadline) {
          rc = -1;
          errno = r < 0 ? errno : ETIMEDOUT;
          timed_out = r == 0;
          break;
        }
      }
    }
    if (rc != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      if (timed_out) break;
      continue;
    }
    const int one = 1;
    if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) {
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    result = fd;
  }
  ::freeaddrinfo(list);
  if (result >= 0) return result;
  const std::string what = StrCat("connecting to ", host, ":", port, ": ", last_error);
  return timed_out ? absl::DeadlineExceededError(what) : absl::UnavailableError(what);
}

}  // namespace spiderpool::base
