#include "agent/coordinator/plugin.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/cni/agent_client.h"
#include "agent/cni/cni.h"
#include "agent/cni/netprobe.h"
#include "agent/cni/skel.h"
#include "agent/coordinator/config.h"
#include "agent/coordinator/netlink.h"
#include "agent/ipamapi/ipamapi.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::agent::coordinator {
namespace {

using cni::CniError;
using cni::Fail;
using cni::Outcome;
using cni::Succeed;

constexpr std::string_view kAbout = "CNI plugin coordinator (C++ reimplementation)";
// A failure while changing the pod's or the node's network (netlink, sysctl).
constexpr int kErrSetup = 100;
// CHECK found something ADD made missing.
constexpr int kErrCheck = 101;
// Upstream's rule priority for the node's "to <pod IP> lookup <hostRuleTable>" rules.
constexpr uint32_t kHostRulePriority = 1000;
// Budget for asking the agent: ADD needs its answer; DEL only prefers it.
constexpr auto kAddAgentBudget = std::chrono::seconds(30);
constexpr auto kDelAgentBudget = std::chrono::seconds(3);
// Node interfaces whose addresses are not "the node's" (upstream's exclusion list).
constexpr const char* kHostIfExclude[] = {"docker*", "cbr*",   "dummy*",      "virbr*",
                                          "lxcbr*",  "veth*",  "lo",          "cali*",
                                          "flannel*", "kube-ipvs*", "cni*", "vx-submariner",
                                          "cilium*"};

CniError SetupError(std::string_view what, const absl::Status& s) {
  return CniError{kErrSetup, base::StrCat("coordinator: ", what, ": ", base::FromAbsl(s.message())),
                  ""};
}

// Lines go to the log file when it can be opened (append; its directory is created).
void SetupLog(const Config& cfg) {
  base::LogLevel level = base::LogLevel::kDebug;
  std::string lower;
  for (char c : cfg.log_level) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!base::ParseLogLevel(lower, &level)) level = base::LogLevel::kError;
  base::SetLogLevel(level);
  const std::string& path = cfg.log_file;
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
  }
  static int fd = -1;
  if (fd >= 0) close(fd);
  fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  base::SetLogSink([](std::string_view line) {
    if (fd < 0) return;
    std::string l(line);
    if (l.empty() || l.back() != '\n') l += '\n';
    ssize_t n = write(fd, l.data(), l.size());
    (void)n;
  });
}

struct Invocation {
  const cni::Env& env;
  std::string version;
  NetConf conf;
  cni::K8sArgs k8s;
  Config cfg;
};

// GET /v1/coordinator/config. nullopt + *error when the agent cannot answer.
std::optional<ipamapi::CoordinatorConfig> AskAgent(const Invocation& inv,
                                                   std::chrono::steady_clock::duration budget,
                                                   CniError* error) {
  std::string socket = inv.conf.ipam_unix_socket_path.empty()
                           ? std::string(ipamapi::kDefaultSocketPath)
                           : inv.conf.ipam_unix_socket_path;
  cni::AgentClient client(socket, std::chrono::steady_clock::now() + budget);
  std::string path = base::StrCat(ipamapi::kCoordinatorConfigPath, "?podNamespace=",
                                  inv.k8s.pod_namespace, "&podName=", inv.k8s.pod_name);
  cni::AgentReply r = client.Get(path);
  if (!r.ok()) {
    *error = {cni::kErrTryAgainLater, "spiderpool-agent is unreachable, try again later",
              base::StrCat("GET ", ipamapi::kCoordinatorConfigPath, ": ", r.failure_text)};
    return std::nullopt;
  }
  if (r.status != ipamapi::kStatusOK) {
    int code = r.status == ipamapi::kStatusTooManyRequests ||
                       r.status == ipamapi::kStatusServiceUnavailable
                   ? cni::kErrTryAgainLater
                   : cni::kErrAgent;
    *error = {code,
              base::StrCat("failed to GetCoordinatorConfig: ", ipamapi::ErrorMessageFromBody(r.body)),
              base::StrCat("GET ", ipamapi::kCoordinatorConfigPath, ": HTTP ", r.status)};
    return std::nullopt;
  }
  auto cfg = ipamapi::FromJson<ipamapi::CoordinatorConfig>(r.body);
  if (!cfg.ok()) {
    *error = {cni::kErrAgentResponse, "invalid coordinator config from spiderpool-agent",
              std::string(base::FromAbsl(cfg.status().message()))};
    return std::nullopt;
  }
  return *cfg;
}

