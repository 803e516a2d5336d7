#include "agent/cni/netprobe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <thread>
#include <utility>

#include "base/strings.h"

namespace spiderpool::agent::cni::netprobe {

namespace {

using Clock = std::chrono::steady_clock;

constexpr Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr Mac kZeroMac = {0, 0, 0, 0, 0, 0};
constexpr uint8_t kIcmpv6 = 58;
constexpr uint8_t kOptSourceLinkLayer = 1;
constexpr uint8_t kOptTargetLinkLayer = 2;
// ff02::1, all nodes.
const absl::uint128 kAllNodes = absl::MakeUint128(0xff02000000000000ULL, 1);
// /proc/net/if_inet6 flags (linux/if_addr.h) and the link-local scope.
constexpr unsigned kIfaTentative = 0x40;
constexpr unsigned kIfaDadFailed = 0x08;
constexpr unsigned kScopeLink = 0x20;

absl::Status Errno(std::string_view what) {
  int e = errno;
  return absl::InternalError(base::StrCat(what, ": ", strerror(e)));
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) close(fd_);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

void Put16(std::string* s, uint16_t v) {
  s->push_back(static_cast<char>(v >> 8));
  s->push_back(static_cast<char>(v & 0xff));
}
void Put32(std::string* s, uint32_t v) {
  Put16(s, static_cast<uint16_t>(v >> 16));
  Put16(s, static_cast<uint16_t>(v & 0xffff));
}
void Put128(std::string* s, absl::uint128 v) {
  for (int i = 15; i >= 0; --i) s->push_back(static_cast<char>(static_cast<uint8_t>(v >> (i * 8))));
}
void PutMac(std::string* s, const Mac& m) { s->append(reinterpret_cast<const char*>(m.data()), 6); }

uint8_t At(std::string_view b, size_t i) { return static_cast<uint8_t>(b[i]); }
uint16_t Get16(std::string_view b, size_t i) {
  return static_cast<uint16_t>((At(b, i) << 8) | At(b, i + 1));
}
uint32_t Get32(std::string_view b, size_t i) {
  return (static_cast<uint32_t>(Get16(b, i)) << 16) | Get16(b, i + 2);
}
absl::uint128 Get128(std::string_view b, size_t i) {
  absl::uint128 v = 0;
  for (size_t k = 0; k < 16; ++k) v = (v << 8) | At(b, i + k);
  return v;
}
Mac GetMac(std::string_view b, size_t i) {
  Mac m;
  for (size_t k = 0; k < 6; ++k) m[k] = At(b, i + k);
  return m;
}

// ICMPv6 checksum over the pseudo-header and the message (RFC 4443 §2.3).
uint16_t Icmpv6Checksum(absl::uint128 src, absl::uint128 dst, std::string_view msg) {
  std::string pseudo;
  Put128(&pseudo, src);
  Put128(&pseudo, dst);
  Put32(&pseudo, static_cast<uint32_t>(msg.size()));
  Put32(&pseudo, kIcmpv6);
  uint32_t sum = 0;
  auto add = [&sum](std::string_view b) {
    for (size_t i = 0; i + 1 < b.size(); i += 2) sum += Get16(b, i);
    if (b.size() % 2) sum += static_cast<uint32_t>(At(b, b.size() - 1)) << 8;
  };
  add(pseudo);
  add(msg);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

absl::uint128 SolicitedNode(absl::uint128 ip) {
  return absl::MakeUint128(0xff02000000000000ULL, 0x00000001ff000000ULL) |
         (ip & absl::uint128(0xffffff));
}
Mac MulticastMac(absl::uint128 ip) {
  uint32_t low = static_cast<uint32_t>(absl::Uint128Low64(ip) & 0xffffffffULL);
  return {0x33, 0x33, static_cast<uint8_t>(low >> 24), static_cast<uint8_t>(low >> 16),
          static_cast<uint8_t>(low >> 8), static_cast<uint8_t>(low)};
}

// Runs `fn` on a new thread that first enters the namespace at `netns_path` ("" = stay).
template <typename T>
T InNetns(const std::string& netns_path, std::function<T()> fn) {
  std::optional<T> out;
  std::thread t([&] {
    if (!netns_path.empty()) {
      Fd ns(open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!ns.ok()) {
        out.emplace(Errno(base::StrCat("open network namespace ", netns_path)));
        return;
      }
      if (setns(ns.get(), CLONE_NEWNET) != 0) {
        out.emplace(Errno(base::StrCat("enter network namespace ", netns_path)));
        return;
      }
    }
    out.emplace(fn());
  });
  t.join();
  return std::move(*out);
}

struct LinkState {
  int ifindex = 0;
  Mac mac{};
};

// Looks the link up by name, sets IFF_UP if needed and reads its MAC (ioctls on a datagram
// socket of the current namespace).
absl::StatusOr<LinkState> BringUp(const std::string& ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
    return absl::InvalidArgumentError(base::StrCat("bad interface name \"", ifname, "\""));
  }
  Fd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.ok()) return Errno("socket");
  ifreq ifr{};
  memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  LinkState st;
  if (ioctl(s.get(), SIOCGIFINDEX, &ifr) != 0) {
    return Errno(base::StrCat("interface ", ifname));
  }
  st.ifindex = ifr.ifr_ifindex;
  if (ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0) return Errno(base::StrCat("flags of ", ifname));
  if (!(ifr.ifr_flags & IFF_UP)) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    if (ioctl(s.get(), SIOCSIFFLAGS, &ifr) != 0) return Errno(base::StrCat("set ", ifname, " up"));
  }
  if (ioctl(s.get(), SIOCGIFHWADDR, &ifr) != 0) return Errno(base::StrCat("MAC of ", ifname));
  for (size_t i = 0; i < 6; ++i) st.mac[i] = static_cast<uint8_t>(ifr.ifr_hwaddr.sa_data[i]);
  return st;
}

