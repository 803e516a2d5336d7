#pragma once
// The coordinator's side effects: rtnetlink (libnl-route) on one socket per network namespace,
// and the per-namespace sysctls. Every change that ADD makes is recorded with its inverse in a
// Txn, so a failure half-way undoes exactly what this invocation did (nothing else).

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/ip.h"

struct nl_sock;

namespace spiderpool::agent::coordinator {

using Mac = std::array<uint8_t, 6>;
std::string MacString(const Mac& mac);

// The inverses of what was done, run newest first unless Commit() was called.
class Txn {
 public:
  Txn() = default;
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn() { Rollback(); }
  void OnRollback(std::function<void()> undo) { undo_.push_back(std::move(undo)); }
  void Commit() { undo_.clear(); }
  void Rollback();

 private:
  std::vector<std::function<void()>> undo_;
};

// An open network namespace (fd) by path, or the caller's own.
class Netns {
 public:
  static absl::StatusOr<Netns> Current();
  static absl::StatusOr<Netns> Open(const std::string& path);  // NotFound when it is gone
  Netns(Netns&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Netns& operator=(Netns&& o) noexcept;
  ~Netns();
  int fd() const { return fd_; }
  // Runs fn with the calling thread inside this namespace, then returns to `back`.
  absl::Status Run(const Netns& back, const std::function<absl::Status()>& fn) const;

 private:
  explicit Netns(int fd) : fd_(fd) {}
  int fd_ = -1;
};

struct LinkInfo {
  int index = 0;
  std::string name;
  Mac mac{};
  int mtu = 0;
  uint32_t txqlen = 0;
  bool up = false;
  int peer_index = 0;  // veth: the peer's index (in its own namespace); 0 if none
};

struct AddrInfo {
  int if_index = 0;
  std::string if_name;
  base::IPPrefix prefix;  // address/prefix length as configured
  int scope = 0;
};

struct RouteInfo {
  int table = 0;
  std::optional<base::IPPrefix> dst;  // nullopt: default route
  std::optional<base::IPAddress> gw;
  int oif = 0;
  int scope = 0;
  int family = 0;
  int protocol = 3;  // RTPROT_BOOT: what `ip route add` writes; deletes match on it
};

struct RuleInfo {
  int family = 0;
  std::optional<base::IPPrefix> src;
  std::optional<base::IPPrefix> dst;
  uint32_t table = 0;
  uint32_t prio = 0;
};

// One rtnetlink socket bound to the namespace it was opened in.
class Netlink {
 public:
  // Opens the socket inside `ns` (returning the thread to `back`).
  static absl::StatusOr<std::unique_ptr<Netlink>> OpenIn(const Netns& ns, const Netns& back);
  ~Netlink();

  absl::StatusOr<LinkInfo> Link(std::string_view name);      // NotFound when missing
  absl::StatusOr<LinkInfo> LinkByIndex(int index);
  absl::StatusOr<std::vector<LinkInfo>> Links();
  absl::StatusOr<std::vector<AddrInfo>> Addrs();
  absl::StatusOr<std::vector<RouteInfo>> Routes();  // all tables, unicast only
  absl::StatusOr<std::vector<RuleInfo>> Rules();

  // Creates `name` here and `peer` in `peer_ns`, both with `mtu`; undo deletes it.
  absl::Status AddVeth(std::string_view name, std::string_view peer, const Netns& peer_ns, int mtu,
                       Txn* txn);
  absl::Status DeleteLink(std::string_view name);  // OK when missing
  absl::Status SetUp(const LinkInfo& link, Txn* txn);
  absl::Status SetMac(const LinkInfo& link, const Mac& mac, Txn* txn);
  absl::Status SetTxQueueLen(const LinkInfo& link, uint32_t qlen, Txn* txn);
  absl::Status AddAddr(int if_index, const base::IPPrefix& addr, Txn* txn);
  // A route that already exists is left alone (and not undone).
  absl::Status AddRoute(const RouteInfo& route, Txn* txn);
  absl::Status DeleteRoute(const RouteInfo& route);  // OK when missing
  absl::Status AddRule(const RuleInfo& rule, Txn* txn);
  absl::Status DeleteRule(const RuleInfo& rule);  // OK when missing
  // A permanent neighbour entry (replaces a stale one).
  absl::Status AddNeigh(int if_index, const base::IPAddress& ip, const Mac& mac, Txn* txn);
  absl::Status DeleteNeigh(int if_index, const base::IPAddress& ip);  // OK when missing

 private:
  explicit Netlink(nl_sock* sock) : sock_(sock) {}
  nl_sock* sock_;
};

// Writes /proc/sys/<key> ("net/ipv4/conf/all/rp_filter") in the calling thread's namespace and
// returns the value it had. NotFound when the key does not exist.
absl::StatusOr<std::string> WriteSysctl(const std::string& key, const std::string& value);

}  // namespace spiderpool::agent::coordinator
