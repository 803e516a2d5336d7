#pragma once
// A fake spiderpool-agent for the plugin's tests: cpp-httplib on a unix socket, serving
// GET /v1/ipam/healthy and POST/DELETE /v1/ipam/ip with configurable answers, recording every
// request.

#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "httplib.h"

namespace spiderpool::agent::cni {

struct Recorded {
  std::string method;
  std::string path;
  std::string body;
};

// A fake agent. Each endpoint answers with a configurable status and body; `block_post`
// makes POST/DELETE wait until the test ends (for timeouts).
class FakeAgent {
 public:
  explicit FakeAgent(const std::string& socket_path) : socket_path_(socket_path) {
    svr_.set_address_family(AF_UNIX);
    svr_.Get("/v1/ipam/healthy", [this](const httplib::Request& req, httplib::Response& res) {
      Record(req);
      std::lock_guard<std::mutex> l(mu_);
      res.status = healthy_status;
    });
    svr_.Post("/v1/ipam/ip", [this](const httplib::Request& req, httplib::Response& res) {
      Record(req);
      Answer(post_status, post_body, res);
    });
    svr_.Delete("/v1/ipam/ip", [this](const httplib::Request& req, httplib::Response& res) {
      Record(req);
      Answer(del_status, del_body, res);
    });
    unlink(socket_path_.c_str());
    EXPECT_TRUE(svr_.bind_to_port(socket_path_.c_str(), 80));
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs: wait for it (connections made before
    // that already queue in the listen backlog, so this is only about shutdown).
    while (!svr_.is_running()) std::this_thread::yield();
  }
  ~FakeAgent() {
    {
      std::lock_guard<std::mutex> l(mu_);
      released_ = true;
    }
    cv_.notify_all();
    svr_.stop();
    thread_.join();
    unlink(socket_path_.c_str());
  }
  std::vector<Recorded> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

  // Configuration (set before running the plugin).
  int healthy_status = 200;
  int post_status = 200;
  std::string post_body;
  int del_status = 200;
  std::string del_body;
  bool block = false;

 private:
  void Record(const httplib::Request& req) {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back({req.method, req.path, req.body});
  }
  void Answer(int status, const std::string& body, httplib::Response& res) {
    std::unique_lock<std::mutex> l(mu_);
    if (block) cv_.wait(l, [this] { return released_; });
    res.status = status;
    if (!body.empty()) res.set_content(body, "application/json");
  }

  std::string socket_path_;
  httplib::Server svr_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<Recorded> requests_;
};

}  // namespace spiderpool::agent::cni
