// The loopback API server's watches through real HTTPS: resourceVersion replay, history,
// bookmarks, filters, timeouts, and writers never blocked by a stuck watcher.

#include "kube/testing/apiserver.h"

#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/apiserver_test_fixture.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

using base::Json;
using ::testing::HasSubstr;
using namespace apiserver_test;  // NOLINT(build/namespaces)

// ---- watch ----

TEST_F(ApiServerTest, WatchFromResourceVersion) {
  HttpResult a = MustCreate(kCmPath, ConfigMap("a"));
  MustCreate(kCmPath, ConfigMap("b"));
  std::string rv = std::to_string(server_->CurrentResourceVersion());
  MustCreate(kCmPath, ConfigMap("c"));
  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/a", {{"data", {{"k", "v"}}}}).status, 200);
  MustCreate("/api/v1/namespaces/kube-system/configmaps", ConfigMap("other-ns"));

  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + rv);
  auto e1 = w.Next();
  ASSERT_TRUE(e1);
  EXPECT_EQ((*e1)["type"], "ADDED");
  EXPECT_EQ((*e1)["object"]["metadata"]["name"], "c");
  EXPECT_EQ((*e1)["object"]["kind"], "ConfigMap");
  auto e2 = w.Next();
  ASSERT_TRUE(e2);
  EXPECT_EQ((*e2)["type"], "MODIFIED");
  EXPECT_EQ((*e2)["object"]["metadata"]["name"], "a");
  ASSERT_TRUE(server_->WaitForWatches(1));
  // Live events follow.
  ASSERT_EQ(client_->Delete(std::string(kCmPath) + "/b").status, 200);
  auto e3 = w.Next();
  ASSERT_TRUE(e3);
  EXPECT_EQ((*e3)["type"], "DELETED");
  EXPECT_EQ((*e3)["object"]["metadata"]["name"], "b");
  EXPECT_EQ(w.status(), 200);
  (void)a;
}

TEST_F(ApiServerTest, WatchWithoutResourceVersionStartsWithAdded) {
  MustCreate(kCmPath, ConfigMap("x1"));
  MustCreate(kCmPath, ConfigMap("x2"));
  WatchReader w(*client_, std::string(kCmPath) + "?watch=1");
  auto e1 = w.Next();
  auto e2 = w.Next();
  ASSERT_TRUE(e1 && e2);
  EXPECT_EQ((*e1)["type"], "ADDED");
  EXPECT_EQ((*e2)["type"], "ADDED");
  EXPECT_EQ((*e2)["object"]["metadata"]["name"], "x2");
  ASSERT_TRUE(server_->WaitForWatches(1));
  MustCreate(kCmPath, ConfigMap("x3"));
  auto e3 = w.Next();
  ASSERT_TRUE(e3);
  EXPECT_EQ((*e3)["object"]["metadata"]["name"], "x3");
}

TEST_F(ApiServerTest, LegacyWatchPathAndSingleObject) {
  MustCreate(kCmPath, ConfigMap("one"));
  MustCreate(kCmPath, ConfigMap("two"));
  WatchReader w(*client_, "/api/v1/watch/namespaces/default/configmaps/two");
  auto e = w.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["object"]["metadata"]["name"], "two");
  ASSERT_TRUE(server_->WaitForWatches(1));
  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/one", {{"data", {{"a", "b"}}}}).status, 200);
  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/two", {{"data", {{"a", "b"}}}}).status, 200);
  auto m = w.Next();
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)["object"]["metadata"]["name"], "two");
}

TEST_F(ApiServerTest, WatchTooOldResourceVersionIsAnErrorEvent) {
  MustCreate(kCmPath, ConfigMap("o1"));
  std::string old = std::to_string(server_->CurrentResourceVersion());
  MustCreate(kCmPath, ConfigMap("o2"));
  server_->CompactHistory();
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + old);
  auto e = w.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ(w.status(), 200);
  EXPECT_EQ((*e)["type"], "ERROR");
  EXPECT_EQ((*e)["object"]["kind"], "Status");
  EXPECT_EQ((*e)["object"]["code"], 410);
  EXPECT_EQ((*e)["object"]["reason"], "Expired");
  std::string msg = (*e)["object"]["message"];
  std::string prefix = "too old resource version: " + old + " (";
  ASSERT_EQ(msg.rfind(prefix, 0), 0u) << msg;
  EXPECT_GT(std::stoll(msg.substr(prefix.size())), std::stoll(old)) << msg;
  EXPECT_EQ(msg.back(), ')') << msg;
  EXPECT_TRUE(w.WaitEnded());
  // The current RV is still fine.
  WatchReader ok(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" +
                               std::to_string(server_->CurrentResourceVersion()));
  ASSERT_TRUE(server_->WaitForWatches(1));
  MustCreate(kCmPath, ConfigMap("o3"));
  auto e3 = ok.Next();
  ASSERT_TRUE(e3);
  EXPECT_EQ((*e3)["type"], "ADDED");
}

