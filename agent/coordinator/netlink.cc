#include "agent/coordinator/netlink.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/if.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <netlink/socket.h>

#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::coordinator {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const {
    if (p) F(p);
  }
};
using LinkPtr = std::unique_ptr<rtnl_link, Deleter<rtnl_link, rtnl_link_put>>;
using AddrPtr = std::unique_ptr<nl_addr, Deleter<nl_addr, nl_addr_put>>;
using CachePtr = std::unique_ptr<nl_cache, Deleter<nl_cache, nl_cache_free>>;
using RoutePtr = std::unique_ptr<rtnl_route, Deleter<rtnl_route, rtnl_route_put>>;
using RulePtr = std::unique_ptr<rtnl_rule, Deleter<rtnl_rule, rtnl_rule_put>>;
using NeighPtr = std::unique_ptr<rtnl_neigh, Deleter<rtnl_neigh, rtnl_neigh_put>>;
using RAddrPtr = std::unique_ptr<rtnl_addr, Deleter<rtnl_addr, rtnl_addr_put>>;

absl::Status NlError(int err, std::string_view what) {
  std::string msg = base::StrCat(what, ": ", nl_geterror(err));
  if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV) return absl::NotFoundError(msg);
  if (err == -NLE_EXIST) return absl::AlreadyExistsError(msg);
  return absl::InternalError(msg);
}

int FamilyOf(const base::IPAddress& ip) { return ip.is_v4() ? AF_INET : AF_INET6; }

AddrPtr ToNl(const base::IPAddress& ip, int prefix_len) {
  uint8_t buf[16];
  absl::uint128 v = ip.value();
  int n = ip.is_v4() ? 4 : 16;
  for (int i = n - 1; i >= 0; --i) {
    buf[i] = static_cast<uint8_t>(absl::Uint128Low64(v) & 0xff);
    v >>= 8;
  }
  AddrPtr a(nl_addr_build(FamilyOf(ip), buf, n));
  if (a) nl_addr_set_prefixlen(a.get(), prefix_len);
  return a;
}
AddrPtr ToNl(const base::IPPrefix& p) { return ToNl(p.address(), p.length()); }

std::optional<base::IPAddress> FromNl(nl_addr* a) {
  if (a == nullptr) return std::nullopt;
  int family = nl_addr_get_family(a);
  unsigned len = nl_addr_get_len(a);
  const uint8_t* b = static_cast<const uint8_t*>(nl_addr_get_binary_addr(a));
  if (family == AF_INET && len == 4) {
    return base::IPAddress::V4(uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3]);
  }
  if (family == AF_INET6 && len == 16) {
    absl::uint128 v = 0;
    for (int i = 0; i < 16; ++i) v = (v << 8) | b[i];
    return base::IPAddress::V6(v);
  }
  return std::nullopt;
}

std::optional<base::IPPrefix> PrefixFromNl(nl_addr* a) {
  std::optional<base::IPAddress> ip = FromNl(a);
  if (!ip.has_value()) return std::nullopt;
  absl::StatusOr<base::IPPrefix> p =
      base::IPPrefix::Parse(base::StrCat(ip->ToString(), "/", nl_addr_get_prefixlen(a)));
  if (!p.ok()) return std::nullopt;
  return *p;
}

AddrPtr MacToNl(const Mac& mac) {
  return AddrPtr(nl_addr_build(AF_LLC, mac.data(), mac.size()));
}

LinkInfo ToInfo(rtnl_link* l) {
  LinkInfo info;
  info.index = rtnl_link_get_ifindex(l);
  if (const char* n = rtnl_link_get_name(l)) info.name = n;
  if (nl_addr* a = rtnl_link_get_addr(l); a && nl_addr_get_len(a) == 6) {
    std::memcpy(info.mac.data(), nl_addr_get_binary_addr(a), 6);
  }
  info.mtu = static_cast<int>(rtnl_link_get_mtu(l));
  info.txqlen = rtnl_link_get_txqlen(l);
  info.up = (rtnl_link_get_flags(l) & IFF_UP) != 0;
  info.peer_index = rtnl_link_get_link(l);
  return info;
}

