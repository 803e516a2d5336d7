// Core: the store (objects, resource versions, resources), the watch fan-out and its history,
// watch bookkeeping. The request path is core_dispatch.cc; reads core_read.cc; writes
// core_write.cc; CRDs core_crd.cc; discovery core_discovery.cc.

#include "kube/testing/core.h"

#include <algorithm>

#include "base/log.h"
#include "base/strings.h"
#include "kube/testing/core_util.h"
#include "kube/testing/errors.h"
#include "kube/testing/resources.h"

namespace spiderpool::kube::testing::internal {

using base::Json;
using base::StrCat;

// ---------------------------------------------------------------------------------------
// Watcher

bool Watcher::Push(WatchItem item) {
  // The consumer sleeps only on an empty queue or until the due time of the queue's head, which
  // an item pushed behind it does not change: only the first item wakes it. The wake-up comes
  // after the lock is released (the woken thread would block on it), and Push runs under the
  // Core's store lock: at 100 agents every pool write was ~50 wake-ups under it.
  bool wake = false, pushed = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return false;
    if (queue_.size() >= capacity_) {
      // A watcher that cannot keep up is closed (it must re-watch), like the watch cache does.
      closed_ = true;
      queue_.clear();
      wake = true;
    } else {
      pushed = true;
      wake = queue_.empty();
      if (!queue_.empty()) item.due = std::max(item.due, queue_.back().due);
      queue_.push_back(std::move(item));
    }
  }
  if (wake) cv_.notify_all();
  return pushed;
}

void Watcher::Close(bool drop) {
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  if (drop) queue_.clear();
  cv_.notify_all();
}

bool Watcher::closed() const {
  std::lock_guard<std::mutex> l(mu_);
  return closed_;
}

std::vector<WatchItem> Watcher::Wait(absl::Time deadline, bool* finished) {
  std::unique_lock<std::mutex> l(mu_);
  // `deadline` is wall time; `due` is on the watcher's clock (the server's).
  auto clock_now = [this] { return clock ? clock->Now() : absl::Now(); };
  while (!closed_ && (queue_.empty() || queue_.front().due > clock_now())) {
    absl::Duration d = deadline - absl::Now();
    if (!queue_.empty()) d = std::min(d, queue_.front().due - clock_now());
    if (d <= absl::ZeroDuration()) break;
    cv_.wait_for(l, absl::ToChronoNanoseconds(d));
  }
  std::vector<WatchItem> out;
  const absl::Time now = closed_ ? absl::InfiniteFuture() : clock_now();
  while (!queue_.empty() && queue_.front().due <= now) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  *finished = closed_;
  return out;
}

std::string Watcher::Render(const WatchItem& item) const {
  std::string out = StrCat("{\"type\":\"", item.type, "\",\"object\":");
  if (item.obj && table) {
    Json copy = item.obj->obj;
    copy["apiVersion"] = api_version_;
    Json meta = {{"resourceVersion", MetaStr(copy, "resourceVersion")}};
    absl::Time now = clock ? clock->Now() : absl::Now();
    out += base::DumpJson(table->ToTable({&copy}, meta, now, include_object, table_version,
                                         !table_headers_sent_));
    table_headers_sent_ = true;
  } else if (item.obj && !metadata_version.empty()) {
    out += base::DumpJson(PartialObjectMetadata(item.obj->obj, metadata_version));
  } else if (item.obj) {
    const Json& obj = item.obj->obj;
    auto it = obj.find("apiVersion");
    if (it != obj.end() && it->is_string() && it->get_ref<const std::string&>() == api_version_) {
      out += item.obj->text;
    } else {
      Json copy = obj;
      copy["apiVersion"] = api_version_;
      out += base::DumpJson(copy);
    }
  } else {
    out += item.raw;
  }
  out += "}\n";
  return out;
}

// ---------------------------------------------------------------------------------------
// Core

