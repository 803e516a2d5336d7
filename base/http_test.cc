// base/http_server.h and base/http_client.h against each other, and against raw sockets where
// the peer must misbehave. TLS, retries and tokens are kube/rest's tests (rest_client_test).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "base/certs.h"
#include "base/http_client.h"
#include "base/http_server.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace spiderpool::base {
namespace {

using Failure = HttpClientResult::Failure;

// Echoes what the handler saw: "<method> <path> q=<query pairs> body=<body>".
void Echo(const HttpServerRequest& req, HttpServerResponse& res) {
  std::string q;
  for (const auto& [k, v] : req.query) q += k + "=" + v + ";";
  res.status = 200;
  res.content_type = "text/plain";
  res.body = req.method + " " + req.path + " q=" + q + " body=" + req.body;
}

std::unique_ptr<HttpServer> Serve(HttpHandler handler, HttpServerOptions options = {}) {
  absl::StatusOr<std::unique_ptr<HttpServer>> s =
      HttpServer::ListenTcp("127.0.0.1", 0, options, std::move(handler));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

HttpConnection Connect(int port, absl::Duration read_timeout = absl::Seconds(5)) {
  HttpConnectionOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  o.read_timeout = read_timeout;
  return HttpConnection(o);
}

// A raw TCP exchange: sends `bytes`, returns everything the server writes until it closes.
std::string Raw(int port, const std::string& bytes) {
  absl::StatusOr<int> fd = ConnectTcp("127.0.0.1", port, absl::Seconds(5));
  if (!fd.ok()) return "connect failed";
  SocketStream s(*fd);
  s.set_read_timeout(absl::Seconds(10));
  boost::beast::error_code ec;
  size_t off = 0;
  while (off < bytes.size() && !ec) {
    off += s.write_some(boost::asio::buffer(bytes.data() + off, bytes.size() - off), ec);
  }
  std::string out;
  char buf[4096];
  while (true) {
    size_t n = s.read_some(boost::asio::buffer(buf), ec);
    if (ec) break;
    out.append(buf, n);
  }
  return out;
}

TEST(HttpQueryTest, DecodesLikeGo) {
  auto q = ParseQuery("a=1&b=%20x+y&&flag&a=2&e=");
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->size(), 5u);
  EXPECT_EQ((*q)[1], (std::pair<std::string, std::string>("b", " x y")));
  EXPECT_EQ((*q)[2], (std::pair<std::string, std::string>("flag", "")));
  EXPECT_EQ((*q)[3], (std::pair<std::string, std::string>("a", "2")));
  EXPECT_EQ((*q)[4], (std::pair<std::string, std::string>("e", "")));
  EXPECT_FALSE(ParseQuery("a=%zz").ok());
  EXPECT_FALSE(ParseQuery("a=%2").ok());
  EXPECT_FALSE(ParseQuery("a=%").ok());
  ASSERT_TRUE(PercentDecode("/a%2Fb+c").ok());
  EXPECT_EQ(*PercentDecode("/a%2Fb+c"), "/a/b+c");
}

TEST(HttpTest, GetPostAndKeepAliveOnOneConnection) {
  auto server = Serve(Echo);
  ASSERT_NE(server, nullptr);
  HttpConnection conn = Connect(server->port());
  HttpClientResult r = conn.RoundTrip({.method = "GET", .target = "/x%2Fy?a=b%20c&a=d"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /x/y q=a=b c;a=d; body=");
  EXPECT_EQ(r.headers.find("content-type")->second, "text/plain");
  const int fd = conn.fd();
  ASSERT_GE(fd, 0);
  r = conn.RoundTrip({.method = "POST", .target = "/p", .body = std::string(100000, 'z')});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body, "POST /p q= body=" + std::string(100000, 'z'));
  EXPECT_EQ(conn.fd(), fd) << "the second request must reuse the kept-alive connection";
  r = conn.RoundTrip({.method = "GET", .target = "/last", .keep_alive = false});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(conn.fd(), -1) << "a request without keep-alive closes the connection";
}

TEST(HttpTest, AGetBodyIsReadWhetherSizedOrChunked) {
  auto server = Serve(Echo);
  ASSERT_NE(server, nullptr);
  std::string sized = Raw(server->port(),
                          "GET /c HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                          "GET /d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(sized.find("GET /c q= body=hello"), std::string::npos) << sized;
  EXPECT_NE(sized.find("GET /d q= body="), std::string::npos)
      << "the body must not be taken for the next request: " << sized;
  std::string chunked = Raw(server->port(),
                            "GET /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                            "Connection: close\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n");
  EXPECT_NE(chunked.find("body=abcde"), std::string::npos) << chunked;
}

TEST(HttpTest, BadRequestsAreRefusedAndClosed) {
  HttpServerOptions options;
  options.max_body = 10;
  options.read_timeout = absl::Milliseconds(300);
  std::atomic<int> handled{0};
  auto server = Serve([&](const HttpServerRequest& q, HttpServerResponse& s) {
    ++handled;
    Echo(q, s);
  }, options);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Raw(server->port(), "NOT HTTP AT ALL\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(Raw(server->port(), "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n01234567890")
                .rfind("HTTP/1.1 413", 0), 0u);
  EXPECT_EQ(Raw(server->port(), "GET /%zz HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(Raw(server->port(), "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n")
                .rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(handled.load(), 0);
  // A client that sends half a request and leaves costs a worker only until then.
  EXPECT_EQ(Raw(server->port(), "GET / HTTP/1.1\r\nHost"), "");
}

TEST(HttpTest, ExpectContinueIsAnswered) {
  auto server = Serve(Echo);
  ASSERT_NE(server, nullptr);
  absl::StatusOr<int> fd = ConnectTcp("127.0.0.1", server->port(), absl::Seconds(5));
  ASSERT_TRUE(fd.ok());
  SocketStream s(*fd);
  s.set_read_timeout(absl::Seconds(5));
  boost::beast::error_code ec;
  const std::string head =
      "POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
      "Connection: close\r\n\r\n";
  s.write_some(boost::asio::buffer(head), ec);
  char buf[256];
  size_t n = s.read_some(boost::asio::buffer(buf), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(std::string(buf, n).rfind("HTTP/1.1 100", 0), 0u) << std::string(buf, n);
  s.write_some(boost::asio::buffer(std::string("ok")), ec);
  std::string rest;
  while (!ec) {
    n = s.read_some(boost::asio::buffer(buf), ec);
    rest.append(buf, ec ? 0 : n);
  }
  EXPECT_NE(rest.find("body=ok"), std::string::npos) << rest;
}

TEST(HttpTest, ASilentServerIsAReadTimeout) {
  auto server = Serve([](const HttpServerRequest&, HttpServerResponse& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    res.status = 200;
  });
  ASSERT_NE(server, nullptr);
  HttpConnection conn = Connect(server->port(), absl::Milliseconds(100));
  HttpClientResult r = conn.RoundTrip({.method = "GET", .target = "/slow"});
  EXPECT_EQ(r.failure, Failure::kRead);
  EXPECT_TRUE(r.timed_out) << r.error;
  EXPECT_EQ(conn.fd(), -1);
}

// With every worker holding an idle kept-alive connection, a new connection is served at
// once: the idle one is closed for it (not after the 30 s keep-alive timeout).
TEST(HttpTest, AnIdleKeptAliveConnectionMakesWayForANewOne) {
  HttpServerOptions options;
  options.threads = 1;
  options.keep_alive_timeout = absl::Seconds(30);
  auto server = Serve(Echo, options);
  ASSERT_NE(server, nullptr);
  HttpConnection idle = Connect(server->port());
  ASSERT_TRUE(idle.RoundTrip({.method = "GET", .target = "/first"}).ok());
  ASSERT_GE(idle.fd(), 0);  // kept alive, holding the only worker
  const auto start = std::chrono::steady_clock::now();
  HttpConnection fresh = Connect(server->port(), absl::Seconds(20));
  HttpClientResult r = fresh.RoundTrip({.method = "GET", .target = "/second"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body, "GET /second q= body=");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(HttpTest, CancelEndsARoundTripInProgress) {
  std::atomic<bool> release{false};
  auto server = Serve([&](const HttpServerRequest&, HttpServerResponse& res) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    res.status = 200;
  });
  ASSERT_NE(server, nullptr);
  HttpConnection conn = Connect(server->port(), absl::Seconds(30));
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    conn.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  HttpClientResult r = conn.RoundTrip({.method = "GET", .target = "/hang"});
  canceller.join();
  EXPECT_EQ(r.failure, Failure::kCanceled) << r.error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(conn.RoundTrip({.method = "GET", .target = "/"}).failure, Failure::kCanceled);
  release = true;
}

TEST(HttpTest, TheBodyStreamsToOnBodyAndOnStatusCanStop) {
  auto server = Serve([](const HttpServerRequest& req, HttpServerResponse& res) {
    res.status = req.path == "/gone" ? 410 : 200;
    res.body = std::string(100000, 'b');
  });
  ASSERT_NE(server, nullptr);
  HttpConnection conn = Connect(server->port());
  size_t got = 0;
  int pieces = 0;
  HttpClientResult r = conn.RoundTrip({.method = "GET", .target = "/"}, nullptr,
                                      [&](std::string_view piece) {
                                        got += piece.size();
                                        ++pieces;
                                        return true;
                                      });
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(got, 100000u);
  EXPECT_GT(pieces, 1);
  EXPECT_TRUE(r.body.empty());
  r = conn.RoundTrip({.method = "GET", .target = "/gone"}, [](int code) { return code == 200; });
  EXPECT_EQ(r.failure, Failure::kCanceled);
  EXPECT_EQ(r.status, 410);
  EXPECT_EQ(conn.fd(), -1) << "a connection whose answer was not read to the end is closed";
}

// A watch: each piece of a chunked body reaches on_body when it arrives, not when the body
// ends (the server here never ends it).
TEST(HttpTest, PiecesOfAStreamArriveBeforeItsEnd) {
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(lfd, 1), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::atomic<bool> done{false};
  std::thread raw([&] {
    const int fd = ::accept(lfd, nullptr, nullptr);
    char buf[4096];
    [[maybe_unused]] ssize_t n = ::read(fd, buf, sizeof(buf));
    const std::string head =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n";
    n = ::write(fd, head.data(), head.size());
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::close(fd);
  });
  HttpConnection conn = Connect(ntohs(addr.sin_port), absl::Seconds(30));
  std::string got;
  const auto start = std::chrono::steady_clock::now();
  HttpClientResult r = conn.RoundTrip({.method = "GET", .target = "/w"}, nullptr,
                                      [&](std::string_view piece) {
                                        got.append(piece);
                                        return false;  // stop after the first piece
                                      });
  const auto took = std::chrono::steady_clock::now() - start;
  done = true;
  raw.join();
  ::close(lfd);
  EXPECT_EQ(got, "first");
  EXPECT_LT(took, std::chrono::seconds(5)) << "the piece waited for the read timeout";
  EXPECT_EQ(r.failure, Failure::kCanceled);
}

TEST(HttpTest, StopAnswersRequestsInFlightAndClosesIdleConnections) {
  std::atomic<bool> in_handler{false};
  auto server = Serve([&](const HttpServerRequest& req, HttpServerResponse& res) {
    if (req.path == "/slow") {
      in_handler = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    res.status = 200;
    res.body = "done";
  });
  ASSERT_NE(server, nullptr);
  HttpConnection idle = Connect(server->port());
  ASSERT_TRUE(idle.RoundTrip({.method = "GET", .target = "/"}).ok());
  HttpClientResult slow;
  std::thread client([&] {
    HttpConnection c = Connect(server->port());
    slow = c.RoundTrip({.method = "GET", .target = "/slow"});
  });
  while (!in_handler.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const auto start = std::chrono::steady_clock::now();
  server->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3))
      << "Stop must not wait for the idle connection's keep-alive timeout";
  client.join();
  ASSERT_TRUE(slow.ok()) << slow.error;
  EXPECT_EQ(slow.body, "done");
  auto conn = slow.headers.find("connection");
  ASSERT_NE(conn, slow.headers.end());
  EXPECT_EQ(conn->second, "close");
  EXPECT_FALSE(idle.RoundTrip({.method = "GET", .target = "/"}).ok());
}

using SslCtx = std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)>;

X509* PemCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return x;
}

// HTTPS both ways: the client checks the server's certificate (an IP SAN), refuses one from
// another CA, and the server answers two requests that came in one TLS record (OpenSSL holds
// the second one decrypted: the socket has nothing more to poll for).
TEST(HttpTest, HttpsVerifiesAndServesPipelinedRequestsOfOneRecord) {
  auto ca = GenerateCA("http-test-ca", absl::Hours(1));
  ASSERT_TRUE(ca.ok()) << ca.status();
  auto cert = GenerateServingCert(*ca, "srv", {}, {"127.0.0.1"}, absl::Hours(1));
  ASSERT_TRUE(cert.ok()) << cert.status();
  SslCtx server_ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  X509* leaf = PemCert(cert->cert_pem);
  BIO* bio = BIO_new_mem_buf(cert->key_pem.data(), static_cast<int>(cert->key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_EQ(SSL_CTX_use_certificate(server_ctx.get(), leaf), 1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey(server_ctx.get(), key), 1);
  X509_free(leaf);
  EVP_PKEY_free(key);
  HttpServerOptions options;
  options.tls = server_ctx.get();
  auto server = Serve(Echo, options);
  ASSERT_NE(server, nullptr);

  SslCtx trusting(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  X509* root = PemCert(ca->cert_pem);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(trusting.get()), root);
  X509_free(root);
  SSL_CTX_set_verify(trusting.get(), SSL_VERIFY_PEER, nullptr);
  HttpConnection conn({.host = "127.0.0.1", .port = server->port(), .tls = trusting.get()});
  HttpClientResult r = conn.RoundTrip({.method = "GET", .target = "/s?x=1"});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body, "GET /s q=x=1; body=");

  SslCtx other(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  SSL_CTX_set_verify(other.get(), SSL_VERIFY_PEER, nullptr);  // trusts no root at all
  HttpConnection refused({.host = "127.0.0.1", .port = server->port(), .tls = other.get()});
  r = refused.RoundTrip({.method = "GET", .target = "/"});
  EXPECT_EQ(r.failure, Failure::kConnect);
  EXPECT_NE(r.verify_error, X509_V_OK) << r.error;

  absl::StatusOr<int> fd = ConnectTcp("127.0.0.1", server->port(), absl::Seconds(5));
  ASSERT_TRUE(fd.ok());
  SSL* ssl = SSL_new(trusting.get());
  SSL_set_fd(ssl, *fd);
  SSL_set_connect_state(ssl);
  SocketStream s(*fd, ssl);
  s.set_read_timeout(absl::Seconds(10));
  long verify = 0;
  ASSERT_TRUE(s.Handshake(absl::Seconds(5), &verify).ok());
  boost::beast::error_code ec;
  // The first request is 512 bytes, what Beast's first read asks for: it takes the whole
  // request and nothing of the second, which stays inside OpenSSL.
  std::string one = "POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 000\r\n\r\n";
  const size_t body = 512 - one.size();
  one.replace(one.find("000"), 3, std::to_string(body));
  one += std::string(body, 'b');
  ASSERT_EQ(one.size(), 512u);
  const std::string two =
      one + "GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(s.write_some(boost::asio::buffer(two), ec), two.size()) << ec.message();
  std::string out;
  char buf[4096];
  const auto start = std::chrono::steady_clock::now();
  while (!ec) {
    size_t n = s.read_some(boost::asio::buffer(buf), ec);
    out.append(buf, ec ? 0 : n);
  }
  EXPECT_NE(out.find("POST /one q="), std::string::npos) << out;
  EXPECT_NE(out.find("GET /two q="), std::string::npos) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3))
      << "the second request waited for the keep-alive timeout";
}

TEST(HttpTest, AUnixSocketHasTheGivenModeFromTheStart) {
  testing::TempDir dir("http");
  const std::string path = dir.Join("s.sock");
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::ListenUnix(path, 0600, {}, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  SocketStream s(fd);
  s.set_read_timeout(absl::Seconds(5));
  boost::beast::error_code ec;
  s.write_some(boost::asio::buffer(std::string("GET /u HTTP/1.0\r\n\r\n")), ec);
  std::string out;
  char buf[512];
  while (!ec) {
    size_t n = s.read_some(boost::asio::buffer(buf), ec);
    out.append(buf, ec ? 0 : n);
  }
  EXPECT_NE(out.find("GET /u q= body="), std::string::npos) << out;
  EXPECT_FALSE(HttpServer::ListenUnix(path, 0600, {}, Echo).ok()) << "the path is taken";
}

TEST(HttpTest, ASecondServerOnTheSamePortFailsUnlessShared) {
  auto first = Serve(Echo);
  ASSERT_NE(first, nullptr);
  EXPECT_FALSE(HttpServer::ListenTcp("127.0.0.1", first->port(), {}, Echo).ok());
  EXPECT_FALSE(HttpServer::ListenTcp("not-an-ip", 0, {}, Echo).ok());
  HttpServerOptions shared;
  shared.reuse_port = true;
  auto a = HttpServer::ListenTcp("127.0.0.1", 0, shared, Echo);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = HttpServer::ListenTcp("127.0.0.1", (*a)->port(), shared, Echo);
  EXPECT_TRUE(b.ok()) << b.status();  // a surge rollout's old and new agent on one port
}

}  // namespace
}  // namespace spiderpool::base
