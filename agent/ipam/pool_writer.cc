#include "agent/ipam/pool_writer.h"

#include <algorithm>

#include "api/spider.h"
#include "base/json.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "ipam/result.h"

namespace spiderpool::agent::ipam {
namespace sp = ::spiderpool::ipam;
namespace {
std::string Key(std::string_view ns, std::string_view name) { return base::StrCat(ns, "/", name); }
}  // namespace

// ---- lifecycle ------------------------------------------------------------------------------

PoolWriter::PoolWriter(std::shared_ptr<kube::RestClient> rest, PoolWriterOptions options,
                       PoolCaches caches)
    : options_(std::move(options)),
      caches_(std::move(caches)),
      clock_(options_.clock ? options_.clock : &base::RealClock::Get()),
      pool_store_(rest, caches_.pools),
      pools_(rest),
      committer_(&pool_store_,
                 {.load = [this](const api::SpiderIPPool& pool) -> absl::StatusOr<PoolBook> {
                    absl::StatusOr<sp::PoolState> st = BuildPool(pool);
                    if (!st.ok()) return st.status();
                    return PoolBook{*std::move(st), false};
                  },
                  .dirty = [](const PoolBook& b) { return b.dirty; },
                  .store = [](const PoolBook& b, api::SpiderIPPool* pool) { b.state.WriteStatus(pool); },
                  .cached = [this](const std::string& name) -> std::optional<api::SpiderIPPool> {
                    auto p = caches_.pools->Get(name);
                    if (p == nullptr) return std::nullopt;
                    return *p;
                  },
                  .latest_version = [this](const std::string& name) -> std::optional<std::string> {
                    std::string v = MetaVersion(name);
                    if (v.empty()) return std::nullopt;
                    return v;
                  },
                  .writers = [this](const std::string& name) { return blocks_.PoolNodes(name); }},
                 clock_),
      blocks_(options_.node_name, BlockOptions{.max_block = options_.block_size,
                                                .prewarm_stagger = options_.prewarm_stagger,
                                                .standing = options_.block_standing}, &committer_,
              {.cached_pool = [this](const std::string& name) { return caches_.pools->Get(name); },
               .endpoint_ips = [this](const std::string& pool) { return EndpointIPs(pool); },
               .build = [this](const api::SpiderIPPool& pool) { return BuildPool(pool); },
               .waiting_pods = [this] { return WaitingPods(); },
               .pools = [this] {
                 // Only once every cache has synced: recovery needs this node's endpoints.
                 std::vector<std::string> names;
                 if (!caches_.synced()) return names;
                 for (const auto& p : caches_.pools->List()) names.push_back(p->metadata.name);
                 return names;
               },
               .forecast = [this]() -> PoolForecast {
                 if (!options_.forecast || !caches_.synced()) return {};
                 return options_.forecast();
               },
               .wanted_by = [this](const std::string& pool) { return WantedBy(pool); }},
              clock_) {
  // A pool many nodes share is read in the background as much less often as it is written.
  caches_.pools->SetRefreshFactor([this](const std::string& pool) { return blocks_.Crowd(pool); });
}

PoolWriter::~PoolWriter() {
  caches_.pools->SetRefreshFactor(nullptr);
  Stop();
}

void PoolWriter::Start() { blocks_.Start(); }
void PoolWriter::Stop() { blocks_.Stop(); }

void PoolWriter::OnPoolChanged(const api::ObjectMeta* before, const api::ObjectMeta& after) {
  if (before == nullptr || before->resource_version != after.resource_version) {
    blocks_.NoteChanged(after.name);
  }
  // Another node asks for idle reservations (blocks.h point 6).
  auto mark = [](const api::ObjectMeta* m) {
    if (m == nullptr) return std::string();
    auto it = m->annotations.find(kAnnotationReservationsWanted);
    return it == m->annotations.end() ? std::string() : it->second;
  };
  if (mark(before) != mark(&after)) blocks_.Wake();
}

void PoolWriter::OnPodAdded() { blocks_.Poke(); }

bool PoolWriter::IsWaiting(const api::Pod& pod) const {
  if (pod.spec.host_network || pod.metadata.IsDeleting() || pod.status.phase == "Succeeded" ||
      pod.status.phase == "Failed") {
    return false;
  }
  std::shared_ptr<const api::SpiderEndpoint> ep =
      (*caches_.endpoints).Get(Key(pod.metadata.namespace_, pod.metadata.name));
  return !(ep != nullptr && ep->status.has_value() && ep->status->current.uid == pod.metadata.uid);
}

std::set<std::string> PoolWriter::WaitingPods() const {
  std::set<std::string> uids;
  for (const std::shared_ptr<const api::Pod>& pod : (*caches_.pods).List()) {
    if (IsWaiting(*pod)) uids.insert(pod->metadata.uid);
  }
  return uids;
}

std::string PoolWriter::WantedBy(const std::string& pool) const {
  std::shared_ptr<const PoolMeta> m = caches_.pools->Meta(pool);
  if (m == nullptr) return "";
  const std::optional<ReservationsWanted> wanted = ParseReservationsWanted(m->metadata);
  if (!wanted.has_value() || wanted->node == options_.node_name) return "";
  return wanted->FreshAt(clock_->Now(), absl::Seconds(10)) ? wanted->node : "";
}

void PoolWriter::AskForReservations(const std::string& pool) {
  const absl::Time now = clock_->Now();
  std::shared_ptr<const PoolMeta> m = caches_.pools->Meta(pool);
  if (!AskIsDue(m == nullptr ? nullptr : &m->metadata, now, kAskEvery)) return;
  {
    absl::MutexLock l(&asked_mu_);
    absl::Time& last = asked_[pool];
    if (now - last < kAskEvery) return;
    last = now;
  }
  const base::Json patch = {{"metadata", {{"annotations", {{kAnnotationReservationsWanted,
      base::StrCat(options_.node_name, " ", absl::ToUnixMillis(now))}}}}}};
  absl::StatusOr<api::SpiderIPPool> r = pools_.Patch("", pool, kube::PatchType::kMerge, patch);
  if (!r.ok()) {
    SP_LOG(Warning).Msg("could not ask other nodes for their idle reservations").KV("pool", pool)
        .KV("error", r.status());
  }
}

std::string PoolWriter::MetaVersion(const std::string& pool) const {
  std::shared_ptr<const PoolMeta> m = caches_.pools->Meta(pool);
  return m == nullptr ? std::string() : m->metadata.resource_version;
}

std::vector<base::IPRange> PoolWriter::ReservedRanges() const {
  std::vector<api::SpiderReservedIP> reserved;
  for (const auto& r : (*caches_.reserved).List()) reserved.push_back(*r);
  absl::StatusOr<std::vector<base::IPRange>> ranges = sp::ReservedRanges(reserved);
  if (!ranges.ok()) {
    // A malformed SpiderReservedIP (the webhook should have refused it) reserves nothing.
    SP_LOG(Warning).Msg("ignoring malformed SpiderReservedIP").KV("error", ranges.status());
    return {};
  }
  return *std::move(ranges);
}

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

absl::StatusOr<api::SpiderIPPool> PoolWriter::KubePoolStore::Get(const std::string& name) {
  absl::StatusOr<api::SpiderIPPool> got = pools_.Get("", name);
  if (got.ok()) cache_->Remember(*got);
  return got;
}

absl::StatusOr<api::SpiderIPPool> PoolWriter::KubePoolStore::UpdateStatus(
    const api::SpiderIPPool& pool) {
  absl::StatusOr<api::SpiderIPPool> written = pools_.UpdateStatus(pool);
  if (written.ok()) cache_->Remember(*written);
  return written;
}

// ---- NodeBlocks hooks ------------------------------------------------------------------------

absl::StatusOr<sp::PoolState> PoolWriter::BuildPool(const api::SpiderIPPool& pool) const {
  return sp::PoolState::Build(pool, ReservedRanges(),
                              {.max_allocated_ips = options_.max_allocated_ips_per_pool});
}

std::map<base::IPAddress, sp::AllocationRequest> PoolWriter::EndpointIPs(
    const std::string& pool) const {
  std::map<base::IPAddress, sp::AllocationRequest> out;
  for (const auto& ep : caches_.endpoints->List()) {
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

absl::Status PoolWriter::FlushBlocks(const std::vector<std::string>& pools,
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

absl::StatusOr<PoolWriter::Taken> PoolWriter::TakeOne(const std::vector<std::string>& pools,
                                                        int ip_version,
                                                        const sp::AllocationRequest& request,
                                                        absl::Time deadline) {
  std::vector<std::string> why;
  std::optional<std::vector<base::IPRange>> reserved;  // SpiderReservedIPs, read once
  for (const std::string& pool : pools) {
    // A full pool whose IPs are partly reserved by nodes (ours included, by a batch-mate) is
    // not full for long: idle reservations go back quickly once the pool has no unreserved IP.
    // Ask their nodes to give them back (blocks.h point 6) and wait (bounded) instead of
    // failing the pod.
    // Bounded by the request's deadline (less a second to answer) and 30 s: under load the
    // owners' writes take seconds (measured: a 10 s bound still failed ADDs on a busy machine).
    const absl::Time wait_until =
        std::min(deadline - absl::Seconds(1), clock_->Now() + absl::Seconds(30));
    absl::Status s;
    std::string holders;  // who holds the pool, when it was full
    std::string ours;     // this node's block then
    bool adoption_tried = false;
    bool block_retried = false;
    bool behind_a_top_up = false;  // once: see the mutation below
    absl::Time waiting_since = absl::InfiniteFuture();
    while (true) {
      if (std::optional<Taken> got = TakeReserved(pool, request, &reserved, deadline)) return *got;
      // The version this attempt starts from (at the latest): a full pool can only change by
      // a write, and another attempt before one is a rebuild of every record for nothing.
      const std::string seen_version = MetaVersion(pool);
      Taken got{.pool = pool};
      std::vector<base::IPAddress> topped_up;
      int64_t waitable = 0;
      bool adopted_only = false;  // the write only took untracked reservations of ours back
      bool to_block = false;      // this node's block got IPs before this batch ran
      // Slow path: the record is written before the ADD returns; the same write tops this
      // node's block up for the next ADDs.
      blocks_.SlowPathBegin(pool, request.pod_uid);
      // Queued behind a write of ours that filled the block (the first batch of a node's ADDs
      // tops it up for the pods waiting here): take from the block instead of writing the
      // pool again. ipam_e2e: each node's first ADDs came in two batches; the second wrote
      // the pool again while the block held 92 IPs, and lost races to the other nodes' first
      // writes for up to 160 ms.
      auto to_the_block = [&](const PoolBook& book) {
        return !behind_a_top_up && book.state.IPsOf(request.pod_uid).empty() &&
               blocks_.HasFree(pool, Usable(&reserved));
      };
      s = committer_.Run(
          pool,
          [&](PoolBook& book) -> absl::Status {
            topped_up.clear();
            waitable = 0;
            adopted_only = false;
            to_block = false;
            if (to_the_block(book)) {
              to_block = true;
              return absl::CancelledError("this node's block has IPs now");
            }
            absl::StatusOr<sp::PoolAllocation> a = book.state.Allocate(request);
            if (absl::IsResourceExhausted(a.status())) {
              if (!adoption_tried) {
                blocks_.AdoptUntracked(pool, book.state, &topped_up, &book.dirty);
                if (!topped_up.empty()) {
                  adopted_only = true;
                  return absl::OkStatus();
                }
              }
              waitable = blocks_.Waitable(pool, book.state);
              holders = book.state.HoldersSummary();
              // Only for the first "pool full" log line of this ADD.
              if (waiting_since == absl::InfiniteFuture()) {
                ours = blocks_.Describe(pool, book.state);
              }
            }
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
            blocks_.TopUp(pool, book.state, &topped_up, &book.dirty, request.pod_uid,
                          &book.slow_adds);
            return absl::OkStatus();
          },
          deadline, PoolCommitter::OnConflict::kRetry,
          // In landing order (see NodeBlocks::AddReserved): never after a later give-back.
          [&] {
            blocks_.AddReserved(pool, topped_up);
            if (!adopted_only) blocks_.NoteWritten(request.pod_uid);
          },
          // A top-up in the same write counts this node's other slow-path ADDs as demand
          // only if they are not written with it (PoolBook::slow_adds).
          [&](PoolBook& book) {
            if (!to_the_block(book)) book.slow_adds.insert(request.pod_uid);
          });
      blocks_.SlowPathEnd(pool, request.pod_uid, s.ok() && !adopted_only);
      if (to_block && absl::IsCancelled(s)) {
        behind_a_top_up = true;
        continue;
      }
      SP_LOG(Debug).Msg("ADD wrote the pool (no reserved IP)").KV("pool", pool)
          .KV("pod", request.pod).KV("reserved", topped_up.size()).KV("status", s);
      if (s.ok() && adopted_only) {
        // Usually a batch-mate's top-up in the same write (reserved for the pods of this node,
        // this one included); else a write of ours reported failed that landed.
        SP_LOG(Info).Msg("a full pool: this node's reservations not in its block yet taken into it")
            .KV("pool", pool).KV("ips", topped_up.size()).KV("pod", request.pod);
        adoption_tried = true;  // once: the next attempt takes one of them, or goes on as usual
        continue;
      }
      if (s.ok()) {
        if (waiting_since != absl::InfiniteFuture()) {
          SP_LOG(Info).Msg("a full pool had an IP again").KV("pool", pool).KV("pod", request.pod)
              .KV("waited_ms", absl::ToInt64Milliseconds(clock_->Now() - waiting_since));
        }
        return got;
      }
      // This node's block got IPs while this write was on its way (the keeper's top-up landed
      // between its attempts): take one of them instead of asking the other nodes for theirs.
      // ipam_e2e: 8 ADDs whose batch lost 8 races in a row asked while their block held 85,
      // and every other node gave back what it held.
      if (absl::IsResourceExhausted(s) && !block_retried &&
          blocks_.HasFree(pool, Usable(&reserved))) {
        block_retried = true;
        continue;
      }
      if (!absl::IsResourceExhausted(s) || waitable == 0 || clock_->Now() >= wait_until) break;
      if (waiting_since == absl::InfiniteFuture()) {
        waiting_since = clock_->Now();
        SP_LOG(Info).Msg("pool full: waiting for reservations to come back").KV("pool", pool)
            .KV("pod", request.pod).KV("waitable", waitable).KV("this_node", ours)
            .KV("holders", holders);
      }
      // Until the pool changes (a give-back landed; the metadata watch shows it) or this
      // node's block gets IPs it may hand out (not one a SpiderReservedIP covers: with such
      // an IP in the block this loop went round every 20 ms, a pool rebuild each time):
      // checking both is cheap, loading the pool is not (at 50 nodes the ADDs waiting here
      // rebuilt 5000 records 50 times a second). The ask is renewed
      // while waiting (at most every kAskEvery, and not while another node's is fresh): an
      // owner decides what to give back when it sees an ask, and its copy of the pool may
      // not have shown it tight yet.
      do {
        AskForReservations(pool);
        clock_->SleepUntil(std::min(wait_until, clock_->Now() + absl::Milliseconds(20)));
      } while (clock_->Now() < wait_until && !seen_version.empty() &&
               MetaVersion(pool) == seen_version && !blocks_.HasFree(pool, Usable(&reserved)));
    }
    // Full, disabled or gone: the next pool of the list may do. Anything else (the API server
    // is unreachable, the deadline passed) stops here.
    if (absl::IsResourceExhausted(s) || absl::IsFailedPrecondition(s) || absl::IsNotFound(s) ||
        absl::IsInvalidArgument(s)) {
      why.push_back(base::StrCat(pool, ": ", base::FromAbsl(s.message()),
                                 absl::IsResourceExhausted(s) && !holders.empty()
                                     ? base::StrCat(" (", holders, ")")
                                     : std::string()));
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

std::function<bool(const base::IPAddress&)> PoolWriter::Usable(
    std::optional<std::vector<base::IPRange>>* reserved) const {
  if (!reserved->has_value()) *reserved = ReservedRanges();
  return [reserved](const base::IPAddress& ip) {
    return std::none_of((*reserved)->begin(), (*reserved)->end(),
                        [&](const base::IPRange& r) { return r.Contains(ip); });
  };
}

std::optional<PoolWriter::Taken> PoolWriter::TakeReserved(
    const std::string& pool, const sp::AllocationRequest& request,
    std::optional<std::vector<base::IPRange>>* reserved, absl::Time deadline) {
  if (!blocks_.enabled()) return std::nullopt;
  std::shared_ptr<const api::SpiderIPPool> cached = caches_.pools->Get(pool);
  if (cached == nullptr || cached->spec.disable.value_or(false)) return std::nullopt;
  std::optional<sp::FamilyAllocation> family = FamilyFromSpec(*cached);
  if (!family.has_value()) return std::nullopt;
  std::optional<base::IPAddress> ip = blocks_.Take(pool, request, Usable(reserved), deadline);
  if (!ip.has_value()) return std::nullopt;
  family->ip = *ip;
  return Taken{.pool = pool, .ip = *ip, .family = *family, .from_block = true};
}

void PoolWriter::Undo(const std::vector<Taken>& taken, const std::string& uid,
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
          .KV("ip", t.ip.ToString()).KV("error", s);
    }
  }
}

bool PoolWriter::ReleaseInBackground(const std::vector<std::string>& pools,
                                      const std::string& uid, const std::string& container_id) {
  if (!blocks_.enabled()) return false;
  for (const std::string& pool : pools) {
    if (!blocks_.Release(pool, uid, container_id)) return false;  // the keeper is not running
  }
  return true;
}

bool PoolWriter::OtherContainerHolds(const std::vector<std::string>& pools,
                                      const std::string& uid,
                                      const std::string& container_id) const {
  if (container_id.empty()) return false;  // a DEL without a container frees them all
  for (const std::string& pool : pools) {
    if (blocks_.HandedToOtherContainer(pool, uid, container_id)) return true;
    std::shared_ptr<const api::SpiderIPPool> p = caches_.pools->FreshOrCached(pool);
    if (p == nullptr) continue;
    absl::StatusOr<api::PoolIPAllocations> recs = p->AllocatedIPs();
    if (!recs.ok()) continue;
    for (const auto& [ip, rec] : *recs) {
      if (rec.pod_uid == uid && rec.container_id.has_value() && !rec.container_id->empty() &&
          *rec.container_id != container_id) {
        return true;
      }
    }
  }
  return false;
}

absl::Status PoolWriter::ReleasePodRecords(const std::vector<std::string>& pools,
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

absl::Status PoolWriter::ReassignRecords(const api::SpiderEndpoint& endpoint,
                                         const sp::AllocationRequest& owner,
                                         absl::Time deadline) {
  // The records' owner is the endpoint's name: the pod's, or its VMI's (KubeVirt).
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
  SP_RETURN_IF_ERROR(FlushBlocks(pools, owner.pod_uid, deadline));
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
