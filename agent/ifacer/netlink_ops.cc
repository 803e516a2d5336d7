#include "agent/ifacer/netlink_ops.h"

#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bonding.h>
#include <netlink/route/link/vlan.h>
#include <netlink/socket.h>

#include "base/strings.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

namespace spiderpool::agent::ifacer {

namespace {

struct NlSockDeleter {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
struct NlCacheDeleter {
  void operator()(nl_cache* c) const { nl_cache_free(c); }
};
struct NlMsgDeleter {
  void operator()(nl_msg* m) const { nlmsg_free(m); }
};
struct RtnlLinkDeleter {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
using NlSock = std::unique_ptr<nl_sock, NlSockDeleter>;
using NlCache = std::unique_ptr<nl_cache, NlCacheDeleter>;
using NlMsg = std::unique_ptr<nl_msg, NlMsgDeleter>;
using RtnlLink = std::unique_ptr<rtnl_link, RtnlLinkDeleter>;

// The NLMSGERR_ATTR_MSG string of an error ACK (extended ACK), or "".
std::string ExtAckMessage(const nlmsgerr* e) {
  const auto* hdr = reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(e) -
                                                      NLMSG_HDRLEN);
  if ((hdr->nlmsg_flags & NLM_F_ACK_TLVS) == 0) return "";
  size_t off = NLMSG_HDRLEN + sizeof(nlmsgerr);
  if ((hdr->nlmsg_flags & NLM_F_CAPPED) == 0) {
    if (e->msg.nlmsg_len < NLMSG_HDRLEN) return "";
    off += e->msg.nlmsg_len - NLMSG_HDRLEN;
  }
  off = NLMSG_ALIGN(off);
  const char* base = reinterpret_cast<const char*>(hdr);
  while (off + sizeof(nlattr) <= hdr->nlmsg_len) {
    nlattr a;
    std::memcpy(&a, base + off, sizeof(a));
    if (a.nla_len < sizeof(nlattr) || off + a.nla_len > hdr->nlmsg_len) break;
    if ((a.nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
      const char* s = base + off + NLA_HDRLEN;
      size_t n = a.nla_len - NLA_HDRLEN;
      return std::string(s, strnlen(s, n));
    }
    off += NLA_ALIGN(a.nla_len);
  }
  return "";
}

class NetlinkOps : public LinkOps {
 public:
  static absl::StatusOr<std::unique_ptr<LinkOps>> Open() {
    NlSock sock(nl_socket_alloc());
    if (!sock) return absl::ResourceExhaustedError("nl_socket_alloc failed");
    if (int err = nl_connect(sock.get(), NETLINK_ROUTE); err < 0) {
      return absl::UnavailableError(
          base::ToAbsl(base::StrCat("netlink connect: ", nl_geterror(err))));
    }
    int one = 1;
    int fd = nl_socket_get_fd(sock.get());
    // Best effort: older kernels just give no reason text.
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    std::unique_ptr<NetlinkOps> ops(new NetlinkOps(std::move(sock)));
    nl_socket_modify_err_cb(ops->sock_.get(), NL_CB_CUSTOM, &NetlinkOps::OnError, ops.get());
    return std::unique_ptr<LinkOps>(std::move(ops));
  }

  absl::StatusOr<std::vector<Link>> List() override {
    nl_cache* raw = nullptr;
    int err = rtnl_link_alloc_cache(sock_.get(), AF_UNSPEC, &raw);
    if (err < 0) return Error(err);
    NlCache cache(raw);
    std::vector<Link> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o != nullptr; o = nl_cache_get_next(o)) {
      auto* l = reinterpret_cast<rtnl_link*>(o);
      Link link;
      if (const char* name = rtnl_link_get_name(l)) link.name = name;
      link.ifindex = rtnl_link_get_ifindex(l);
      if (const char* kind = rtnl_link_get_type(l)) link.kind = kind;
      link.up = (rtnl_link_get_flags(l) & IFF_UP) != 0;
      if (rtnl_link_is_vlan(l)) link.vlan_id = rtnl_link_vlan_get_id(l);
      link.parent = rtnl_link_get_link(l);
      link.master = rtnl_link_get_master(l);
      out.push_back(std::move(link));
    }
    return out;
  }

  absl::StatusOr<int> CreateBond(const std::string& name, int mode,
                                 const std::vector<BondOption>& options) override {
    NlMsg msg(nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL));
    if (!msg) return absl::ResourceExhaustedError("nlmsg_alloc failed");
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    bool ok = nlmsg_append(msg.get(), &ifi, sizeof(ifi), NLMSG_ALIGNTO) == 0 &&
              nla_put_string(msg.get(), IFLA_IFNAME, name.c_str()) == 0;
    nlattr* info = ok ? nla_nest_start(msg.get(), IFLA_LINKINFO) : nullptr;
    ok = info != nullptr && nla_put_string(msg.get(), IFLA_INFO_KIND, "bond") == 0;
    nlattr* data = ok ? nla_nest_start(msg.get(), IFLA_INFO_DATA) : nullptr;
    ok = data != nullptr && nla_put_u8(msg.get(), IFLA_BOND_MODE, static_cast<uint8_t>(mode)) == 0;
    for (const BondOption& o : options) {
      if (!ok) break;
      ok = PutOption(msg.get(), o);
    }
    if (ok) {
      nla_nest_end(msg.get(), data);
      nla_nest_end(msg.get(), info);
    } else {
      return absl::InternalError("netlink message too large");
    }
    if (absl::Status s = Send(std::move(msg)); !s.ok()) return s;
    return IndexOf(name);
  }

