#include "agent/cni/plugin.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_join.h"
#include "agent/cni/agent_client.h"
#include "agent/cni/cni.h"
#include "agent/cni/ipam_conf.h"
#include "agent/ipamapi/ipamapi.h"
#include "agent/cni/netprobe.h"
#include "base/ip.h"
#include "base/log.h"
#include "base/strings.h"

namespace spiderpool::agent::cni {

namespace {

constexpr std::string_view kAbout = "CNI plugin spiderpool (IPAM, C++ reimplementation)";

// ---- file logging ---------------------------------------------------------------------------
// Lines go to ipam.log_file_path when it can be opened for append (its directory is created if
// missing); otherwise they are dropped. Never stdout (the protocol), never stderr (runtimes
// surface it). Size-based rotation: path -> path.1 -> ... -> path.<max_count>.
class FileLog {
 public:
  static void Setup(const IPAMConf& ipam) {
    static FileLog* current = nullptr;
    delete current;
    current = new FileLog(ipam);
    base::LogLevel level = base::LogLevel::kDebug;
    base::ParseLogLevel(ipam.log_level, &level);  // unknown: debug (upstream's default)
    base::SetLogLevel(level);
    FileLog* self = current;
    base::SetLogSink([self](std::string_view line) { self->Write(line); });
  }
  ~FileLog() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  explicit FileLog(const IPAMConf& ipam) {
    const std::string& path = ipam.log_file_path;
    size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) MkdirAll(path.substr(0, slash));
    struct stat st;
    if (ipam.log_file_max_size > 0 && stat(path.c_str(), &st) == 0 &&
        st.st_size >= ipam.log_file_max_size * 1024 * 1024) {
      Rotate(path, ipam.log_file_max_count);
    }
    fd_ = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }
  static void MkdirAll(const std::string& dir) {
    for (size_t i = 1; i <= dir.size(); ++i) {
      if (i == dir.size() || dir[i] == '/') mkdir(dir.substr(0, i).c_str(), 0755);
    }
  }
  static void Rotate(const std::string& path, int64_t max_count) {
    if (max_count <= 0) {
      unlink(path.c_str());
      return;
    }
    for (int64_t i = max_count - 1; i >= 1; --i) {
      rename(base::StrCat(path, ".", i).c_str(), base::StrCat(path, ".", i + 1).c_str());
    }
    rename(path.c_str(), base::StrCat(path, ".1").c_str());
  }
  void Write(std::string_view line) {
    if (fd_ < 0) return;
    std::string l(line);
    if (l.empty() || l.back() != '\n') l += '\n';
    ssize_t n = write(fd_, l.data(), l.size());
    (void)n;
  }
  int fd_ = -1;
};

// ---- talking to the agent -------------------------------------------------------------------

CniError TransportError(const AgentReply& r) {
  switch (r.failure) {
    case AgentReply::Failure::kTimeout:
      return {kErrTryAgainLater, "timeout waiting for spiderpool-agent, try again later",
              r.failure_text};
    case AgentReply::Failure::kConnect:
      return {kErrTryAgainLater, "spiderpool-agent is unreachable, try again later",
              r.failure_text};
    default:
      return {kErrTryAgainLater, "error talking to spiderpool-agent, try again later",
              r.failure_text};
  }
}

std::string HttpDetails(std::string_view what, const AgentReply& r) {
  return base::StrCat(what, ": HTTP ", r.status);
}

// GET /v1/ipam/healthy; nullopt when healthy.
std::optional<CniError> CheckHealthy(AgentClient& client) {
  AgentReply r = client.Get(ipamapi::kHealthyPath);
  if (!r.ok()) return TransportError(r);
  if (r.status == ipamapi::kStatusOK) return std::nullopt;
  std::string msg = ipamapi::ErrorMessageFromBody(r.body);
  return CniError{kErrTryAgainLater, "unhealthy spiderpool-agent backend, try again later",
                  base::StrCat(HttpDetails(base::StrCat("GET ", ipamapi::kHealthyPath), r),
                               msg.empty() ? "" : ": ", msg)};
}

struct Invocation {
  const Env& env;
  const RunHooks& hooks;
  NetConf conf;
  K8sArgs k8s;
  std::chrono::steady_clock::time_point deadline;
};

std::chrono::steady_clock::time_point DeadlineFor(const NetConf& conf) {
  return std::chrono::steady_clock::now() +
         std::chrono::microseconds(static_cast<int64_t>(conf.timeout_seconds * 1e6));
}

ipamapi::IpamDelArgs DelArgs(const Invocation& inv) {
  return ipamapi::IpamDelArgs{.container_id = inv.env.container_id,
                              .if_name = inv.env.ifname,
                              .net_namespace = inv.env.netns,
                              .pod_namespace = inv.k8s.pod_namespace,
                              .pod_name = inv.k8s.pod_name,
                              .pod_uid = inv.k8s.pod_uid};
}

// DELETE /v1/ipam/ip with the DEL arguments; what happened, for logs and error details.
std::string Release(const Invocation& inv, AgentClient& client) {
  AgentReply r = client.Delete(ipamapi::kIPPath, ipamapi::ToJson(DelArgs(inv)));
  if (!r.ok()) {
    SP_LOG(Error).Msg("IP release failed; left to GC").KV("details", r.failure_text);
    return base::StrCat("releasing the IPs failed (left to GC): ", r.failure_text);
  }
  if (r.status == ipamapi::kStatusOK || r.status == ipamapi::kStatusConflict) {
    SP_LOG(Info).Msg("IP released").KV("status", r.status);
    return "the pod's IPs were released";
  }
  std::string msg = ipamapi::ErrorMessageFromBody(r.body);
  SP_LOG(Error).Msg("IP release refused; left to GC").KV("status", r.status).KV("message", msg);
  return base::StrCat("releasing the IPs failed (left to GC): HTTP ", r.status,
                      msg.empty() ? "" : ": ", msg);
}

// Upstream's IPAM-side detection (reference §2.9): for the IPs of CNI_IFNAME whose IpConfig asks
// for it, IP conflict detection, then gateway detection, then announcements. Nothing happens
// (no namespace is entered) when no IP of this NIC has a detection flag. On a conflict, an
// unreachable gateway or a probe failure the pod's IPs are released first; the error is
// returned.
std::optional<CniError> DetectAndAnnounce(const Invocation& inv,
                                          const ipamapi::IpamAddResponse& resp,
                                          AgentClient& client) {
  struct GatewayCheck {
    base::IPAddress source, gateway;
  };
  std::vector<base::IPAddress> all, conflict;
  std::vector<GatewayCheck> gateways;
  bool wanted = false;
  for (const ipamapi::IpConfig& ip : resp.ips) {
    if (ip.nic != inv.env.ifname) continue;
    auto prefix = base::IPPrefix::Parse(ip.address);  // BuildResult has validated it
    if (!prefix.ok()) continue;
    all.push_back(prefix->address());
    wanted = wanted || ip.enable_ip_conflict_detection || ip.enable_gateway_detection;
    if (ip.enable_ip_conflict_detection) conflict.push_back(prefix->address());
    if (!ip.enable_gateway_detection) continue;
    auto gw = base::IPAddress::Parse(ip.gateway);
    if (ip.gateway.empty() || !gw.ok() || gw->family() != prefix->family()) {
      SP_LOG(Warning).Msg("gateway detection asked for an IP without a usable gateway; skipped")
          .KV("ip", ip.address).KV("gateway", ip.gateway);
      continue;
    }
    gateways.push_back({prefix->address(), *gw});
  }
  if (!wanted) return std::nullopt;

  netprobe::Prober& prober = inv.hooks.prober ? *inv.hooks.prober : netprobe::SystemProber();
  const netprobe::Link link{.netns_path = inv.env.netns, .ifname = inv.env.ifname};
  netprobe::Timing timing;
  // The IPv6 wait for the link-local address's DAD may use at most half the time left.
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      inv.deadline - std::chrono::steady_clock::now());
  timing.dad_wait = std::clamp(left / 2, std::chrono::milliseconds(0), timing.dad_wait);
  auto fail = [&](int code, std::string msg, std::string_view details) {
    SP_LOG(Error).Msg(msg).KV("details", details);
    std::string released = Release(inv, client);
    return CniError{code, std::move(msg), base::StrCat(details, "; ", released)};
  };
  std::string tries = base::StrCat(timing.tries, " tries of ", timing.per_try.count(), "ms");

