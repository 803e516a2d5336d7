#pragma once
// A plain-HTTP httplib server on 127.0.0.1:<free port> for unit tests of the REST client:
// register handlers on server(), point a Config at url(). Handlers that block (e.g. a watch
// that never ends) should wait on WaitForShutdown(), which returns when the fixture is being
// destroyed.

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "base/sigpipe.h"
#include "base/strings.h"
#include "httplib.h"

namespace spiderpool::kube::testing {

class FakeHttpServer {
 public:
  FakeHttpServer() {
    server_.set_tcp_nodelay(true);
    // kube-apiserver (Go's net/http) serves any number of requests on a kept-alive connection;
    // httplib closes one after 5 by default.
    server_.set_keep_alive_max_count(100000);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] {
      base::BlockSigpipeOnThisThread();  // inherited by httplib's workers
      server_.listen_after_bind();
    });
    // stop() before the accept loop runs would be lost (httplib ignores it): wait for it.
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~FakeHttpServer() { Shutdown(); }
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  httplib::Server& server() { return server_; }
  int port() const { return port_; }
  std::string url() const { return base::StrCat("http://127.0.0.1:", port_); }

  // Blocks a handler until Shutdown() (or `timeout`); returns true on shutdown.
  bool WaitForShutdown(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return shutting_down_; });
  }

  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutting_down_) return;
      shutting_down_ = true;
    }
    cv_.notify_all();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool shutting_down_ = false;
};

}  // namespace spiderpool::kube::testing
