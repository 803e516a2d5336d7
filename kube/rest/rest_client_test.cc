#include "kube/rest/rest_client.h"

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/certs.h"
#include "base/sigpipe.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "kube/rest/testing/fake_http_server.h"

namespace spiderpool::kube {
namespace {

using testing::FakeHttpServer;

const api::ResourceInfo kPods{.group = "", .version = "v1", .kind = "Pod", .plural = "pods",
                              .singular = "pod", .namespaced = true};
const api::ResourceInfo kPools{.group = "spiderpool.spidernet.io", .version = "v2beta1",
                               .kind = "SpiderIPPool", .plural = "spiderippools",
                               .singular = "spiderippool", .namespaced = false};

Config TestConfig(const FakeHttpServer& s) {
  Config c;
  c.server = s.url();
  c.qps = -1;  // unlimited unless a test says otherwise
  c.bearer_token = "secret";
  c.timeout = absl::Seconds(10);
  return c;
}

std::shared_ptr<RestClient> MustCreate(Config c) {
  absl::StatusOr<std::shared_ptr<RestClient>> r = RestClient::Create(std::move(c));
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

std::string StatusBody(int code, std::string_view reason, std::string_view message) {
  return base::StrCat(R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)",
                      R"("message":")", message, R"(","reason":")", reason, R"(","code":)", code,
                      "}");
}

TEST(PathTest, ResourcePaths) {
  EXPECT_EQ(ResourcePath(kPods, "default"), "/api/v1/namespaces/default/pods");
  EXPECT_EQ(ResourcePath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(ResourcePath(kPods, "ns", "p1", "status"), "/api/v1/namespaces/ns/pods/p1/status");
  EXPECT_EQ(ResourcePath(kPools, "ignored", "pool-a"),
            "/apis/spiderpool.spidernet.io/v2beta1/spiderippools/pool-a");
  EXPECT_EQ(EscapeComponent("app=web,tier!=db x"), "app%3Dweb%2Ctier%21%3Ddb%20x");
}

TEST(RestClientTest, GetSendsHeadersAndEscapedQuery) {
  FakeHttpServer s;
  std::string auth, agent, accept, selector, raw_target;
  s.server().Get("/api/v1/namespaces/default/pods", [&](const httplib::Request& req,
                                                        httplib::Response& res) {
    auth = req.get_header_value("Authorization");
    agent = req.get_header_value("User-Agent");
    accept = req.get_header_value("Accept");
    selector = req.get_param_value("labelSelector");
    raw_target = req.target;
    res.set_content(R"({"kind":"PodList","items":[]})", "application/json");
  });
  auto client = MustCreate(TestConfig(s));
  Request r;
  r.path = ResourcePath(kPods, "default");
  r.query = {{"labelSelector", "app in (a,b),!legacy"}};
  absl::StatusOr<Response> resp = client->Do(r);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->code, 200);
  EXPECT_EQ(resp->body, R"({"kind":"PodList","items":[]})");
  EXPECT_EQ(resp->Header("content-TYPE"), "application/json");
  EXPECT_EQ(auth, "Bearer secret");
  EXPECT_EQ(agent, "spiderpool/v1");
  EXPECT_EQ(accept, "application/json");
  EXPECT_EQ(selector, "app in (a,b),!legacy");
  // The client's timeout goes along (client-go's `timeout`): the server gives up when we do.
  EXPECT_EQ(raw_target,
            "/api/v1/namespaces/default/pods?labelSelector=app%20in%20%28a%2Cb%29%2C%21legacy"
            "&timeout=10s");
}

TEST(RestClientTest, ServerBasePathIsPrefixed) {
  FakeHttpServer s;
  s.server().Get("/prefix/version", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"major":"1"})", "application/json");
  });
  Config c = TestConfig(s);
  c.server += "/prefix/";
  auto client = MustCreate(c);
  absl::StatusOr<Response> resp = client->Do({.path = "/version"});
  ASSERT_TRUE(resp.ok()) << resp.status();
}

TEST(RestClientTest, PostBodyAndContentType) {
  FakeHttpServer s;
  std::string body, type;
  s.server().Patch("/x", [&](const httplib::Request& req, httplib::Response& res) {
    body = req.body;
    type = req.get_header_value("Content-Type");
    res.status = 201;
    res.set_content("{}", "application/json");
  });
  auto client = MustCreate(TestConfig(s));
  absl::StatusOr<Response> resp =
      client->Do({.method = "PATCH", .path = "/x", .body = R"({"a":1})",
                  .content_type = "application/merge-patch+json"});
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->code, 201);
  EXPECT_EQ(body, R"({"a":1})");
  EXPECT_EQ(type, "application/merge-patch+json");
}

