#pragma once
// LinkOps over rtnetlink with libnl-route-3, in the network namespace of the calling thread.
// Every request asks for the kernel's extended ACK, so a refusal reads like
// "Operation not supported (kernel: Unknown device type)".

#include <memory>

#include "absl/status/statusor.h"
#include "agent/ifacer/links.h"

namespace spiderpool::agent::ifacer {

// A connected NETLINK_ROUTE socket; errors when the socket cannot be opened.
absl::StatusOr<std::unique_ptr<LinkOps>> NewNetlinkOps();

}  // namespace spiderpool::agent::ifacer
