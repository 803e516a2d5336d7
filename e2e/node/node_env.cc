#include "e2e/node/node_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <random>

#include "base/strings.h"

namespace spiderpool::e2e {
namespace {

constexpr char kIp[] = "/usr/sbin/ip";
constexpr char kIpAlt[] = "/sbin/ip";

std::string IpPath() { return ::access(kIp, X_OK) == 0 ? kIp : kIpAlt; }

std::string RandomPrefix() {
  std::random_device rd;
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s = "sp";
  for (int i = 0; i < 5; ++i) s += kChars[rd() % 36];
  return s;
}

}  // namespace

std::string NodeTestSkipReason() {
  if (::geteuid() != 0) return "node tests need root (network namespaces)";
  if (::access(IpPath().c_str(), X_OK) != 0) return "iproute2 (`ip`) is not installed";
  if (::access("/usr/lib/cni/macvlan", X_OK) != 0) {
    return "the CNI plugins are not installed (apt-get install containernetworking-plugins)";
  }
  return "";
}

absl::StatusOr<std::string> Ip(std::vector<std::string> args) {
  args.insert(args.begin(), IpPath());
  absl::StatusOr<base::ProcessResult> r =
      base::RunProcess({.argv = args, .inherit_env = true, .timeout = absl::Seconds(30)});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    return absl::InternalError(base::StrCat(cmd, "failed: ", r->stderr_data));
  }
  return r->stdout_data;
}

absl::StatusOr<std::unique_ptr<Network>> Network::Create() {
  std::unique_ptr<Network> n(new Network(RandomPrefix()));
  const std::string sw = n->prefix_ + "-sw";
  if (auto s = Ip({"netns", "add", sw}); !s.ok()) return s.status();
  n->netns_.push_back(sw);
  if (auto s = Ip({"-n", sw, "link", "add", "br0", "type", "bridge"}); !s.ok()) return s.status();
  if (auto s = Ip({"-n", sw, "link", "set", "br0", "up"}); !s.ok()) return s.status();
  return n;
}

Network::~Network() {
  for (auto it = netns_.rbegin(); it != netns_.rend(); ++it) (void)Ip({"netns", "del", *it});
}

absl::StatusOr<std::string> Network::AddNode(const std::string& node) {
  const std::string ns = NodeNetns(node);
  const std::string sw = prefix_ + "-sw";
  if (auto s = Ip({"netns", "add", ns}); !s.ok()) return s.status();
  netns_.push_back(ns);
  const std::string a = base::StrCat(prefix_, "a", next_veth_);
  const std::string b = base::StrCat(prefix_, "b", next_veth_);
  ++next_veth_;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"link", "add", a, "type", "veth", "peer", "name", b},
           {"link", "set", a, "netns", ns, "name", "eth0"},
           {"link", "set", b, "netns", sw},
           {"-n", sw, "link", "set", b, "master", "br0"},
           {"-n", sw, "link", "set", b, "up"},
           {"-n", ns, "link", "set", "eth0", "up"},
           {"-n", ns, "link", "set", "lo", "up"}}) {
    if (auto s = Ip(args); !s.ok()) return s.status();
  }
  return ns;
}

absl::StatusOr<std::string> Network::AddPodNetns(const std::string& pod) {
  const std::string ns = PodNetns(pod);
  if (auto s = Ip({"netns", "add", ns}); !s.ok()) return s.status();
  netns_.push_back(ns);
  if (auto s = Ip({"-n", ns, "link", "set", "lo", "up"}); !s.ok()) return s.status();
  return PodNetnsPath(pod);
}

absl::Status Network::DeletePodNetns(const std::string& pod) {
  const std::string ns = PodNetns(pod);
  auto s = Ip({"netns", "del", ns});
  std::erase(netns_, ns);
  return s.status();
}

absl::StatusOr<std::vector<std::string>> Network::PodAddresses(const std::string& pod,
                                                               const std::string& if_name) {
  absl::StatusOr<std::string> out = Ip({"-n", PodNetns(pod), "-j", "addr", "show", "dev", if_name});
  if (!out.ok()) return out.status();
  absl::StatusOr<base::Json> j = base::ParseJson(*out);
  if (!j.ok()) return j.status();
  std::vector<std::string> addrs;
  for (const auto& link : *j) {
    for (const auto& a : link.value("addr_info", base::Json::array())) {
      if (a.value("scope", "") != "global") continue;
      addrs.push_back(base::StrCat(a.value("local", ""), "/", a.value("prefixlen", 0)));
    }
  }
  return addrs;
}

absl::StatusOr<base::Json> Network::PodRoutes(const std::string& pod) {
  absl::StatusOr<std::string> out = Ip({"-n", PodNetns(pod), "-j", "route", "show"});
  if (!out.ok()) return out.status();
  return base::ParseJson(*out);
}

bool Network::PodLinkExists(const std::string& pod, const std::string& if_name) {
  return Ip({"-n", PodNetns(pod), "link", "show", "dev", if_name}).ok();
}

bool Network::Ping(const std::string& from_pod, const std::string& ip) {
  absl::StatusOr<base::ProcessResult> r = base::RunProcess(
      {.argv = {IpPath(), "netns", "exec", PodNetns(from_pod), "/bin/busybox", "ping", "-c", "1", "-W", "2", ip},
       .inherit_env = true,
       .timeout = absl::Seconds(10)});
  return r.ok() && r->exit_code == 0;
}

std::string CniOutcome::Describe() const {
  return base::StrCat("exit=", exit_code, " stdout=", stdout_data, " stderr=", stderr_data);
}

absl::StatusOr<CniOutcome> RunCni(const CniCall& call) {
  std::vector<std::string> argv;
  if (!call.run_in_netns.empty()) argv = {IpPath(), "netns", "exec", call.run_in_netns};
  argv.push_back(call.plugin);
  absl::StatusOr<base::ProcessResult> r = base::RunProcess(
      {.argv = argv,
       .env = {{"CNI_COMMAND", call.command},
               {"CNI_CONTAINERID", call.container_id},
               {"CNI_NETNS", call.netns_path},
               {"CNI_IFNAME", call.if_name},
               {"CNI_ARGS", call.cni_args},
               {"CNI_PATH", call.cni_path},
               {"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}},
       .stdin_data = call.config,
       .timeout = absl::Seconds(90)});
  if (!r.ok()) return r.status();
  CniOutcome out{.exit_code = r->exit_code, .stdout_data = r->stdout_data, .stderr_data = r->stderr_data};
  if (absl::StatusOr<base::Json> j = base::ParseJson(r->stdout_data); j.ok()) out.json = *std::move(j);
  return out;
}

std::string Runfile(const std::string& path) {
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return base::StrCat(cwd, "/", path);
}

}  // namespace spiderpool::e2e
