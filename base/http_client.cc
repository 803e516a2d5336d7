#include "base/http_client.h"

#include <unistd.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <limits>

#include <boost/asio/error.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/span_body.hpp>
#include <boost/beast/http/write.hpp>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "base/ip.h"
#include "base/strings.h"

namespace spiderpool::base {
namespace {

namespace http = boost::beast::http;
using Failure = HttpClientResult::Failure;

constexpr size_t kMaxHeader = 64 * 1024;
constexpr size_t kBodyPiece = 16 * 1024;

std::string HostHeader(const std::string& host, int port, bool tls) {
  const std::string h = host.find(':') != std::string::npos ? StrCat("[", host, "]") : host;
  if ((tls && port == 443) || (!tls && port == 80)) return h;
  return StrCat(h, ":", port);
}

}  // namespace

HttpConnection::HttpConnection(HttpConnectionOptions options) : options_(std::move(options)) {}

HttpConnection::~HttpConnection() = default;

int HttpConnection::fd() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stream_ == nullptr ? -1 : stream_->fd();
}

void HttpConnection::Cancel() {
  cancelled_.store(true);
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_ != nullptr) stream_->Cancel();
}

void HttpConnection::Close() {
  std::unique_ptr<SocketStream> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old.swap(stream_);
  }
  buffer_.clear();
}

HttpClientResult HttpConnection::Fail(Failure failure, const boost::beast::error_code& ec,
                                      std::string_view what) {
  HttpClientResult r;
  r.failure = cancelled_.load() || ec == boost::asio::error::operation_aborted ? Failure::kCanceled
                                                                               : failure;
  r.timed_out = ec == boost::asio::error::timed_out;
  r.error = StrCat(what, ": ", ec.message());
  Close();
  return r;
}

HttpClientResult HttpConnection::RoundTrip(const HttpClientRequest& request,
                                           const std::function<bool(int)>& on_status,
                                           const std::function<bool(std::string_view)>& on_body) {
  HttpClientResult out;
  if (cancelled_.load()) {
    out.failure = Failure::kCanceled;
    out.error = "cancelled";
    return out;
  }
  SocketStream* stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stream = stream_.get();
  }
  if (stream == nullptr) {
    absl::StatusOr<int> fd =
        ConnectTcp(options_.host, options_.port, options_.connect_timeout, &cancelled_);
    if (!fd.ok()) {
      out.failure = absl::IsCancelled(fd.status()) ? Failure::kCanceled : Failure::kConnect;
      out.timed_out = absl::IsDeadlineExceeded(fd.status());
      out.error = std::string(fd.status().message());
      return out;
    }
    SSL* ssl = nullptr;
    if (options_.tls != nullptr) {
      ssl = SSL_new(options_.tls);
      if (ssl == nullptr) {
        ::close(*fd);
        out.failure = Failure::kConnect;
        out.error = StrCat("SSL_new: ", OpenSslErrorText());
        return out;
      }
      SSL_set_connect_state(ssl);
      SSL_set_fd(ssl, *fd);
      if (options_.verify_host) {
        if (IPAddress::Parse(options_.host).ok()) {
          X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), options_.host.c_str());
        } else {
          SSL_set_tlsext_host_name(ssl, options_.host.c_str());
          SSL_set1_host(ssl, options_.host.c_str());
        }
      }
    }
    auto fresh = std::make_unique<SocketStream>(*fd, ssl);
    fresh->set_read_timeout(options_.read_timeout);
    fresh->set_write_timeout(options_.write_timeout);
    stream = fresh.get();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stream_ = std::move(fresh);
      if (cancelled_.load()) stream_->Cancel();  // Cancel() ran before the pointer was set
    }
    if (ssl != nullptr) {
      absl::Status hs = stream->Handshake(options_.connect_timeout, &out.verify_error);
      if (!hs.ok()) {
        out.failure = absl::IsCancelled(hs) || cancelled_.load() ? Failure::kCanceled
                                                                 : Failure::kConnect;
        out.timed_out = absl::IsDeadlineExceeded(hs);
        out.error = std::string(hs.message());
        Close();
        return out;
      }
    }
  }

  http::request<http::span_body<const char>> req;
  req.method_string(request.method);
  req.target(request.target);
  req.version(11);
  req.set(http::field::host, HostHeader(options_.host, options_.port, options_.tls != nullptr));
  for (const auto& [k, v] : request.headers) req.insert(k, v);
  req.body() = boost::beast::span<const char>(request.body.data(), request.body.size());
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    req.content_length(request.body.size());
  }
  req.keep_alive(request.keep_alive);
  boost::beast::error_code ec;
  http::write(*stream, req, ec);
  if (ec) return Fail(Failure::kWrite, ec, "writing the request");

  http::response_parser<http::buffer_body> parser;
  parser.header_limit(kMaxHeader);
  // No limit (a LIST may be large). Not boost::none: Boost 1.74 compares a Content-Length
  // with an empty optional as larger.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (request.method == "HEAD") parser.skip(true);
  http::read_header(*stream, buffer_, parser, ec);
  if (ec) return Fail(Failure::kRead, ec, "reading the response header");
  const auto& header = parser.get();
  out.status = static_cast<int>(header.result_int());
  for (const auto& field : header) {
    out.headers.emplace(absl::AsciiStrToLower(ToAbslView(field.name_string())),
                        std::string(field.value()));
  }
  if (on_status && !on_status(out.status)) {
    Close();
    out.failure = Failure::kCanceled;
    out.error = "stopped after the response header";
    return out;
  }
  char piece[kBodyPiece];
  while (!parser.is_done()) {
    parser.get().body().data = piece;
    parser.get().body().size = sizeof(piece);
    http::read_some(*stream, buffer_, parser, ec);  // returns with what arrived: a stream
    if (ec == http::error::need_buffer) ec = {};
    const size_t n = sizeof(piece) - parser.get().body().size;
    if (n > 0) {
      if (on_body) {
        if (!on_body(std::string_view(piece, n))) {
          Close();
          out.failure = Failure::kCanceled;
          out.error = "stopped while reading the body";
          return out;
        }
      } else {
        out.body.append(piece, n);
      }
    }
    if (ec) {
      HttpClientResult failed = Fail(Failure::kRead, ec, "reading the response body");
      failed.status = out.status;
      failed.headers = std::move(out.headers);
      failed.body = std::move(out.body);
      return failed;
    }
  }
  if (!request.keep_alive || !parser.keep_alive() || buffer_.size() != 0 || stream->Pending()) {
    Close();  // not reusable: closed by the server, or bytes nobody asked for
  }
  return out;
}

}  // namespace spiderpool::base