// ---- the network state ADD/DEL/CHECK act on ----------------------------------------------------

struct Nets {
  Netns host;
  std::optional<Netns> pod;  // nullopt: the pod's netns is gone (DEL)
  std::unique_ptr<Netlink> hnl;
  std::unique_ptr<Netlink> pnl;
};

absl::StatusOr<Nets> OpenNets(const std::string& netns_path, bool pod_may_be_gone) {
  SP_ASSIGN_OR_RETURN(Netns host, Netns::Current());
  Nets n{.host = std::move(host), .pod = std::nullopt, .hnl = nullptr, .pnl = nullptr};
  SP_ASSIGN_OR_RETURN(n.hnl, Netlink::OpenIn(n.host, n.host));
  if (netns_path.empty() && pod_may_be_gone) return n;
  absl::StatusOr<Netns> pod = Netns::Open(netns_path);
  if (!pod.ok()) {
    if (pod_may_be_gone) return n;
    return pod.status();
  }
  n.pod = std::move(*pod);
  SP_ASSIGN_OR_RETURN(n.pnl, Netlink::OpenIn(*n.pod, n.host));
  return n;
}

// The node's addresses a pod should reach through the coordinator's link.
std::vector<base::IPAddress> HostIPs(const std::vector<AddrInfo>& addrs) {
  std::vector<base::IPAddress> out;
  for (const AddrInfo& a : addrs) {
    if (a.scope != RT_SCOPE_UNIVERSE) continue;
    bool excluded = false;
    for (const char* pattern : kHostIfExclude) {
      excluded = excluded || fnmatch(pattern, a.if_name.c_str(), 0) == 0;
    }
    if (excluded) continue;
    if (std::find(out.begin(), out.end(), a.prefix.address()) == out.end()) {
      out.push_back(a.prefix.address());
    }
  }
  return out;
}

// The IPs the main plugin put on the NIC (global scope), as addresses with their prefixes.
absl::StatusOr<std::vector<base::IPPrefix>> NicIPs(Netlink& pnl, std::string_view ifname) {
  SP_ASSIGN_OR_RETURN(LinkInfo link, pnl.Link(ifname));
  SP_ASSIGN_OR_RETURN(std::vector<AddrInfo> addrs, pnl.Addrs());
  std::vector<base::IPPrefix> out;
  for (const AddrInfo& a : addrs) {
    if (a.if_index == link.index && a.scope == RT_SCOPE_UNIVERSE) out.push_back(a.prefix);
  }
  return out;
}

// The IPs in a CNI result (prevResult): ips[].address.
std::vector<base::IPPrefix> ResultIPs(const base::Json& result) {
  std::vector<base::IPPrefix> out;
  if (!result.is_object() || !result.contains("ips") || !result["ips"].is_array()) return out;
  for (const base::Json& ip : result["ips"]) {
    if (!ip.is_object() || !ip.contains("address") || !ip["address"].is_string()) continue;
    auto p = base::IPPrefix::Parse(ip["address"].get<std::string>());
    if (p.ok()) out.push_back(*p);
  }
  return out;
}

// The node address that leads to `pod_ip`: one whose subnet holds it, else the first of its
// family (upstream asks the kernel `ip route get <pod IP>` for its source).
std::optional<base::IPAddress> GatewayFor(const base::IPPrefix& pod_ip,
                                          const std::vector<AddrInfo>& host_addrs,
                                          const std::vector<base::IPAddress>& host_ips) {
  for (const AddrInfo& a : host_addrs) {
    if (a.prefix.family() == pod_ip.family() && a.prefix.Canonical().Contains(pod_ip.address()) &&
        std::find(host_ips.begin(), host_ips.end(), a.prefix.address()) != host_ips.end()) {
      return a.prefix.address();
    }
  }
  for (const base::IPAddress& ip : host_ips) {
    if (ip.family() == pod_ip.family()) return ip;
  }
  return std::nullopt;
}