  if (!conflict.empty()) {
    auto r = prober.ProbeConflict(link, conflict, timing);
    if (!r.ok()) {
      return fail(kErrDetectionFailed, "spiderpool IP conflict detection failed",
                  base::FromAbsl(r.status().message()));
    }
    if (r->has_value()) {
      const netprobe::Conflict& c = **r;
      return fail(kErrIPConflict,
                  base::StrCat("IP conflict: ", c.ip.ToString(), " is already used by ",
                               netprobe::MacToString(c.mac)),
                  base::StrCat(c.ip.is_v4() ? "ARP probe" : "duplicate address detection",
                               " from ", inv.env.ifname, " was answered"));
    }
    SP_LOG(Debug).Msg("no IP conflict").KV("ips", conflict.size());
  }
  for (const GatewayCheck& g : gateways) {
    auto r = prober.ProbeGateway(link, g.source, g.gateway, timing);
    if (!r.ok()) {
      return fail(kErrDetectionFailed, "spiderpool gateway detection failed",
                  base::FromAbsl(r.status().message()));
    }
    if (!r->has_value()) {
      return fail(kErrGatewayUnreachable,
                  base::StrCat("gateway ", g.gateway.ToString(), " is unreachable from ",
                               g.source.ToString(), " on ", inv.env.ifname),
                  base::StrCat("no ", g.gateway.is_v4() ? "ARP reply" : "neighbour advertisement",
                               " after ", tries));
    }
    SP_LOG(Debug).Msg("gateway reachable").KV("gateway", g.gateway.ToString())
        .KV("mac", netprobe::MacToString(**r));
  }
  if (absl::Status s = prober.Announce(link, all); !s.ok()) {
    SP_LOG(Warning).Msg("announcing the IPs failed").KV("error", base::FromAbsl(s.message()));
  }
  return std::nullopt;
}

