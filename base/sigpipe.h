// SIGPIPE: a write to a socket or pipe whose peer has gone raises SIGPIPE, and its default
// action kills the process. No process of ours may die of a peer closing a connection, so:
//   - every main calls IgnoreSigpipe() first (product binaries, CNI plugins, benches, test
//     mains through //base/testing:gtest_main);
//   - library code that writes to sockets through a library we do not control (cpp-httplib,
//     OpenSSL's socket BIO) must not rely on that: it blocks SIGPIPE on its own threads
//     (BlockSigpipeOnThisThread, inherited by the threads it creates) or around the call
//     (ScopedSigpipeBlock), so it is safe in a process that kept the default disposition;
//   - our own send() calls pass MSG_NOSIGNAL.
// The write then fails with EPIPE, which the caller handles as a closed connection.
#ifndef SPIDERPOOL_BASE_SIGPIPE_H_
#define SPIDERPOOL_BASE_SIGPIPE_H_

#include <signal.h>

namespace spiderpool::base {

// Sets SIGPIPE's disposition to SIG_IGN for the whole process. Call first in main.
void IgnoreSigpipe();

// Blocks SIGPIPE in the calling thread for the rest of its life; threads it creates inherit
// the mask. A SIGPIPE raised by a write on this thread stays pending and harmless.
void BlockSigpipeOnThisThread();

// Blocks SIGPIPE in the calling thread for the scope; on exit a SIGPIPE that the scope's
// writes raised is consumed (so it cannot be delivered later) and the old mask is restored.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock();
  ~ScopedSigpipeBlock();
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t old_mask_;
  bool was_pending_ = false;
  bool was_blocked_ = false;
};

}  // namespace spiderpool::base

#endif  // SPIDERPOOL_BASE_SIGPIPE_H_