RoutePtr BuildRoute(const RouteInfo& r) {
  RoutePtr route(rtnl_route_alloc());
  int family = r.family;
  if (family == 0 && r.dst.has_value()) family = r.dst->address().is_v4() ? AF_INET : AF_INET6;
  if (family == 0 && r.gw.has_value()) family = FamilyOf(*r.gw);
  rtnl_route_set_family(route.get(), static_cast<uint8_t>(family));
  rtnl_route_set_table(route.get(), static_cast<uint32_t>(r.table));
  rtnl_route_set_scope(route.get(), static_cast<uint8_t>(r.scope));
  rtnl_route_set_protocol(route.get(), static_cast<uint8_t>(r.protocol));
  rtnl_route_set_type(route.get(), RTN_UNICAST);
  AddrPtr dst = r.dst.has_value() ? ToNl(*r.dst) : ToNl(family == AF_INET ? base::IPAddress::V4(0)
                                                                            : base::IPAddress::V6(0),
                                                        0);
  rtnl_route_set_dst(route.get(), dst.get());
  if (r.oif == 0 && !r.gw.has_value()) return route;
  rtnl_nexthop* nh = rtnl_route_nh_alloc();
  if (r.oif != 0) rtnl_route_nh_set_ifindex(nh, r.oif);
  if (r.gw.has_value()) {
    AddrPtr gw = ToNl(*r.gw, r.gw->bits());
    rtnl_route_nh_set_gateway(nh, gw.get());
  }
  rtnl_route_add_nexthop(route.get(), nh);
  return route;
}

RulePtr BuildRule(const RuleInfo& r) {
  RulePtr rule(rtnl_rule_alloc());
  rtnl_rule_set_family(rule.get(), r.family);
  rtnl_rule_set_table(rule.get(), r.table);
  rtnl_rule_set_action(rule.get(), FR_ACT_TO_TBL);
  if (r.prio != 0) rtnl_rule_set_prio(rule.get(), r.prio);
  if (r.src.has_value()) {
    AddrPtr a = ToNl(*r.src);
    rtnl_rule_set_src(rule.get(), a.get());
  }
  if (r.dst.has_value()) {
    AddrPtr a = ToNl(*r.dst);
    rtnl_rule_set_dst(rule.get(), a.get());
  }
  return rule;
}

}  // namespace

std::string MacString(const Mac& mac) {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return buf;
}

void Txn::Rollback() {
  while (!undo_.empty()) {
    std::function<void()> f = std::move(undo_.back());
    undo_.pop_back();
    f();
  }
}

// ---- Netns -----------------------------------------------------------------------------------

absl::StatusOr<Netns> Netns::Current() { return Open("/proc/thread-self/ns/net"); }

absl::StatusOr<Netns> Netns::Open(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    std::string msg = base::StrCat("open netns ", path, ": ", std::strerror(e));
    if (e == ENOENT) return absl::NotFoundError(msg);
    return absl::InternalError(msg);
  }
  return Netns(fd);
}

