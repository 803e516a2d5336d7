#pragma once
// A socket for Boost.Beast's synchronous HTTP/1.1 parser and serializer, the transport of our
// HTTP client (kube/rest) and server (base/http_server.h).
//
// SocketStream owns a non-blocking file descriptor (TCP or unix) and, for TLS, an OpenSSL SSL*.
// Every read and write waits for the socket at most its timeout (poll), so a silent peer is a
// timed_out error, never a hang; Cancel() from any other thread shuts the socket down, and the
// read or write waiting on it ends with operation_aborted. Writes never raise SIGPIPE
// (MSG_NOSIGNAL; TLS writes block SIGPIPE around SSL_write).
//
// Why not cpp-httplib here: Debian ships it only as a shared library that loads libssl,
// libcrypto, zlib and brotli as shared objects, so no binary that links it can be static
// (bench/README.md "ipam_e2e", the agent's resident memory).
#include <openssl/ssl.h>

#include <atomic>
#include <cstddef>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace spiderpool::base {

class SocketStream {
 public:
  // Takes ownership of `fd` (made non-blocking here) and of `ssl` (null: plain).
  explicit SocketStream(int fd, SSL* ssl = nullptr);
  ~SocketStream();
  SocketStream(const SocketStream&) = delete;
  SocketStream& operator=(const SocketStream&) = delete;

  int fd() const { return fd_; }
  // How long one read or write waits for the socket; InfiniteDuration: no limit.
  void set_read_timeout(absl::Duration d) { read_timeout_ = d; }
  void set_write_timeout(absl::Duration d) { write_timeout_ = d; }

  // Any thread: ends the read or write in progress and every later one (operation_aborted).
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }

  // The TLS handshake, as client or server (as `ssl` was set up: SSL_set_connect_state or
  // SSL_set_accept_state, SNI, verification), at most `timeout`. On a failed certificate
  // verification *verify_error is OpenSSL's X509_V_ERR_*.
  absl::Status Handshake(absl::Duration timeout, long* verify_error);
  // Decrypted bytes TLS holds that no read has taken yet (poll() on the socket cannot see them).
  bool Pending() const { return ssl_ != nullptr && SSL_pending(ssl_) > 0; }

  // Beast's SyncReadStream and SyncWriteStream (the error_code forms are the ones used).
  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers, boost::beast::error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      boost::asio::mutable_buffer b(*it);
      if (b.size() > 0) return ReadSome(b.data(), b.size(), ec);
    }
    ec = {};
    return 0;
  }
  template <class ConstBuffers>
  size_t write_some(const ConstBuffers& buffers, boost::beast::error_code& ec) {
    Pieces pieces;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && pieces.n < Pieces::kMax; ++it) {
      boost::asio::const_buffer b(*it);
      if (b.size() > 0) pieces.Add(b.data(), b.size());
    }
    if (pieces.n == 0) {
      ec = {};
      return 0;
    }
    return WriteSome(pieces, ec);
  }
  // The throwing forms exist for Beast's stream concepts only: our code never calls them.
  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers) {
    boost::beast::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) Unreachable();
    return n;
  }
  template <class ConstBuffers>
  size_t write_some(const ConstBuffers& buffers) {
    boost::beast::error_code ec;
    size_t n = write_some(buffers, ec);
    if (ec) Unreachable();
    return n;
  }

 private:
  struct Pieces {
    static constexpr int kMax = 16;
    const void* data[kMax];
    size_t size[kMax];
    int n = 0;
    void Add(const void* d, size_t s) {
      data[n] = d;
      size[n] = s;
      ++n;
    }
  };
  [[noreturn]] static void Unreachable();
  size_t ReadSome(void* data, size_t size, boost::beast::error_code& ec);
  size_t WriteSome(const Pieces& pieces, boost::beast::error_code& ec);
  // What a TLS call that failed with SSL_get_error() `err` waits for before it is tried again:
  // POLLIN (WANT_READ) or POLLOUT (WANT_WRITE); 0: a failure, not a retry.
  static short TlsWantEvents(int err);
  // The error of an SSL_read/SSL_write that failed with `err` (not WANT_READ/WANT_WRITE).
  boost::beast::error_code TlsFailure(int err) const;
  // Waits until the socket is ready for `events` (POLLIN/POLLOUT); false with ec set when
  // `timeout` passed or Cancel() was called.
  bool Wait(short events, absl::Duration timeout, boost::beast::error_code& ec);

  const int fd_;
  SSL* const ssl_;
  absl::Duration read_timeout_ = absl::InfiniteDuration();
  absl::Duration write_timeout_ = absl::InfiniteDuration();
  std::atomic<bool> cancelled_{false};
};

// A non-blocking TCP connection to host:port (each address the resolver gives, in turn), with
// TCP_NODELAY, within `timeout` (DeadlineExceeded past it). `cancelled` (may be null) is
// checked while waiting: Cancelled once it is true.
absl::StatusOr<int> ConnectTcp(const std::string& host, int port, absl::Duration timeout,
                               const std::atomic<bool>* cancelled = nullptr);

// Beast's (Boost's) string_view as abseil's, for absl::AsciiStrToLower and friends.
inline absl::string_view ToAbslView(boost::beast::string_view s) { return {s.data(), s.size()}; }

// Text of OpenSSL's oldest queued error (and clears the queue).
std::string OpenSslErrorText();

}  // namespace spiderpool::base
