// The IPAM unix-socket server: socket mode, load shedding before readiness, and the surge
// rollout hand-over (a new agent takes the path; the old one's Stop must not remove it).
#include "agent/ipam/server.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <httplib.h>

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

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/sp-srv-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/run/spiderpool.sock";  // the parent directory is created by Start
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  int Healthy() {
    httplib::Client c(path_);
    c.set_address_family(AF_UNIX);
    auto res = c.Get("/v1/ipam/healthy");
    return res ? res->status : -1;
  }

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

}  // namespace
}  // namespace spiderpool::agent::ipam