Core::Core(CoreOptions options)
    : options_(std::move(options)),
      clock_(options_.clock ? options_.clock : &base::RealClock::Get()),
      admission_(options_.admission),
      rng_(std::random_device{}()),
      latency_(options_.latency) {
  for (const ResourceInfo& r : BuiltinResources()) {
    const std::vector<std::string>& omit = options_.omit_builtin_versions;
    if (std::find(omit.begin(), omit.end(), r.ApiVersion()) != omit.end()) continue;
    absl::Status s = RegisterResource(r, nullptr, false);
    if (!s.ok()) SP_LOG(Error).Msg("registering built-in resource failed").KV("err", s.ToString());
  }
  std::lock_guard<std::mutex> l(mu_);
  ResourceState* ns = FindLocked("", "namespaces");
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    Json obj = {{"apiVersion", "v1"},
                {"kind", "Namespace"},
                {"metadata",
                 {{"name", name},
                  {"uid", NewUid()},
                  {"creationTimestamp", NowRfc3339()},
                  {"labels", {{"kubernetes.io/metadata.name", name}}}}},
                {"spec", {{"finalizers", {"kubernetes"}}}},
                {"status", {{"phase", "Active"}}}};
    int64_t rv = NextRvLocked();
    obj["metadata"]["resourceVersion"] = std::to_string(rv);
    StoredPtr s = MakeStored(std::move(obj), name, rv);
    ns->objects[s->key] = s;
    EmitLocked(*ns, "ADDED", s, nullptr);
  }
}

Core::~Core() { CloseWatches(); }

StoredPtr Core::MakeStored(Json obj, std::string key, int64_t rv) const {
  auto s = std::make_shared<Stored>();
  s->labels = api::LabelsOf(obj);
  if (const Json* refs = OwnerRefs(obj)) {
    for (const Json& ref : *refs) {
      if (ref.is_object() && !Str(ref, "uid").empty()) s->owner_uids.push_back(Str(ref, "uid"));
    }
  }
  s->text = base::DumpJson(obj);
  s->obj = std::move(obj);
  s->key = std::move(key);
  s->rv = rv;
  return s;
}

std::string Core::NowRfc3339() const {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", clock_->Now(), absl::UTCTimeZone());
}

std::string Core::NewUid() {
  uint64_t a = rng_(), b = rng_();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 10
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xffff),
                static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string Core::RandomSuffix() {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (int i = 0; i < 5; ++i) out += kAlphabet[rng_() % kAlphabet.size()];
  return out;
}

Core::ResourceState* Core::FindLocked(std::string_view group, std::string_view plural) {
  auto it = resources_.find({std::string(group), std::string(plural)});
  return it == resources_.end() ? nullptr : &it->second;
}

const Core::ResourceState* Core::FindLocked(std::string_view group,
                                            std::string_view plural) const {
  auto it = resources_.find({std::string(group), std::string(plural)});
  return it == resources_.end() ? nullptr : &it->second;
}

absl::Status Core::RegisterResource(ResourceInfo info, SchemaValidator validator, bool custom) {
  info = Normalized(std::move(info));
  if (info.version.empty() || info.kind.empty() || info.plural.empty()) {
    return absl::InvalidArgumentError("ResourceInfo needs version, kind and plural");
  }
  if (!api::IsDns1123Label(info.plural).empty() ||
      (!info.group.empty() && !api::IsDns1123Subdomain(info.group).empty())) {
    return absl::InvalidArgumentError(
        StrCat("invalid group/plural: ", info.group, "/", info.plural));
  }
  std::lock_guard<std::mutex> l(mu_);
  auto [it, inserted] = resources_.try_emplace({info.group, info.plural});
  ResourceState& rs = it->second;
  if (inserted) {
    rs.group = info.group;
    rs.plural = info.plural;
    rs.kind = info.kind;
    rs.singular = info.singular;
    rs.list_kind = info.list_kind;
    rs.namespaced = info.namespaced;
    rs.short_names = info.short_names;
    rs.custom = custom;
    rs.storage_version = info.version;
    rs.history_floor = rv_;
  } else if (rs.kind != info.kind || rs.namespaced != info.namespaced) {
    return absl::AlreadyExistsError(StrCat("resource ", info.GroupResource(),
                                           " is already registered with another kind or scope"));
  }
  rs.versions[info.version] = VersionState{info, std::move(validator)};
  return absl::OkStatus();
}

std::vector<ResourceInfo> Core::Resources() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ResourceInfo> out;
  for (const auto& [k, rs] : resources_) {
    for (const auto& [v, vs] : rs.versions) out.push_back(vs.info);
  }
  return out;
}

void Core::SetAdmission(std::shared_ptr<Admission> admission) {
  std::lock_guard<std::mutex> l(mu_);
  admission_ = std::move(admission);
}

std::vector<Json> Core::ListObjects(std::string_view group, std::string_view version,
                                    std::string_view plural, std::string_view ns) const {
  std::lock_guard<std::mutex> l(mu_);
  return ListObjectsLocked(group, version, plural, ns);
}

