#include "ipam/pool.h"

#include <algorithm>
#include <utility>

#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::ipam {
namespace {

// The record of `request`'s pod (optional fields only when set).
api::PoolIPAllocation PodRecord(const AllocationRequest& request) {
  api::PoolIPAllocation rec{.pod = request.pod, .pod_uid = request.pod_uid};
  if (!request.node.empty()) rec.node = request.node;
  if (!request.container_id.empty()) rec.container_id = request.container_id;
  if (!request.interface_.empty()) rec.interface_ = request.interface_;
  return rec;
}

using base::IPAddress;
using base::IPFamily;
using base::IPRange;
using base::StrCat;

std::string_view Msg(const absl::Status& s) { return base::FromAbsl(s.message()); }

absl::Status Invalid(std::string_view pool, std::string_view field, std::string_view msg) {
  return absl::InvalidArgumentError(StrCat("IPPool ", pool, ": ", field, msg));
}

// Record `rec` may serve a request for `iface`: either side leaves the interface open.
bool InterfaceCompatible(const api::PoolIPAllocation& rec, std::string_view iface) {
  return iface.empty() || !rec.interface_.has_value() || rec.interface_->empty() ||
         *rec.interface_ == iface;
}

bool FilterPasses(const std::optional<std::string>& value, const std::string& want) {
  return want.empty() || !value.has_value() || value->empty() || *value == want;
}

}  // namespace

absl::StatusOr<std::vector<IPRange>> ReservedRanges(
    const std::vector<api::SpiderReservedIP>& reserved) {
  std::vector<IPRange> out;
  std::vector<std::string> errors;
  for (const api::SpiderReservedIP& r : reserved) {
    auto ranges = base::ParseIPRanges(r.spec.ips);
    if (!ranges.ok()) {
      errors.push_back(StrCat("SpiderReservedIP ", r.metadata.name, ": spec.ips",
                              Msg(ranges.status())));
      continue;
    }
    out.insert(out.end(), ranges->begin(), ranges->end());
  }
  if (!errors.empty()) {
    std::string msg;
    for (const std::string& e : errors) msg += (msg.empty() ? "" : "; ") + e;
    return absl::InvalidArgumentError(msg);
  }
  return out;
}

absl::StatusOr<PoolCounts> ComputePoolCounts(const api::SpiderIPPool& pool,
                                             const std::vector<IPRange>& reserved) {
  SP_ASSIGN_OR_RETURN(PoolState st, PoolState::Build(pool, reserved));
  return st.Counts();
}

absl::StatusOr<PoolState> PoolState::Build(const api::SpiderIPPool& pool,
                                           const std::vector<IPRange>& reserved,
                                           PoolOptions options) {
  PoolState st;
  st.name_ = pool.metadata.name;
  st.options_ = options;
  const api::IPPoolSpec& spec = pool.spec;

  auto subnet = base::IPPrefix::Parse(spec.subnet);
  if (!subnet.ok()) return Invalid(st.name_, "spec.subnet: ", Msg(subnet.status()));
  st.subnet_ = *subnet;
  const IPFamily family = st.subnet_.family();
  const int version = family == IPFamily::kV4 ? 4 : 6;
  if (spec.ip_version.has_value() && *spec.ip_version != version) {
    return Invalid(st.name_, "spec.ipVersion: ",
                   StrCat(*spec.ip_version, " does not match spec.subnet \"", spec.subnet, "\""));
  }
  auto ips = base::ParseIPRanges(spec.ips, family);
  if (!ips.ok()) return Invalid(st.name_, "spec.ips", Msg(ips.status()));
  auto excludes = base::ParseIPRanges(spec.exclude_ips, family);
  if (!excludes.ok()) return Invalid(st.name_, "spec.excludeIPs", Msg(excludes.status()));
  if (spec.gateway.has_value()) {
    auto gw = IPAddress::Parse(*spec.gateway);
    if (!gw.ok()) return Invalid(st.name_, "spec.gateway: ", Msg(gw.status()));
    if (gw->family() != family) {
      return Invalid(st.name_, "spec.gateway: ",
                     StrCat("\"", *spec.gateway, "\" is not IPv", version));
    }
    st.gateway_ = *gw;
  }
  if (spec.routes.has_value()) st.routes_ = *spec.routes;
  st.disabled_ = spec.disable.value_or(false);

  std::vector<IPRange> total = base::SubtractIPRanges(*ips, *excludes);
  std::vector<IPRange> same_family_reserved;
  for (const IPRange& r : reserved) {
    if (r.family() == family) same_family_reserved.push_back(r);
  }
  std::vector<IPRange> usable = base::SubtractIPRanges(total, same_family_reserved);
  st.total_ranges_ = std::move(total);
  st.reserved_ranges_ = base::MergeIPRanges(std::move(same_family_reserved));

  auto records = pool.AllocatedIPs();
  if (!records.ok()) {
    return absl::InvalidArgumentError(StrCat("IPPool ", st.name_, ": ", Msg(records.status())));
  }
  std::vector<IPAddress> taken;
  taken.reserve(records->size());
  for (auto& [key, rec] : *records) {
    if ((rec.pod.empty() || rec.pod_uid.empty()) && !api::IsNodeReservation(rec)) {
      return absl::InvalidArgumentError(StrCat(
          "IPPool ", st.name_, ": status.allocatedIPs[", key,
          "]: a record needs pod and podUid (only a node reservation has neither, and a node)"));
    }
    IPAddress ip = *IPAddress::Parse(key);  // keys were validated by AllocatedIPs()
    if (st.records_.count(ip)) continue;    // the same IP written twice (non-canonical text)
    taken.push_back(ip);
    st.AddRecord(ip, std::move(rec));
  }
  st.allocator_ = Allocator(family, std::move(usable), std::move(taken));
  return st;
}