TEST(RestClientTest, ErrorAnswersBecomeApiErrors) {
  FakeHttpServer s;
  s.server().Get("/api/v1/namespaces/default/pods/p1",
                 [&](const httplib::Request&, httplib::Response& res) {
                   res.status = 404;
                   res.set_content(StatusBody(404, "NotFound", "pods \\\"p1\\\" not found"),
                                   "application/json");
                 });
  auto client = MustCreate(TestConfig(s));
  absl::StatusOr<Response> resp = client->Do({.path = ResourcePath(kPods, "default", "p1")});
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(kube::IsNotFound(resp.status()));
  EXPECT_EQ(resp.status().message(), "pods \"p1\" not found");
  EXPECT_EQ(HttpCode(resp.status()), 404);

  absl::StatusOr<Response> raw = client->DoRaw({.path = ResourcePath(kPods, "default", "p1")});
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->code, 404);
}

TEST(RestClientTest, TooManyRequestsHonoursRetryAfter) {
  FakeHttpServer s;
  std::atomic<int> hits{0};
  s.server().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    if (++hits <= 2) {
      res.status = 429;
      res.set_header("Retry-After", "2");
      res.set_content(StatusBody(429, "TooManyRequests", "slow down"), "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  base::SimulatedClock clock;
  Config c = TestConfig(s);
  c.clock = &clock;
  auto client = MustCreate(c);
  absl::Time start = clock.Now();
  auto result = std::async(std::launch::async, [&] { return client->Do({.path = "/x"}); });
  ASSERT_TRUE(clock.WaitForSleepers(1));
  // The first answer was a 429: the client waits on the clock before the retry.
  EXPECT_EQ(hits.load(), 1);
  EXPECT_NE(result.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  clock.Advance(absl::Seconds(2));
  ASSERT_TRUE(clock.WaitForSleepers(1));
  clock.Advance(absl::Seconds(2));
  absl::StatusOr<Response> resp = result.get();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(hits.load(), 3);
  EXPECT_GE(clock.Now() - start, absl::Seconds(4));
  EXPECT_EQ(client->stats().retries, 2u);
}

TEST(RestClientTest, ServerErrorWithoutRetryAfterIsNotRetried) {
  FakeHttpServer s;
  std::atomic<int> hits{0};
  s.server().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 500;
    res.set_content(StatusBody(500, "InternalError", "boom"), "application/json");
  });
  auto client = MustCreate(TestConfig(s));
  absl::StatusOr<Response> resp = client->Do({.path = "/x"});
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(kube::IsServerError(resp.status()));
  EXPECT_EQ(hits.load(), 1);
}

TEST(RestClientTest, RetriesAreBounded) {
  FakeHttpServer s;
  std::atomic<int> hits{0};
  s.server().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.status = 503;
    res.set_header("Retry-After", "0");
    res.set_content(StatusBody(503, "ServiceUnavailable", "later"), "application/json");
  });
  Config c = TestConfig(s);
  c.max_retries = 3;
  auto client = MustCreate(c);
  absl::StatusOr<Response> resp = client->Do({.path = "/x"});
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(kube::IsServerError(resp.status()));
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(hits.load(), 4);
}

TEST(RestClientTest, RateLimiterSpacesRequests) {
  FakeHttpServer s;
  s.server().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  base::SimulatedClock clock;
  Config c = TestConfig(s);
  c.clock = &clock;
  c.qps = 5;
  c.burst = 2;
  auto client = MustCreate(c);
  absl::Time start = clock.Now();
  std::atomic<bool> done{false};
  std::jthread advancer([&](std::stop_token st) {
    while (!st.stop_requested() && !done) {
      if (clock.WaitForSleepers(1, absl::Milliseconds(5))) clock.Advance(absl::Milliseconds(10));
    }
  });
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(client->Do({.path = "/x"}).ok());
  done = true;
  // 2 from the burst, then 5 more at 5/s.
  EXPECT_GE(clock.Now() - start, absl::Seconds(1));
  EXPECT_EQ(client->stats().throttled, 5u);
  EXPECT_EQ(client->stats().requests, 7u);
}