TEST_F(ApiServerTest, WatchHistoryRingIsBounded) {
  Start({.watch_history_size = 3});
  std::string start = std::to_string(server_->CurrentResourceVersion());
  for (int i = 0; i < 5; ++i) MustCreate(kCmPath, ConfigMap("h" + std::to_string(i)));
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + start);
  auto e = w.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["type"], "ERROR");
  // Within the ring: the last 3 events replay.
  HttpResult h1 = client_->Get(std::string(kCmPath) + "/h1");
  WatchReader r(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + Rv(h1.body));
  for (const char* n : {"h2", "h3", "h4"}) {
    auto ev = r.Next();
    ASSERT_TRUE(ev);
    EXPECT_EQ((*ev)["object"]["metadata"]["name"], n);
  }
}

// The ring is also bounded by the size of what it keeps: big objects leave it sooner.
TEST_F(ApiServerTest, WatchHistoryIsBoundedInBytes) {
  Start({.watch_history_size = 1000, .watch_history_bytes = 40000});
  const std::string big(10000, 'x');  // each ConfigMap serializes to a bit over 10 KB
  std::string start = std::to_string(server_->CurrentResourceVersion());
  for (int i = 0; i < 6; ++i) {
    MustCreate(kCmPath, ConfigMap("b" + std::to_string(i), Json::object(), {{"k", big}}));
  }
  WatchReader gone(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + start);
  auto e = gone.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["type"], "ERROR");
  EXPECT_EQ((*e)["object"]["code"], 410);
  // The last three (~30 KB) are kept: a watch from b2's resourceVersion replays b3..b5.
  HttpResult b2 = client_->Get(std::string(kCmPath) + "/b2");
  WatchReader r(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" + Rv(b2.body));
  for (const char* n : {"b3", "b4", "b5"}) {
    auto ev = r.Next();
    ASSERT_TRUE(ev);
    EXPECT_EQ((*ev)["object"]["metadata"]["name"], n);
  }
}

TEST_F(ApiServerTest, WatchBookmarks) {
  Start({.bookmark_interval = absl::Milliseconds(20)});
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&allowWatchBookmarks=true");
  auto e = w.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["type"], "BOOKMARK");
  EXPECT_EQ((*e)["object"]["kind"], "ConfigMap");
  EXPECT_EQ((*e)["object"]["apiVersion"], "v1");
  EXPECT_EQ((*e)["object"]["metadata"]["resourceVersion"],
            std::to_string(server_->CurrentResourceVersion()));
  // Without allowWatchBookmarks there are none.
  WatchReader quiet(*client_, std::string(kCmPath) + "?watch=true&timeoutSeconds=1");
  EXPECT_FALSE(quiet.Next(absl::Seconds(3)));
  EXPECT_TRUE(quiet.WaitEnded());
}

