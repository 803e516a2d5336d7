#include "agent/dra/node_devices.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/ip.h"
#include "ipam/pool.h"
#include "ipam/selection.h"
#include "base/log.h"
#include "base/strings.h"

namespace spiderpool::agent::dra {

namespace nic = ::spiderpool::dra::nic;
namespace dp = ::spiderpool::dra::deviceplugin;

namespace {

// Free IPs of a pool: status.freeIPCount as the last writer computed it (agents and the
// controller keep it current on every status write; cheap to read on every pool event), else
// the same rule computed from the pool (a pool nobody has counted yet).
int64_t FreeIPs(const api::SpiderIPPool& pool) {
  if (pool.status.free_ip_count.has_value()) return *pool.status.free_ip_count;
  absl::StatusOr<::spiderpool::ipam::PoolCounts> c = ::spiderpool::ipam::ComputePoolCounts(pool, {});
  return c.ok() ? c->free : 0;
}

// This node's reservations in the pool status that `handed_out` does not list.
int64_t UnusedReservations(const api::SpiderIPPool& pool, const std::string& node_name,
                           const HandedOutFn& handed_out) {
  // Most pools hold no reservation of this node: skip parsing their records then.
  if (!pool.status.allocated_ips.has_value() ||
      pool.status.allocated_ips->find(node_name) == std::string::npos) {
    return 0;
  }
  absl::StatusOr<api::PoolIPAllocations> records = pool.AllocatedIPs();
  if (!records.ok()) return 0;  // what the status writers could not parse counts as taken
  std::set<base::IPAddress> held;
  bool held_loaded = false;
  int64_t n = 0;
  for (const auto& [ip, rec] : *records) {
    if (!api::IsNodeReservation(rec) || *rec.node != node_name) continue;
    if (!held_loaded && handed_out) held = handed_out(pool.metadata.name);
    held_loaded = true;
    absl::StatusOr<base::IPAddress> addr = base::IPAddress::Parse(ip);
    if (addr.ok() && !held.contains(*addr)) ++n;
  }
  return n;
}

}  // namespace

std::vector<rs::PoolCapacity> PoolCapacities(
    const std::vector<std::shared_ptr<const api::SpiderIPPool>>& pools,
    const std::string& node_name, const api::Labels& node_labels,
    const HandedOutFn& handed_out) {
  std::vector<rs::PoolCapacity> out;
  for (const auto& p : pools) {
    const api::IPPoolSpec& spec = p->spec;
    if (p->metadata.IsDeleting() || spec.disable.value_or(false)) continue;
    if (!::spiderpool::ipam::PoolAdmitsNode(*p, {.name = node_name, .labels = node_labels})) continue;
    absl::StatusOr<base::IPPrefix> subnet = base::IPPrefix::Parse(spec.subnet);
    if (!subnet.ok()) continue;  // the webhook refuses these; nothing to publish for it
    out.push_back({.subnet = *subnet,
                   .free_ips = std::max<int64_t>(0, FreeIPs(*p)) +
                               UnusedReservations(*p, node_name, handed_out),
                   .name = p->metadata.name,
                   // Admitted above: a nodeName list or a nodeAffinity that names this node.
                   .selects_node = !spec.node_name.empty() || spec.node_affinity.has_value()});
  }
  return out;
}

namespace {

absl::Status ParseNicEntries(std::string_view flag, std::string_view value,
                             const std::function<absl::Status(std::string, std::string)>& put) {
  for (absl::string_view raw :
       absl::StrSplit(absl::string_view(value.data(), value.size()), ',', absl::SkipWhitespace())) {
    absl::string_view entry = absl::StripAsciiWhitespace(raw);
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos || eq == 0 || eq + 1 == entry.size()) {
      return absl::InvalidArgumentError(base::StrCat("--", flag, ": \"", std::string(entry),
                                                     "\": want <nic>=<value>"));
    }
    absl::Status s = put(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    if (!s.ok()) {
      return absl::InvalidArgumentError(base::StrCat("--", flag, ": \"", std::string(entry), "\": ",
                                                     base::FromAbsl(s.message())));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseDeclaredSubnets(std::string_view value,
                                  std::map<std::string, std::vector<base::IPPrefix>>* out) {
  return ParseNicEntries("dra-declared-subnets", value, [out](std::string nic, std::string v) {
    absl::StatusOr<base::IPPrefix> p = base::IPPrefix::Parse(v);
    if (!p.ok()) return p.status();
    (*out)[nic].push_back(p->Canonical());
    return absl::OkStatus();
  });
}

absl::Status ParseResourceNames(std::string_view value, std::map<std::string, std::string>* out) {
  return ParseNicEntries("dra-resource-names", value, [out](std::string nic, std::string v) {
    if (out->contains(nic)) return absl::InvalidArgumentError("one resourceName per NIC");
    (*out)[nic] = std::move(v);
    return absl::OkStatus();
  });
}

NodeDevices::NodeDevices(std::shared_ptr<kube::RestClient> rest, NodeDevicesOptions options,
                         PoolsFn pools)
    : rest_(std::move(rest)), options_(std::move(options)), pools_(std::move(pools)) {
  if (options_.registry != nullptr) {
    published_devices_ = &options_.registry
                              ->AddGauge("spiderpool_dra_published_devices",
                                         "Devices in this node's ResourceSlices (last publish).")
                              .WithLabels();
    publish_failures_ = &options_.registry
                             ->AddCounter("spiderpool_dra_resourceslice_publish_failures",
                                          "ResourceSlice publish attempts that failed.")
                             .WithLabels();
  }
}

NodeDevices::~NodeDevices() { Stop(); }

absl::Status NodeDevices::Start() {
  if (options_.node_name.empty()) return absl::InvalidArgumentError("node name is required");
  if (options_.publish_slices) {
    publisher_ = std::make_unique<rs::Publisher>(rest_, options_.node_name, options_.model.driver,
                                                 options_.publisher);
  }
  if (options_.device_plugin) {
    absl::StatusOr<std::unique_ptr<dp::Manager>> m = dp::Manager::Create(options_.device_plugin_options);
    if (!m.ok()) return m.status();
    device_plugin_ = *std::move(m);
    device_plugin_->Start();
  }
  int netns_fd = -1;
  if (!options_.netns_path.empty()) {
    netns_fd = open(options_.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) {
      return absl::NotFoundError(base::StrCat("network namespace ", options_.netns_path,
                                              ": cannot open"));
    }
  }
  watch_thread_ = std::jthread([this, netns_fd](std::stop_token stop) {
    if (netns_fd >= 0) {
      // setns affects only this thread: the netlink sockets of discovery see the node's NICs.
      const int rc = setns(netns_fd, CLONE_NEWNET);
      close(netns_fd);
      if (rc != 0) {
        SP_LOG(Error).Msg("cannot enter the network namespace; NIC discovery stopped")
            .KV("netns", options_.netns_path);
        return;
      }
    }
    WatchLoop(stop);
  });
  publish_thread_ = std::jthread([this](std::stop_token stop) { PublishLoop(stop); });
  return absl::OkStatus();
}

void NodeDevices::Stop() {
  if (watch_thread_.joinable()) {
    watch_thread_.request_stop();
    watch_thread_.join();
  }
  if (publish_thread_.joinable()) {
    publish_thread_.request_stop();
    cv_.notify_all();
    publish_thread_.join();
  }
  if (device_plugin_) device_plugin_->Stop();
}

void NodeDevices::Refresh() {
  std::lock_guard lock(mu_);
  dirty_ = true;
  cv_.notify_all();
}

void NodeDevices::WatchLoop(std::stop_token stop) {
  nic::NetlinkNicSource source(options_.discovery);
  absl::Duration backoff = options_.min_backoff;
  while (!stop.stop_requested()) {
    absl::Status s = source.Watch(stop, [this](const std::vector<nic::Nic>& nics) {
      if (device_plugin_) {
        if (absl::Status u = device_plugin_->Update(nics); !u.ok()) {
          // UNAVAILABLE: the kubelet is not there yet; the manager's resync registers later.
          SP_LOG(Warning).Msg("device plugin update").KV("error", u);
        }
      }
      std::lock_guard lock(mu_);
      nics_ = nics;
      dirty_ = true;
      cv_.notify_all();
    });
    if (s.ok()) return;
    SP_LOG(Error).Msg("NIC watch failed; retrying").KV("error", s);
    std::mutex m;
    std::unique_lock lock(m);
    std::condition_variable_any().wait_for(lock, stop, absl::ToChronoMilliseconds(backoff),
                                           [] { return false; });
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void NodeDevices::PublishLoop(std::stop_token stop) {
  absl::Duration backoff = options_.min_backoff;
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    cv_.wait(lock, stop, [this] { return dirty_ && nics_.has_value(); });
    if (stop.stop_requested()) return;
    dirty_ = false;
    const std::vector<nic::Nic> nics = *nics_;
    if (!publisher_) {
      publish_ok_ = true;
      cv_.notify_all();
      continue;
    }
    publishing_ = true;
    lock.unlock();
    const std::vector<rs::PoolCapacity> pools = pools_ ? pools_() : std::vector<rs::PoolCapacity>{};
    std::vector<api::Device> devices = rs::BuildDevices(nics, pools, options_.model);
    UpdateHealth(nics, devices);
    lock.lock();
    if (last_devices_ == devices && absl::Now() - last_publish_time_ < options_.resync_interval) {
      publishing_ = false;  // nothing to say to the API server
      cv_.notify_all();
      continue;
    }
    if (const absl::Time next = last_write_time_ + options_.min_publish_interval; absl::Now() < next) {
      // Too soon after the last write: wait out the interval (changes meanwhile only set
      // dirty_), then publish the latest state.
      cv_.wait_for(lock, stop, absl::ToChronoMilliseconds(next - absl::Now()), [] { return false; });
      if (stop.stop_requested()) return;
      dirty_ = true;
      publishing_ = false;
      continue;
    }
    lock.unlock();
    absl::StatusOr<rs::PublishResult> r = publisher_->Publish(devices);
    lock.lock();
    publishing_ = false;
    if (r.ok()) {
      backoff = options_.min_backoff;
      publish_ok_ = true;
      last_publish_ = *r;
      last_devices_ = std::move(devices);
      last_publish_time_ = absl::Now();
      if (published_devices_ != nullptr) published_devices_->Set(r->devices);
      if (r->changed) {
        last_write_time_ = absl::Now();
        ++writes_;
        SP_LOG(Info).Msg("ResourceSlices published").KV("devices", r->devices)
            .KV("slices", r->slices).KV("generation", r->generation).KV("api", r->api_version);
      }
      cv_.notify_all();
      continue;
    }
    publish_ok_ = false;
    if (publish_failures_ != nullptr) publish_failures_->Inc();
    SP_LOG(Warning).Msg("ResourceSlice publish failed; retrying").KV("error", r.status())
        .KV("in", absl::FormatDuration(backoff));
    dirty_ = true;  // retry the latest state after the backoff (or at once on a new change)
    cv_.wait_for(lock, stop, absl::ToChronoMilliseconds(backoff), [] { return false; });
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void NodeDevices::UpdateHealth(const std::vector<nic::Nic>& nics,
                               const std::vector<api::Device>& devices) {
  namespace kp = ::spiderpool::dra::kubeletplugin;
  if (options_.device_health == nullptr) return;
  std::map<std::string, bool> up;
  for (const nic::Nic& n : nics) up[n.name] = n.up;
  for (const api::Device& d : devices) {
    auto a = d.attributes.find(std::string(rs::attr::kIfName));
    if (a != d.attributes.end() && a->second.string_value.has_value()) {
      health_nic_[d.name] = *a->second.string_value;
    }
  }
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  std::vector<kp::DeviceHealth> out;
  out.reserve(health_nic_.size());
  for (const auto& [device, nic_name] : health_nic_) {
    auto it = up.find(nic_name);
    const kp::DeviceHealthStatus status = it != up.end() && it->second
                                              ? kp::DeviceHealthStatus::kHealthy
                                              : kp::DeviceHealthStatus::kUnhealthy;
    auto [h, inserted] = health_.try_emplace(device, status, now);
    if (!inserted && h->second.first != status) h->second = {status, now};
    out.push_back({.pool = options_.node_name, .device = device, .status = status,
                   .last_updated_unix = h->second.second});
  }
  options_.device_health->Set(std::move(out));
}

bool NodeDevices::WaitIdle(absl::Duration timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, absl::ToChronoMilliseconds(timeout),
                      [this] { return nics_.has_value() && !dirty_ && !publishing_ && publish_ok_; });
}

std::vector<nic::Nic> NodeDevices::nics() const {
  std::lock_guard lock(mu_);
  return nics_.value_or(std::vector<nic::Nic>{});
}

int64_t NodeDevices::slice_writes() const {
  std::lock_guard lock(mu_);
  return writes_;
}

std::vector<api::Device> NodeDevices::devices() const {
  std::lock_guard lock(mu_);
  return last_devices_.value_or(std::vector<api::Device>{});
}

std::optional<rs::PublishResult> NodeDevices::last_publish() const {
  std::lock_guard lock(mu_);
  return last_publish_;
}

}  // namespace spiderpool::agent::dra