TEST(RestClientTest, TokenFileIsReReadPeriodicallyAndAfter401) {
  FakeHttpServer s;
  std::mutex mu;
  std::string accepted = "Bearer t1";
  std::vector<std::string> seen;
  s.server().Get("/x", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(req.get_header_value("Authorization"));
    if (seen.back() != accepted) {
      res.status = 401;
      res.set_content(StatusBody(401, "Unauthorized", "Unauthorized"), "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  base::testing::TempDir dir("kube-token");
  std::string token_file = dir.Join("token");
  std::ofstream(token_file) << "t1\n";
  base::SimulatedClock clock;
  Config c = TestConfig(s);
  c.clock = &clock;
  c.bearer_token = "fallback";
  c.bearer_token_file = token_file;
  auto client = MustCreate(c);
  ASSERT_TRUE(client->Do({.path = "/x"}).ok());

  // Rotation: the server accepts only t2 now, the file says t2. Within the refresh period the
  // cached t1 is sent, the 401 forces a re-read and the request succeeds.
  std::ofstream(token_file) << "t2";
  {
    std::lock_guard<std::mutex> lock(mu);
    accepted = "Bearer t2";
  }
  ASSERT_TRUE(client->Do({.path = "/x"}).ok());
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[1], "Bearer t1");
    EXPECT_EQ(seen[2], "Bearer t2");
  }
  // Periodic refresh: after the period the new token is used without a 401 first.
  std::ofstream(token_file) << "t3";
  {
    std::lock_guard<std::mutex> lock(mu);
    accepted = "Bearer t3";
  }
  clock.Advance(absl::Minutes(1));
  ASSERT_TRUE(client->Do({.path = "/x"}).ok());
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(seen.size(), 4u);
    EXPECT_EQ(seen[3], "Bearer t3");
  }
  // A token that stays wrong: one forced re-read, then the 401 surfaces.
  {
    std::lock_guard<std::mutex> lock(mu);
    accepted = "Bearer nobody";
  }
  absl::StatusOr<Response> denied = client->Do({.path = "/x"});
  EXPECT_TRUE(kube::IsUnauthorized(denied.status()));
}

TEST(RestClientTest, ConnectionRefusedIsUnavailable) {
  int port;
  {
    FakeHttpServer s;
    port = s.port();
  }
  Config c;
  c.server = base::StrCat("http://127.0.0.1:", port);
  c.qps = -1;
  auto client = MustCreate(c);
  absl::StatusOr<Response> resp = client->Do({.method = "POST", .path = "/x", .body = "{}"});
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kUnavailable) << resp.status();
}

TEST(RestClientTest, SlowServerTimesOut) {
  FakeHttpServer s;
  s.server().Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    s.WaitForShutdown();
    res.set_content("{}", "application/json");
  });
  Config c = TestConfig(s);
  c.timeout = absl::Milliseconds(300);
  auto client = MustCreate(c);
  // A GET: timeouts are not retried (only broken connections are).
  absl::StatusOr<Response> resp = client->Do({.path = "/slow"});
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(kube::IsTimeout(resp.status())) << resp.status();
  EXPECT_EQ(client->stats().requests, 1u);
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(RestClientTest, StopAbortsAnInFlightRequest) {
  FakeHttpServer s;
  std::atomic<bool> entered{false};
  s.server().Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    entered = true;
    s.WaitForShutdown();
    res.set_content("{}", "application/json");
  });
  Config c = TestConfig(s);
  c.timeout = absl::Seconds(60);
  auto client = MustCreate(c);
  std::stop_source stop;
  auto start = std::chrono::steady_clock::now();
  auto result = std::async(std::launch::async, [&] {
    return client->Do({.path = "/slow", .stop = stop.get_token()});
  });
  while (!entered) std::this_thread::yield();
  stop.request_stop();
  absl::StatusOr<Response> resp = result.get();
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kCancelled) << resp.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(RestClientTest, ConcurrentRequestsShareThePool) {
  FakeHttpServer s;
  std::atomic<int> hits{0};
  s.server().Get("/x", [&](const httplib::Request&, httplib::Response& res) {
    ++hits;
    res.set_content("{}", "application/json");
  });
  Config c = TestConfig(s);
  c.max_idle_connections = 4;
  auto client = MustCreate(c);
  std::vector<std::jthread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (!client->Do({.path = "/x"}).ok()) ++failures;
      }
    });
  }
  threads.clear();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(hits.load(), 200);
  // Keep-alive connections are reused: far fewer clients than requests.
  EXPECT_LE(client->stats().connections, 8u);
}

// ---- watch ----