void PoolState::AddRecord(const IPAddress& ip, api::PoolIPAllocation record) {
  if (api::IsNodeReservation(record)) {
    reserved_[*record.node].insert(ip);
    records_[ip] = std::move(record);
    return;
  }
  std::vector<IPAddress>& ips = by_uid_[record.pod_uid];
  ips.insert(std::upper_bound(ips.begin(), ips.end(), ip), ip);
  records_[ip] = std::move(record);
}

void PoolState::RemoveRecord(std::map<IPAddress, api::PoolIPAllocation>::iterator it) {
  if (api::IsNodeReservation(it->second)) {
    auto node = reserved_.find(*it->second.node);
    node->second.erase(it->first);
    if (node->second.empty()) reserved_.erase(node);
    allocator_.Release(it->first);
    records_.erase(it);
    return;
  }
  auto uid = by_uid_.find(it->second.pod_uid);
  if (uid != by_uid_.end()) {
    std::vector<IPAddress>& ips = uid->second;
    ips.erase(std::remove(ips.begin(), ips.end(), it->first), ips.end());
    if (ips.empty()) by_uid_.erase(uid);
  }
  allocator_.Release(it->first);  // false (ignored) when the IP is not usable any more
  records_.erase(it);
}

absl::StatusOr<PoolAllocation> PoolState::Allocate(const AllocationRequest& request) {
  if (request.pod.empty() || request.pod_uid.empty()) {
    return absl::InvalidArgumentError("allocation request needs the pod ns/name and UID");
  }
  if (disabled_) return absl::FailedPreconditionError(StrCat("disabled IPPool ", name_));

  // (1) Idempotent: this pod UID already holds an IP here for this interface. This also
  // covers #2517 (a full pool and an old record of the same ns/name + UID), which upstream
  // checks separately after finding no free IP.
  auto held = by_uid_.find(request.pod_uid);
  if (held != by_uid_.end()) {
    for (const IPAddress& ip : held->second) {
      if (InterfaceCompatible(records_.at(ip), request.interface_)) {
        return PoolAllocation{.ip = ip, .reused = true};
      }
    }
  }

  // (2) The lowest free usable IP; the allocator already skips every record.
  if (allocator_.FreeCount() == 0) {
    return absl::ResourceExhaustedError("all IP addresses used out");
  }
  // (3) The record cap (upstream counts the records plus the new one).
  if (static_cast<int64_t>(records_.size()) + 1 > options_.max_allocated_ips) {
    return absl::ResourceExhaustedError(
        StrCat("all IP addresses used out, threshold of IP records(<=",
               options_.max_allocated_ips, ") for IPPool ", name_, " exceeded"));
  }
  std::optional<IPAddress> ip = allocator_.AllocateLowest();
  AddRecord(*ip, PodRecord(request));
  return PoolAllocation{.ip = *ip, .reused = false};
}

