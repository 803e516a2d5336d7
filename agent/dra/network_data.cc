#include "agent/dra/network_data.h"

#include <utility>

#include "api/resource_slice.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/strings.h"
#include "dra/resourceslice/model.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"

namespace spiderpool::agent::dra {

namespace rv1 = ::spiderpool::api::resource_v1;
namespace drv = ::spiderpool::dra::driver;
namespace rs = ::spiderpool::dra::resourceslice;
using base::StrCat;

std::optional<drv::NetworkData> NetworkDataFor(const std::optional<api::SpiderEndpoint>& endpoint,
                                               const std::string& pod_uid,
                                               const std::string& node_name,
                                               const api::Device* device) {
  if (!endpoint.has_value() || endpoint->metadata.IsDeleting() || !endpoint->status.has_value()) {
    return std::nullopt;
  }
  const api::PodIPAllocation& cur = endpoint->status->current;
  if (cur.uid != pod_uid || cur.node != node_name || cur.ips.empty()) return std::nullopt;
  auto serves = [&](const std::optional<std::string>& pool) {
    return device != nullptr && pool.has_value() &&
           device->attributes.contains(rs::PoolAttributeName(*pool));
  };
  const api::IPAllocationDetail* match = nullptr;
  for (const api::IPAllocationDetail& d : cur.ips) {
    if (serves(d.ipv4_pool) || serves(d.ipv6_pool)) {
      match = &d;
      break;
    }
  }
  if (match == nullptr && cur.ips.size() == 1) match = &cur.ips[0];
  if (match == nullptr) return std::nullopt;
  drv::NetworkData out{.interface_name = match->interface_,
                       .hardware_address = match->mac.value_or("")};
  if (match->ipv4) out.ips.push_back(*match->ipv4);
  if (match->ipv6) out.ips.push_back(*match->ipv6);
  return out;
}

NetworkDataReporter::NetworkDataReporter(std::shared_ptr<kube::RestClient> rest,
                                         drv::NetDriver* driver, NetworkDataOptions options,
                                         DevicesFn devices,
                                         kube::Informer<api::SpiderEndpoint>* endpoints)
    : rest_(std::move(rest)),
      driver_(driver),
      options_(std::move(options)),
      devices_(std::move(devices)),
      endpoints_(endpoints),
      queue_(kube::workqueue::Options{.name = "dra_network_data"}) {
  if (endpoints_ == nullptr) return;
  endpoints_->AddHandlers(
      {.on_add = [this](const api::SpiderEndpoint& e) { Enqueue(e); },
       .on_update = [this](const api::SpiderEndpoint&, const api::SpiderEndpoint& e) { Enqueue(e); },
       .on_delete = [this](const api::SpiderEndpoint& e) { Enqueue(e); }});
}

NetworkDataReporter::~NetworkDataReporter() { Stop(); }

void NetworkDataReporter::Enqueue(const api::SpiderEndpoint& e) {
  // Ours: the endpoint's pod is on this node (a DEL of another node's pod is not ours).
  if (!e.status.has_value() || e.status->current.node != options_.node_name) return;
  queue_.Add(StrCat(e.metadata.namespace_, "/", e.metadata.name));
}

void NetworkDataReporter::Start() {
  if (endpoints_ != nullptr && options_.resync > absl::ZeroDuration()) {
    resync_thread_ = std::jthread([this](std::stop_token stop) {
      while (base::RealClock::Get().SleepFor(options_.resync, stop)) {
        for (const auto& e : endpoints_->store().List()) Enqueue(*e);
      }
    });
  }
  worker_thread_ = std::jthread([this](std::stop_token stop) {
    while (std::optional<std::string> key = queue_.Get(stop)) {
      const size_t slash = key->find('/');
      absl::Status s = Reconcile(key->substr(0, slash), key->substr(slash + 1));
      if (s.ok()) {
        queue_.Forget(*key);
      } else {
        SP_LOG(Warning).Msg("networkData of the pod's claims").KV("pod", *key).KV("error", s);
        queue_.AddRateLimited(*key);
      }
      queue_.Done(*key);
    }
  });
}

void NetworkDataReporter::Stop() {
  queue_.ShutDown();
  for (std::jthread* t : {&resync_thread_, &worker_thread_}) {
    if (!t->joinable()) continue;
    t->request_stop();
    t->join();
  }
}

absl::Status NetworkDataReporter::Reconcile(const std::string& ns, const std::string& pod) {
  std::optional<api::SpiderEndpoint> endpoint;
  absl::StatusOr<api::SpiderEndpoint> got = kube::Client<api::SpiderEndpoint>(rest_).Get(ns, pod);
  if (got.ok()) {
    endpoint = *std::move(got);
  } else if (!kube::IsNotFound(got.status())) {
    return got.status();
  }
  absl::StatusOr<api::List<rv1::ResourceClaim>> claims =
      kube::Client<rv1::ResourceClaim>(rest_).List(ns);
  if (!claims.ok()) return claims.status();
  const std::vector<api::Device> devices = devices_ ? devices_() : std::vector<api::Device>{};
  absl::Status first;
  for (const rv1::ResourceClaim& c : claims->items) {
    const rv1::ResourceClaimConsumerReference* consumer = nullptr;
    for (const auto& r : c.status.reserved_for) {
      if (r.resource == "pods" && r.name == pod) consumer = &r;
    }
    if (consumer == nullptr || !c.status.allocation) continue;
    for (const rv1::DeviceRequestAllocationResult* r : c.ResultsFor(options_.driver)) {
      if (r->pool != options_.node_name) continue;
      const api::Device* device = nullptr;
      for (const api::Device& d : devices) {
        if (d.name == r->device) device = &d;
      }
      std::optional<drv::NetworkData> want = NetworkDataFor(endpoint, consumer->uid, options_.node_name, device);
      std::optional<rv1::NetworkDeviceData> have;
      for (const rv1::AllocatedDeviceStatus& d : c.status.devices) {
        if (d.driver == r->driver && d.pool == r->pool && d.device == r->device) have = d.network_data;
      }
      const rv1::NetworkDeviceData want_data =
          want ? rv1::NetworkDeviceData{.interface_name = want->interface_name, .ips = want->ips,
                                        .hardware_address = want->hardware_address}
               : rv1::NetworkDeviceData{};
      if (have.value_or(rv1::NetworkDeviceData{}) == want_data) continue;
      absl::Status s = driver_->ReportNetworkData(
          {.namespace_ = ns, .uid = c.metadata.uid, .name = c.metadata.name},
          want.value_or(drv::NetworkData{}), r->device);
      if (!s.ok() && first.ok()) first = s;
      if (s.ok()) {
        SP_LOG(Info).Msg(want ? "claim networkData written" : "claim networkData removed")
            .KV("claim", StrCat(ns, "/", c.metadata.name)).KV("device", r->device);
      }
    }
  }
  return first;
}

}  // namespace spiderpool::agent::dra
