#include "agent/ipam/coordinator.h"

#include "base/ip.h"
#include "base/log.h"
#include "base/strings.h"

namespace spiderpool::agent::ipam {
namespace {

// What the webhook does to hijackCIDR and policyRoutes[].dst: a bare IP becomes /32 or /128.
std::string AsCIDR(const std::string& text) {
  if (text.find('/') != std::string::npos) return text;
  absl::StatusOr<base::IPAddress> ip = base::IPAddress::Parse(text);
  if (!ip.ok()) return text;
  return base::StrCat(text, "/", ip->bits());
}

}  // namespace

absl::StatusOr<ipamapi::CoordinatorConfig> CoordinatorConfigFor(const api::SpiderCoordinator* coord,
                                                                const api::Pod* pod,
                                                                const std::string& name) {
  if (coord == nullptr) {
    return absl::FailedPreconditionError(
        base::StrCat("SpiderCoordinator \"", name,
                     "\" not found: the coordinator has no cluster settings to use"));
  }
  const std::string phase = coord->status.has_value() ? coord->status->phase : "";
  if (phase != api::kCoordinatorPhaseSynced) {
    std::string msg = base::StrCat("SpiderCoordinator \"", name, "\" is not ready: phase ",
                                   phase.empty() ? "unset (no status yet)" : "\"" + phase + "\"");
    if (coord->status.has_value() && !coord->status->reason.empty()) {
      msg += base::StrCat(" (reason: ", coord->status->reason, ")");
    }
    return absl::FailedPreconditionError(msg);
  }
  const api::CoordinatorSpec& spec = coord->spec;
  ipamapi::CoordinatorConfig c;
  c.mode = spec.mode.value_or("auto");
  if (c.mode == "disabled") c.mode = "disable";  // the plugin's word for it
  c.overlay_pod_cidr = coord->status->overlay_pod_cidr;
  c.service_cidr = coord->status->service_cidr;
  for (const std::string& cidr : spec.hijack_cidr) c.hijack_cidr.push_back(AsCIDR(cidr));
  for (const api::PolicyRoute& r : spec.policy_routes) {
    c.policy_routes.push_back({.dst = AsCIDR(r.dst), .gw = r.gw});
  }
  c.pod_mac_prefix = spec.pod_mac_prefix.value_or("");
  c.tune_pod_routes = spec.tune_pod_routes.value_or(true);
  c.pod_default_route_nic = spec.pod_default_route_nic.value_or("");
  c.host_rule_table = spec.host_rule_table.value_or(500);
  c.pod_rp_filter = spec.pod_rp_filter.value_or(0);
  c.tx_queue_len = spec.tx_queue_len.value_or(0);
  c.veth_link_address = spec.veth_link_address.value_or("");
  c.veth_mtu = spec.veth_mtu.value_or(1500);
  if (pod != nullptr) {
    if (auto it = pod->metadata.annotations.find(std::string(api::kAnnoDefaultRouteNIC));
        it != pod->metadata.annotations.end()) {
      c.pod_default_route_nic = it->second;
    }
  }
  return c;
}

CoordinatorConfigSource::CoordinatorConfigSource(
    const kube::Informer<api::SpiderCoordinator>* coordinators, const kube::Informer<api::Pod>* pods,
    std::string name)
    : coordinators_(coordinators), pods_(pods), name_(std::move(name)) {}

bool CoordinatorConfigSource::WaitForSync(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!Ready()) {
    if (absl::Now() >= deadline) return false;
    base::RealClock::Get().SleepFor(absl::Milliseconds(5));
  }
  return true;
}

bool CoordinatorConfigSource::Ready() const {
  return coordinators_->HasSynced() && (pods_ == nullptr || pods_->HasSynced());
}

absl::StatusOr<ipamapi::CoordinatorConfig> CoordinatorConfigSource::GetCoordinatorConfig(
    const ipamapi::GetCoordinatorArgs& args) {
  std::shared_ptr<const api::SpiderCoordinator> coord = coordinators_->store().Get(name_);
  std::shared_ptr<const api::Pod> pod;
  if (pods_ != nullptr && !args.pod_namespace.empty() && !args.pod_name.empty()) {
    const std::string key = base::StrCat(args.pod_namespace, "/", args.pod_name);  // the store's
    pod = pods_->store().Get(key);
    if (pod == nullptr) {
      SP_LOG(Debug).Msg("coordinator config: pod not in this node's cache; no annotation override")
          .KV("pod", key);
    }
  }
  return CoordinatorConfigFor(coord.get(), pod.get(), name_);
}

}  // namespace spiderpool::agent::ipam