base::IPPrefix HostRoute(const base::IPAddress& ip) {
  return *base::IPPrefix::Parse(base::StrCat(ip.ToString(), "/", ip.bits()));
}

// ---- ADD ---------------------------------------------------------------------------------------

struct Plan {
  Mode mode = Mode::kUnderlay;
  bool first = false;   // this NIC is the pod's first (underlay: it creates the veth pair)
  int table = kMainTable;  // the pod table for this NIC's routes
  std::string pod_link;    // veth0 (underlay) or the first NIC (overlay)
  std::string host_link;   // its host end
};

absl::StatusOr<Plan> MakePlan(const Invocation& inv, Nets& n) {
  const Config& c = inv.cfg;
  const std::string& ifname = inv.env.ifname;
  bool veth0 = n.pnl->Link(kPodVethName).ok();
  Plan p;
  p.mode = c.mode;
  if (p.mode == Mode::kAuto) {
    p.mode = (ifname == c.pod_default_cni_nic || veth0) ? Mode::kUnderlay : Mode::kOverlay;
  }
  if (p.mode == Mode::kUnderlay) {
    p.first = ifname == c.pod_default_cni_nic;
    if (!p.first && !veth0) {
      return absl::FailedPreconditionError(base::StrCat(
          "when creating interface ", ifname, " in underlay mode, it detects that the auxiliary "
          "interface ", kPodVethName, " was not created by previous interface. please enable "
          "coordinator plugin in previous interface"));
    }
    p.pod_link = std::string(kPodVethName);
    p.host_link = HostVethName(inv.env.container_id);
  } else {
    if (ifname == c.pod_default_cni_nic) {
      return absl::FailedPreconditionError(base::StrCat(
          "when creating interface ", ifname, " in overlay mode, it detects that the current "
          "interface is first interface named ", c.pod_default_cni_nic,
          ", this plugin should not work for it. please modify in the CNI configuration"));
    }
    if (veth0) {
      return absl::FailedPreconditionError(base::StrCat(
          "when creating interface ", ifname, " in overlay mode, it detects that the auxiliary "
          "interface ", kPodVethName, " of underlay mode exists"));
    }
    p.pod_link = c.pod_default_cni_nic;
    SP_ASSIGN_OR_RETURN(LinkInfo first, n.pnl->Link(c.pod_default_cni_nic));
    if (first.peer_index <= 0) {
      return absl::FailedPreconditionError(base::StrCat(
          "overlay mode: the pod's ", c.pod_default_cni_nic, " is not a veth (no host peer)"));
    }
    SP_ASSIGN_OR_RETURN(LinkInfo peer, n.hnl->LinkByIndex(first.peer_index));
    p.host_link = peer.name;
  }
  if (!p.first) {
    std::optional<int> t = RuleTableFor(ifname, c.multus_nic_prefix);
    if (!t.has_value()) {
      return absl::FailedPreconditionError(base::StrCat(
          "failed to getRuleNumber for ", ifname, ": the name does not follow multusNicPrefix \"",
          c.multus_nic_prefix, "\" + number, maybe the pod's multus annotations doesn't match "
          "the tuneMode"));
    }
    p.table = *t;
  }
  return p;
}