std::vector<std::vector<Json>> Core::ListObjectsAtOnce(
    const std::vector<ObjectsQuery>& queries) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::vector<Json>> out;
  for (const ObjectsQuery& q : queries) {
    out.push_back(ListObjectsLocked(q.group, q.version, q.plural, q.ns));
  }
  return out;
}

std::vector<Json> Core::ListObjectsLocked(std::string_view group, std::string_view version,
                                          std::string_view plural, std::string_view ns) const {
  std::vector<Json> out;
  const ResourceState* rs = FindLocked(group, plural);
  if (!rs || !rs->versions.count(std::string(version))) return out;
  std::string av = ApiVersionOf(group, version);
  for (const auto& [key, s] : rs->objects) {
    if (!ns.empty() && MetaStr(s->obj, "namespace") != ns) continue;
    Json copy = s->obj;
    copy["apiVersion"] = av;
    out.push_back(std::move(copy));
  }
  return out;
}

int64_t Core::CurrentResourceVersion() const {
  std::lock_guard<std::mutex> l(mu_);
  return rv_;
}

// ---- events ----

bool Core::MatchesLocked(const Watcher& w, const Stored& s) const {
  if (!w.ns.empty()) {
    if (s.key.size() <= w.ns.size() || s.key.compare(0, w.ns.size(), w.ns) != 0 ||
        s.key[w.ns.size()] != '/') {
      return false;
    }
  }
  if (!w.labels.Matches(s.labels)) return false;
  if (!w.fields.Empty() &&
      !w.fields.Matches([&s](const std::string& f) { return FieldValue(s.obj, f); })) {
    return false;
  }
  return true;
}

void Core::OfferLocked(const ResourceState& rs, Watcher& w, const Event& e,
                       absl::Time due) const {
  bool cur = e.obj && MatchesLocked(w, *e.obj);
  bool prev = e.prev && MatchesLocked(w, *e.prev);
  if (e.type == "ADDED") {
    if (cur) w.Push({"ADDED", e.obj, "", due});
  } else if (e.type == "MODIFIED") {
    if (cur && prev) {
      w.Push({"MODIFIED", e.obj, "", due});
    } else if (cur) {
      w.Push({"ADDED", e.obj, "", due});
    } else if (prev) {
      // The object stopped matching: DELETED with the previous content at the event's RV.
      Json old = e.prev->obj;
      MutableMeta(old)["resourceVersion"] = std::to_string(e.rv);
      w.Push({"DELETED", MakeStored(std::move(old), e.prev->key, e.rv), "", due});
    }
  } else if (e.type == "DELETED") {
    if (cur) w.Push({"DELETED", e.obj, "", due});
  }
}

void Core::EmitLocked(ResourceState& rs, std::string type, StoredPtr obj, StoredPtr prev) {
  if (prev) {
    for (const std::string& uid : prev->owner_uids) {
      auto it = dependents_.find(uid);
      if (it == dependents_.end()) continue;
      it->second.erase({rs.group, rs.plural, prev->key});
      if (it->second.empty()) dependents_.erase(it);
    }
  }
  if (type != "DELETED") {
    for (const std::string& uid : obj->owner_uids) {
      dependents_[uid].insert({rs.group, rs.plural, obj->key});
    }
  }
  Event e{std::move(type), obj->rv, std::move(obj), std::move(prev)};
  if (options_.watch_history_size == 0) {
    rs.history_floor = e.rv;
  } else {
    rs.history.push_back(e);
    rs.history_bytes += e.obj->text.size();
    const size_t max_bytes = options_.watch_history_bytes;
    while (rs.history.size() > options_.watch_history_size ||
           (max_bytes > 0 && rs.history_bytes > max_bytes && rs.history.size() > 1)) {
      rs.history_floor = rs.history.front().rv;
      rs.history_bytes -= rs.history.front().obj->text.size();
      rs.history.pop_front();
    }
  }
  const absl::Time due = rs.watchers.empty() ? absl::InfinitePast() : latency_.WatchDueAt(clock_->Now());
  for (const std::shared_ptr<Watcher>& w : rs.watchers) OfferLocked(rs, *w, e, due);
  if (event_hook_) event_hook_(e.type, RefLocked(rs, e.obj), e.prev);
}

ObjectRef Core::RefLocked(const ResourceState& rs, StoredPtr obj) const {
  ObjectRef r;
  r.group = rs.group;
  r.plural = rs.plural;
  r.namespaced = rs.namespaced;
  r.version = rs.storage_version.empty() && !rs.versions.empty() ? rs.versions.begin()->first
                                                                 : rs.storage_version;
  r.obj = std::move(obj);
  return r;
}