// An AF_PACKET datagram socket for one EtherType on one link.
class PacketSocket {
 public:
  static absl::StatusOr<PacketSocket> Open(const LinkState& link, uint16_t ethertype,
                                           bool all_multicast) {
    // Protocol 0 until bound: nothing from other links is queued in between.
    Fd fd(socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.ok()) return Errno("packet socket");
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ethertype);
    sll.sll_ifindex = link.ifindex;
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
      return Errno("bind packet socket");
    }
    if (all_multicast) {
      packet_mreq mr{};
      mr.mr_ifindex = link.ifindex;
      mr.mr_type = PACKET_MR_ALLMULTI;
      if (setsockopt(fd.get(), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) != 0) {
        return Errno("PACKET_MR_ALLMULTI");
      }
    }
    return PacketSocket(std::move(fd), link, ethertype);
  }

  absl::Status Send(const Mac& dst, std::string_view payload) {
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ethertype_);
    sll.sll_ifindex = link_.ifindex;
    sll.sll_halen = 6;
    memcpy(sll.sll_addr, dst.data(), 6);
    ssize_t n = sendto(fd_.get(), payload.data(), payload.size(), 0,
                       reinterpret_cast<sockaddr*>(&sll), sizeof(sll));
    if (n < 0) return Errno("send");
    return absl::OkStatus();
  }

  // Calls `match(payload, source_mac)` for every packet received from the link until it returns
  // true (-> true) or `deadline` passes (-> false).
  absl::StatusOr<bool> ReceiveUntil(Clock::time_point deadline,
                                    const std::function<bool(std::string_view, const Mac&)>& match) {
    char buf[2048];
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() < 0) return false;
      pollfd p{fd_.get(), POLLIN, 0};
      int r = poll(&p, 1, static_cast<int>(left.count()) + 1);
      if (r < 0) {
        if (errno == EINTR) continue;
        return Errno("poll");
      }
      if (r == 0) continue;  // re-checks the deadline
      while (true) {
        sockaddr_ll from{};
        socklen_t len = sizeof(from);
        ssize_t n = recvfrom(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT,
                             reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          return Errno("receive");
        }
        if (from.sll_pkttype == PACKET_OUTGOING || from.sll_ifindex != link_.ifindex) continue;
        Mac src = kZeroMac;
        if (from.sll_halen == 6) memcpy(src.data(), from.sll_addr, 6);
        if (src == link_.mac) continue;  // our own frames looped back
        if (match(std::string_view(buf, static_cast<size_t>(n)), src)) return true;
      }
    }
  }

 private:
  PacketSocket(Fd fd, const LinkState& link, uint16_t ethertype)
      : fd_(std::move(fd)), link_(link), ethertype_(ethertype) {}
  Fd fd_;
  LinkState link_;
  uint16_t ethertype_;
};

