#include "agent/cni/agent_client.h"

#include <sys/un.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <string>
#include <utility>

#include "agent/ipamapi/ipamapi.h"
#include "base/strings.h"

namespace spiderpool::agent::cni {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Local = asio::local::stream_protocol;
using Stream = beast::basic_stream<Local>;

}  // namespace

AgentClient::AgentClient(std::string socket_path, Clock::time_point deadline)
    : socket_path_(std::move(socket_path)), deadline_(deadline) {}

// One connection per request (a unix socket connects in microseconds), every step bounded by
// the plugin's one deadline: connect, write and read run as asynchronous operations on a
// basic_stream whose timer expires at the deadline.
AgentReply AgentClient::Call(http::verb verb, std::string_view path, const std::string* body) {
  const auto verb_name = http::to_string(verb);
  const std::string what =
      base::StrCat(std::string_view(verb_name.data(), verb_name.size()), " ", path);
  AgentReply out;
  if (Clock::now() >= deadline_) {
    out.failure = AgentReply::Failure::kTimeout;
    out.failure_text = base::StrCat(what, ": deadline exceeded before the request was sent");
    return out;
  }
  if (socket_path_.size() >= sizeof(sockaddr_un{}.sun_path)) {
    out.failure = AgentReply::Failure::kConnect;
    out.failure_text = base::StrCat(what, ": unix socket path is too long (",
                                    socket_path_.size(), " bytes): ", socket_path_);
    return out;
  }
  http::request<http::string_body> req{verb, std::string(path), 11};
  req.set(http::field::host, "localhost");
  req.set(http::field::accept, "application/json");
  req.set(http::field::connection, "close");
  if (body != nullptr) {
    req.set(http::field::content_type, std::string(ipamapi::kContentType));
    req.body() = *body;
  }
  req.prepare_payload();

  asio::io_context ioc;
  Stream stream(ioc);
  stream.expires_at(deadline_);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  enum class Stage { kConnect, kWrite, kRead } stage = Stage::kConnect;
  beast::error_code result;
  stream.async_connect(Local::endpoint(socket_path_), [&](beast::error_code ec) {
    if (ec) {
      result = ec;
      return;
    }
    stage = Stage::kWrite;
    http::async_write(stream, req, [&](beast::error_code ec, size_t) {
      if (ec) {
        result = ec;
        return;
      }
      stage = Stage::kRead;
      http::async_read(stream, buffer, res, [&](beast::error_code ec, size_t) { result = ec; });
    });
  });
  ioc.run();
  if (result) {
    const bool expired = result == beast::error::timeout ||
                         Clock::now() >= deadline_ - std::chrono::milliseconds(5);
    if (expired) {
      out.failure = AgentReply::Failure::kTimeout;
      out.failure_text = base::StrCat(what, ": timed out talking to spiderpool-agent at unix:",
                                      socket_path_, " (", result.message(), ")");
    } else if (stage == Stage::kConnect) {
      out.failure = AgentReply::Failure::kConnect;
      out.failure_text = base::StrCat(what, ": cannot connect to spiderpool-agent at unix:",
                                      socket_path_, " (", result.message(),
                                      "; is spiderpool-agent running?)");
    } else {
      out.failure = AgentReply::Failure::kIO;
      out.failure_text = base::StrCat(what, ": ", result.message(),
                                      " talking to spiderpool-agent at unix:", socket_path_);
    }
    return out;
  }
  out.status = static_cast<int>(res.result_int());
  out.body = std::move(res.body());
  return out;
}

AgentReply AgentClient::Get(std::string_view path) { return Call(http::verb::get, path, nullptr); }

AgentReply AgentClient::Post(std::string_view path, const std::string& body) {
  return Call(http::verb::post, path, &body);
}

AgentReply AgentClient::Delete(std::string_view path, const std::string& body) {
  return Call(http::verb::delete_, path, &body);
}

}  // namespace spiderpool::agent::cni