bool PoolState::Release(const IPAddress& ip, std::string_view pod_uid) {
  auto it = records_.find(ip);
  if (pod_uid.empty() || it == records_.end() || it->second.pod_uid != pod_uid) return false;
  RemoveRecord(it);
  return true;
}

std::vector<IPAddress> PoolState::ReleasePod(std::string_view pod_uid,
                                             const ReleaseFilter& filter) {
  std::vector<IPAddress> released;
  auto held = by_uid_.find(std::string(pod_uid));
  if (held == by_uid_.end()) return released;
  const std::vector<IPAddress> ips = held->second;  // RemoveRecord edits the index
  for (const IPAddress& ip : ips) {
    auto it = records_.find(ip);
    if (!FilterPasses(it->second.container_id, filter.container_id) ||
        !FilterPasses(it->second.interface_, filter.interface_)) {
      continue;
    }
    RemoveRecord(it);
    released.push_back(ip);
  }
  return released;
}

absl::StatusOr<PoolState::ReassignResult> PoolState::ReassignUID(
    const AllocationRequest& owner, const std::vector<IPAddress>& ips) {
  if (owner.pod.empty() || owner.pod_uid.empty()) {
    return absl::InvalidArgumentError("reassign request needs the pod ns/name and UID");
  }
  ReassignResult result;
  std::vector<IPAddress> targets;
  if (ips.empty()) {
    for (const auto& [ip, rec] : records_) {
      if (rec.pod == owner.pod) targets.push_back(ip);
    }
  } else {
    for (const IPAddress& ip : ips) {
      auto it = records_.find(ip);
      if (it == records_.end()) {
        result.missing.push_back(ip);
        continue;
      }
      if (it->second.pod != owner.pod) {
        return absl::FailedPreconditionError(StrCat(
            "failed to update allocated IP because of data broken: IPPool ", name_, " IP ",
            ip.ToString(), " allocation detail {", it->second.pod, " ", it->second.pod_uid,
            "} mistach namespacedName ", owner.pod));
      }
      targets.push_back(ip);
    }
  }
  for (const IPAddress& ip : targets) {
    auto it = records_.find(ip);
    api::PoolIPAllocation rec = it->second;
    bool changed = rec.pod_uid != owner.pod_uid;
    rec.pod_uid = owner.pod_uid;
    if (!owner.node.empty() && rec.node != owner.node) {
      rec.node = owner.node;
      changed = true;
    }
    if (!owner.container_id.empty() && rec.container_id != owner.container_id) {
      rec.container_id = owner.container_id;
      changed = true;
    }
    if (!changed) continue;
    // Re-index under the new UID; the allocator does not change (the IP stays taken).
    auto uid = by_uid_.find(it->second.pod_uid);
    if (uid != by_uid_.end()) {
      std::vector<IPAddress>& v = uid->second;
      v.erase(std::remove(v.begin(), v.end(), ip), v.end());
      if (v.empty()) by_uid_.erase(uid);
    }
    records_.erase(it);
    AddRecord(ip, std::move(rec));
    ++result.updated;
  }
  return result;
}

absl::StatusOr<std::vector<IPAddress>> PoolState::Reserve(std::string_view node, int64_t n) {
  if (node.empty()) return absl::InvalidArgumentError("a reservation needs the node name");
  if (disabled_) return absl::FailedPreconditionError(StrCat("disabled IPPool ", name_));
  if (allocator_.FreeCount() == 0) {
    return absl::ResourceExhaustedError("all IP addresses used out");
  }
  const int64_t room = options_.max_allocated_ips - static_cast<int64_t>(records_.size());
  if (room <= 0) {
    return absl::ResourceExhaustedError(
        StrCat("all IP addresses used out, threshold of IP records(<=",
               options_.max_allocated_ips, ") for IPPool ", name_, " exceeded"));
  }
  std::vector<IPAddress> out;
  for (int64_t i = 0; i < std::min(n, room); ++i) {
    std::optional<IPAddress> ip = allocator_.AllocateLowest();
    if (!ip.has_value()) break;
    AddRecord(*ip, api::PoolIPAllocation{.pod = "", .pod_uid = "", .node = std::string(node)});
    out.push_back(*ip);
  }
  return out;
}

