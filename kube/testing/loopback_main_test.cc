// The standalone binary starts, writes a usable kubeconfig, serves, and exits on SIGTERM.

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <thread>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "base/strings.h"
#include "base/testing/temp_dir.h"
#include "base/yaml.h"
#include "gtest/gtest.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

std::string BinaryPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  std::string base = srcdir ? srcdir : ".";
  return base + "/" + (ws ? ws : "spiderpool") + "/kube/testing/loopback-apiserver";
}

// Reads one line from `fd`, waiting at most `timeout`.
std::string ReadLine(int fd, absl::Duration timeout) {
  std::string line;
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    struct pollfd p = {fd, POLLIN, 0};
    int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (::poll(&p, 1, std::max(ms, 1)) <= 0) continue;
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) break;
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

TEST(LoopbackMain, StartsWritesKubeconfigAndStops) {
  base::testing::TempDir dir("loopback-main");
  std::string kubeconfig = dir.Join("kubeconfig");
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  std::string bin = BinaryPath();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::execl(bin.c_str(), bin.c_str(), "--port", "0", "--kubeconfig-out", kubeconfig.c_str(),
            "--token", "s3cret", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(out[1]);
  std::string url_line = ReadLine(out[0], absl::Seconds(30));
  ASSERT_EQ(url_line.rfind("url=https://127.0.0.1:", 0), 0u) << url_line;
  EXPECT_EQ(ReadLine(out[0], absl::Seconds(5)), "kubeconfig=" + kubeconfig);
  int port = std::stoi(url_line.substr(url_line.rfind(':') + 1));

  std::ifstream f(kubeconfig);
  std::stringstream ss;
  ss << f.rdbuf();
  auto doc = base::ParseYaml(ss.str());
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ((*doc)["current-context"], "loopback");
  EXPECT_EQ((*doc)["clusters"][0]["cluster"]["server"], url_line.substr(4));
  EXPECT_EQ((*doc)["users"][0]["user"]["token"], "s3cret");
  EXPECT_EQ((*doc)["contexts"][0]["name"], "loopback");
  std::string ca;
  ASSERT_TRUE(absl::Base64Unescape(
      base::ToAbsl((*doc)["clusters"][0]["cluster"]["certificate-authority-data"]
                       .get<std::string>()),
      &ca));
  EXPECT_EQ(std::filesystem::status(kubeconfig).permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);

  TestClient client("127.0.0.1", port, ca, "s3cret");
  EXPECT_EQ(client.Get("/api").status, 200);
  EXPECT_EQ(client.Post("/api/v1/namespaces/default/configmaps",
                        {{"metadata", {{"name", "demo"}}}})
                .status,
            201);
  HttpResult got = client.Get("/api/v1/namespaces/default/configmaps/demo");
  EXPECT_EQ(got.status, 200);
  // The binary runs the controllers too: the namespace's kube-root-ca.crt appears.
  bool published = false;
  for (int i = 0; i < 200 && !published; ++i) {
    published =
        client.Get("/api/v1/namespaces/default/configmaps/kube-root-ca.crt").status == 200;
    if (!published) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(published);
  TestClient wrong("127.0.0.1", port, ca, "nope");
  EXPECT_EQ(wrong.Get("/api").status, 401);

  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ::close(out[0]);
}

TEST(LoopbackMain, BadFlagsExitWithUsage) {
  std::string bin = BinaryPath();
  std::string cmd = bin + " --bogus 1 2>/dev/null";
  int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

}  // namespace
}  // namespace spiderpool::kube::testing
