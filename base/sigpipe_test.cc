// base/sigpipe.h in a process whose SIGPIPE disposition is the default (the test restores it):
// a write to a pipe whose reader is gone must come back as EPIPE, not kill the process.
#include "base/sigpipe.h"

#include <unistd.h>

#include <cerrno>
#include <thread>

#include "gtest/gtest.h"

namespace spiderpool::base {
namespace {

// Restores SIGPIPE's default action for the test's scope.
class DefaultSigpipe {
 public:
  DefaultSigpipe() {
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGPIPE, &dfl, &old_);
  }
  ~DefaultSigpipe() { sigaction(SIGPIPE, &old_, nullptr); }

 private:
  struct sigaction old_ = {};
};

// A pipe whose read end is closed: every write raises SIGPIPE.
struct BrokenPipe {
  BrokenPipe() {
    EXPECT_EQ(pipe(fds), 0);
    close(fds[0]);
  }
  ~BrokenPipe() { close(fds[1]); }
  int fds[2] = {-1, -1};
};

bool Pending() {
  sigset_t p;
  sigemptyset(&p);
  sigpending(&p);
  return sigismember(&p, SIGPIPE) == 1;
}

TEST(SigpipeTest, ScopedBlockTurnsTheSignalIntoEpipeAndLeavesNothingPending) {
  DefaultSigpipe dfl;
  BrokenPipe p;
  {
    ScopedSigpipeBlock block;
    errno = 0;
    EXPECT_EQ(write(p.fds[1], "x", 1), -1);
    EXPECT_EQ(errno, EPIPE);
  }
  // Still alive, the signal consumed, the mask restored (SIGPIPE deliverable again).
  EXPECT_FALSE(Pending());
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  EXPECT_EQ(sigismember(&mask, SIGPIPE), 0);
}

TEST(SigpipeTest, ThreadBlockIsInheritedByTheThreadsItStarts) {
  DefaultSigpipe dfl;
  BrokenPipe p;
  int err = 0;
  std::thread parent([&] {
    BlockSigpipeOnThisThread();
    std::thread child([&] {
      errno = 0;
      EXPECT_EQ(write(p.fds[1], "x", 1), -1);
      err = errno;
    });
    child.join();
  });
  parent.join();
  EXPECT_EQ(err, EPIPE);
}

TEST(SigpipeTest, IgnoreSigpipeIgnoresItProcessWide) {
  DefaultSigpipe dfl;
  IgnoreSigpipe();
  struct sigaction now = {};
  sigaction(SIGPIPE, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
  BrokenPipe p;
  errno = 0;
  EXPECT_EQ(write(p.fds[1], "x", 1), -1);
  EXPECT_EQ(errno, EPIPE);
}

}  // namespace
}  // namespace spiderpool::base
