// The IPAM unix-socket server: socket mode, load shedding before readiness, the surge
// rollout hand-over (a new agent takes the path; the old one's Stop must not remove it), and
// GET /v1/coordinator/config (JSON body on a GET, or query parameters).
#include "agent/ipam/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>
#include <httplib.h>

#include "absl/synchronization/mutex.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::agent::ipam {
namespace {

class FakeBackend : public IpamBackend {
 public:
  explicit FakeBackend(bool ready) : ready_(ready) {}
  bool Ready() const override { return ready_; }
  absl::StatusOr<ipamapi::IpamAddResponse> Allocate(const ipamapi::IpamAddArgs&,
                                                    absl::Time) override {
    return absl::UnavailableError("not in this test");
  }
  absl::Status Release(const ipamapi::IpamDelArgs&, absl::Time) override {
    return absl::OkStatus();
  }

 private:
  bool ready_;
};

class FakeCoordinator : public CoordinatorBackend {
 public:
  bool Ready() const override { return ready; }
  absl::StatusOr<ipamapi::CoordinatorConfig> GetCoordinatorConfig(
      const ipamapi::GetCoordinatorArgs& args) override {
    absl::MutexLock l(&mu_);
    calls_.push_back(args);
    if (!answer.ok()) return answer;
    ipamapi::CoordinatorConfig c = *answer;
    if (!args.pod_name.empty()) c.pod_default_route_nic = "nic-of-" + args.pod_name;
    return c;
  }
  std::vector<ipamapi::GetCoordinatorArgs> calls() {
    absl::MutexLock l(&mu_);
    return calls_;
  }

  bool ready = true;
  absl::StatusOr<ipamapi::CoordinatorConfig> answer =
      ipamapi::CoordinatorConfig{.mode = "underlay", .service_cidr = {"10.96.0.0/12"}};

 private:
  absl::Mutex mu_;
  std::vector<ipamapi::GetCoordinatorArgs> calls_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    path_ = dir_ + "/run/spiderpool.sock";  // the parent directory is created by Start
  }

  int Healthy() {
    httplib::Client c(path_);
    c.set_address_family(AF_UNIX);
    auto res = c.Get("/v1/ipam/healthy");
    return res ? res->status : -1;
  }

  httplib::Client Client() {
    httplib::Client c(path_);
    c.set_address_family(AF_UNIX);
    c.set_keep_alive(true);
    return c;
  }

  // GET /v1/coordinator/config with a JSON body, as go-swagger's client sends it.
  httplib::Result GetWithBody(httplib::Client& c, std::string body,
                              std::string path = "/v1/coordinator/config") {
    httplib::Request req;
    req.method = "GET";
    req.path = std::move(path);
    req.body = std::move(body);
    req.set_header("Content-Type", "application/json");
    return c.send(req);
  }

  // A raw connection for what httplib's client does not send (chunked GET bodies).
  int Connect() {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    return fd;
  }
  // Writes `request`, reads one response: {status, body} (Content-Length framed).
  std::pair<int, std::string> RoundTrip(int fd, const std::string& request) {
    EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    std::string in;
    char buf[4096];
    size_t header_end = std::string::npos;
    size_t length = 0;
    while (true) {
      if (header_end != std::string::npos && in.size() >= header_end + 4 + length) break;
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) return {-1, in};
      in.append(buf, static_cast<size_t>(n));
      if (header_end == std::string::npos && (header_end = in.find("\r\n\r\n")) != std::string::npos) {
        const size_t cl = in.find("Content-Length: ");
        if (cl != std::string::npos && cl < header_end) length = std::stoul(in.substr(cl + 16));
      }
    }
    return {std::stoi(in.substr(9, 3)), in.substr(header_end + 4, length)};
  }

  base::testing::TempDir tmp_{"srv"};
  std::string dir_, path_;
};

TEST_F(ServerTest, SocketIsOwnerOnlyAndRemovedOnStop) {
  FakeBackend backend(true);
  auto server = IpamServer::Start({.socket_path = path_}, &backend);
  ASSERT_TRUE(server.ok()) << server.status();
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Healthy(), 200);
  (*server)->Stop();
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(ServerTest, WorldWritableSocketDirectoryIsRefused) {
  const std::string open_dir = dir_ + "/open";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 01777), 0);  // as /tmp
  FakeBackend backend(true);
  auto server = IpamServer::Start({.socket_path = open_dir + "/spiderpool.sock"}, &backend);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(server.status())) << server.status();
  EXPECT_NE(std::string(server.status().message())
                .find("socket directory " + open_dir + " is world-writable (mode 1777)"),
            std::string::npos)
      << server.status();
  EXPECT_FALSE(std::filesystem::exists(open_dir + "/spiderpool.sock"));
}

