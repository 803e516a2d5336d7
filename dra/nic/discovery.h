#pragma once
// NIC discovery: the host's network interfaces as Nic records, listed and watched over
// rtnetlink (libnl-route link + address caches) and completed from sysfs (sysfs.h).
//
//   NetlinkNicSource source({.sysfs_root = "/sys"});
//   auto nics = source.List();                        // every NIC but loopback, by name
//   std::jthread watcher([&](std::stop_token stop) {
//     absl::Status s = source.Watch(stop, [&](const std::vector<Nic>& nics) {
//       Publish(Filter(nics, rules));                 // the initial list, then each change
//     });
//   });
//   ...; watcher.request_stop();                      // Watch returns OK, the thread joins
//
// Network namespaces: a netlink socket belongs to the network namespace of the thread that
// created it. List() opens its socket per call and Watch() at its start, so both see the
// namespace of the CALLING THREAD at that moment. To discover another namespace, run them on
// a thread that first did setns(fd, CLONE_NEWNET) with fd = open("/var/run/netns/<name>")
// (what the tests do; setns of a net namespace only affects the calling thread, and such a
// thread should exit afterwards rather than go back to a pool). sysfs does not follow
// setns (it shows the namespace it was mounted in): sysfs facts are applied only when
// <sysfs_root>/class/net/<name>/ifindex equals the netlink ifindex.

#include <atomic>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dra/nic/nic.h"

namespace spiderpool::dra::nic {

// Gets the whole NIC list (never a delta).
using NicListCallback = std::function<void(const std::vector<Nic>& nics)>;

class NicSource {
 public:
  virtual ~NicSource() = default;
  // Every interface except loopback, sorted by name; ipv4/ipv6 sorted by address.
  virtual absl::StatusOr<std::vector<Nic>> List() = 0;
  // Blocks until `stop` is requested, then returns OK. Calls `on_change` (on the calling
  // thread) first with the initial list, then with the full list each time it differs from
  // the last one delivered. Returns an error only if it cannot subscribe to changes; a
  // failing List() is logged and retried, never returned.
  virtual absl::Status Watch(std::stop_token stop, const NicListCallback& on_change) = 0;
};

// Counters of a running Watch (read them from any thread).
struct WatchStats {
  std::atomic<int64_t> events{0};     // netlink notifications received
  std::atomic<int64_t> overruns{0};   // ENOBUFS: notifications were lost, a re-list follows
  std::atomic<int64_t> relists{0};    // List() calls after the initial one
  std::atomic<int64_t> callbacks{0};  // on_change calls, the initial one included
};

struct NetlinkNicSourceOptions {
  // "/sys" in production; a fake tree in tests; "" skips sysfs entirely.
  std::string sysfs_root = "/sys";
  // Coalescing: after a notification the list is re-read once no further notification came
  // for `quiet`, but at most `max_delay` after the first one of the burst.
  absl::Duration quiet = absl::Milliseconds(100);
  absl::Duration max_delay = absl::Seconds(1);
  // When a re-list fails (e.g. the dump was interrupted), the next try is this much later.
  absl::Duration retry = absl::Seconds(1);
  // SO_RCVBUF(FORCE) of the notification socket; 0 keeps the kernel default. A burst larger
  // than this overruns (ENOBUFS), which is survived by a re-list.
  int receive_buffer_bytes = 4 << 20;
  WatchStats* stats = nullptr;  // optional, must outlive Watch()
};

class NetlinkNicSource : public NicSource {
 public:
  explicit NetlinkNicSource(NetlinkNicSourceOptions options = {});
  absl::StatusOr<std::vector<Nic>> List() override;
  absl::Status Watch(std::stop_token stop, const NicListCallback& on_change) override;

 private:
  NetlinkNicSourceOptions options_;
};

// Which NICs to use, by interface name, fnmatch(3) globs ("eth*", "ens[0-9]f?").
struct MatchRules {
  std::vector<std::string> include;  // empty = every name
  std::vector<std::string> exclude;  // applied after include

  bool operator==(const MatchRules&) const = default;
};

// True when `name` matches some include glob (or include is empty) and no exclude glob.
bool Matches(const MatchRules& rules, const std::string& name);
// The NICs that Matches() keeps, in their order.
std::vector<Nic> Filter(const std::vector<Nic>& nics, const MatchRules& rules);

}  // namespace spiderpool::dra::nic
