#include "agent/cni/agent_client.h"

#include <sys/socket.h>

#include <chrono>
#include <string>
#include <utility>

#include "agent/ipamapi/ipamapi.h"
#include "base/strings.h"
#include "httplib.h"

namespace spiderpool::agent::cni {

AgentClient::AgentClient(std::string socket_path, Clock::time_point deadline)
    : socket_path_(std::move(socket_path)), deadline_(deadline) {
  // ClientImpl (not Client): no scheme/host regex to build at start-up.
  cli_ = std::make_unique<httplib::ClientImpl>(socket_path_, 80);
  cli_->set_address_family(AF_UNIX);
  cli_->set_keep_alive(true);
  cli_->set_default_headers({{"Host", "localhost"}, {"Accept", "application/json"}});
}

AgentClient::~AgentClient() = default;

template <typename F>
AgentReply AgentClient::Call(std::string_view what, F&& send) {
  AgentReply out;
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline_ - Clock::now());
  if (left.count() <= 0) {
    out.failure = AgentReply::Failure::kTimeout;
    out.failure_text = base::StrCat(what, ": deadline exceeded before the request was sent");
    return out;
  }
  time_t sec = static_cast<time_t>(left.count() / 1000000);
  time_t usec = static_cast<time_t>(left.count() % 1000000);
  cli_->set_connection_timeout(sec, usec);
  cli_->set_read_timeout(sec, usec);
  cli_->set_write_timeout(sec, usec);
  httplib::Result res = send();
  if (!res) {
    httplib::Error err = res.error();
    bool expired = Clock::now() >= deadline_ - std::chrono::milliseconds(5);
    if (err == httplib::Error::ConnectionTimeout || expired) {
      out.failure = AgentReply::Failure::kTimeout;
      out.failure_text = base::StrCat(what, ": timed out talking to spiderpool-agent at unix:",
                                      socket_path_, " (", httplib::to_string(err), ")");
    } else if (err == httplib::Error::Connection) {
      out.failure = AgentReply::Failure::kConnect;
      out.failure_text = base::StrCat(what, ": cannot connect to spiderpool-agent at unix:",
                                      socket_path_, " (is spiderpool-agent running?)");
    } else {
      out.failure = AgentReply::Failure::kIO;
      out.failure_text = base::StrCat(what, ": ", httplib::to_string(err),
                                      " talking to spiderpool-agent at unix:", socket_path_);
    }
    return out;
  }
  out.status = res->status;
  out.body = std::move(res->body);
  return out;
}

AgentReply AgentClient::Get(std::string_view path) {
  std::string p(path);
  return Call(base::StrCat("GET ", path), [&] { return cli_->Get(p.c_str()); });
}

AgentReply AgentClient::Post(std::string_view path, const std::string& body) {
  std::string p(path);
  return Call(base::StrCat("POST ", path), [&] {
    return cli_->Post(p.c_str(), body, std::string(ipamapi::kContentType).c_str());
  });
}

AgentReply AgentClient::Delete(std::string_view path, const std::string& body) {
  std::string p(path);
  return Call(base::StrCat("DELETE ", path), [&] {
    return cli_->Delete(p.c_str(), body, std::string(ipamapi::kContentType).c_str());
  });
}

}  // namespace spiderpool::agent::cni