absl::Status PoolState::AssignReserved(const IPAddress& ip, std::string_view node,
                                       const AllocationRequest& request) {
  if (request.pod.empty() || request.pod_uid.empty()) {
    return absl::InvalidArgumentError("allocation request needs the pod ns/name and UID");
  }
  auto it = records_.find(ip);
  if (it != records_.end() && !api::IsNodeReservation(it->second) &&
      it->second.pod_uid == request.pod_uid &&
      InterfaceCompatible(it->second, request.interface_)) {
    return absl::OkStatus();
  }
  if (it == records_.end() || !api::IsNodeReservation(it->second) || *it->second.node != node) {
    return absl::FailedPreconditionError(StrCat(
        "IPPool ", name_, " IP ", ip.ToString(), " is not reserved for node ", node,
        it == records_.end() ? " (no record)"
                             : StrCat(" (held by \"", it->second.pod, "\" on node \"",
                                      it->second.node.value_or(""), "\")")));
  }
  RemoveRecord(it);
  allocator_.Allocate(ip);
  AddRecord(ip, PodRecord(request));
  return absl::OkStatus();
}

absl::Status PoolState::AssignFree(const IPAddress& ip, const AllocationRequest& request) {
  if (request.pod.empty() || request.pod_uid.empty()) {
    return absl::InvalidArgumentError("allocation request needs the pod ns/name and UID");
  }
  if (records_.count(ip) || !allocator_.IsFree(ip)) {
    return absl::FailedPreconditionError(
        StrCat("IPPool ", name_, " IP ", ip.ToString(), " is not free"));
  }
  if (static_cast<int64_t>(records_.size()) + 1 > options_.max_allocated_ips) {
    return absl::FailedPreconditionError(
        StrCat("IPPool ", name_, " is at its threshold of IP records (<=",
               options_.max_allocated_ips, ")"));
  }
  allocator_.Allocate(ip);
  AddRecord(ip, PodRecord(request));
  return absl::OkStatus();
}

bool PoolState::Unreserve(const IPAddress& ip, std::string_view node) {
  auto it = records_.find(ip);
  if (it == records_.end() || !api::IsNodeReservation(it->second) || *it->second.node != node) {
    return false;
  }
  RemoveRecord(it);
  return true;
}

std::vector<IPAddress> PoolState::ReservedFor(std::string_view node) const {
  auto it = reserved_.find(node);
  if (it == reserved_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

size_t PoolState::reservation_count() const {
  size_t n = 0;
  for (const auto& [node, ips] : reserved_) n += ips.size();
  return n;
}

std::string PoolState::HoldersSummary() const {
  const PoolCounts c = Counts();
  std::string nodes;
  for (const auto& [node, ips] : reserved_) {
    nodes += StrCat(nodes.empty() ? "" : ", ", node, ": ", ips.size());
  }
  return StrCat(c.total, " IPs, ", c.allocated, " held by pods, ", reservation_count(),
                " reserved by nodes", nodes.empty() ? "" : StrCat(" (", nodes, ")"));
}

std::map<std::string, PoolState::NodeHolding, std::less<>> PoolState::HoldingsByNode() const {
  std::map<std::string, NodeHolding, std::less<>> out;
  for (const auto& [ip, rec] : records_) {
    if (!rec.node.has_value() || rec.node->empty()) continue;
    NodeHolding& h = out[*rec.node];
    ++(api::IsNodeReservation(rec) ? h.reserved : h.pods);
  }
  return out;
}

api::PoolIPAllocations PoolState::Records() const {
  api::PoolIPAllocations out;
  for (const auto& [ip, rec] : records_) out.emplace(ip.ToString(), rec);
  return out;
}

const api::PoolIPAllocation* PoolState::RecordOf(const IPAddress& ip) const {
  auto it = records_.find(ip);
  return it == records_.end() ? nullptr : &it->second;
}

std::vector<IPAddress> PoolState::IPsOf(std::string_view pod_uid) const {
  auto it = by_uid_.find(std::string(pod_uid));
  return it == by_uid_.end() ? std::vector<IPAddress>{} : it->second;
}

PoolCounts PoolState::Counts() const {
  return api::CountPoolIPs(total_ranges_, reserved_ranges_, records_);
}

void PoolState::WriteStatus(api::SpiderIPPool* pool) const {
  pool->SetAllocatedIPs(Records());
  api::SetPoolIPCounts(Counts(), &pool->status);
}

}  // namespace spiderpool::ipam
