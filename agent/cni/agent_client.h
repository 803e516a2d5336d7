#pragma once
// A tiny HTTP/JSON client for the agent's unix socket (agent/ipamapi), bounded by one deadline
// for the whole plugin invocation: every request gets the time that is left. Boost.Beast over an
// Asio local socket (header-only): the plugin maps no TLS, compression or HTTP library.

#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <string>
#include <string_view>

namespace spiderpool::agent::cni {

struct AgentReply {
  enum class Failure { kNone, kConnect, kTimeout, kIO };
  Failure failure = Failure::kNone;
  std::string failure_text;  // when failure != kNone
  int status = 0;
  std::string body;
  bool ok() const { return failure == Failure::kNone; }
};

class AgentClient {
 public:
  using Clock = std::chrono::steady_clock;
  AgentClient(std::string socket_path, Clock::time_point deadline);

  AgentReply Get(std::string_view path);
  AgentReply Post(std::string_view path, const std::string& body);
  AgentReply Delete(std::string_view path, const std::string& body);

  const std::string& socket_path() const { return socket_path_; }

 private:
  AgentReply Call(boost::beast::http::verb verb, std::string_view path, const std::string* body);

  std::string socket_path_;
  Clock::time_point deadline_;
};

}  // namespace spiderpool::agent::cni