TEST_F(ServerTest, StaleSocketFileIsReplaced) {
  std::filesystem::create_directories(dir_ + "/run");
  { std::ofstream(path_) << "stale"; }
  FakeBackend backend(true);
  auto server = IpamServer::Start({.socket_path = path_}, &backend);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Healthy(), 200);
}

TEST_F(ServerTest, OldAgentStoppingInASurgeRolloutKeepsTheNewAgentsSocket) {
  FakeBackend old_backend(true), new_backend(true);
  auto old_server = IpamServer::Start({.socket_path = path_}, &old_backend);
  ASSERT_TRUE(old_server.ok()) << old_server.status();
  auto new_server = IpamServer::Start({.socket_path = path_}, &new_backend);
  ASSERT_TRUE(new_server.ok()) << new_server.status();
  (*old_server)->Stop();  // the old pod terminates after the new one is up
  ASSERT_TRUE(std::filesystem::exists(path_));
  EXPECT_EQ(Healthy(), 200);  // the plugin still reaches an agent
  (*new_server)->Stop();
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(ServerTest, CoordinatorConfigFromAJsonBodyOnAGet) {
  FakeBackend backend(true);
  FakeCoordinator coordinator;
  auto server = IpamServer::Start({.socket_path = path_}, &backend, &coordinator);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client c = Client();
  // Twice on one keep-alive connection: the first body must not be read as the next request.
  for (int i = 0; i < 2; ++i) {
    auto res = GetWithBody(c, R"({"podName":"p1","podNamespace":"ns1"})");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200) << res->body;
    auto config = ipamapi::FromJson<ipamapi::CoordinatorConfig>(res->body);
    ASSERT_TRUE(config.ok()) << config.status() << " in " << res->body;
    EXPECT_EQ(config->mode, "underlay");
    EXPECT_EQ(config->service_cidr, std::vector<std::string>{"10.96.0.0/12"});
    EXPECT_EQ(config->pod_default_route_nic, "nic-of-p1");
  }
  ASSERT_EQ(coordinator.calls().size(), 2u);
  EXPECT_EQ(coordinator.calls()[0],
            (ipamapi::GetCoordinatorArgs{.pod_name = "p1", .pod_namespace = "ns1"}));
  // The healthy check after a GET with a body, still on the same connection.
  auto healthy = c.Get("/v1/ipam/healthy");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);
}

TEST_F(ServerTest, CoordinatorConfigFromQueryParameters) {
  FakeBackend backend(true);
  FakeCoordinator coordinator;
  auto server = IpamServer::Start({.socket_path = path_}, &backend, &coordinator);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client c = Client();
  auto res = c.Get("/v1/coordinator/config?podNamespace=ns2&podName=p2");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  auto none = c.Get("/v1/coordinator/config");  // no pod: the SpiderCoordinator's own settings
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200) << none->body;
  ASSERT_EQ(coordinator.calls().size(), 2u);
  EXPECT_EQ(coordinator.calls()[0],
            (ipamapi::GetCoordinatorArgs{.pod_name = "p2", .pod_namespace = "ns2"}));
  EXPECT_EQ(coordinator.calls()[1], ipamapi::GetCoordinatorArgs{});
}