Outcome CmdAdd(Invocation& inv) {
  const std::string& v = inv.conf.cni_version;
  std::vector<std::string> missing;
  if (inv.k8s.pod_namespace.empty()) missing.push_back("K8S_POD_NAMESPACE");
  if (inv.k8s.pod_name.empty()) missing.push_back("K8S_POD_NAME");
  if (!missing.empty()) {
    return Fail({kErrInvalidEnv,
                 base::StrCat("required CNI_ARGS [", absl::StrJoin(missing, ","), "] missing"),
                 "CNI_ARGS=" + inv.env.args},
                v);
  }
  inv.deadline = DeadlineFor(inv.conf);
  if (inv.hooks.deadline_known) {
    inv.hooks.deadline_known(
        inv.deadline,
        Fail({kErrTryAgainLater, "timeout waiting for spiderpool-agent, try again later",
              base::StrCat("no answer within ipam_timeout_seconds=",
                           base::DumpJson(Json(inv.conf.timeout_seconds)))},
             v));
  }
  const IPAMConf& ipam = *inv.conf.ipam;
  AgentClient client(ipam.ipam_unix_socket_path, inv.deadline);
  if (auto e = CheckHealthy(client)) {
    SP_LOG(Error).Msg("agent health check failed").KV("error", e->msg).KV("details", e->details);
    return Fail(*e, v);
  }
  ipamapi::IpamAddArgs args{.container_id = inv.env.container_id,
                            .if_name = inv.env.ifname,
                            .net_namespace = inv.env.netns,
                            .pod_namespace = inv.k8s.pod_namespace,
                            .pod_name = inv.k8s.pod_name,
                            .pod_uid = inv.k8s.pod_uid,
                            .default_ipv4_ippool = ipam.default_ipv4_ippool,
                            .default_ipv6_ippool = ipam.default_ipv6_ippool,
                            .clean_gateway = ipam.clean_gateway,
                            .match_master_subnet = ipam.match_master_subnet};
  std::string what = base::StrCat("POST ", ipamapi::kIPPath);
  AgentReply r = client.Post(ipamapi::kIPPath, ipamapi::ToJson(args));
  if (!r.ok()) {
    CniError e = TransportError(r);
    SP_LOG(Error).Msg("IPAM request failed").KV("details", e.details);
    return Fail(e, v);
  }
  if (r.status != ipamapi::kStatusOK) {
    std::string msg = ipamapi::ErrorMessageFromBody(r.body);
    SP_LOG(Error).Msg("IPAM request refused").KV("status", r.status).KV("message", msg);
    if (r.status == ipamapi::kStatusTooManyRequests ||
        r.status == ipamapi::kStatusServiceUnavailable) {
      return Fail({kErrTryAgainLater,
                   base::StrCat("spiderpool-agent is busy, try again later: ", msg),
                   HttpDetails(what, r)},
                  v);
    }
    int code = r.status == ipamapi::kStatusBadRequest ? kErrInvalidNetworkConfig : kErrAgent;
    return Fail({code, base::StrCat("spiderpool IP allocation error: ", msg),
                 HttpDetails(what, r)},
                v);
  }
  auto resp = ipamapi::FromJson<ipamapi::IpamAddResponse>(r.body);
  if (!resp.ok()) {
    SP_LOG(Error).Msg("invalid IPAM response").KV("error", base::FromAbsl(resp.status().message()));
    return Fail({kErrAgentResponse, "invalid response from spiderpool-agent",
                 base::StrCat(what, ": ", base::FromAbsl(resp.status().message()))},
                v);
  }
  auto result = BuildResult(*resp, inv.env.ifname, v);
  if (!result.ok()) {
    return Fail({kErrAgentResponse, "invalid response from spiderpool-agent",
                 base::StrCat(what, ": ", base::FromAbsl(result.status().message()))},
                v);
  }
  if (!result->contains("ips")) {
    return Fail({kErrAgent,
                 base::StrCat("spiderpool IP allocation error: no IP allocated for interface ",
                              inv.env.ifname),
                 base::StrCat(what, ": the response has IPs for other interfaces only")},
                v);
  }
  if (auto e = DetectAndAnnounce(inv, *resp, client)) return Fail(*e, v);
  std::string text = base::DumpJson(*result);
  SP_LOG(Info).Msg("IPAM allocation result").KV("result", text);
  return Succeed(std::move(text));
}

