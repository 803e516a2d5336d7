#include "dra/nic/discovery.h"

#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include "absl/numeric/int128.h"
#include "base/log.h"
#include "base/strings.h"
#include "dra/nic/sysfs.h"

namespace spiderpool::dra::nic {
namespace {

struct NlSockDeleter {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct NlCacheDeleter {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
using NlSock = std::unique_ptr<nl_sock, NlSockDeleter>;
using NlCache = std::unique_ptr<nl_cache, NlCacheDeleter>;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// A dump interrupted by concurrent changes (NLE_DUMP_INTR) is retried this often.
constexpr int kDumpAttempts = 5;

absl::Status NlError(std::string_view what, int err) {
  std::string msg = base::StrCat(what, ": ", nl_geterror(err));
  return err == NLE_PERM ? absl::PermissionDeniedError(msg) : absl::UnavailableError(msg);
}

std::string FormatMac(nl_addr* addr) {
  if (addr == nullptr) return "";
  const auto* bytes = static_cast<const unsigned char*>(nl_addr_get_binary_addr(addr));
  unsigned len = nl_addr_get_len(addr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    if (i > 0) out.push_back(':');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0xf]);
  }
  return out;
}

// The local address of `a` with its prefix length, if it is a global IPv4/IPv6 address.
std::optional<base::IPPrefix> GlobalPrefix(rtnl_addr* a) {
  if (rtnl_addr_get_scope(a) != RT_SCOPE_UNIVERSE) return std::nullopt;
  nl_addr* local = rtnl_addr_get_local(a);
  if (local == nullptr) return std::nullopt;
  const auto* b = static_cast<const unsigned char*>(nl_addr_get_binary_addr(local));
  unsigned len = nl_addr_get_len(local);
  int family = rtnl_addr_get_family(a);
  base::IPAddress ip;
  if (family == AF_INET && len == 4) {
    ip = base::IPAddress::V4((uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
                             (uint32_t{b[2]} << 8) | uint32_t{b[3]});
  } else if (family == AF_INET6 && len == 16) {
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return std::nullopt;  // fe80::/10
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; ++i) hi = (hi << 8) | b[i];
    for (int i = 8; i < 16; ++i) lo = (lo << 8) | b[i];
    ip = base::IPAddress::V6(absl::MakeUint128(hi, lo));
  } else {
    return std::nullopt;
  }
  int plen = rtnl_addr_get_prefixlen(a);
  if (plen < 0 || plen > ip.bits()) return std::nullopt;
  auto prefix = base::IPPrefix::Parse(base::StrCat(ip.ToString(), "/", plen));
  if (!prefix.ok()) return std::nullopt;
  return *prefix;
}

bool PrefixLess(const base::IPPrefix& a, const base::IPPrefix& b) {
  if (a.address() != b.address()) return a.address() < b.address();
  return a.length() < b.length();
}

// One dump of links and addresses. *interrupted is set when the kernel reported that the
// dump raced with changes (worth an immediate retry).
absl::StatusOr<std::vector<Nic>> ListOnce(const std::string& sysfs_root, bool* interrupted) {
  *interrupted = false;
  NlSock sock(nl_socket_alloc());
  if (!sock) return absl::ResourceExhaustedError("nl_socket_alloc failed");
  if (int err = nl_connect(sock.get(), NETLINK_ROUTE); err < 0) {
    return NlError("netlink connect", err);
  }
  nl_cache* raw = nullptr;
  if (int err = rtnl_link_alloc_cache(sock.get(), AF_UNSPEC, &raw); err < 0) {
    *interrupted = (err == -NLE_DUMP_INTR);
    return NlError("netlink link dump", err);
  }
  NlCache links(raw);
  raw = nullptr;
  if (int err = rtnl_addr_alloc_cache(sock.get(), &raw); err < 0) {
    *interrupted = (err == -NLE_DUMP_INTR);
    return NlError("netlink address dump", err);
  }
  NlCache addrs(raw);

  std::vector<Nic> nics;
  std::map<int, size_t> by_index;
  for (nl_object* o = nl_cache_get_first(links.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* link = reinterpret_cast<rtnl_link*>(o);
    unsigned flags = rtnl_link_get_flags(link);
    if ((flags & IFF_LOOPBACK) != 0 || rtnl_link_get_arptype(link) == ARPHRD_LOOPBACK) continue;
    Nic nic;
    if (const char* name = rtnl_link_get_name(link)) nic.name = name;
    nic.ifindex = rtnl_link_get_ifindex(link);
    nic.mac = FormatMac(rtnl_link_get_addr(link));
    nic.mtu = static_cast<int>(rtnl_link_get_mtu(link));
    uint8_t oper = rtnl_link_get_operstate(link);
    nic.up = (flags & IFF_UP) != 0 && (oper == IF_OPER_UP || oper == IF_OPER_UNKNOWN);
    if (const char* kind = rtnl_link_get_type(link)) nic.kind = kind;
    if (!sysfs_root.empty()) {
      std::optional<SysfsFacts> facts = ReadSysfsFacts(sysfs_root, nic.name);
      if (facts && facts->ifindex == nic.ifindex) ApplySysfsFacts(*facts, &nic);
    }
    by_index[nic.ifindex] = nics.size();
    nics.push_back(std::move(nic));
  }
  for (nl_object* o = nl_cache_get_first(addrs.get()); o != nullptr; o = nl_cache_get_next(o)) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    auto it = by_index.find(rtnl_addr_get_ifindex(a));
    if (it == by_index.end()) continue;  // loopback, or a link that appeared between dumps
    std::optional<base::IPPrefix> p = GlobalPrefix(a);
    if (!p) continue;
    Nic& nic = nics[it->second];
    (p->family() == base::IPFamily::kV4 ? nic.ipv4 : nic.ipv6).push_back(*p);
  }
  for (Nic& nic : nics) {
    std::sort(nic.ipv4.begin(), nic.ipv4.end(), PrefixLess);
    std::sort(nic.ipv6.begin(), nic.ipv6.end(), PrefixLess);
  }
  std::sort(nics.begin(), nics.end(), [](const Nic& a, const Nic& b) {
    return a.name != b.name ? a.name < b.name : a.ifindex < b.ifindex;
  });
  return nics;
}

// A NETLINK_ROUTE socket subscribed to link and IPv4/IPv6 address notifications.
absl::StatusOr<int> OpenNotificationSocket(int receive_buffer_bytes) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) return absl::ErrnoToStatus(errno, "netlink socket");
  Fd guard(fd);
  if (receive_buffer_bytes > 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &receive_buffer_bytes,
                 sizeof(receive_buffer_bytes)) != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes,
                 sizeof(receive_buffer_bytes)) != 0) {
    return absl::ErrnoToStatus(errno, "netlink SO_RCVBUF");
  }
  sockaddr_nl sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    return absl::ErrnoToStatus(errno, "netlink bind");
  }
  for (int group : {RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR}) {
    if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) != 0) {
      return absl::ErrnoToStatus(errno, base::StrCat("netlink join group ", group));
    }
  }
  return guard.release();
}