std::string ObjectRef::Path() const {
  std::string p = group.empty() ? StrCat("/api/", version) : StrCat("/apis/", group, "/", version);
  std::string ns = MetaStr(obj->obj, "namespace");
  if (namespaced) p += StrCat("/namespaces/", ns);
  return StrCat(p, "/", plural, "/", MetaStr(obj->obj, "name"));
}

void Core::SetEventHook(EventHook hook) {
  std::lock_guard<std::mutex> l(mu_);
  event_hook_ = std::move(hook);
}

std::vector<ObjectRef> Core::AllObjects() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ObjectRef> out;
  for (const auto& [k, rs] : resources_) {
    for (const auto& [key, s] : rs.objects) out.push_back(RefLocked(rs, s));
  }
  return out;
}

std::vector<ObjectRef> Core::DependentsOf(const std::set<std::string>& uids) const {
  std::lock_guard<std::mutex> l(mu_);
  std::set<DependentKey> keys;
  for (const std::string& uid : uids) {
    auto it = dependents_.find(uid);
    if (it != dependents_.end()) keys.insert(it->second.begin(), it->second.end());
  }
  std::vector<ObjectRef> out;
  for (const auto& [group, plural, key] : keys) {
    const ResourceState* rs = FindLocked(group, plural);
    if (!rs) continue;
    auto o = rs->objects.find(key);
    if (o != rs->objects.end()) out.push_back(RefLocked(*rs, o->second));
  }
  return out;
}

std::vector<ObjectRef> Core::NamespaceContents(std::string_view ns) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<ObjectRef> out;
  std::string prefix = StrCat(ns, "/");
  for (const auto& [k, rs] : resources_) {
    if (!rs.namespaced) continue;
    for (auto o = rs.objects.lower_bound(prefix);
         o != rs.objects.end() && o->first.compare(0, prefix.size(), prefix) == 0; ++o) {
      out.push_back(RefLocked(rs, o->second));
    }
  }
  return out;
}

std::optional<ObjectRef> Core::GetObject(std::string_view group, std::string_view plural,
                                         std::string_view ns, std::string_view name) const {
  std::lock_guard<std::mutex> l(mu_);
  const ResourceState* rs = FindLocked(group, plural);
  if (!rs) return std::nullopt;
  auto it = rs->objects.find(Key(rs->namespaced ? ns : "", name));
  if (it == rs->objects.end()) return std::nullopt;
  return RefLocked(*rs, it->second);
}

std::optional<ResourceInfo> Core::ResourceFor(std::string_view api_version,
                                              std::string_view kind) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [k, rs] : resources_) {
    if (rs.kind != kind) continue;
    for (const auto& [v, vs] : rs.versions) {
      if (vs.info.ApiVersion() == api_version) return vs.info;
    }
  }
  return std::nullopt;
}

void Core::FinalizeNamespace(std::string_view ns) {
  std::lock_guard<std::mutex> l(mu_);
  ResourceState* nss = FindLocked("", "namespaces");
  auto it = nss->objects.find(std::string(ns));
  if (it == nss->objects.end() || !Deleting(it->second->obj)) return;
  StoredPtr old = it->second;
  const Json& spec = old->obj.contains("spec") ? old->obj["spec"] : Json::object();
  if (spec.is_object() && spec.contains("finalizers") && spec["finalizers"].is_array() &&
      !spec["finalizers"].empty()) {
    Json obj = old->obj;
    Json kept = Json::array();
    for (const Json& f : obj["spec"]["finalizers"]) {
      if (f != "kubernetes") kept.push_back(f);
    }
    obj["spec"]["finalizers"] = kept;
    int64_t rv = NextRvLocked();
    MutableMeta(obj)["resourceVersion"] = std::to_string(rv);
    StoredPtr s = MakeStored(std::move(obj), old->key, rv);
    it->second = s;
    EmitLocked(*nss, "MODIFIED", s, old);
  }
  MaybeRemoveNamespaceLocked(ns);
}

void Core::RemoveLocked(ResourceState& rs, const StoredPtr& cur) {
  int64_t rv = NextRvLocked();
  Json final_obj = cur->obj;
  MutableMeta(final_obj)["resourceVersion"] = std::to_string(rv);
  StoredPtr fin = MakeStored(std::move(final_obj), cur->key, rv);
  rs.objects.erase(cur->key);
  EmitLocked(rs, "DELETED", fin, cur);
  AfterRemoveLocked(rs, *fin);
}