// Moves `from`'s routes out of the main table into `table`, with the rules that send the NIC's
// traffic there ("from <its IPs>", "to <its subnets>"): the default route stays where it is.
absl::Status MoveRoutesToTable(Netlink& pnl, const LinkInfo& nic,
                               const std::vector<base::IPPrefix>& ips, int table, Txn* txn) {
  SP_ASSIGN_OR_RETURN(std::vector<RouteInfo> routes, pnl.Routes());
  for (const RouteInfo& r : routes) {
    if (r.table != kMainTable || r.oif != nic.index) continue;
    RouteInfo moved = r;
    moved.table = table;
    SP_RETURN_IF_ERROR(pnl.AddRoute(moved, txn));
    if (r.dst.has_value()) {
      SP_RETURN_IF_ERROR(pnl.AddRule(
          RuleInfo{.family = r.family, .src = std::nullopt, .dst = r.dst,
                   .table = static_cast<uint32_t>(table), .prio = 0},
          txn));
    }
    SP_RETURN_IF_ERROR(pnl.DeleteRoute(r));
    txn->OnRollback([&pnl, r] {
      Txn ignore;
      (void)pnl.AddRoute(r, &ignore);
      ignore.Commit();
    });
  }
  for (const base::IPPrefix& ip : ips) {
    SP_RETURN_IF_ERROR(pnl.AddRule(
        RuleInfo{.family = ip.address().is_v4() ? AF_INET : AF_INET6,
                 .src = HostRoute(ip.address()), .dst = std::nullopt,
                 .table = static_cast<uint32_t>(table), .prio = 0},
        txn));
  }
  return absl::OkStatus();
}