Outcome CmdDel(Invocation& inv) {
  // DEL neither lies nor blocks. An agent that cannot be reached (no socket, refused, no answer
  // within the budget) must not keep a pod Terminating or a node drain waiting: DEL succeeds
  // after logging and spiderpool-controller's GC reclaims the IPs. An agent that answers but
  // cannot release (an API error, still starting) gets a CNI error, so the kubelet retries
  // instead of believing the IPs are free.
  const std::string& v = inv.conf.cni_version;
  if (inv.k8s.pod_namespace.empty() || inv.k8s.pod_name.empty()) {
    SP_LOG(Warning).Msg("DEL without K8S_POD_NAMESPACE/K8S_POD_NAME: nothing to release")
        .KV("CNI_ARGS", inv.env.args);
    return Succeed();
  }
  inv.deadline = DeadlineFor(inv.conf);
  if (inv.hooks.deadline_known) inv.hooks.deadline_known(inv.deadline, Succeed());
  const IPAMConf& ipam = *inv.conf.ipam;
  AgentClient client(ipam.ipam_unix_socket_path, inv.deadline);
  AgentReply health = client.Get(ipamapi::kHealthyPath);  // upstream asks first on every call
  if (!health.ok()) {
    SP_LOG(Error).Msg("spiderpool-agent unreachable on DEL; IP release left to GC")
        .KV("details", health.failure_text);
    return Succeed();
  }
  if (health.status != ipamapi::kStatusOK) {
    return Fail({kErrTryAgainLater, "unhealthy spiderpool-agent backend, try again later",
                 HttpDetails(base::StrCat("GET ", ipamapi::kHealthyPath), health)},
                v);
  }
  std::string what = base::StrCat("DELETE ", ipamapi::kIPPath);
  AgentReply r = client.Delete(ipamapi::kIPPath, ipamapi::ToJson(DelArgs(inv)));
  if (!r.ok()) {
    SP_LOG(Error).Msg("spiderpool-agent unreachable on DEL; IP release left to GC")
        .KV("details", r.failure_text);
    return Succeed();
  }
  std::string msg = ipamapi::ErrorMessageFromBody(r.body);
  switch (r.status) {
    case ipamapi::kStatusOK:
    case ipamapi::kStatusConflict:  // nothing allocated to this pod/NIC: already released
    case ipamapi::kStatusNotFound:  // nothing of this pod is known: nothing to release
      SP_LOG(Info).Msg("IP released").KV("status", r.status);
      return Succeed();
    case ipamapi::kStatusTooManyRequests:
    case ipamapi::kStatusServiceUnavailable:
      SP_LOG(Warning).Msg("spiderpool-agent busy on DEL").KV("status", r.status).KV("message", msg);
      return Fail({kErrTryAgainLater,
                   base::StrCat("spiderpool-agent is busy, try again later: ", msg),
                   HttpDetails(what, r)},
                  v);
    default:
      SP_LOG(Error).Msg("IP release failed").KV("status", r.status).KV("message", msg);
      return Fail({r.status == ipamapi::kStatusBadRequest ? kErrInvalidNetworkConfig : kErrAgent,
                   base::StrCat("spiderpool IP release error: ", msg), HttpDetails(what, r)},
                  v);
  }
}