TEST_F(ServerTest, CoordinatorConfigChunkedBodyAndPipelinedRequests) {
  FakeBackend backend(true);
  FakeCoordinator coordinator;
  auto server = IpamServer::Start({.socket_path = path_}, &backend, &coordinator);
  ASSERT_TRUE(server.ok()) << server.status();
  const int fd = Connect();
  auto [status, body] = RoundTrip(
      fd,
      "GET /v1/coordinator/config HTTP/1.1\r\nHost: localhost\r\n"
      "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
      "c;ext=1\r\n{\"podName\":\"\r\n1c\r\nchunked\",\"podNamespace\":\"n\"}\r\n0\r\n\r\n");
  EXPECT_EQ(status, 200) << body;
  EXPECT_NE(body.find("nic-of-chunked"), std::string::npos) << body;
  // Content-Length framed, then a second request on the same connection.
  const std::string json = R"({"podName":"cl","podNamespace":"n"})";
  std::tie(status, body) = RoundTrip(
      fd, "GET /v1/coordinator/config HTTP/1.1\r\nHost: localhost\r\nContent-Length: " +
              std::to_string(json.size()) + "\r\n\r\n" + json);
  EXPECT_EQ(status, 200) << body;
  EXPECT_NE(body.find("nic-of-cl"), std::string::npos) << body;
  std::tie(status, body) =
      RoundTrip(fd, "GET /v1/ipam/healthy HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(status, 200) << body;
  ::close(fd);
}

TEST_F(ServerTest, CoordinatorConfigBadBodyIs400) {
  FakeBackend backend(true);
  FakeCoordinator coordinator;
  auto server = IpamServer::Start({.socket_path = path_}, &backend, &coordinator);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client c = Client();
  for (const char* bad : {R"({"podName":7})", "not json", "[]"}) {
    auto res = GetWithBody(c, bad);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << bad;
    EXPECT_NE(ipamapi::ErrorMessageFromBody(res->body).find("bad coordinator config request"),
              std::string::npos)
        << res->body;
  }
  // A body larger than the server reads: 413, and the connection is closed after the answer.
  const int fd = Connect();
  auto [status, body] = RoundTrip(
      fd, "GET /v1/coordinator/config HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999\r\n\r\n");
  EXPECT_EQ(status, 413);
  EXPECT_NE(body.find("larger than"), std::string::npos) << body;
  char byte;
  EXPECT_LE(::read(fd, &byte, 1), 0);  // closed
  ::close(fd);
  EXPECT_TRUE(coordinator.calls().empty());
}

TEST_F(ServerTest, CoordinatorNotSyncedIs500WithTheBackendsMessage) {
  FakeBackend backend(true);
  FakeCoordinator coordinator;
  coordinator.answer = absl::FailedPreconditionError(
      "SpiderCoordinator \"default\" is not ready: phase NotReady (reason: no service CIDR)");
  auto server = IpamServer::Start({.socket_path = path_}, &backend, &coordinator);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client c = Client();
  auto res = GetWithBody(c, R"({"podName":"p1","podNamespace":"ns1"})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_EQ(ipamapi::ErrorMessageFromBody(res->body),
            "SpiderCoordinator \"default\" is not ready: phase NotReady (reason: no service CIDR)");
}

TEST_F(ServerTest, CoordinatorConfigUnavailableUntilSyncedOrWithoutBackend) {
  FakeBackend backend(false);  // IPAM not ready: the coordinator endpoint does not care
  FakeCoordinator coordinator;
  auto server = IpamServer::Start({.socket_path = path_}, &backend, &coordinator);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client c = Client();
  auto res = c.Get("/v1/coordinator/config?podNamespace=a&podName=b");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  coordinator.ready = false;
  res = c.Get("/v1/coordinator/config?podNamespace=a&podName=b");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503) << res->body;
  (*server)->Stop();

  auto plain = IpamServer::Start({.socket_path = path_}, &backend);
  ASSERT_TRUE(plain.ok()) << plain.status();
  httplib::Client c2 = Client();
  res = c2.Get("/v1/coordinator/config");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404) << res->body;
}

TEST_F(ServerTest, IpamCallsStillDecodeTheirBodies) {
  FakeBackend backend(true);
  auto server = IpamServer::Start({.socket_path = path_}, &backend);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client c = Client();
  auto bad = c.Post("/v1/ipam/ip", R"({"containerID":"c"})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("bad IPAM add request"), std::string::npos) << bad->body;
  httplib::Request del;
  del.method = "DELETE";
  del.path = "/v1/ipam/ip";
  del.body = R"({"containerID":"c","ifName":"eth0","podNamespace":"n","podName":"p","podUID":""})";
  del.set_header("Content-Type", "application/json");
  auto ok = c.send(del);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto add = c.Post("/v1/ipam/ip",
                    R"({"containerID":"c","ifName":"eth0","netNamespace":"/n",)"
                    R"("podNamespace":"n","podName":"p","podUID":""})",
                    "application/json");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->status, 503);  // the fake's answer
}

}  // namespace
}  // namespace spiderpool::agent::ipam