void Core::AfterRemoveLocked(ResourceState& rs, const Stored& removed) {
  if (rs.group == "apiextensions.k8s.io" && rs.plural == "customresourcedefinitions") {
    UnregisterCrdLocked(removed.obj);
    return;
  }
  if (rs.group.empty() && rs.plural == "namespaces") return;
  if (rs.namespaced) MaybeRemoveNamespaceLocked(MetaStr(removed.obj, "namespace"));
}

void Core::MaybeRemoveNamespaceLocked(std::string_view ns) {
  ResourceState* nss = FindLocked("", "namespaces");
  auto it = nss->objects.find(std::string(ns));
  if (it == nss->objects.end() || !Deleting(it->second->obj) ||
      !Finalizers(it->second->obj).empty()) {
    return;
  }
  const Json& obj = it->second->obj;
  auto spec = obj.find("spec");
  if (spec != obj.end() && spec->is_object()) {
    auto f = spec->find("finalizers");
    if (f != spec->end() && f->is_array() && !f->empty()) return;
  }
  std::string prefix = StrCat(ns, "/");
  for (auto& [k, other] : resources_) {
    if (!other.namespaced) continue;
    auto o = other.objects.lower_bound(prefix);
    if (o != other.objects.end() && o->first.compare(0, prefix.size(), prefix) == 0) return;
  }
  StoredPtr ns_obj = it->second;
  RemoveLocked(*nss, ns_obj);
}

// ---- watch bookkeeping ----

void Core::EnqueueBookmark(const std::shared_ptr<Watcher>& w) {
  std::lock_guard<std::mutex> l(mu_);
  EnqueueBookmarkLocked(*w, false);
}

void Core::EnqueueBookmarkLocked(Watcher& w, bool initial_events_end) {
  Json b = {{"kind", w.kind},
            {"apiVersion", w.metadata_version.empty()
                               ? w.api_version()
                               : StrCat("meta.k8s.io/", w.metadata_version)},
            {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
  if (initial_events_end) {
    b["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
  }
  w.Push({"BOOKMARK", nullptr, base::DumpJson(b)});
}

void Core::RemoveWatcher(const std::shared_ptr<Watcher>& w) {
  std::lock_guard<std::mutex> l(mu_);
  ResourceState* rs = FindLocked(w->group, w->plural);
  w->Close(true);
  if (rs) {
    auto it = std::find(rs->watchers.begin(), rs->watchers.end(), w);
    if (it != rs->watchers.end()) {
      rs->watchers.erase(it);
      watches_cv_.notify_all();
    }
  }
}

size_t Core::CountOpenLocked() const {
  size_t n = 0;
  for (const auto& [k, rs] : resources_) {
    for (const auto& w : rs.watchers) n += w->closed() ? 0 : 1;
  }
  return n;
}

size_t Core::OpenWatches() const {
  std::lock_guard<std::mutex> l(mu_);
  return CountOpenLocked();
}

bool Core::WaitForWatches(size_t n, absl::Duration timeout) const {
  std::unique_lock<std::mutex> l(mu_);
  return watches_cv_.wait_for(l, absl::ToChronoNanoseconds(timeout),
                              [&] { return CountOpenLocked() >= n; });
}

void Core::CloseWatches() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [k, rs] : resources_) {
    for (const auto& w : rs.watchers) w->Close(false);
  }
}

void Core::CompactHistory() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [k, rs] : resources_) {
    rs.history.clear();
    rs.history_bytes = 0;
    rs.history_floor = rv_;
  }
  snapshots_.clear();
}

void Core::SetServerAddress(std::string address) {
  std::lock_guard<std::mutex> l(mu_);
  server_address_ = std::move(address);
}

std::optional<ApiStatus> Core::CheckNamespaceLocked(const Target& t, std::string_view name) const {
  if (!t.info.namespaced) return std::nullopt;
  const ResourceState* nss = FindLocked("", "namespaces");
  auto it = nss->objects.find(t.ns);
  if (it == nss->objects.end()) return NotFoundStatus("", "namespaces", t.ns);
  if (Deleting(it->second->obj)) {
    ApiStatus s = ForbiddenStatus(
        t.group, t.plural, name,
        StrCat("unable to create new content in namespace ", t.ns,
               " because it is being terminated"));
    s.causes.push_back({"NamespaceTerminating",
                        StrCat("namespace ", t.ns, " is being terminated"), "metadata.namespace"});
    return s;
  }
  return std::nullopt;
}

}  // namespace spiderpool::kube::testing::internal