Outcome CmdCheck(Invocation& inv) {
  const std::string& v = inv.conf.cni_version;
  if (!inv.conf.prev_result.has_value()) {
    return Fail({kErrInvalidNetworkConfig, "required prevResult missing",
                 "CHECK needs the result of the previous ADD in \"prevResult\""},
                v);
  }
  if (auto e = ValidatePrevResult(*inv.conf.prev_result, v)) return Fail(*e, v);
  return Succeed();
}

Outcome CmdStatus(Invocation& inv) {
  const std::string& v = inv.conf.cni_version;
  inv.deadline = DeadlineFor(inv.conf);
  Outcome unavailable = Fail({kErrPluginNotAvailable, "spiderpool-agent is not available",
                              "no answer within the timeout"},
                             v);
  if (inv.hooks.deadline_known) inv.hooks.deadline_known(inv.deadline, unavailable);
  AgentClient client(inv.conf.ipam->ipam_unix_socket_path, inv.deadline);
  if (auto e = CheckHealthy(client)) {
    return Fail({kErrPluginNotAvailable, "spiderpool-agent is not available",
                 base::StrCat(e->msg, ": ", e->details)},
                v);
  }
  return Succeed();
}

}  // namespace

Outcome Run(const Env& env, const RunHooks& hooks) {
  SkelRequest req;
  if (auto done = RunSkel(env, kAbout, hooks.read_stdin, &req)) return *std::move(done);
  const std::string& cmd = req.command;
  bool add = cmd == "ADD", check = cmd == "CHECK";
  bool gc = cmd == "GC", status = cmd == "STATUS";
  const std::string& echo = req.echo;

  Invocation inv{.env = env, .hooks = hooks, .conf = {}, .k8s = {}, .deadline = {}};
  if (auto e = DecodeNetConf(req.json, &inv.conf)) return Fail(*e, echo);
  inv.conf.cni_version = req.cni_version;
  FileLog::Setup(*inv.conf.ipam);
  SP_LOG(Debug).Msg("CNI request").KV("command", cmd).KV("containerID", env.container_id)
      .KV("netns", env.netns).KV("ifName", env.ifname).KV("args", env.args)
      .KV("cniVersion", inv.conf.cni_version);

  if (gc) {
    // Leaked IPs are reclaimed by spiderpool-controller's GC; nothing to do per node.
    SP_LOG(Info).Msg("GC: nothing to do in the plugin (spiderpool-controller reclaims IPs)");
    return Succeed();
  }
  if (status) return CmdStatus(inv);
  if (check) return CmdCheck(inv);

  if (auto e = ParseCniArgs(env.args, &inv.k8s)) {
    SP_LOG(Error).Msg("bad CNI_ARGS").KV("error", e->msg);
    return Fail(*e, inv.conf.cni_version);
  }
  FillK8sArgsFromConf(inv.conf, &inv.k8s);
  return add ? CmdAdd(inv) : CmdDel(inv);
}

}  // namespace spiderpool::agent::cni
