#pragma once
// A node's container runtime, as far as ipam_e2e needs one: a small process that execs the CNI
// plugin for the bench's simulated kubelet, one per simulated node.
//
// Why not exec from the bench process: that process also runs the loopback API server, which
// at 100 nodes holds thousands of sockets; every spawn copied, then closed, that whole fd table
// (perf: ~6% of all CPU of a 100-node wave in filp_flush, dnotify_flush, dup_fd,
// do_close_on_exec). A node's real runtime holds no such table, so the cost grew with the
// simulated node count for the bench's sake only.
//
// Protocol, one request per connection on a unix stream socket: the client writes a JSON
// request and shuts its side down; the runtime runs it (base::RunProcess) and writes the JSON
// result, then closes.
//   request:  {"argv":[...],"env":{"K":"V"},"stdin":"...","timeout_ms":N}
//   result:   {"exit_code":N,"signal":N,"timed_out":false,"stdout":"...","stderr":"..."}
//             or {"error":"..."} when the program could not be run
// The plugins' CPU is the runtime's reaped children's (/proc/PID/stat cutime + cstime).

#include <string>

#include "absl/status/statusor.h"
#include "base/subprocess.h"

namespace spiderpool::bench {

// Runs `options` through the runtime listening on `socket`.
absl::StatusOr<base::ProcessResult> RunThroughRuntime(const std::string& socket,
                                                      const base::ProcessOptions& options);

// The runtime: listens on `socket` and serves each connection on its own thread until the
// process is killed (it dies with its parent: PR_SET_PDEATHSIG). Returns only on a setup error.
absl::Status ServeCniRuntime(const std::string& socket);

}  // namespace spiderpool::bench