// *announce: the NIC's IPs when ADD rewrote its MAC (announced once the change is committed).
absl::Status Add(const Invocation& inv, Nets& n, Txn* txn,
                 std::vector<base::IPAddress>* announce) {
  const Config& c = inv.cfg;
  const std::string& ifname = inv.env.ifname;
  Netlink& hnl = *n.hnl;
  Netlink& pnl = *n.pnl;
  SP_ASSIGN_OR_RETURN(Plan p, MakePlan(inv, n));
  SP_LOG(Info).Msg("coordinator ADD").KV("mode", ModeName(p.mode)).KV("first", p.first)
      .KV("table", p.table).KV("podLink", p.pod_link).KV("hostLink", p.host_link);

  SP_ASSIGN_OR_RETURN(std::vector<base::IPPrefix> ips, NicIPs(pnl, ifname));
  if (ips.empty()) {
    return absl::FailedPreconditionError(base::StrCat(
        ifname, " has no IP address: the main plugin (and IPAM) must run before coordinator"));
  }

  if (p.first) {
    // A pair left by an earlier ADD of this same sandbox (the runtime retries) is reused; a
    // node link of that name that is not this pod's veth0 peer belongs to someone else.
    absl::StatusOr<LinkInfo> existing = hnl.Link(p.host_link);
    absl::StatusOr<LinkInfo> veth0 = pnl.Link(p.pod_link);
    if (!existing.ok()) {
      SP_RETURN_IF_ERROR(base::Annotate(
          pnl.AddVeth(p.pod_link, p.host_link, n.host, c.veth_mtu, txn), "setup veth pair"));
    } else if (!veth0.ok() || veth0->peer_index != existing->index) {
      return absl::AlreadyExistsError(base::StrCat(
          "setup veth pair: node link ", p.host_link, " already exists and is not the peer of "
          "this pod's ", p.pod_link, " (another sandbox whose container ID starts the same?)"));
    }
  }
  SP_ASSIGN_OR_RETURN(LinkInfo pod_link, pnl.Link(p.pod_link));
  SP_ASSIGN_OR_RETURN(LinkInfo host_link, hnl.Link(p.host_link));
  SP_RETURN_IF_ERROR(pnl.SetUp(pod_link, txn));
  SP_RETURN_IF_ERROR(hnl.SetUp(host_link, txn));
  if (p.first && c.veth_link_address.has_value()) {
    SP_RETURN_IF_ERROR(pnl.AddAddr(pod_link.index, HostRoute(*c.veth_link_address), txn));
  }

  SP_ASSIGN_OR_RETURN(LinkInfo nic, pnl.Link(ifname));
  if (c.mac_prefix.has_value()) {
    Mac mac = PodMac(*c.mac_prefix, ips.front().address());
    SP_RETURN_IF_ERROR(pnl.SetMac(nic, mac, txn));
    nic.mac = mac;
    for (const base::IPPrefix& ip : ips) announce->push_back(ip.address());
  }
  if (c.tx_queue_len > 0) {
    SP_RETURN_IF_ERROR(pnl.SetTxQueueLen(nic, static_cast<uint32_t>(c.tx_queue_len), txn));
  }

  // Sysctls in the pod: rp_filter, and IPv6 on when the NIC has IPv6 addresses.
  bool v6 = std::any_of(ips.begin(), ips.end(), [](const auto& ip) { return !ip.address().is_v4(); });
  std::vector<std::pair<std::string, std::string>> sysctls;
  if (c.pod_rp_filter >= 0) {
    std::string v = std::to_string(c.pod_rp_filter);
    sysctls.push_back({"net/ipv4/conf/all/rp_filter", v});
    sysctls.push_back({base::StrCat("net/ipv4/conf/", ifname, "/rp_filter"), v});
  }
  if (v6) sysctls.push_back({"net/ipv6/conf/all/disable_ipv6", "0"});
  for (const auto& [key, value] : sysctls) {
    std::string k = key, val = value;
    absl::StatusOr<std::string> old;
    SP_RETURN_IF_ERROR(n.pod->Run(n.host, [&]() -> absl::Status {
      old = WriteSysctl(k, val);
      return old.status();
    }));
    if (*old != val) {
      Netns* pod = &*n.pod;
      Netns* host = &n.host;
      std::string prev = *old;
      txn->OnRollback([pod, host, k, prev] {
        (void)pod->Run(*host, [&]() -> absl::Status { return WriteSysctl(k, prev).status(); });
      });
    }
  }

  // One dump of the node's addresses serves both the node IPs and the gateway choice.
  SP_ASSIGN_OR_RETURN(std::vector<AddrInfo> host_addrs, hnl.Addrs());
  const std::vector<base::IPAddress> host_ips = HostIPs(host_addrs);
  std::set<base::IPFamily> families;
  for (const auto& ip : ips) families.insert(ip.family());

  // Neighbours: the node reaches the pod's IPs at the pod end's MAC, the pod reaches the
  // node's IPs at the host end's MAC (no ARP across the pair).
  for (const base::IPPrefix& ip : ips) {
    SP_RETURN_IF_ERROR(hnl.AddNeigh(host_link.index, ip.address(), pod_link.mac, txn));
  }
  for (const base::IPAddress& hip : host_ips) {
    if (!families.count(hip.family())) continue;
    if (p.first) SP_RETURN_IF_ERROR(pnl.AddNeigh(pod_link.index, hip, host_link.mac, txn));
    SP_RETURN_IF_ERROR(pnl.AddRoute(RouteInfo{.table = p.table, .dst = HostRoute(hip),
                                              .gw = std::nullopt, .oif = pod_link.index,
                                              .scope = RT_SCOPE_LINK, .family = 0},
                                    txn));
  }
  // Cluster CIDRs (services, overlay pods, hijackCIDR) go to the node through the pair.
  for (const base::IPPrefix& dst : c.hijack) {
    const base::IPPrefix* pod_ip = nullptr;
    for (const auto& ip : ips) {
      if (ip.family() == dst.family()) pod_ip = &ip;
    }
    if (pod_ip == nullptr) continue;
    std::optional<base::IPAddress> gw = GatewayFor(*pod_ip, host_addrs, host_ips);
    if (!gw.has_value()) {
      SP_LOG(Warning).Msg("no node address of this family: hijack route skipped")
          .KV("dst", dst.ToString());
      continue;
    }
    SP_RETURN_IF_ERROR(pnl.AddRoute(RouteInfo{.table = p.table, .dst = dst, .gw = gw,
                                              .oif = pod_link.index, .scope = RT_SCOPE_UNIVERSE,
                                              .family = 0},
                                    txn));
  }
  // The node answers the pod through its end of the link: "to <pod IP> lookup hostRuleTable".
  for (const base::IPPrefix& ip : ips) {
    base::IPPrefix dst = HostRoute(ip.address());
    SP_RETURN_IF_ERROR(hnl.AddRoute(RouteInfo{.table = c.host_rule_table, .dst = dst,
                                              .gw = std::nullopt, .oif = host_link.index,
                                              .scope = RT_SCOPE_LINK, .family = 0},
                                    txn));
    SP_RETURN_IF_ERROR(hnl.AddRule(
        RuleInfo{.family = ip.address().is_v4() ? AF_INET : AF_INET6, .src = std::nullopt,
                 .dst = dst, .table = static_cast<uint32_t>(c.host_rule_table),
                 .prio = kHostRulePriority},
        txn));
  }
  // A later NIC keeps its own routes in its table (the default route stays put).
  bool move_current = c.pod_default_route_nic.empty() ||
                      c.pod_default_route_nic == c.pod_default_cni_nic ||
                      c.pod_default_route_nic != ifname;
  if (c.tune_pod_routes && !p.first) {
    if (move_current) {
      SP_RETURN_IF_ERROR(MoveRoutesToTable(pnl, nic, ips, p.table, txn));
    } else {
      // podDefaultRouteNic names this NIC: the first NIC's routes move out instead.
      SP_ASSIGN_OR_RETURN(LinkInfo first, pnl.Link(c.pod_default_cni_nic));
      SP_ASSIGN_OR_RETURN(std::vector<base::IPPrefix> first_ips, NicIPs(pnl, first.name));
      SP_RETURN_IF_ERROR(MoveRoutesToTable(pnl, first, first_ips, p.table, txn));
    }
  }
  // policyRoutes go into this NIC's table, through this NIC.
  for (const Route& r : c.policy_routes) {
    if (!families.count(r.dst.family())) continue;
    SP_RETURN_IF_ERROR(pnl.AddRoute(RouteInfo{.table = p.table, .dst = r.dst, .gw = r.gw,
                                              .oif = nic.index, .scope = RT_SCOPE_UNIVERSE,
                                              .family = 0},
                                    txn));
  }
  return absl::OkStatus();
}