TEST_F(ApiServerTest, SendInitialEventsEndsWithBookmark) {
  MustCreate(kCmPath, ConfigMap("i1"));
  WatchReader w(*client_, std::string(kCmPath) +
                              "?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&"
                              "resourceVersionMatch=NotOlderThan");
  auto e1 = w.Next();
  ASSERT_TRUE(e1);
  EXPECT_EQ((*e1)["type"], "ADDED");
  auto e2 = w.Next();
  ASSERT_TRUE(e2);
  EXPECT_EQ((*e2)["type"], "BOOKMARK");
  EXPECT_EQ((*e2)["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

TEST_F(ApiServerTest, CloseWatchesEndsStreams) {
  WatchReader w1(*client_, std::string(kCmPath) + "?watch=true");
  WatchReader w2(*client_, "/api/v1/pods?watch=true");
  ASSERT_TRUE(server_->WaitForWatches(2));
  server_->CloseWatches();
  EXPECT_TRUE(w1.WaitEnded());
  EXPECT_TRUE(w2.WaitEnded());
}

TEST_F(ApiServerTest, WatchTimeoutSeconds) {
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&timeoutSeconds=1");
  EXPECT_TRUE(w.WaitEnded(absl::Seconds(10)));
  EXPECT_EQ(w.status(), 200);
}

TEST_F(ApiServerTest, LabelFilteredWatch) {
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true&labelSelector=app%3Da");
  ASSERT_TRUE(server_->WaitForWatches(1));
  MustCreate(kCmPath, ConfigMap("other", {{"app", "b"}}));
  HttpResult c = MustCreate(kCmPath, ConfigMap("m", {{"app", "a"}}));
  auto e1 = w.Next();
  ASSERT_TRUE(e1);
  EXPECT_EQ((*e1)["type"], "ADDED");
  EXPECT_EQ((*e1)["object"]["metadata"]["name"], "m");

  HttpResult off = client_->Patch(std::string(kCmPath) + "/m",
                                  {{"metadata", {{"labels", {{"app", "b"}}}}}});
  ASSERT_EQ(off.status, 200);
  auto e2 = w.Next();
  ASSERT_TRUE(e2);
  EXPECT_EQ((*e2)["type"], "DELETED");
  EXPECT_EQ((*e2)["object"]["metadata"]["labels"]["app"], "a") << "previous content";
  EXPECT_EQ(Rv((*e2)["object"]), Rv(off.body)) << "at the event's resourceVersion";

  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/m",
                           {{"metadata", {{"labels", {{"app", "a"}}}}}})
                .status,
            200);
  auto e3 = w.Next();
  ASSERT_TRUE(e3);
  EXPECT_EQ((*e3)["type"], "ADDED");
  ASSERT_EQ(client_->Patch(std::string(kCmPath) + "/m", {{"data", {{"x", "y"}}}}).status, 200);
  auto e4 = w.Next();
  ASSERT_TRUE(e4);
  EXPECT_EQ((*e4)["type"], "MODIFIED");
  (void)c;
}

TEST_F(ApiServerTest, FieldFilteredWatch) {
  const std::string pods = "/api/v1/namespaces/default/pods";
  WatchReader w(*client_, "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn2");
  ASSERT_TRUE(server_->WaitForWatches(1));
  MustCreate(pods, Pod("a", "n1"));
  MustCreate(pods, Pod("b", "n2"));
  auto e = w.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["object"]["metadata"]["name"], "b");
}

TEST_F(ApiServerTest, StopEndsOpenWatches) {
  WatchReader w(*client_, std::string(kCmPath) + "?watch=true");
  ASSERT_TRUE(server_->WaitForWatches(1));
  server_->Stop();
  EXPECT_TRUE(w.WaitEnded());
}

// A TLS client that sends a watch request and then never reads.
class StuckWatcher {
 public:
  StuckWatcher(int port, const std::string& token, const std::string& path) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ctx_ = SSL_CTX_new(TLS_client_method());
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    ok_ = ok_ && SSL_connect(ssl_) == 1;
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                      token + "\r\n\r\n";
    ok_ = ok_ && SSL_write(ssl_, req.data(), static_cast<int>(req.size())) > 0;
  }
  ~StuckWatcher() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return ok_; }

 private:
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool ok_ = false;
};

TEST_F(ApiServerTest, UnresponsiveWatcherDoesNotBlockWriters) {
  Start({.watch_queue_capacity = 20});
  {
    StuckWatcher stuck(server_->port(), server_->token(), std::string(kCmPath) + "?watch=true");
    ASSERT_TRUE(stuck.ok());
    ASSERT_TRUE(server_->WaitForWatches(1));
    std::string big(64 * 1024, 'x');
    for (int i = 0; i < 200; ++i) {
      auto r = server_->Call("POST", kCmPath, ConfigMap("big" + std::to_string(i), {}, {{"v", big}}));
      ASSERT_EQ(r.code, 201) << i;
    }
    // The stuck watcher overflowed its queue and was closed (its client must re-watch).
    EXPECT_EQ(server_->OpenWatches(), 0u);
    // Other watchers still get events.
    WatchReader fine(*client_, std::string(kCmPath) + "?watch=true&resourceVersion=" +
                                   std::to_string(server_->CurrentResourceVersion()));
    ASSERT_TRUE(server_->WaitForWatches(1));
    MustCreate(kCmPath, ConfigMap("after"));
    auto e = fine.Next();
    ASSERT_TRUE(e);
    EXPECT_EQ((*e)["object"]["metadata"]["name"], "after");
  }
}

}  // namespace
}  // namespace spiderpool::kube::testing
