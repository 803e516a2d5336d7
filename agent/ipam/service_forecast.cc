// The prediction behind NodeBlocks' prewarm and standing blocks (blocks.h points 4 and 8), the
// IpamService side: which pools the pods waiting on this node, and a pod without annotations,
// will use; the network defaults come from the NetworkAttachmentDefinition Multus will use
// for the pod, else from this node's last ADD.
#include <set>

#include "agent/cni/ipam_conf.h"
#include "agent/ipam/service.h"
#include "base/log.h"
#include "base/strings.h"
#include "ipam/annotations.h"

namespace spiderpool::agent::ipam {
namespace sp = ::spiderpool::ipam;

PoolForecast IpamService::Forecast() {
  if (!writer_.reservations_enabled() || !Ready()) return {};
  ipamapi::IpamAddArgs args;
  std::map<std::string, std::vector<std::string>> known;
  {
    absl::MutexLock l(&prewarm_mu_);
    args = add_template_;
    known = predicted_;
  }
  if (args.if_name.empty()) args.if_name = std::string(sp::kDefaultInterface);
  std::map<std::string, std::vector<std::string>> now;
  std::set<std::string> out;
  int selections = 0;
  for (const std::shared_ptr<const api::Pod>& pod : caches_.pods.store().List()) {
    if (!writer_.IsWaiting(*pod)) continue;
    const std::string& uid = pod->metadata.uid;
    auto it = known.find(uid);
    if (it == known.end()) {
      if (++selections > 64) continue;  // the rest next time (the keeper asks every second)
      std::vector<std::string> pools;
      absl::StatusOr<sp::PodOwner> owner = ResolveOwner(*pod);
      absl::StatusOr<sp::SelectionRequest> req =
          owner.ok() ? BuildSelectionRequest(
                           *pod, *owner,
                           WithNetworkDefaults(args, pod->metadata.annotations,
                                               pod->metadata.namespace_))
                     : owner.status();
      if (req.ok()) {
        std::vector<std::shared_ptr<const api::SpiderIPPool>> keep;
        absl::StatusOr<sp::Selection> sel = sp::SelectPools(*req, SelectionConfigFor(), PoolSnapshot(&keep));
        if (sel.ok()) {
          for (const sp::NicCandidates& nic : sel->nics) {
            if (!nic.ipv4_pools.empty()) pools.push_back(nic.ipv4_pools.front());
            if (!nic.ipv6_pools.empty()) pools.push_back(nic.ipv6_pools.front());
          }
        }
      }
      it = now.emplace(uid, std::move(pools)).first;
    } else {
      now.insert(*it);
    }
    out.insert(it->second.begin(), it->second.end());
  }
  PoolForecast forecast{.for_waiting_pods = {out.begin(), out.end()}, .by_waiting_pod = now};
  {
    absl::MutexLock l(&prewarm_mu_);
    predicted_ = std::move(now);  // only the pods still waiting
  }
  // A pod with no annotations, in a namespace with none (rules 5 and 6: the NAD's defaults of
  // the last ADD, the cluster's default pools), that the pools' node filters let in here.
  args = WithNetworkDefaults(std::move(args), {}, "");
  sp::SelectionRequest bare;
  bare.node = {.name = options_.node_name, .labels = caches_.NodeLabels()};
  bare.if_name = args.if_name;
  bare.default_ipv4_pools = args.default_ipv4_ippool;
  bare.default_ipv6_pools = args.default_ipv6_ippool;
  bare.clean_gateway = args.clean_gateway;
  std::vector<std::shared_ptr<const api::SpiderIPPool>> keep;
  if (absl::StatusOr<sp::Selection> sel = sp::SelectPools(bare, SelectionConfigFor(), PoolSnapshot(&keep));
      sel.ok()) {
    for (const sp::NicCandidates& nic : sel->nics) {
      if (!nic.ipv4_pools.empty()) forecast.standing.push_back(nic.ipv4_pools.front());
      if (!nic.ipv6_pools.empty()) forecast.standing.push_back(nic.ipv6_pools.front());
    }
  }
  return forecast;
}

ipamapi::IpamAddArgs IpamService::WithNetworkDefaults(
    ipamapi::IpamAddArgs args, const std::map<std::string, std::string>& annotations,
    std::string_view ns) {
  absl::StatusOr<std::string> nad = sp::NetworkForNIC(
      annotations, ns, args.if_name, options_.multus_cluster_network, options_.agent_namespace);
  if (!nad.ok()) return args;  // no Multus cluster network: the last ADD's defaults
  std::optional<cni::IPAMConf> ipam = NadIpamOf(*nad);
  if (!ipam.has_value()) return args;
  args.default_ipv4_ippool = std::move(ipam->default_ipv4_ippool);
  args.default_ipv6_ippool = std::move(ipam->default_ipv6_ippool);
  args.clean_gateway = ipam->clean_gateway;
  return args;
}

std::optional<cni::IPAMConf> IpamService::NadIpamOf(const std::string& nad) {
  const absl::Time now = clock_->Now();
  {
    absl::MutexLock l(&prewarm_mu_);
    auto it = nad_ipam_.find(nad);
    if (it != nad_ipam_.end() && now - it->second.first < kNadTtl) return it->second.second;
  }
  std::optional<cni::IPAMConf> out;
  const size_t slash = nad.find('/');
  absl::StatusOr<api::NetworkAttachmentDefinition> got =
      slash == std::string::npos ? absl::InvalidArgumentError("not namespace/name")
                                 : nads_.Get(nad.substr(0, slash), nad.substr(slash + 1));
  absl::Status error = got.status();
  if (got.ok() && !got->spec.config.empty()) {  // empty: a CNI file on the node (Multus)
    absl::StatusOr<std::optional<cni::IPAMConf>> ipam = cni::SpiderpoolIpamOf(got->spec.config);
    error = ipam.status();
    if (ipam.ok()) out = *std::move(ipam);
  }
  if (!error.ok() && !kube::IsNotFound(error)) {
    SP_LOG(Warning)
        .Msg("cannot read the pools of a NetworkAttachmentDefinition; the pods using it get no "
             "reservation before their first ADD")
        .KV("nad", nad)
        .KV("error", error);
  }
  absl::MutexLock l(&prewarm_mu_);
  if (nad_ipam_.size() >= 256) nad_ipam_.clear();  // bounded; re-read at most once per pass
  nad_ipam_[nad] = {now, out};
  return out;
}

}  // namespace spiderpool::agent::ipam