// ADD and CHECK: prevResult present and of this version, the agent's settings merged into
// inv.cfg. nullopt when ready, else the failure to print.
std::optional<Outcome> Prepare(Invocation& inv, std::string_view why_prev_result) {
  const std::string& v = inv.version;
  if (!inv.conf.prev_result.has_value()) {
    return Fail({cni::kErrInvalidNetworkConfig, "required prevResult missing",
                 std::string(why_prev_result)},
                v);
  }
  if (auto e = cni::ValidatePrevResult(*inv.conf.prev_result, v)) return Fail(*e, v);
  CniError agent_error;
  std::optional<ipamapi::CoordinatorConfig> cluster = AskAgent(inv, kAddAgentBudget, &agent_error);
  if (!cluster.has_value()) return Fail(agent_error, v);
  if (auto e = Resolve(inv.conf, cluster, &inv.cfg)) return Fail(*e, v);
  return std::nullopt;
}

Outcome CmdAdd(Invocation& inv) {
  const std::string& v = inv.version;
  if (std::optional<Outcome> failed = Prepare(
          inv, "coordinator is a chained plugin: it needs the main plugin's result")) {
    return *failed;
  }
  SetupLog(inv.cfg);
  std::string result = base::DumpJson(*inv.conf.prev_result);
  if (inv.cfg.mode == Mode::kDisable) return Succeed(result);

  absl::StatusOr<Nets> nets = OpenNets(inv.env.netns, /*pod_may_be_gone=*/false);
  if (!nets.ok()) return Fail(SetupError("open network namespaces", nets.status()), v);
  auto started = std::chrono::steady_clock::now();
  std::vector<base::IPAddress> announce;
  {
    Txn txn;
    absl::Status s = Add(inv, *nets, &txn, &announce);
    if (!s.ok()) {
      SP_LOG(Error).Msg("ADD failed; undoing").KV("error", base::FromAbsl(s.message()));
      return Fail(SetupError(base::StrCat("ADD ", inv.env.ifname), s), v);  // txn rolls back
    }
    txn.Commit();
  }
  if (!announce.empty()) {
    // The NIC's MAC changed (podMACPrefix): neighbours that learnt the main plugin's MAC hear
    // the new one (gratuitous ARP / unsolicited NA). Best effort: they also re-resolve.
    absl::Status s = cni::netprobe::Announce(
        cni::netprobe::Link{.netns_path = inv.env.netns, .ifname = inv.env.ifname}, announce);
    if (s.ok()) {
      SP_LOG(Debug).Msg("announced the IPs with the new MAC").KV("ips", announce.size());
    } else {
      SP_LOG(Warning).Msg("announcing the IPs with the new MAC failed")
          .KV("error", base::FromAbsl(s.message()));
    }
  }
  SP_LOG(Info).Msg("coordinator ADD done")
      .KV("ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - started).count());
  return Succeed(result);
}

// ---- DEL ---------------------------------------------------------------------------------------

Outcome CmdDel(Invocation& inv) {
  // DEL never fails once the config is valid: what it cannot remove now is logged, and a
  // stuck DEL would keep the pod Terminating. The agent is asked briefly; without it the
  // netconf and the defaults decide (hostRuleTable 500).
  CniError agent_error;
  std::optional<ipamapi::CoordinatorConfig> cluster = AskAgent(inv, kDelAgentBudget, &agent_error);
  if (auto e = Resolve(inv.conf, cluster, &inv.cfg)) return Fail(*e, inv.version);
  SetupLog(inv.cfg);
  if (!cluster.has_value()) {
    SP_LOG(Warning).Msg("DEL without the agent's config").KV("error", agent_error.msg)
        .KV("details", agent_error.details);
  }
  if (inv.cfg.mode == Mode::kDisable) return Succeed();
  absl::StatusOr<Nets> nets = OpenNets(inv.env.netns, /*pod_may_be_gone=*/true);
  if (!nets.ok()) {
    SP_LOG(Error).Msg("DEL: cannot open the namespaces").KV("error", base::FromAbsl(nets.status().message()));
    return Succeed();
  }
  Nets& n = *nets;
  const std::string& ifname = inv.env.ifname;
  const Config& c = inv.cfg;
  std::vector<base::IPPrefix> ips;
  if (inv.conf.prev_result.has_value()) ips = ResultIPs(*inv.conf.prev_result);
  if (ips.empty() && n.pnl) {
    if (auto got = NicIPs(*n.pnl, ifname); got.ok()) ips = *got;
  }
  auto warn = [](const absl::Status& s, std::string_view what) {
    if (!s.ok()) SP_LOG(Warning).Msg(what).KV("error", base::FromAbsl(s.message()));
  };
  for (const base::IPPrefix& ip : ips) {
    base::IPPrefix dst = HostRoute(ip.address());
    warn(n.hnl->DeleteRule(RuleInfo{.family = ip.address().is_v4() ? AF_INET : AF_INET6,
                                    .src = std::nullopt, .dst = dst,
                                    .table = static_cast<uint32_t>(c.host_rule_table),
                                    .prio = kHostRulePriority}),
         "DEL: host rule");
    warn(n.hnl->DeleteRoute(RouteInfo{.table = c.host_rule_table, .dst = dst, .gw = std::nullopt,
                                      .oif = 0, .scope = RT_SCOPE_LINK, .family = 0}),
         "DEL: host route");
  }
  bool veth0 = n.pnl && n.pnl->Link(kPodVethName).ok();
  bool first = ifname == c.pod_default_cni_nic;
  if (first && (c.mode != Mode::kOverlay)) {
    warn(n.hnl->DeleteLink(HostVethName(inv.env.container_id)), "DEL: host veth");
  }
  // Overlay: the node end is the first NIC's peer (Calico's/Cilium's veth), which stays; the
  // neighbours ADD put there for this NIC's IPs go.
  bool overlay = !first && (c.mode == Mode::kOverlay || (c.mode == Mode::kAuto && !veth0));
  if (overlay && n.pnl) {
    absl::StatusOr<LinkInfo> pod_first = n.pnl->Link(c.pod_default_cni_nic);
    if (pod_first.ok() && pod_first->peer_index > 0) {
      for (const base::IPPrefix& ip : ips) {
        warn(n.hnl->DeleteNeigh(pod_first->peer_index, ip.address()), "DEL: node neighbour");
      }
    }
  }
  // A later NIC's table and the rules that lead to it.
  if (!first && n.pnl) {
    if (std::optional<int> table = RuleTableFor(ifname, c.multus_nic_prefix)) {
      if (auto rules = n.pnl->Rules(); rules.ok()) {
        for (const RuleInfo& r : *rules) {
          if (r.table == static_cast<uint32_t>(*table)) warn(n.pnl->DeleteRule(r), "DEL: pod rule");
        }
      }
      if (auto routes = n.pnl->Routes(); routes.ok()) {
        for (const RouteInfo& r : *routes) {
          if (r.table == *table) warn(n.pnl->DeleteRoute(r), "DEL: pod route");
        }
      }
    }
  }
  SP_LOG(Info).Msg("coordinator DEL done").KV("ifName", ifname).KV("ips", ips.size());
  return Succeed();
}

// ---- CHECK -------------------------------------------------------------------------------------

Outcome CmdCheck(Invocation& inv) {
  const std::string& v = inv.version;
  if (std::optional<Outcome> failed =
          Prepare(inv, "CHECK needs the result of the previous ADD in \"prevResult\"")) {
    return *failed;
  }
  if (inv.cfg.mode == Mode::kDisable) return Succeed();
  absl::StatusOr<Nets> nets = OpenNets(inv.env.netns, false);
  if (!nets.ok()) return Fail(SetupError("open network namespaces", nets.status()), v);
  absl::StatusOr<Plan> plan = MakePlan(inv, *nets);
  if (!plan.ok()) return Fail({kErrCheck, std::string(base::FromAbsl(plan.status().message())), ""}, v);
  auto missing = [&](std::string what) { return Fail({kErrCheck, "coordinator CHECK: " + what, ""}, v); };
  if (!nets->pnl->Link(plan->pod_link).ok()) return missing(plan->pod_link + " is missing in the pod");
  if (!nets->hnl->Link(plan->host_link).ok()) return missing(plan->host_link + " is missing on the node");
  std::vector<base::IPPrefix> ips = ResultIPs(*inv.conf.prev_result);
  absl::StatusOr<std::vector<RuleInfo>> rules = nets->hnl->Rules();
  if (!rules.ok()) return Fail(SetupError("list rules", rules.status()), v);
  for (const base::IPPrefix& ip : ips) {
    base::IPPrefix dst = HostRoute(ip.address());
    bool found = std::any_of(rules->begin(), rules->end(), [&](const RuleInfo& r) {
      return r.dst == dst && r.table == static_cast<uint32_t>(inv.cfg.host_rule_table);
    });
    if (!found) {
      return missing(base::StrCat("node rule \"to ", dst.ToString(), " lookup ",
                                  inv.cfg.host_rule_table, "\" is missing"));
    }
  }
  return Succeed();
}

}  // namespace

