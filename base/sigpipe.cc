#include "base/sigpipe.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace spiderpool::base {
namespace {

sigset_t SigpipeSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

bool SigpipePending() {
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

}  // namespace

void IgnoreSigpipe() {
  struct sigaction sa = {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
}

void BlockSigpipeOnThisThread() {
  sigset_t set = SigpipeSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

ScopedSigpipeBlock::ScopedSigpipeBlock() {
  sigset_t set = SigpipeSet();
  was_pending_ = SigpipePending();
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
  was_blocked_ = sigismember(&old_mask_, SIGPIPE) == 1;
}

ScopedSigpipeBlock::~ScopedSigpipeBlock() {
  // Consume the SIGPIPE our writes raised (thread-directed; a zero timeout never waits). One
  // that was already pending before the scope is left alone.
  if (!was_pending_ && SigpipePending()) {
    sigset_t set = SigpipeSet();
    const timespec zero = {0, 0};
    while (sigtimedwait(&set, nullptr, &zero) == -1 && errno == EINTR) {
    }
  }
  if (!was_blocked_) pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

}  // namespace spiderpool::base