void ServeChunks(FakeHttpServer& s, const std::string& path, std::vector<std::string> chunks,
                 bool block_at_end, std::string* target = nullptr) {
  s.server().Get(path, [&s, chunks, block_at_end, target](const httplib::Request& req,
                                                          httplib::Response& res) {
    if (target != nullptr) *target = req.target;  // before the answer: ordered by the socket
    auto index = std::make_shared<size_t>(0);
    res.set_chunked_content_provider(
        "application/json", [&s, chunks, index, block_at_end](size_t, httplib::DataSink& sink) {
          if (*index < chunks.size()) {
            const std::string& c = chunks[(*index)++];
            return sink.write(c.data(), c.size());
          }
          if (block_at_end) {
            s.WaitForShutdown();
            return false;
          }
          sink.done();
          return true;
        });
  });
}

TEST(RestClientWatchTest, EventsSpanningChunks) {
  FakeHttpServer s;
  std::string e1 = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})";
  std::string e2 = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"6"}}})";
  std::string e3 = R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"7"}}})";
  std::string all = e1 + "\n" + e2 + "\n" + e3 + "\n";
  // Cut at awkward places: inside an object, and two objects in one chunk.
  std::string query;
  ServeChunks(s, "/api/v1/namespaces/ns/pods",
              {all.substr(0, 10), all.substr(10, e1.size()), all.substr(10 + e1.size())}, false,
              &query);
  auto client = MustCreate(TestConfig(s));
  std::vector<WatchEvent> events;
  WatchOptions opts{.resource_version = "4", .label_selector = "a=b",
                    .allow_watch_bookmarks = true, .timeout_seconds = 30};
  absl::Status st = client->Watch(kPods, "ns", opts, [&](WatchEvent e) {
    events.push_back(std::move(e));
    return true;
  });
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(events[1].type, WatchEventType::kBookmark);
  EXPECT_EQ(events[2].type, WatchEventType::kDeleted);
  EXPECT_EQ(query,
            "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=4&allowWatchBookmarks=true&"
            "timeoutSeconds=30&labelSelector=a%3Db");
}

TEST(RestClientWatchTest, ErrorEventWith410IsGone) {
  FakeHttpServer s;
  ServeChunks(s, "/w",
              {R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
               "\n"
               R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)json"
               R"json("status":"Failure","message":"too old resource version: 1 (5)",)json"
               R"json("reason":"Expired","code":410}})json"
               "\n"},
              /*block_at_end=*/true);
  auto client = MustCreate(TestConfig(s));
  int seen = 0;
  absl::Status st = client->Watch("/w", {}, [&](WatchEvent e) {
    EXPECT_NE(e.type, WatchEventType::kError);
    ++seen;
    return true;
  });
  EXPECT_TRUE(kube::IsGone(st)) << st;
  EXPECT_EQ(seen, 1);
}

TEST(RestClientWatchTest, HttpGoneIsGone) {
  FakeHttpServer s;
  s.server().Get("/w", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content(StatusBody(410, "Expired", "too old"), "application/json");
  });
  auto client = MustCreate(TestConfig(s));
  absl::Status st = client->Watch("/w", {}, [&](WatchEvent) { return true; });
  EXPECT_TRUE(kube::IsGone(st)) << st;
}

TEST(RestClientWatchTest, CallbackCanStop) {
  FakeHttpServer s;
  ServeChunks(s, "/w",
              {R"({"type":"ADDED","object":{}})"
               "\n"
               R"({"type":"ADDED","object":{}})"
               "\n"},
              /*block_at_end=*/true);
  auto client = MustCreate(TestConfig(s));
  int seen = 0;
  absl::Status st = client->Watch("/w", {}, [&](WatchEvent) { return ++seen < 1; });
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(seen, 1);
}