  absl::StatusOr<int> CreateVlan(const std::string& name, int parent, int vlan_id) override {
    RtnlLink link(rtnl_link_vlan_alloc());
    if (!link) return absl::ResourceExhaustedError("rtnl_link_vlan_alloc failed");
    rtnl_link_set_name(link.get(), name.c_str());
    rtnl_link_set_link(link.get(), parent);
    if (int err = rtnl_link_vlan_set_id(link.get(), static_cast<uint16_t>(vlan_id)); err < 0) {
      return Error(err);
    }
    ext_ack_.clear();
    if (int err = rtnl_link_add(sock_.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0) {
      return Error(err);
    }
    return IndexOf(name);
  }

  absl::Status Enslave(int bond, int slave) override {
    ext_ack_.clear();
    if (int err = rtnl_link_bond_enslave_ifindex(sock_.get(), bond, slave); err < 0) {
      return Error(err);
    }
    return absl::OkStatus();
  }

  absl::Status SetUp(int ifindex, bool up) override {
    return Send(LinkMessage(RTM_SETLINK, ifindex, up ? IFF_UP : 0, IFF_UP));
  }

  absl::Status Delete(int ifindex) override {
    return Send(LinkMessage(RTM_DELLINK, ifindex, 0, 0));
  }

 private:
  explicit NetlinkOps(NlSock sock) : sock_(std::move(sock)) {}

  static int OnError(sockaddr_nl*, nlmsgerr* e, void* arg) {
    static_cast<NetlinkOps*>(arg)->ext_ack_ = ExtAckMessage(e);
    return NL_STOP;  // libnl returns the error code translated from e->error
  }

  absl::Status Error(int err) const {
    std::string msg = nl_geterror(err);
    if (!ext_ack_.empty()) msg = base::StrCat(msg, " (kernel: ", ext_ack_, ")");
    return absl::Status(err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV
                            ? absl::StatusCode::kNotFound
                            : absl::StatusCode::kFailedPrecondition,
                        base::ToAbsl(msg));
  }

  static NlMsg LinkMessage(int type, int ifindex, unsigned flags, unsigned change) {
    NlMsg msg(nlmsg_alloc_simple(type, 0));
    if (!msg) return msg;
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    ifi.ifi_index = ifindex;
    ifi.ifi_flags = flags;
    ifi.ifi_change = change;
    if (nlmsg_append(msg.get(), &ifi, sizeof(ifi), NLMSG_ALIGNTO) != 0) return NlMsg();
    return msg;
  }

  absl::Status Send(NlMsg msg) {
    if (!msg) return absl::ResourceExhaustedError("nlmsg_alloc failed");
    ext_ack_.clear();
    int err = nl_send_sync(sock_.get(), msg.release());  // frees the message
    if (err < 0) return Error(err);
    return absl::OkStatus();
  }

  absl::StatusOr<int> IndexOf(const std::string& name) {
    rtnl_link* raw = nullptr;
    ext_ack_.clear();
    if (int err = rtnl_link_get_kernel(sock_.get(), 0, name.c_str(), &raw); err < 0) {
      return Error(err);
    }
    RtnlLink link(raw);
    return rtnl_link_get_ifindex(link.get());
  }

  static bool PutOption(nl_msg* msg, const BondOption& o) {
    using Kind = BondOption::Kind;
    switch (o.kind) {
      case Kind::kU8:
        return nla_put_u8(msg, o.attr, static_cast<uint8_t>(o.number)) == 0;
      case Kind::kU16:
        return nla_put_u16(msg, o.attr, static_cast<uint16_t>(o.number)) == 0;
      case Kind::kU32:
      case Kind::kLinkName:  // number holds the resolved ifindex
        return nla_put_u32(msg, o.attr, o.number) == 0;
      case Kind::kMac:
        return nla_put(msg, o.attr, static_cast<int>(o.mac.size()), o.mac.data()) == 0;
      case Kind::kIPv4List: {
        nlattr* list = nla_nest_start(msg, o.attr);
        if (list == nullptr) return false;
        for (size_t i = 0; i < o.ipv4.size(); ++i) {
          if (nla_put_u32(msg, static_cast<int>(i), o.ipv4[i]) != 0) return false;
        }
        nla_nest_end(msg, list);
        return true;
      }
    }
    return false;
  }

  NlSock sock_;
  std::string ext_ack_;  // the kernel's reason for the last refused request
};

}  // namespace

absl::StatusOr<std::unique_ptr<LinkOps>> NewNetlinkOps() { return NetlinkOps::Open(); }

}  // namespace spiderpool::agent::ifacer
