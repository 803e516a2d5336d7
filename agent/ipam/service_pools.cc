// IpamService, the pool side: where the request flow (service.cc) meets the SpiderIPPools —
// the pool store, taking an IP (node reservation first, else a group-committed write that also
// tops the reservation up), undoing, releasing and re-assigning records, and the hooks
// NodeBlocks needs (blocks.h).
#include <algorithm>

#include "agent/ipam/service.h"
#include "api/spider.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "ipam/result.h"

namespace spiderpool::agent::ipam {
namespace sp = ::spiderpool::ipam;

namespace {

// The result facts of an IP from `pool` read from its spec alone (the block fast path must not
// parse the big status). nullopt: the spec does not parse (the slow path reports why).
std::optional<sp::FamilyAllocation> FamilyFromSpec(const api::SpiderIPPool& pool) {
  absl::StatusOr<base::IPPrefix> subnet = base::IPPrefix::Parse(pool.spec.subnet);
  if (!subnet.ok()) return std::nullopt;
  sp::FamilyAllocation f{.ip = subnet->address(), .pool = pool.metadata.name,
                         .prefix_length = subnet->length()};
  if (pool.spec.gateway.has_value()) {
    absl::StatusOr<base::IPAddress> gw = base::IPAddress::Parse(*pool.spec.gateway);
    if (!gw.ok()) return std::nullopt;
    f.gateway = *gw;
  }
  if (pool.spec.routes.has_value()) f.pool_routes = *pool.spec.routes;
  return f;
}

}  // namespace

// ---- pool store -------------------------------------------------------------------------------

absl::StatusOr<api::SpiderIPPool> IpamService::KubePoolStore::Get(const std::string& name) {
  return pools_.Get("", name);
}

absl::StatusOr<api::SpiderIPPool> IpamService::KubePoolStore::UpdateStatus(
    const api::SpiderIPPool& pool) {
  return pools_.UpdateStatus(pool);
}

// ---- NodeBlocks hooks ------------------------------------------------------------------------

absl::StatusOr<sp::PoolState> IpamService::BuildPool(const api::SpiderIPPool& pool) const {
  return sp::PoolState::Build(pool, ReservedRanges(),
                              {.max_allocated_ips = options_.config.max_allocated_ips_per_pool});
}

std::map<base::IPAddress, sp::AllocationRequest> IpamService::EndpointIPs(
    const std::string& pool) const {
  std::map<base::IPAddress, sp::AllocationRequest> out;
  for (const auto& ep : endpoint_informer_.store().List()) {
    if (!ep->status.has_value() || ep->status->current.node != options_.node_name) continue;
    const api::WorkloadEndpointStatus& st = *ep->status;
    for (const api::IPAllocationDetail& d : st.current.ips) {
      auto add = [&](const std::optional<std::string>& p, const std::optional<std::string>& cidr) {
        if (!p || *p != pool || !cidr) return;
        absl::StatusOr<base::IPPrefix> prefix = base::IPPrefix::Parse(*cidr);
        if (!prefix.ok()) return;
        out[prefix->address()] = {.pod = base::StrCat(ep->metadata.namespace_, "/", ep->metadata.name),
                                  .pod_uid = st.current.uid, .node = options_.node_name,
                                  .interface_ = d.interface_};
      };
      add(d.ipv4_pool, d.ipv4);
      add(d.ipv6_pool, d.ipv6);
    }
  }
  return out;
}

absl::Status IpamService::FlushBlocks(const std::vector<std::string>& pools,
                                      const std::string& uid, absl::Time deadline) {
  for (const std::string& pool : pools) {
    if (!blocks_.HasUnflushed(pool, uid)) continue;
    SP_RETURN_IF_ERROR(base::Annotate(blocks_.Flush(pool, deadline),
                                      base::StrCat("recording the IPs of pod UID ", uid,
                                                   " in SpiderIPPool ", pool)));
  }
  return absl::OkStatus();
}

// ---- pool mutations -------------------------------------------------------------------------

absl::StatusOr<IpamService::Taken> IpamService::TakeOne(const std::vector<std::string>& pools,
                                                        int ip_version,
                                                        const sp::AllocationRequest& request,
                                                        absl::Time deadline) {
  std::vector<std::string> why;
  std::optional<std::vector<base::IPRange>> reserved;  // SpiderReservedIPs, read once
  for (const std::string& pool : pools) {
    // A full pool whose IPs are partly reserved by nodes (ours included, by a batch-mate) is
    // not full for long: idle reservations go back quickly once the pool has no unreserved IP.
    // Wait for them (bounded) instead of failing the pod.
    const absl::Time wait_until = std::min(deadline, clock_->Now() + absl::Seconds(5));
    absl::Status s;
    while (true) {
      if (std::optional<Taken> got = TakeReserved(pool, request, &reserved, deadline)) return *got;
      Taken got{.pool = pool};
      std::vector<base::IPAddress> topped_up;
      int64_t waitable = 0;
      // Slow path: the record is written before the ADD returns; the same write tops this
      // node's block up for the next ADDs.
      s = committer_.Run(
          pool,
          [&](PoolBook& book) -> absl::Status {
            topped_up.clear();
            waitable = 0;
            absl::StatusOr<sp::PoolAllocation> a = book.state.Allocate(request);
            if (absl::IsResourceExhausted(a.status())) waitable = blocks_.Waitable(pool, book.state);
            if (!a.ok()) return a.status();
            got.ip = a->ip;
            got.family = sp::FamilyAllocation::FromPool(book.state, a->ip);
            if (!a->reused) {
              book.dirty = true;
            } else {
              // The pod already held this IP (a repeated ADD, or a new sandbox whose endpoint
              // the cache has not shown yet): the record now names this container, so a late
              // DEL of the old sandbox cannot free it.
              absl::StatusOr<sp::PoolState::ReassignResult> r =
                  book.state.ReassignUID(request, {a->ip});
              if (r.ok() && r->updated > 0) book.dirty = true;
            }
            blocks_.TopUp(pool, book.state, &topped_up, &book.dirty, request.pod_uid);
            return absl::OkStatus();
          },
          deadline);
      if (s.ok()) {
        blocks_.AddReserved(pool, topped_up);
        blocks_.NoteWritten(request.pod_uid);
        return got;
      }
      if (!absl::IsResourceExhausted(s) || waitable == 0 || clock_->Now() >= wait_until) break;
      clock_->SleepUntil(std::min(wait_until, clock_->Now() + absl::Milliseconds(20)));
    }
    // Full, disabled or gone: the next pool of the list may do. Anything else (the API server
    // is unreachable, the deadline passed) stops here.
    if (absl::IsResourceExhausted(s) || absl::IsFailedPrecondition(s) || absl::IsNotFound(s) ||
        absl::IsInvalidArgument(s)) {
      why.push_back(base::StrCat(pool, ": ", base::FromAbsl(s.message())));
      continue;
    }
    return base::Annotate(s, base::StrCat("allocating an IPv", ip_version, " address from SpiderIPPool ", pool));
  }
  std::string tried;
  for (const std::string& w : why) tried += (tried.empty() ? "" : "; ") + w;
  return absl::ResourceExhaustedError(base::StrCat("no IPv", ip_version, " address for ",
                                                   request.pod, " NIC ", request.interface_,
                                                   ": every candidate pool failed [", tried, "]"));
}

std::optional<IpamService::Taken> IpamService::TakeReserved(
    const std::string& pool, const sp::AllocationRequest& request,
    std::optional<std::vector<base::IPRange>>* reserved, absl::Time deadline) {
  if (!blocks_.enabled()) return std::nullopt;
  std::shared_ptr<const api::SpiderIPPool> cached = pool_informer_.store().Get(pool);
  if (cached == nullptr || cached->spec.disable.value_or(false)) return std::nullopt;
  std::optional<sp::FamilyAllocation> family = FamilyFromSpec(*cached);
  if (!family.has_value()) return std::nullopt;
  if (!reserved->has_value()) *reserved = ReservedRanges();
  auto usable = [&](const base::IPAddress& ip) {
    return std::none_of((*reserved)->begin(), (*reserved)->end(),
                        [&](const base::IPRange& r) { return r.Contains(ip); });
  };
  std::optional<base::IPAddress> ip = blocks_.Take(pool, request, usable, deadline);
  if (!ip.has_value()) return std::nullopt;
  family->ip = *ip;
  return Taken{.pool = pool, .ip = *ip, .family = *family, .from_block = true};
}

void IpamService::Undo(const std::vector<Taken>& taken, const std::string& uid,
                       absl::Time deadline) {
  for (const Taken& t : taken) {
    if (t.from_block && blocks_.Unassign(t.pool, t.ip, uid)) continue;  // never written
    absl::Status s = committer_.Run(
        t.pool,
        [&](PoolBook& book) {
          if (book.state.Release(t.ip, uid)) book.dirty = true;
          return absl::OkStatus();
        },
        std::max(deadline, clock_->Now() + absl::Seconds(10)));
    if (!s.ok()) {
      // The record stays with this pod's UID: a retried ADD reuses it, the GC frees it.
      SP_LOG(Warning).Msg("could not undo a partial allocation").KV("pool", t.pool)
          .KV("ip", t.ip.ToString()).KV("error", s.ToString());
    }
  }
}

absl::Status IpamService::ReleasePodRecords(const std::vector<std::string>& pools,
                                            const std::string& uid,
                                            const std::string& container_id, absl::Time deadline,
                                            bool* all_released) {
  *all_released = true;
  SP_RETURN_IF_ERROR(FlushBlocks(pools, uid, deadline));
  blocks_.Forget(uid);
  for (const std::string& pool : pools) {
    bool remaining = false;
    absl::Status s = committer_.Run(
        pool,
        [&](PoolBook& book) {
          if (!book.state.ReleasePod(uid, {.container_id = container_id}).empty()) {
            book.dirty = true;
          }
          remaining = !book.state.IPsOf(uid).empty();
          return absl::OkStatus();
        },
        deadline);
    if (absl::IsNotFound(s)) continue;  // the pool is gone, and its records with it
    SP_RETURN_IF_ERROR(base::Annotate(s, base::StrCat("releasing IPs of pod UID ", uid, " in SpiderIPPool ", pool)));
    if (remaining) *all_released = false;
  }
  return absl::OkStatus();
}

absl::Status IpamService::ReassignRecords(const api::SpiderEndpoint& endpoint, const api::Pod& pod,
                                          const std::string& container_id, absl::Time deadline) {
  // The records' owner is the endpoint's name: the pod's, or its VMI's (KubeVirt).
  sp::AllocationRequest owner{.pod = base::StrCat(endpoint.metadata.namespace_, "/", endpoint.metadata.name),
                              .pod_uid = pod.metadata.uid, .node = options_.node_name,
                              .container_id = container_id};
  std::map<std::string, std::vector<base::IPAddress>> by_pool;
  for (const api::IPAllocationDetail& d : endpoint.status->current.ips) {
    auto add = [&](const std::optional<std::string>& pool, const std::optional<std::string>& cidr) {
      if (!pool || !cidr) return;
      absl::StatusOr<base::IPPrefix> p = base::IPPrefix::Parse(*cidr);
      if (p.ok()) by_pool[*pool].push_back(p->address());
    };
    add(d.ipv4_pool, d.ipv4);
    add(d.ipv6_pool, d.ipv6);
  }
  std::vector<std::string> pools;
  for (const auto& [pool, ips] : by_pool) pools.push_back(pool);
  SP_RETURN_IF_ERROR(FlushBlocks(pools, pod.metadata.uid, deadline));
  SP_RETURN_IF_ERROR(FlushBlocks(pools, endpoint.status->current.uid, deadline));
  for (const auto& entry : by_pool) {
    const std::string& pool = entry.first;  // (a structured binding cannot be captured: clang 14)
    const auto& ips = entry.second;
    SP_RETURN_IF_ERROR(committer_.Run(
        pool,
        [&](PoolBook& book) -> absl::Status {
          absl::StatusOr<sp::PoolState::ReassignResult> r = book.state.ReassignUID(owner, ips);
          if (!r.ok()) return r.status();
          if (!r->missing.empty()) {
            return absl::FailedPreconditionError(base::StrCat(
                "SpiderIPPool ", pool, " no longer holds ", r->missing.front().ToString(),
                " for ", owner.pod));
          }
          if (r->updated > 0) book.dirty = true;
          return absl::OkStatus();
        },
        deadline));
  }
  return absl::OkStatus();
}

}  // namespace spiderpool::agent::ipam