void Bump(WatchStats* stats, std::atomic<int64_t> WatchStats::*counter) {
  if (stats != nullptr) (stats->*counter).fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

NetlinkNicSource::NetlinkNicSource(NetlinkNicSourceOptions options)
    : options_(std::move(options)) {}

absl::StatusOr<std::vector<Nic>> NetlinkNicSource::List() {
  absl::Status last;
  for (int attempt = 0; attempt < kDumpAttempts; ++attempt) {
    bool interrupted = false;
    auto nics = ListOnce(options_.sysfs_root, &interrupted);
    if (nics.ok() || !interrupted) return nics;
    last = nics.status();
  }
  return last;
}

absl::Status NetlinkNicSource::Watch(std::stop_token stop, const NicListCallback& on_change) {
  WatchStats* stats = options_.stats;
  // Subscribe before the initial dump: a change during the dump is then never lost.
  absl::StatusOr<int> sock_fd = OpenNotificationSocket(options_.receive_buffer_bytes);
  if (!sock_fd.ok()) return sock_fd.status();
  Fd sock(*sock_fd);
  Fd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (wake.get() < 0) return absl::ErrnoToStatus(errno, "eventfd");
  // Declared after `wake`, so destroyed (and waited for, if running) before it closes.
  std::stop_callback on_stop(stop, [fd = wake.get()] {
    uint64_t one = 1;
    (void)!write(fd, &one, sizeof(one));
  });

  std::vector<Nic> last;
  bool delivered = false;
  bool pending = true;  // the initial list
  absl::Time now = absl::Now();
  absl::Time burst_start = now;
  absl::Time due = now;
  std::vector<char> buf(64 * 1024);

  while (!stop.stop_requested()) {
    pollfd fds[2] = {{sock.get(), POLLIN, 0}, {wake.get(), POLLIN, 0}};
    timespec ts;
    timespec* timeout = nullptr;
    if (pending) {
      ts = absl::ToTimespec(std::max(due - absl::Now(), absl::ZeroDuration()));
      timeout = &ts;
    }
    int n = ppoll(fds, 2, timeout, nullptr);
    if (n < 0 && errno != EINTR) return absl::ErrnoToStatus(errno, "ppoll");
    if (stop.stop_requested()) break;

    if (n > 0 && (fds[0].revents & (POLLIN | POLLERR)) != 0) {
      bool got = false;
      while (true) {
        ssize_t r = recv(sock.get(), buf.data(), buf.size(), MSG_DONTWAIT);
        if (r > 0) {
          got = true;
          // NLMSG_OK/NLMSG_NEXT, without their signed/unsigned comparisons.
          size_t left = static_cast<size_t>(r);
          for (const auto* h = reinterpret_cast<const nlmsghdr*>(buf.data());
               left >= sizeof(nlmsghdr) && h->nlmsg_len >= sizeof(nlmsghdr) &&
               h->nlmsg_len <= left;) {
            Bump(stats, &WatchStats::events);
            size_t step = std::min<size_t>(NLMSG_ALIGN(h->nlmsg_len), left);
            left -= step;
            h = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(h) + step);
          }
          continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == ENOBUFS) {  // the kernel dropped notifications: re-list
          got = true;
          Bump(stats, &WatchStats::overruns);
          SP_VLOG(1).Msg("netlink notifications overran the socket buffer; re-listing NICs");
          continue;
        }
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          SP_LOG(Warning).Msg("netlink recv failed").KV("error", std::strerror(errno));
          got = true;  // be safe: re-list
        }
        break;
      }
      if (got) {
        now = absl::Now();
        if (!pending) {
          pending = true;
          burst_start = now;
        }
        due = std::min(now + options_.quiet, burst_start + options_.max_delay);
      }
    }

    if (!pending || absl::Now() < due) continue;
    if (delivered) Bump(stats, &WatchStats::relists);
    absl::StatusOr<std::vector<Nic>> nics = List();
    if (!nics.ok()) {
      SP_LOG(Warning).Msg("listing NICs failed; retrying").KV("error", nics.status());
      burst_start = absl::Now();
      due = burst_start + options_.retry;
      continue;
    }
    pending = false;
    if (!delivered || *nics != last) {
      last = *std::move(nics);
      delivered = true;
      Bump(stats, &WatchStats::callbacks);
      on_change(last);
    }
  }
  return absl::OkStatus();
}

bool Matches(const MatchRules& rules, const std::string& name) {
  auto any = [&](const std::vector<std::string>& globs) {
    return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
      return fnmatch(g.c_str(), name.c_str(), 0) == 0;
    });
  };
  return (rules.include.empty() || any(rules.include)) && !any(rules.exclude);
}

std::vector<Nic> Filter(const std::vector<Nic>& nics, const MatchRules& rules) {
  std::vector<Nic> out;
  for (const Nic& n : nics) {
    if (Matches(rules, n.name)) out.push_back(n);
  }
  return out;
}

}  // namespace spiderpool::dra::nic