Outcome Run(const cni::Env& env, const cni::RunHooks& hooks) {
  // Errors echo the parsed cniVersion and the supported-version check comes before CHECK's
  // 0.4.0 floor: this plugin's behaviour so far (SkelOptions), unlike skel's.
  cni::SkelRequest req;
  if (auto done = cni::RunSkel(env, kAbout, hooks.read_stdin, &req,
                               {.echo_parsed_version = true, .supported_version_first = true})) {
    return *std::move(done);
  }
  const std::string& cmd = req.command;
  const std::string& version = req.version;
  bool add = cmd == "ADD", del = cmd == "DEL";
  bool gc = cmd == "GC", status = cmd == "STATUS";
  Invocation inv{.env = env, .version = version, .conf = {}, .k8s = {}, .cfg = {}};
  if (auto e = DecodeNetConf(req.json, &inv.conf)) return Fail(*e, version);
  if (gc || status) return Succeed();  // nothing kept per node; the agent's health is IPAM's
  if (auto e = cni::ParseCniArgs(env.args, &inv.k8s)) return Fail(*e, version);
  if (hooks.deadline_known) {
    // The agent budget bounds the only blocking call; netlink calls are local.
    hooks.deadline_known(std::chrono::steady_clock::now() + kAddAgentBudget + std::chrono::seconds(5),
                         del ? Succeed()
                             : Fail({cni::kErrTryAgainLater, "coordinator timed out, try again later", ""},
                                    version));
  }
  if (add) return CmdAdd(inv);
  if (del) return CmdDel(inv);
  return CmdCheck(inv);
}

}  // namespace spiderpool::agent::coordinator
