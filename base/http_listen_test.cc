// ListenBacklog: a burst of connections to a server that has not accepted any yet all
// complete their handshake (httplib alone listens with a backlog of 5: the rest would wait for
// the SYN retransmit, 1 s later).
#include "base/http_listen.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"

namespace spiderpool::base {
namespace {

// How many of `n` non-blocking connects to 127.0.0.1:`port` are established within 300 ms
// while nobody accepts.
int EstablishedOf(int port, int n) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    fds.push_back(fd);
  }
  ::usleep(300 * 1000);
  int established = 0;
  for (int fd : fds) {
    pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) &&
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
      ++established;
    }
    ::close(fd);
  }
  return established;
}

TEST(ListenBacklog, ABurstOfConnectionsIsQueuedNotDropped) {
  httplib::Server server;
  ListenBacklog backlog(server);
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  ASSERT_TRUE(backlog.Raise().ok());
  EXPECT_EQ(EstablishedOf(port, 64), 64);
}

// The same without Raise(): what the servers did before (the case shows the test can fail).
TEST(ListenBacklog, HttplibAloneDropsTheBurst) {
  httplib::Server server;
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  EXPECT_LT(EstablishedOf(port, 64), 16);
}

TEST(ListenBacklog, RaiseBeforeBindIsAnError) {
  httplib::Server server;
  ListenBacklog backlog(server);
  EXPECT_FALSE(backlog.Raise().ok());
}

}  // namespace
}  // namespace spiderpool::base