Netns& Netns::operator=(Netns&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Netns::~Netns() {
  if (fd_ >= 0) close(fd_);
}

absl::Status Netns::Run(const Netns& back, const std::function<absl::Status()>& fn) const {
  if (setns(fd_, CLONE_NEWNET) != 0) {
    return absl::InternalError(base::StrCat("setns: ", std::strerror(errno)));
  }
  absl::Status s = fn();
  // Not being able to return would leave this thread in the pod: a broken invariant.
  if (setns(back.fd_, CLONE_NEWNET) != 0) {
    SP_LOG(Error).Msg("cannot return to the original network namespace")
        .KV("error", std::strerror(errno));
    std::abort();
  }
  return s;
}

// ---- Netlink ---------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Netlink>> Netlink::OpenIn(const Netns& ns, const Netns& back) {
  nl_sock* sock = nullptr;
  absl::Status s = ns.Run(back, [&sock]() -> absl::Status {
    sock = nl_socket_alloc();
    if (sock == nullptr) return absl::ResourceExhaustedError("nl_socket_alloc failed");
    int err = nl_connect(sock, NETLINK_ROUTE);
    if (err < 0) {
      nl_socket_free(sock);
      sock = nullptr;
      return NlError(err, "netlink connect");
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return std::unique_ptr<Netlink>(new Netlink(sock));
}

Netlink::~Netlink() { nl_socket_free(sock_); }

absl::StatusOr<LinkInfo> Netlink::Link(std::string_view name) {
  rtnl_link* l = nullptr;
  std::string n(name);
  int err = rtnl_link_get_kernel(sock_, 0, n.c_str(), &l);
  if (err < 0) return NlError(err, base::StrCat("link ", name));
  LinkPtr owned(l);
  return ToInfo(l);
}

absl::StatusOr<LinkInfo> Netlink::LinkByIndex(int index) {
  rtnl_link* l = nullptr;
  int err = rtnl_link_get_kernel(sock_, index, nullptr, &l);
  if (err < 0) return NlError(err, base::StrCat("link #", index));
  LinkPtr owned(l);
  return ToInfo(l);
}

absl::StatusOr<std::vector<LinkInfo>> Netlink::Links() {
  nl_cache* c = nullptr;
  int err = rtnl_link_alloc_cache(sock_, AF_UNSPEC, &c);
  if (err < 0) return NlError(err, "list links");
  CachePtr cache(c);
  std::vector<LinkInfo> out;
  for (nl_object* o = nl_cache_get_first(c); o; o = nl_cache_get_next(o)) {
    out.push_back(ToInfo(reinterpret_cast<rtnl_link*>(o)));
  }
  return out;
}

absl::StatusOr<std::vector<AddrInfo>> Netlink::Addrs() {
  SP_ASSIGN_OR_RETURN(std::vector<LinkInfo> links, Links());
  nl_cache* c = nullptr;
  int err = rtnl_addr_alloc_cache(sock_, &c);
  if (err < 0) return NlError(err, "list addresses");
  CachePtr cache(c);
  std::vector<AddrInfo> out;
  for (nl_object* o = nl_cache_get_first(c); o; o = nl_cache_get_next(o)) {
    rtnl_addr* a = reinterpret_cast<rtnl_addr*>(o);
    std::optional<base::IPPrefix> p = PrefixFromNl(rtnl_addr_get_local(a));
    if (!p.has_value()) continue;
    AddrInfo info;
    info.if_index = rtnl_addr_get_ifindex(a);
    info.prefix = *p;
    info.scope = rtnl_addr_get_scope(a);
    for (const LinkInfo& l : links) {
      if (l.index == info.if_index) info.if_name = l.name;
    }
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::vector<RouteInfo>> Netlink::Routes() {
  nl_cache* c = nullptr;
  int err = rtnl_route_alloc_cache(sock_, AF_UNSPEC, 0, &c);
  if (err < 0) return NlError(err, "list routes");
  CachePtr cache(c);
  std::vector<RouteInfo> out;
  for (nl_object* o = nl_cache_get_first(c); o; o = nl_cache_get_next(o)) {
    rtnl_route* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_type(r) != RTN_UNICAST) continue;
    RouteInfo info;
    info.family = rtnl_route_get_family(r);
    info.table = static_cast<int>(rtnl_route_get_table(r));
    info.scope = rtnl_route_get_scope(r);
    info.protocol = rtnl_route_get_protocol(r);
    nl_addr* dst = rtnl_route_get_dst(r);
    if (dst != nullptr && nl_addr_get_prefixlen(dst) > 0) info.dst = PrefixFromNl(dst);
    if (rtnl_route_get_nnexthops(r) > 0) {
      rtnl_nexthop* nh = rtnl_route_nexthop_n(r, 0);
      info.oif = rtnl_route_nh_get_ifindex(nh);
      info.gw = FromNl(rtnl_route_nh_get_gateway(nh));
    }
    out.push_back(std::move(info));
  }
  return out;
}

absl::StatusOr<std::vector<RuleInfo>> Netlink::Rules() {
  nl_cache* c = nullptr;
  int err = rtnl_rule_alloc_cache(sock_, AF_UNSPEC, &c);
  if (err < 0) return NlError(err, "list rules");
  CachePtr cache(c);
  std::vector<RuleInfo> out;
  for (nl_object* o = nl_cache_get_first(c); o; o = nl_cache_get_next(o)) {
    rtnl_rule* r = reinterpret_cast<rtnl_rule*>(o);
    RuleInfo info;
    info.family = rtnl_rule_get_family(r);
    info.table = rtnl_rule_get_table(r);
    info.prio = rtnl_rule_get_prio(r);
    nl_addr* src = rtnl_rule_get_src(r);
    if (src != nullptr && nl_addr_get_prefixlen(src) > 0) info.src = PrefixFromNl(src);
    nl_addr* dst = rtnl_rule_get_dst(r);
    if (dst != nullptr && nl_addr_get_prefixlen(dst) > 0) info.dst = PrefixFromNl(dst);
    out.push_back(std::move(info));
  }
  return out;
}

absl::Status Netlink::AddVeth(std::string_view name, std::string_view peer, const Netns& peer_ns,
                              int mtu, Txn* txn) {
  LinkPtr link(rtnl_link_veth_alloc());
  if (!link) return absl::ResourceExhaustedError("rtnl_link_veth_alloc failed");
  std::string n(name), p(peer);
  rtnl_link_set_name(link.get(), n.c_str());
  rtnl_link_set_mtu(link.get(), static_cast<unsigned>(mtu));
  rtnl_link* peer_link = rtnl_link_veth_get_peer(link.get());
  rtnl_link_set_name(peer_link, p.c_str());
  rtnl_link_set_mtu(peer_link, static_cast<unsigned>(mtu));
  rtnl_link_set_ns_fd(peer_link, peer_ns.fd());
  rtnl_link_put(peer_link);
  int err = rtnl_link_add(sock_, link.get(), NLM_F_CREATE | NLM_F_EXCL);
  if (err < 0) return NlError(err, base::StrCat("create veth pair ", name, "/", peer));
  txn->OnRollback([this, n] { (void)DeleteLink(n); });
  return absl::OkStatus();
}

absl::Status Netlink::DeleteLink(std::string_view name) {
  LinkPtr link(rtnl_link_alloc());
  std::string n(name);
  rtnl_link_set_name(link.get(), n.c_str());
  int err = rtnl_link_delete(sock_, link.get());
  if (err < 0 && err != -NLE_OBJ_NOTFOUND && err != -NLE_NODEV) {
    return NlError(err, base::StrCat("delete link ", name));
  }
  return absl::OkStatus();
}

namespace {
absl::Status ChangeLink(nl_sock* sock, int index, const std::function<void(rtnl_link*)>& set,
                        std::string_view what) {
  LinkPtr orig(rtnl_link_alloc());
  rtnl_link_set_ifindex(orig.get(), index);
  LinkPtr change(rtnl_link_alloc());
  set(change.get());
  int err = rtnl_link_change(sock, orig.get(), change.get(), 0);
  if (err < 0) return NlError(err, what);
  return absl::OkStatus();
}
}  // namespace

absl::Status Netlink::SetUp(const LinkInfo& link, Txn* txn) {
  if (link.up) return absl::OkStatus();
  SP_RETURN_IF_ERROR(ChangeLink(
      sock_, link.index, [](rtnl_link* c) { rtnl_link_set_flags(c, IFF_UP); },
      base::StrCat("set ", link.name, " up")));
  int index = link.index;
  txn->OnRollback([this, index] {
    (void)ChangeLink(sock_, index, [](rtnl_link* c) { rtnl_link_unset_flags(c, IFF_UP); }, "down");
  });
  return absl::OkStatus();
}

absl::Status Netlink::SetMac(const LinkInfo& link, const Mac& mac, Txn* txn) {
  if (link.mac == mac) return absl::OkStatus();
  AddrPtr a = MacToNl(mac);
  SP_RETURN_IF_ERROR(ChangeLink(
      sock_, link.index, [&a](rtnl_link* c) { rtnl_link_set_addr(c, a.get()); },
      base::StrCat("set the MAC of ", link.name, " to ", MacString(mac))));
  int index = link.index;
  Mac old = link.mac;
  txn->OnRollback([this, index, old] {
    AddrPtr o = MacToNl(old);
    (void)ChangeLink(sock_, index, [&o](rtnl_link* c) { rtnl_link_set_addr(c, o.get()); }, "mac");
  });
  return absl::OkStatus();
}

absl::Status Netlink::SetTxQueueLen(const LinkInfo& link, uint32_t qlen, Txn* txn) {
  if (link.txqlen == qlen) return absl::OkStatus();
  SP_RETURN_IF_ERROR(ChangeLink(
      sock_, link.index, [qlen](rtnl_link* c) { rtnl_link_set_txqlen(c, qlen); },
      base::StrCat("set txqueuelen of ", link.name, " to ", qlen)));
  int index = link.index;
  uint32_t old = link.txqlen;
  txn->OnRollback([this, index, old] {
    (void)ChangeLink(sock_, index, [old](rtnl_link* c) { rtnl_link_set_txqlen(c, old); }, "txqlen");
  });
  return absl::OkStatus();
}

absl::Status Netlink::AddAddr(int if_index, const base::IPPrefix& addr, Txn* txn) {
  RAddrPtr a(rtnl_addr_alloc());
  rtnl_addr_set_ifindex(a.get(), if_index);
  AddrPtr local = ToNl(addr);
  rtnl_addr_set_local(a.get(), local.get());
  int err = rtnl_addr_add(sock_, a.get(), 0);
  if (err == -NLE_EXIST) return absl::OkStatus();
  if (err < 0) return NlError(err, base::StrCat("add address ", addr.ToString()));
  txn->OnRollback([this, if_index, addr] {
    RAddrPtr d(rtnl_addr_alloc());
    rtnl_addr_set_ifindex(d.get(), if_index);
    AddrPtr l = ToNl(addr);
    rtnl_addr_set_local(d.get(), l.get());
    (void)rtnl_addr_delete(sock_, d.get(), 0);
  });
  return absl::OkStatus();
}

namespace {
std::string Describe(const RouteInfo& r) {
  return base::StrCat(r.dst.has_value() ? r.dst->ToString() : std::string("default"),
                      r.gw.has_value() ? base::StrCat(" via ", r.gw->ToString()) : std::string(),
                      " oif #", r.oif, " table ", r.table);
}
std::string Describe(const RuleInfo& r) {
  return base::StrCat(r.src.has_value() ? base::StrCat("from ", r.src->ToString(), " ") : std::string(),
                      r.dst.has_value() ? base::StrCat("to ", r.dst->ToString(), " ") : std::string(),
                      "lookup ", r.table);
}
}  // namespace

absl::Status Netlink::AddRoute(const RouteInfo& route, Txn* txn) {
  RoutePtr r = BuildRoute(route);
  int err = rtnl_route_add(sock_, r.get(), NLM_F_CREATE | NLM_F_EXCL);
  if (err == -NLE_EXIST) return absl::OkStatus();
  if (err < 0) return NlError(err, base::StrCat("add route ", Describe(route)));
  txn->OnRollback([this, route] { (void)DeleteRoute(route); });
  return absl::OkStatus();
}

absl::Status Netlink::DeleteRoute(const RouteInfo& route) {
  RoutePtr r = BuildRoute(route);
  int err = rtnl_route_delete(sock_, r.get(), 0);
  if (err < 0 && err != -NLE_OBJ_NOTFOUND && err != -NLE_NODEV && err != -NLE_NOADDR) {
    return NlError(err, base::StrCat("delete route ", Describe(route)));
  }
  return absl::OkStatus();
}

absl::Status Netlink::AddRule(const RuleInfo& rule, Txn* txn) {
  RulePtr r = BuildRule(rule);
  int err = rtnl_rule_add(sock_, r.get(), NLM_F_CREATE | NLM_F_EXCL);
  if (err == -NLE_EXIST) return absl::OkStatus();
  if (err < 0) return NlError(err, base::StrCat("add rule ", Describe(rule)));
  txn->OnRollback([this, rule] { (void)DeleteRule(rule); });
  return absl::OkStatus();
}

absl::Status Netlink::DeleteRule(const RuleInfo& rule) {
  RulePtr r = BuildRule(rule);
  int err = rtnl_rule_delete(sock_, r.get(), 0);
  if (err < 0 && err != -NLE_OBJ_NOTFOUND && err != -NLE_NODEV) {
    return NlError(err, base::StrCat("delete rule ", Describe(rule)));
  }
  return absl::OkStatus();
}

absl::Status Netlink::AddNeigh(int if_index, const base::IPAddress& ip, const Mac& mac, Txn* txn) {
  NeighPtr n(rtnl_neigh_alloc());
  rtnl_neigh_set_ifindex(n.get(), if_index);
  AddrPtr dst = ToNl(ip, ip.bits());
  rtnl_neigh_set_dst(n.get(), dst.get());
  AddrPtr ll = MacToNl(mac);
  rtnl_neigh_set_lladdr(n.get(), ll.get());
  rtnl_neigh_set_state(n.get(), NUD_PERMANENT);
  int err = rtnl_neigh_add(sock_, n.get(), NLM_F_CREATE | NLM_F_REPLACE);
  if (err < 0) {
    return NlError(err, base::StrCat("add neighbour ", ip.ToString(), " lladdr ", MacString(mac)));
  }
  txn->OnRollback([this, if_index, ip] { (void)DeleteNeigh(if_index, ip); });
  return absl::OkStatus();
}

absl::Status Netlink::DeleteNeigh(int if_index, const base::IPAddress& ip) {
  NeighPtr d(rtnl_neigh_alloc());
  rtnl_neigh_set_ifindex(d.get(), if_index);
  AddrPtr a = ToNl(ip, ip.bits());
  rtnl_neigh_set_dst(d.get(), a.get());
  int err = rtnl_neigh_delete(sock_, d.get(), 0);
  if (err < 0 && err != -NLE_OBJ_NOTFOUND && err != -NLE_NODEV) {
    return NlError(err, base::StrCat("delete neighbour ", ip.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> WriteSysctl(const std::string& key, const std::string& value) {
  std::string path = base::StrCat("/proc/sys/", key);
  std::string old;
  {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      std::string msg = base::StrCat("sysctl ", key, ": ", std::strerror(e));
      return e == ENOENT ? absl::NotFoundError(msg) : absl::InternalError(msg);
    }
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n > 0) old.assign(buf, static_cast<size_t>(n));
    while (!old.empty() && (old.back() == '\n' || old.back() == ' ')) old.pop_back();
  }
  if (old == value) return old;
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(base::StrCat("sysctl ", key, ": ", std::strerror(errno)));
  ssize_t n = write(fd, value.data(), value.size());
  int e = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return absl::InternalError(base::StrCat("sysctl ", key, "=", value, ": ", std::strerror(e)));
  }
  return old;
}

}  // namespace spiderpool::agent::coordinator