// IPv6: waits (until `deadline`) for the link-local address(es) of `ifindex` to leave the
// tentative state. A link without any link-local address after 100 ms (IPv6 disabled, address
// generation off) has nothing to wait for.
void WaitLinkLocalDad(int ifindex, Clock::time_point deadline) {
  auto start = Clock::now();
  while (Clock::now() < deadline) {
    FILE* f = fopen("/proc/thread-self/net/if_inet6", "re");
    if (!f) return;
    bool any = false, tentative = false;
    char addr[40], name[IFNAMSIZ + 1];
    unsigned idx, plen, scope, flags;
    while (fscanf(f, "%39s %x %x %x %x %16s", addr, &idx, &plen, &scope, &flags, name) == 6) {
      if (static_cast<int>(idx) != ifindex || scope != kScopeLink) continue;
      any = true;
      if ((flags & kIfaTentative) && !(flags & kIfaDadFailed)) tentative = true;
    }
    fclose(f);
    if (any && !tentative) return;
    if (!any && Clock::now() - start > std::chrono::milliseconds(100)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string ArpProbe(const Mac& mac, uint32_t sender, uint32_t target) {
  return BuildArp({.op = kArpRequest, .sender_mac = mac, .sender_ip = sender,
                   .target_mac = kZeroMac, .target_ip = target});
}

std::string NeighborSolicitation(const Mac& mac, absl::uint128 source, absl::uint128 target) {
  NdpPacket ns{.type = kNeighborSolicitation, .source = source,
               .destination = SolicitedNode(target), .target = target};
  if (source != 0) ns.link_layer = mac;  // never with the unspecified source (RFC 4861)
  return BuildNdp(ns);
}

// Sends `probe` up to timing.tries times and waits timing.per_try after each for `match`.
absl::StatusOr<bool> ProbeLoop(PacketSocket& sock, const Mac& dst, const std::string& probe,
                               const Timing& timing,
                               const std::function<bool(std::string_view, const Mac&)>& match) {
  for (int i = 0; i < std::max(1, timing.tries); ++i) {
    if (auto s = sock.Send(dst, probe); !s.ok()) return s;
    auto r = sock.ReceiveUntil(Clock::now() + timing.per_try, match);
    if (!r.ok() || *r) return r;
  }
  return false;
}

absl::StatusOr<std::optional<Conflict>> ProbeConflictHere(const Link& link,
                                                          const std::vector<base::IPAddress>& ips,
                                                          const Timing& timing) {
  auto st = BringUp(link.ifname);
  if (!st.ok()) return st.status();
  std::optional<PacketSocket> arp, ndp;
  bool dad_waited = false;
  for (const base::IPAddress& ip : ips) {
    Mac who{};
    absl::StatusOr<bool> hit = false;
    if (ip.is_v4()) {
      if (!arp) {
        auto s = PacketSocket::Open(*st, ETH_P_ARP, false);
        if (!s.ok()) return s.status();
        arp.emplace(std::move(*s));
      }
      uint32_t v = static_cast<uint32_t>(absl::Uint128Low64(ip.value()));
      hit = ProbeLoop(*arp, kBroadcast, ArpProbe(st->mac, 0, v), timing,
                      [&](std::string_view b, const Mac&) {
                        auto p = ParseArp(b);
                        if (!p || p->sender_ip != v || p->sender_mac == st->mac) return false;
                        who = p->sender_mac;
                        return true;
                      });
    } else {
      if (!ndp) {
        auto s = PacketSocket::Open(*st, ETH_P_IPV6, true);
        if (!s.ok()) return s.status();
        ndp.emplace(std::move(*s));
      }
      if (!dad_waited) {
        WaitLinkLocalDad(st->ifindex, Clock::now() + timing.dad_wait);
        dad_waited = true;
      }
      hit = ProbeLoop(*ndp, MulticastMac(SolicitedNode(ip.value())),
                      NeighborSolicitation(st->mac, 0, ip.value()), timing,
                      [&](std::string_view b, const Mac& src) {
                        auto p = ParseNdp(b);
                        if (!p || p->type != kNeighborAdvertisement || p->target != ip.value()) {
                          return false;
                        }
                        who = p->link_layer.value_or(src);
                        return who != st->mac;
                      });
    }
    if (!hit.ok()) return hit.status();
    if (*hit) return Conflict{.ip = ip, .mac = who};
  }
  return std::optional<Conflict>();
}

absl::StatusOr<std::optional<Mac>> ProbeGatewayHere(const Link& link,
                                                    const base::IPAddress& source,
                                                    const base::IPAddress& gateway,
                                                    const Timing& timing) {
  if (source.family() != gateway.family()) {
    return absl::InvalidArgumentError(base::StrCat("gateway ", gateway.ToString(),
                                                   " and source ", source.ToString(),
                                                   " are of different families"));
  }
  auto st = BringUp(link.ifname);
  if (!st.ok()) return st.status();
  Mac who{};
  absl::StatusOr<bool> hit = false;
  if (gateway.is_v4()) {
    auto sock = PacketSocket::Open(*st, ETH_P_ARP, false);
    if (!sock.ok()) return sock.status();
    uint32_t gw = static_cast<uint32_t>(absl::Uint128Low64(gateway.value()));
    uint32_t src = static_cast<uint32_t>(absl::Uint128Low64(source.value()));
    hit = ProbeLoop(*sock, kBroadcast, ArpProbe(st->mac, src, gw), timing,
                    [&](std::string_view b, const Mac&) {
                      auto p = ParseArp(b);
                      if (!p || p->sender_ip != gw || p->sender_mac == st->mac) return false;
                      who = p->sender_mac;
                      return true;
                    });
  } else {
    auto sock = PacketSocket::Open(*st, ETH_P_IPV6, true);
    if (!sock.ok()) return sock.status();
    WaitLinkLocalDad(st->ifindex, Clock::now() + timing.dad_wait);
    hit = ProbeLoop(*sock, MulticastMac(SolicitedNode(gateway.value())),
                    NeighborSolicitation(st->mac, source.value(), gateway.value()), timing,
                    [&](std::string_view b, const Mac& src) {
                      auto p = ParseNdp(b);
                      if (!p || p->type != kNeighborAdvertisement ||
                          p->target != gateway.value()) {
                        return false;
                      }
                      who = p->link_layer.value_or(src);
                      return who != st->mac;
                    });
  }
  if (!hit.ok()) return hit.status();
  if (!*hit) return std::optional<Mac>();
  return std::optional<Mac>(who);
}

absl::Status AnnounceHere(const Link& link, const std::vector<base::IPAddress>& ips) {
  auto st = BringUp(link.ifname);
  if (!st.ok()) return st.status();
  std::optional<PacketSocket> arp, ndp;
  for (const base::IPAddress& ip : ips) {
    if (ip.is_v4()) {
      if (!arp) {
        auto s = PacketSocket::Open(*st, ETH_P_ARP, false);
        if (!s.ok()) return s.status();
        arp.emplace(std::move(*s));
      }
      uint32_t v = static_cast<uint32_t>(absl::Uint128Low64(ip.value()));
      if (auto s = arp->Send(kBroadcast, ArpProbe(st->mac, v, v)); !s.ok()) return s;
    } else {
      if (!ndp) {
        auto s = PacketSocket::Open(*st, ETH_P_IPV6, false);
        if (!s.ok()) return s.status();
        ndp.emplace(std::move(*s));
      }
      std::string na = BuildNdp({.type = kNeighborAdvertisement, .source = ip.value(),
                                 .destination = kAllNodes, .target = ip.value(),
                                 .override_flag = true, .link_layer = st->mac});
      if (auto s = ndp->Send(MulticastMac(kAllNodes), na); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

std::string Where(const Link& link) {
  return base::StrCat(link.ifname, " in ", link.netns_path.empty() ? "this namespace"
                                                                   : link.netns_path);
}

class System final : public Prober {
 public:
  absl::StatusOr<std::optional<Conflict>> ProbeConflict(const Link& link,
                                                        const std::vector<base::IPAddress>& ips,
                                                        const Timing& timing) override {
    return netprobe::ProbeConflict(link, ips, timing);
  }
  absl::StatusOr<std::optional<Mac>> ProbeGateway(const Link& link,
                                                  const base::IPAddress& source,
                                                  const base::IPAddress& gateway,
                                                  const Timing& timing) override {
    return netprobe::ProbeGateway(link, source, gateway, timing);
  }
  absl::Status Announce(const Link& link, const std::vector<base::IPAddress>& ips) override {
    return netprobe::Announce(link, ips);
  }
};

template <typename T>
T Annotate(T r, const Link& link) {
  if (r.ok()) return r;
  absl::Status s = r.status();
  return absl::Status(s.code(), base::StrCat(Where(link), ": ", s.message()));
}

}  // namespace

std::string MacToString(const Mac& mac) {
  char buf[18];
  snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
           mac[4], mac[5]);
  return buf;
}

absl::StatusOr<std::optional<Conflict>> ProbeConflict(const Link& link,
                                                      const std::vector<base::IPAddress>& ips,
                                                      const Timing& timing) {
  using R = absl::StatusOr<std::optional<Conflict>>;
  return Annotate(InNetns<R>(link.netns_path, [&] { return ProbeConflictHere(link, ips, timing); }),
                  link);
}

absl::StatusOr<std::optional<Mac>> ProbeGateway(const Link& link, const base::IPAddress& source,
                                                const base::IPAddress& gateway,
                                                const Timing& timing) {
  using R = absl::StatusOr<std::optional<Mac>>;
  return Annotate(InNetns<R>(link.netns_path,
                             [&] { return ProbeGatewayHere(link, source, gateway, timing); }),
                  link);
}

absl::Status Announce(const Link& link, const std::vector<base::IPAddress>& ips) {
  absl::Status s =
      InNetns<absl::Status>(link.netns_path, [&] { return AnnounceHere(link, ips); });
  if (s.ok()) return s;
  return absl::Status(s.code(), base::StrCat(Where(link), ": ", s.message()));
}

Prober& SystemProber() {
  static System* p = new System();
  return *p;
}

// ---- wire formats ---------------------------------------------------------------------------

std::optional<ArpPacket> ParseArp(std::string_view b) {
  // htype 1 (Ethernet), ptype 0x0800, hlen 6, plen 4, then op and the four addresses.
  if (b.size() < 28) return std::nullopt;
  if (Get16(b, 0) != 1 || Get16(b, 2) != ETH_P_IP || At(b, 4) != 6 || At(b, 5) != 4) {
    return std::nullopt;
  }
  return ArpPacket{.op = Get16(b, 6),
                   .sender_mac = GetMac(b, 8),
                   .sender_ip = Get32(b, 14),
                   .target_mac = GetMac(b, 18),
                   .target_ip = Get32(b, 24)};
}

std::string BuildArp(const ArpPacket& p) {
  std::string s;
  Put16(&s, 1);
  Put16(&s, ETH_P_IP);
  s.push_back(6);
  s.push_back(4);
  Put16(&s, p.op);
  PutMac(&s, p.sender_mac);
  Put32(&s, p.sender_ip);
  PutMac(&s, p.target_mac);
  Put32(&s, p.target_ip);
  return s;
}

std::optional<NdpPacket> ParseNdp(std::string_view b) {
  if (b.size() < 40 || (At(b, 0) >> 4) != 6) return std::nullopt;
  size_t payload = Get16(b, 4);
  if (At(b, 6) != kIcmpv6 || At(b, 7) != 255 || b.size() - 40 < payload) return std::nullopt;
  std::string_view icmp = b.substr(40, payload);  // frames may carry padding after it
  if (icmp.size() < 24 || At(icmp, 1) != 0) return std::nullopt;
  NdpPacket p;
  p.type = At(icmp, 0);
  if (p.type != kNeighborSolicitation && p.type != kNeighborAdvertisement) return std::nullopt;
  p.source = Get128(b, 8);
  p.destination = Get128(b, 24);
  if (Icmpv6Checksum(p.source, p.destination, icmp) != 0) return std::nullopt;
  uint8_t flags = At(icmp, 4);
  if (p.type == kNeighborAdvertisement) {
    p.router = flags & 0x80;
    p.solicited = flags & 0x40;
    p.override_flag = flags & 0x20;
  }
  p.target = Get128(icmp, 8);
  uint8_t want = p.type == kNeighborSolicitation ? kOptSourceLinkLayer : kOptTargetLinkLayer;
  for (size_t off = 24; off < icmp.size();) {
    if (icmp.size() - off < 2) return std::nullopt;
    size_t len = static_cast<size_t>(At(icmp, off + 1)) * 8;
    if (len == 0 || icmp.size() - off < len) return std::nullopt;  // RFC 4861 §4.6
    if (At(icmp, off) == want && len == 8) p.link_layer = GetMac(icmp, off + 2);
    off += len;
  }
  return p;
}

std::string BuildNdp(const NdpPacket& p) {
  std::string icmp;
  icmp.push_back(static_cast<char>(p.type));
  icmp.push_back(0);
  Put16(&icmp, 0);  // checksum, below
  uint8_t flags = 0;
  if (p.type == kNeighborAdvertisement) {
    flags = static_cast<uint8_t>((p.router ? 0x80 : 0) | (p.solicited ? 0x40 : 0) |
                                 (p.override_flag ? 0x20 : 0));
  }
  icmp.push_back(static_cast<char>(flags));
  icmp.append(3, '\0');
  Put128(&icmp, p.target);
  if (p.link_layer) {
    icmp.push_back(static_cast<char>(p.type == kNeighborSolicitation ? kOptSourceLinkLayer
                                                                     : kOptTargetLinkLayer));
    icmp.push_back(1);
    PutMac(&icmp, *p.link_layer);
  }
  uint16_t sum = Icmpv6Checksum(p.source, p.destination, icmp);
  icmp[2] = static_cast<char>(sum >> 8);
  icmp[3] = static_cast<char>(sum & 0xff);
  std::string s;
  Put32(&s, 0x60000000);  // version 6, no traffic class, no flow label
  Put16(&s, static_cast<uint16_t>(icmp.size()));
  s.push_back(static_cast<char>(kIcmpv6));
  s.push_back(static_cast<char>(255));  // hop limit
  Put128(&s, p.source);
  Put128(&s, p.destination);
  return s + icmp;
}

}  // namespace spiderpool::agent::cni::netprobe
