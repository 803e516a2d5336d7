#pragma once
// A tiny HTTPS client for tests of the loopback API server (and of anything else that speaks
// the Kubernetes REST dialect): trusts the server's CA, sends a bearer token, parses JSON, and
// reads watch streams on a background thread.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "base/json.h"
#include "httplib.h"

namespace spiderpool::kube::testing {

class LoopbackApiServer;

struct HttpResult {
  int status = 0;  // 0 = transport error
  std::string raw;
  base::Json body;  // parsed `raw` (null if not JSON)
  httplib::Headers headers;
  std::string error;  // transport error text
  std::string Header(const std::string& key) const;
};

class TestClient {
 public:
  explicit TestClient(const LoopbackApiServer& server);
  TestClient(std::string host, int port, std::string ca_pem, std::string token);

  void set_token(std::string token) { token_ = std::move(token); }
  // Client certificate instead of / in addition to the token.
  void set_client_cert(std::string cert_pem, std::string key_pem);
  // How long a request waits for its answer before the client gives up and closes the
  // connection (default 30 s).
  void set_read_timeout(absl::Duration timeout) { read_timeout_ = timeout; }

  HttpResult Get(const std::string& path) const;
  HttpResult Post(const std::string& path, const base::Json& body) const;
  HttpResult Put(const std::string& path, const base::Json& body) const;
  HttpResult Patch(const std::string& path, const base::Json& body,
                   const std::string& content_type = "application/merge-patch+json") const;
  HttpResult Delete(const std::string& path, const base::Json& body = nullptr) const;
  HttpResult Request(const std::string& method, const std::string& path, const std::string& body,
                     const std::string& content_type) const;

  std::unique_ptr<httplib::SSLClient> NewClient() const;

 private:
  std::string host_;
  int port_;
  std::string ca_pem_;
  std::string token_;
  std::string cert_pem_, key_pem_;
  absl::Duration read_timeout_ = absl::Seconds(30);
};

// Reads one watch stream (GET path with ?watch=true...) on a background thread.
class WatchReader {
 public:
  WatchReader(const TestClient& client, const std::string& path);
  ~WatchReader();  // aborts the stream and joins

  // The next event, waiting up to `timeout`; nullopt on timeout or when the stream ended.
  std::optional<base::Json> Next(absl::Duration timeout = absl::Seconds(10));
  // Waits for the next event that is not a BOOKMARK.
  std::optional<base::Json> NextNonBookmark(absl::Duration timeout = absl::Seconds(10));
  // True once the server ended the stream (after all queued events were taken or not).
  bool WaitEnded(absl::Duration timeout = absl::Seconds(10));
  int status() const;

 private:
  std::unique_ptr<httplib::SSLClient> cli_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<base::Json> events_;  // guarded by mu_
  std::string partial_;            // guarded by mu_
  bool ended_ = false;             // guarded by mu_
  int status_ = 0;                 // guarded by mu_
  std::thread thread_;
};

}  // namespace spiderpool::kube::testing