TEST(RestClientWatchTest, StopTokenAbortsABlockedRead) {
  FakeHttpServer s;
  ServeChunks(s, "/w", {R"({"type":"ADDED","object":{}})" "\n"}, /*block_at_end=*/true);
  Config c = TestConfig(s);
  c.watch_read_timeout = absl::Minutes(5);
  auto client = MustCreate(c);
  std::stop_source stop;
  std::promise<void> first;
  auto start = std::chrono::steady_clock::now();
  auto result = std::async(std::launch::async, [&] {
    bool once = false;
    return client->Watch("/w", {}, [&](WatchEvent) {
      if (!once) first.set_value();
      once = true;
      return true;
    }, stop.get_token());
  });
  first.get_future().wait();
  stop.request_stop();
  absl::Status st = result.get();
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(RestClientWatchTest, CorruptStreamIsDataLoss) {
  FakeHttpServer s;
  ServeChunks(s, "/w", {"<html>oops</html>"}, /*block_at_end=*/true);
  auto client = MustCreate(TestConfig(s));
  absl::Status st = client->Watch("/w", {}, [&](WatchEvent) { return true; });
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
}

TEST(RestClientWatchTest, TruncatedStreamIsDataLoss) {
  FakeHttpServer s;
  ServeChunks(s, "/w", {R"({"type":"ADDED","obj)"}, /*block_at_end=*/false);
  auto client = MustCreate(TestConfig(s));
  absl::Status st = client->Watch("/w", {}, [&](WatchEvent) { return true; });
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
}

TEST(RestClientTest, RejectsBadConfig) {
  EXPECT_FALSE(RestClient::Create(Config{.server = "localhost:80"}).ok());
  EXPECT_FALSE(RestClient::Create(Config{.server = "https://h", .ca_pem = "not a pem"}).ok());
  Config c{.server = "https://h"};
  c.client_cert_pem = "x";
  EXPECT_FALSE(RestClient::Create(c).ok());
}

// ---- TLS ----

namespace tls {

X509* ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return x;
}

EVP_PKEY* ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return k;
}

// An HTTPS server on 127.0.0.1 serving GET /ok, optionally requiring client certificates.
class TlsServer {
 public:
  TlsServer(const base::CertAndKey& serving, const std::string* client_ca_pem) {
    X509* cert = ParseCert(serving.cert_pem);
    EVP_PKEY* key = ParseKey(serving.key_pem);
    X509_STORE* client_store = nullptr;
    if (client_ca_pem != nullptr) {
      client_store = X509_STORE_new();
      X509* ca = ParseCert(*client_ca_pem);
      X509_STORE_add_cert(client_store, ca);
      X509_free(ca);
    }
    server_ = std::make_unique<httplib::SSLServer>(cert, key, client_store);
    X509_free(cert);
    EVP_PKEY_free(key);
    server_->set_tcp_nodelay(true);
    server_->Get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{}", "application/json");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::yield();
  }
  ~TlsServer() {
    server_->stop();
    thread_.join();
  }
  std::string url() const { return base::StrCat("https://127.0.0.1:", port_); }

 private:
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace tls

TEST(RestClientTlsTest, TrustsOnlyTheGivenCaAndChecksTheHost) {
  auto ca = base::GenerateCA("test-ca", absl::Hours(1));
  auto other_ca = base::GenerateCA("other-ca", absl::Hours(1));
  ASSERT_TRUE(ca.ok() && other_ca.ok());
  auto serving = base::GenerateServingCert(*ca, "server", {"localhost"}, {"127.0.0.1"},
                                           absl::Hours(1));
  auto wrong_host = base::GenerateServingCert(*ca, "server", {"example.com"}, {"10.1.2.3"},
                                              absl::Hours(1));
  ASSERT_TRUE(serving.ok() && wrong_host.ok());

  tls::TlsServer good(*serving, nullptr);
  Config c{.server = good.url(), .ca_pem = ca->cert_pem};
  c.qps = -1;
  absl::StatusOr<Response> r = MustCreate(c)->Do({.path = "/ok"});
  EXPECT_TRUE(r.ok()) << r.status();

  // Another CA: refused (the system store is never consulted when a CA is given).
  Config other = c;
  other.ca_pem = other_ca->cert_pem;
  r = MustCreate(other)->Do({.path = "/ok"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  // No CA: the system roots, which do not know our test CA.
  Config system = c;
  system.ca_pem.clear();
  r = MustCreate(system)->Do({.path = "/ok"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  // ... unless verification is off.
  other.insecure_skip_tls_verify = true;
  EXPECT_TRUE(MustCreate(other)->Do({.path = "/ok"}).ok());

  // The right CA but a certificate for another host: refused.
  tls::TlsServer mismatch(*wrong_host, nullptr);
  Config m = c;
  m.server = mismatch.url();
  r = MustCreate(m)->Do({.path = "/ok"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
}

TEST(RestClientTlsTest, PresentsTheClientCertificate) {
  auto ca = base::GenerateCA("test-ca", absl::Hours(1));
  ASSERT_TRUE(ca.ok());
  auto serving = base::GenerateServingCert(*ca, "server", {}, {"127.0.0.1"}, absl::Hours(1));
  auto client = base::GenerateClientCert(*ca, "alice", {"admins"}, absl::Hours(1));
  auto other_ca = base::GenerateCA("other-ca", absl::Hours(1));
  auto stranger = base::GenerateClientCert(*other_ca, "mallory", {}, absl::Hours(1));
  ASSERT_TRUE(serving.ok() && client.ok() && stranger.ok());
  tls::TlsServer server(*serving, &ca->cert_pem);

  Config c{.server = server.url(), .ca_pem = ca->cert_pem};
  c.qps = -1;
  c.timeout = absl::Seconds(5);
  // Without a certificate the handshake fails.
  EXPECT_FALSE(MustCreate(c)->Do({.path = "/ok"}).ok());
  Config with = c;
  with.client_cert_pem = client->cert_pem;
  with.client_key_pem = client->key_pem;
  absl::StatusOr<Response> r = MustCreate(with)->Do({.path = "/ok"});
  EXPECT_TRUE(r.ok()) << r.status();
  Config wrong = c;
  wrong.client_cert_pem = stranger->cert_pem;
  wrong.client_key_pem = stranger->key_pem;
  EXPECT_FALSE(MustCreate(wrong)->Do({.path = "/ok"}).ok());
  // A key that does not belong to the certificate is refused up front.
  Config mixed = c;
  mixed.client_cert_pem = client->cert_pem;
  mixed.client_key_pem = stranger->key_pem;
  EXPECT_FALSE(RestClient::Create(mixed).ok());
}

// An HTTPS server that completes the TLS handshake, reads one request's headers and then resets
// the connection (SO_LINGER 0): what a client sees when kube-apiserver restarts or drops a
// connection. The client's read fails with ECONNRESET and its TLS shutdown (close_notify)
// then writes to a reset socket: EPIPE, and SIGPIPE unless the client prevents it.
class ResettingTlsServer {
 public:
  explicit ResettingTlsServer(const base::CertAndKey& serving) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    X509* cert = tls::ParseCert(serving.cert_pem);
    EVP_PKEY* key = tls::ParseKey(serving.key_pem);
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ResettingTlsServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    close(listen_fd_);
    thread_.join();
    SSL_CTX_free(ctx_);
  }
  std::string url() const { return base::StrCat("https://127.0.0.1:", port_); }
  int resets() const { return resets_.load(); }

 private:
  void Serve() {
    // This test thread writes to sockets too: it must not die of the client's hang-ups.
    base::BlockSigpipeOnThisThread();
    while (true) {
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) == 1) {
        std::string got;
        char buf[4096];
        while (got.find("\r\n\r\n") == std::string::npos) {
          int n = SSL_read(ssl, buf, sizeof buf);
          if (n <= 0) break;
          got.append(buf, static_cast<size_t>(n));
        }
      }
      linger lg{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
      SSL_free(ssl);
      close(fd);  // RST
      resets_.fetch_add(1);
    }
  }

  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> resets_{0};
  std::thread thread_;
};

// The process keeps SIGPIPE's default action (the test main ignores it; this test puts the
// default back): a reset connection must come back as an error, not kill the process.
TEST(RestClientSigpipeTest, ResetConnectionIsAnErrorWithDefaultSigpipeDisposition) {
  struct sigaction dfl = {}, old = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ASSERT_EQ(sigaction(SIGPIPE, &dfl, &old), 0);
  auto ca = base::GenerateCA("test-ca", absl::Hours(1));
  ASSERT_TRUE(ca.ok());
  auto serving = base::GenerateServingCert(*ca, "server", {}, {"127.0.0.1"}, absl::Hours(1));
  ASSERT_TRUE(serving.ok());
  {
    ResettingTlsServer server(*serving);
    Config c{.server = server.url(), .ca_pem = ca->cert_pem};
    c.qps = -1;
    c.timeout = absl::Seconds(5);
    std::shared_ptr<RestClient> client = MustCreate(c);
    for (int i = 0; i < 5; ++i) {
      absl::StatusOr<Response> r = client->Do({.path = "/api/v1/namespaces"});
      EXPECT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
      absl::Status w = client->Watch(
          "/api/v1/pods", WatchOptions{}, [](WatchEvent) { return true; });
      EXPECT_FALSE(w.ok());
    }
    EXPECT_GE(server.resets(), 10);
  }
  sigaction(SIGPIPE, &old, nullptr);
}

}  // namespace
}  // namespace spiderpool::kube
