#pragma once
// The node's network devices as the cluster sees them: NIC discovery (dra/nic) feeding
//   - this node's ResourceSlices of the DRA driver (dra/resourceslice), devices sized by the
//     free addresses of the SpiderIPPools this node may use (from the IPAM caches), and
//   - the device-plugin fallback (dra/deviceplugin), for clusters without DRA.
//
//   NodeDevices devices(rest, options, [&] { return PoolCapacities(caches.pools.List(), ...); });
//   (handlers on the pool and node caches call devices.Refresh(); agent/dra/compose.cc)
//   devices.Start();  ...  devices.Stop();
//
// One thread watches netlink (inside `netns_path` when set: the demo runs each "node" as a
// network namespace); one worker publishes. Publishing is level-based: every change marks the
// state dirty and the worker writes the latest NICs + pools, retrying failures with backoff,
// so a burst of events costs one write and an API outage only delays the slices.

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/labels.h"
#include "api/spider_ippool.h"
#include "dra/deviceplugin/manager.h"
#include "dra/kubeletplugin/device_health.h"
#include "dra/nic/discovery.h"
#include "dra/nic/nic.h"
#include "dra/resourceslice/model.h"
#include "dra/resourceslice/publisher.h"
#include "kube/metrics/metrics.h"
#include "kube/rest/rest_client.h"

namespace spiderpool::agent::dra {

namespace rs = ::spiderpool::dra::resourceslice;

// The IPs of a pool that this node's agent reserved and already handed to pods
// (agent/ipam/blocks.h: reservations not yet written as pod records). nullptr: none.
using HandedOutFn = std::function<std::set<base::IPAddress>(const std::string& pool)>;

// The pools of `pools` that pods on this node may allocate from (not terminating, not
// disabled, nodeName / nodeAffinity admit the node: ipam::PoolAdmitsNode) with the IPs free
// for this node: status.freeIPCount (ipam::ComputePoolCounts when nobody has counted yet)
// plus this node's own reservations in the status that no pod holds yet (`handed_out`).
// Reserving or giving back a block moves IPs between the two terms and leaves the sum alone,
// so the published device count follows only what pods take and release; other nodes'
// reservations are not free for this node.
std::vector<rs::PoolCapacity> PoolCapacities(
    const std::vector<std::shared_ptr<const api::SpiderIPPool>>& pools,
    const std::string& node_name, const api::Labels& node_labels,
    const HandedOutFn& handed_out = nullptr);

// Agent flags --dra-declared-subnets / --dra-resource-names: comma-separated "<nic>=<value>"
// entries ("eth1=10.7.0.0/24,eth1=fd00:7::/64,eth2=10.8.0.0/24"; a NIC may repeat for the
// declared subnets). InvalidArgument naming the flag and the entry on a malformed one.
absl::Status ParseDeclaredSubnets(std::string_view flag_value,
                                  std::map<std::string, std::vector<base::IPPrefix>>* out);
absl::Status ParseResourceNames(std::string_view flag_value, std::map<std::string, std::string>* out);

struct NodeDevicesOptions {
  std::string node_name;
  std::string netns_path;  // "" = the agent's own network namespace
  ::spiderpool::dra::nic::NetlinkNicSourceOptions discovery;
  // ResourceSlices (DRA). Off: no API writes at all.
  bool publish_slices = false;
  rs::ModelOptions model;
  rs::PublisherOptions publisher;
  // Device-plugin fallback.
  bool device_plugin = false;
  ::spiderpool::dra::deviceplugin::Options device_plugin_options;
  // The same devices as the last successful publish are not published again (no LIST per
  // pool status write during an IPAM storm) unless this long has passed: the periodic
  // re-publish repairs slices someone else changed or deleted.
  absl::Duration resync_interval = absl::Minutes(5);
  // Slice churn bound: a publish that would write follows the previous write by at least this
  // long; the changes of that window are coalesced into one write (the latest NICs + pools).
  // During an IPAM storm near a pool's exhaustion every ADD changes the slot count; this keeps
  // it to one ResourceSlice write per node per interval. Zero = no bound (tests).
  absl::Duration min_publish_interval = absl::Seconds(2);
  absl::Duration min_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  kube::metrics::Registry* registry = nullptr;
  // With slices on: the devices' health for the kubelet's DRAResourceHealth stream (the
  // kubelet plugin serves it). Every device published since start is listed, Healthy while
  // its NIC is up, Unhealthy when the NIC is down or gone (a claim may still hold it).
  ::spiderpool::dra::kubeletplugin::DeviceHealthFeed* device_health = nullptr;
};

class NodeDevices {
 public:
  using PoolsFn = std::function<std::vector<rs::PoolCapacity>()>;
  NodeDevices(std::shared_ptr<kube::RestClient> rest, NodeDevicesOptions options, PoolsFn pools);
  ~NodeDevices();  // Stop()

  // Starts discovery (and the device plugin manager). Errors: bad options, a netns that
  // cannot be opened, a device-plugin directory missing.
  absl::Status Start();
  void Stop();
  // Pools or the node changed: re-publish (cheap; coalesced).
  void Refresh();

  // Waits until the NICs have been listed once and the last publish attempt succeeded with
  // nothing pending (for tests and the demo's narration); false on timeout.
  bool WaitIdle(absl::Duration timeout);
  std::vector<::spiderpool::dra::nic::Nic> nics() const;
  std::optional<rs::PublishResult> last_publish() const;
  // Publishes that wrote to the API server since Start (the churn the bench reports).
  int64_t slice_writes() const;
  // The devices of the last successful publish (empty before one).
  std::vector<api::Device> devices() const;

 private:
  void WatchLoop(std::stop_token stop);
  void PublishLoop(std::stop_token stop);
  // Feeds options_.device_health from the NICs and the devices just built (publish thread).
  void UpdateHealth(const std::vector<::spiderpool::dra::nic::Nic>& nics,
                    const std::vector<api::Device>& devices);

  std::shared_ptr<kube::RestClient> rest_;
  NodeDevicesOptions options_;
  PoolsFn pools_;
  std::unique_ptr<rs::Publisher> publisher_;
  std::unique_ptr<::spiderpool::dra::deviceplugin::Manager> device_plugin_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::optional<std::vector<::spiderpool::dra::nic::Nic>> nics_;  // none until the first list
  bool dirty_ = false;
  bool publishing_ = false;
  bool publish_ok_ = false;
  std::optional<rs::PublishResult> last_publish_;
  std::optional<std::vector<api::Device>> last_devices_;  // of the last successful publish
  absl::Time last_publish_time_;
  kube::metrics::Gauge* published_devices_ = nullptr;
  kube::metrics::Counter* publish_failures_ = nullptr;
  absl::Time last_write_time_ = absl::InfinitePast();  // of the last publish that wrote
  int64_t writes_ = 0;

  // Touched only by the publish thread: every device published since start -> its NIC, and
  // its last health with the time it was determined.
  std::map<std::string, std::string> health_nic_;
  std::map<std::string, std::pair<::spiderpool::dra::kubeletplugin::DeviceHealthStatus, int64_t>>
      health_;

  std::jthread watch_thread_;
  std::jthread publish_thread_;
};

}  // namespace spiderpool::agent::dra
