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

namespace {
constexpr std::string_view kContinueExpired =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";
}  // namespace


// ---------------------------------------------------------------------------------------
// Watcher

bool Watcher::Push(WatchItem item) {
  std::lock_guard<std::mutex> l(mu_);
  if (closed_) return false;
  if (queue_.size() >= capacity_) {
    // A watcher that cannot keep up is closed (it must re-watch), like the watch cache does.
    closed_ = true;
    queue_.clear();
    cv_.notify_all();
    return false;
  }
  queue_.push_back(std::move(item));
  cv_.notify_all();
  return true;
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
  auto pred = [this] { return !queue_.empty() || closed_; };
  if (!pred()) {
    absl::Duration d = deadline - absl::Now();
    if (d > absl::ZeroDuration()) {
      cv_.wait_for(l, absl::ToChronoNanoseconds(d), pred);
    }
  }
  std::vector<WatchItem> out(std::make_move_iterator(queue_.begin()),
                             std::make_move_iterator(queue_.end()));
  queue_.clear();
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


namespace {

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Core

Core::Core(CoreOptions options)
    : options_(std::move(options)),
      clock_(options_.clock ? options_.clock : &base::RealClock::Get()),
      admission_(options_.admission),
      rng_(std::random_device{}()) {
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
  if (!api::ValidateDns1123Label(info.plural).empty() ||
      (!info.group.empty() && !api::ValidateDns1123Subdomain(info.group).empty())) {
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

void Core::OfferLocked(const ResourceState& rs, Watcher& w, const Event& e) const {
  bool cur = e.obj && MatchesLocked(w, *e.obj);
  bool prev = e.prev && MatchesLocked(w, *e.prev);
  if (e.type == "ADDED") {
    if (cur) w.Push({"ADDED", e.obj, ""});
  } else if (e.type == "MODIFIED") {
    if (cur && prev) {
      w.Push({"MODIFIED", e.obj, ""});
    } else if (cur) {
      w.Push({"ADDED", e.obj, ""});
    } else if (prev) {
      // The object stopped matching: DELETED with the previous content at the event's RV.
      Json old = e.prev->obj;
      MutableMeta(old)["resourceVersion"] = std::to_string(e.rv);
      w.Push({"DELETED", MakeStored(std::move(old), e.prev->key, e.rv), ""});
    }
  } else if (e.type == "DELETED") {
    if (cur) w.Push({"DELETED", e.obj, ""});
  }
}

void Core::EmitLocked(ResourceState& rs, std::string type, StoredPtr obj, StoredPtr prev) {
  Event e{std::move(type), obj->rv, std::move(obj), std::move(prev)};
  if (options_.watch_history_size == 0) {
    rs.history_floor = e.rv;
  } else {
    rs.history.push_back(e);
    while (rs.history.size() > options_.watch_history_size) {
      rs.history_floor = rs.history.front().rv;
      rs.history.pop_front();
    }
  }
  for (const std::shared_ptr<Watcher>& w : rs.watchers) OfferLocked(rs, *w, e);
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
  if (!rs.namespaced) return;
  // NamespaceLifecycle: a terminating namespace goes away with its last object.
  std::string ns = MetaStr(removed.obj, "namespace");
  ResourceState* nss = FindLocked("", "namespaces");
  auto it = nss->objects.find(ns);
  if (it == nss->objects.end() || !Deleting(it->second->obj) ||
      !Finalizers(it->second->obj).empty()) {
    return;
  }
  std::string prefix = ns + "/";
  for (auto& [k, other] : resources_) {
    if (!other.namespaced) continue;
    auto o = other.objects.lower_bound(prefix);
    if (o != other.objects.end() && o->first.compare(0, prefix.size(), prefix) == 0) return;
  }
  StoredPtr ns_obj = it->second;
  RemoveLocked(*nss, ns_obj);
}

void Core::DeleteNamespaceContentsLocked(const std::string& ns) {
  std::string prefix = ns + "/";
  for (auto& [k, rs] : resources_) {
    if (!rs.namespaced) continue;
    std::vector<StoredPtr> victims;
    for (auto o = rs.objects.lower_bound(prefix);
         o != rs.objects.end() && o->first.compare(0, prefix.size(), prefix) == 0; ++o) {
      victims.push_back(o->second);
    }
    for (const StoredPtr& v : victims) {
      if (!Finalizers(v->obj).empty()) {
        if (Deleting(v->obj)) continue;
        Json obj = v->obj;
        Json& m = MutableMeta(obj);
        m["deletionTimestamp"] = NowRfc3339();
        m["deletionGracePeriodSeconds"] = 0;
        m["generation"] = MetaGeneration(obj) + 1;
        int64_t rv = NextRvLocked();
        m["resourceVersion"] = std::to_string(rv);
        StoredPtr s = MakeStored(std::move(obj), v->key, rv);
        rs.objects[v->key] = s;
        EmitLocked(rs, "MODIFIED", s, v);
      } else {
        // Not through RemoveLocked's namespace check: the caller decides about the namespace.
        int64_t rv = NextRvLocked();
        Json final_obj = v->obj;
        MutableMeta(final_obj)["resourceVersion"] = std::to_string(rv);
        StoredPtr fin = MakeStored(std::move(final_obj), v->key, rv);
        rs.objects.erase(v->key);
        EmitLocked(rs, "DELETED", fin, v);
      }
    }
  }
}

// ---- watch bookkeeping ----

void Core::EnqueueBookmark(const std::shared_ptr<Watcher>& w) {
  std::lock_guard<std::mutex> l(mu_);
  EnqueueBookmarkLocked(*w, false);
}

void Core::EnqueueBookmarkLocked(Watcher& w, bool initial_events_end) {
  Json b = {{"kind", w.kind},
            {"apiVersion", w.api_version()},
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
    rs.history_floor = rv_;
  }
  snapshots_.clear();
}

// ---- faults ----

namespace {
bool FaultMatches(const FaultMatch& m, std::string_view verb, std::string_view plural,
                  std::string_view sub, std::string_view ns, std::string_view name) {
  if (!m.verb.empty() && m.verb != verb) return false;
  if (!m.resource.empty()) {
    size_t slash = m.resource.find('/');
    if (slash == std::string::npos) {
      if (m.resource != plural) return false;
    } else if (std::string_view(m.resource).substr(0, slash) != plural ||
               std::string_view(m.resource).substr(slash + 1) != sub) {
      return false;
    }
  }
  if (!m.namespace_name.empty() && m.namespace_name != ns) return false;
  if (!m.name.empty() && m.name != name) return false;
  return true;
}
}  // namespace

void Core::InjectDelay(absl::Duration delay, FaultMatch match) {
  std::lock_guard<std::mutex> l(faults_mu_);
  faults_.erase(std::remove_if(faults_.begin(), faults_.end(),
                               [&](const Fault& f) {
                                 return f.delay > absl::ZeroDuration() &&
                                        f.match.verb == match.verb &&
                                        f.match.resource == match.resource &&
                                        f.match.namespace_name == match.namespace_name &&
                                        f.match.name == match.name;
                               }),
                faults_.end());
  if (delay > absl::ZeroDuration()) {
    Fault f;
    f.match = std::move(match);
    f.delay = delay;
    faults_.push_back(std::move(f));
  }
}

void Core::FailNext(int n, int http_code, FaultMatch match, int retry_after_seconds) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> l(faults_mu_);
  Fault f;
  f.match = std::move(match);
  f.remaining = n;
  f.code = http_code;
  f.retry_after = retry_after_seconds;
  faults_.push_back(std::move(f));
}

void Core::ClearFaults() {
  std::lock_guard<std::mutex> l(faults_mu_);
  faults_.clear();
}

std::optional<ApiStatus> Core::TakeFault(const Target& t, std::string_view verb,
                                         absl::Duration* delay) {
  std::lock_guard<std::mutex> l(faults_mu_);
  *delay = absl::ZeroDuration();
  std::optional<ApiStatus> out;
  for (auto it = faults_.begin(); it != faults_.end();) {
    if (!FaultMatches(it->match, verb, t.plural, t.sub, t.ns, t.name)) {
      ++it;
      continue;
    }
    if (it->delay > absl::ZeroDuration()) {
      *delay = std::max(*delay, it->delay);
      ++it;
      continue;
    }
    if (!out && it->remaining > 0) {
      out = StatusForCode(it->code, t.group, t.plural, t.name, it->retry_after);
      if (--it->remaining == 0) {
        it = faults_.erase(it);
        continue;
      }
    }
    ++it;
  }
  return out;
}

// ---- routing ----

std::optional<ApiStatus> Core::ResolveLocked(Target* t) {
  ResourceState* rs = FindLocked(t->group, t->plural);
  if (!rs) return ResourceNotFoundStatus();
  auto v = rs->versions.find(t->version);
  if (v == rs->versions.end()) return ResourceNotFoundStatus();
  if (rs->namespaced) {
    if (!t->ns_in_path && !t->name.empty()) return ResourceNotFoundStatus();
  } else if (t->ns_in_path) {
    return ResourceNotFoundStatus();
  }
  if (!t->sub.empty() && (t->sub != "status" || !v->second.info.has_status)) {
    return ResourceNotFoundStatus();
  }
  t->info = v->second.info;
  t->custom = rs->custom;
  return std::nullopt;
}

HttpResponse Core::Handle(const HttpRequest& req) {
  HttpResponse r = Dispatch(req);
  return r;
}

HttpResponse Core::Dispatch(const HttpRequest& req) {
  Target t;
  std::vector<std::string> seg = SplitPath(req.path);
  std::vector<std::string> rest;
  if (seg.empty()) {
    t.kind = Target::kRoot;
  } else if (seg.size() == 1 && seg[0] == "version") {
    t.kind = Target::kVersion;
  } else if (seg.size() == 1 && (seg[0] == "healthz" || seg[0] == "livez" || seg[0] == "readyz")) {
    t.kind = Target::kHealth;
  } else if (seg[0] == "openapi") {
    t.kind = Target::kOpenApi;
  } else if (seg[0] == "api") {
    if (seg.size() == 1) {
      t.kind = Target::kApi;
    } else if (seg[1] != "v1") {
      t.kind = Target::kNotFound;
    } else {
      t.version = "v1";
      t.kind = seg.size() == 2 ? Target::kGroupVersion : Target::kResource;
      rest.assign(seg.begin() + 2, seg.end());
    }
  } else if (seg[0] == "apis") {
    if (seg.size() == 1) {
      t.kind = Target::kApis;
    } else {
      t.group = seg[1];
      if (seg.size() == 2) {
        t.kind = Target::kGroup;
      } else {
        t.version = seg[2];
        t.kind = seg.size() == 3 ? Target::kGroupVersion : Target::kResource;
        rest.assign(seg.begin() + 3, seg.end());
      }
    }
  }
  if (t.kind == Target::kResource) {
    if (!rest.empty() && rest[0] == "watch") {
      t.legacy_watch = true;
      rest.erase(rest.begin());
    }
    if (rest.size() >= 3 && rest[0] == "namespaces" &&
        !(rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"))) {
      t.ns_in_path = true;
      t.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
    if (rest.empty() || rest.size() > 3) {
      t.kind = Target::kNotFound;
    } else {
      t.plural = rest[0];
      if (rest.size() >= 2) t.name = rest[1];
      if (rest.size() == 3) t.sub = rest[2];
    }
  }

  // The verb, as Kubernetes names it.
  std::string verb;
  bool watch = false;
  if (t.kind != Target::kResource) {
    verb = req.method == "GET" ? "get" : "";
  } else if (req.method == "GET") {
    watch = t.legacy_watch || ParamTrue(req, "watch");
    verb = !t.name.empty() && !t.legacy_watch ? "get" : watch ? "watch" : "list";
    if (t.legacy_watch && !t.name.empty()) watch = true;
  } else if (!t.legacy_watch) {
    if (req.method == "POST" && t.name.empty()) verb = "create";
    if (req.method == "PUT" && !t.name.empty()) verb = "update";
    if (req.method == "PATCH" && !t.name.empty()) verb = "patch";
    if (req.method == "DELETE") verb = t.name.empty() ? "deletecollection" : "delete";
    if (req.method == "DELETE" && !t.sub.empty()) verb = "";
  }

  std::optional<ApiStatus> resolve_error;
  if (t.kind == Target::kResource) {
    std::lock_guard<std::mutex> l(mu_);
    resolve_error = ResolveLocked(&t);
  }

  absl::Duration delay;
  std::optional<ApiStatus> fault = TakeFault(t, verb, &delay);
  if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
  if (fault) return StatusResp(*fault);

  switch (t.kind) {
    case Target::kNotFound:
      return StatusResp(ResourceNotFoundStatus());
    case Target::kOpenApi:
      if (verb.empty()) return StatusResp(ResourceNotFoundStatus());
      return OpenApi(req, seg);
    case Target::kResource:
      break;
    default:
      if (verb.empty()) {
        return StatusResp(MethodNotAllowedStatus(
            "the server does not allow this method on the requested resource"));
      }
      return Discovery(req, t);
  }
  if (resolve_error) return StatusResp(*resolve_error);
  if (verb.empty()) {
    return StatusResp(
        MethodNotAllowedStatus("the server does not allow this method on the requested resource"));
  }
  if (verb == "get") return Get(req, t);
  if (verb == "list") return List(req, t);
  if (verb == "watch") return Watch(req, t);
  if (verb == "create") return Create(req, t);
  if (verb == "update") return Update(req, t, false);
  if (verb == "patch") return Update(req, t, true);
  if (verb == "delete") return Delete(req, t);
  return DeleteCollection(req, t);
}

void Core::SetServerAddress(std::string address) {
  std::lock_guard<std::mutex> l(mu_);
  server_address_ = std::move(address);
}

// ---- reads ----


TableConvertor Core::TableConvertorLocked(const Target& t) const {
  if (!t.custom) return TableConvertor::ForBuiltin(t.group, t.plural);
  Json columns;
  if (const ResourceState* crds = FindLocked("apiextensions.k8s.io", "customresourcedefinitions")) {
    auto it = crds->objects.find(StrCat(t.plural, ".", t.group));
    if (it != crds->objects.end()) {
      const Json& spec = it->second->obj.contains("spec") ? it->second->obj["spec"] : Json();
      if (spec.is_object() && spec.contains("versions") && spec["versions"].is_array()) {
        for (const Json& v : spec["versions"]) {
          if (Str(v, "name") == t.version && v.contains("additionalPrinterColumns")) {
            columns = v["additionalPrinterColumns"];
          }
        }
      }
    }
  }
  return TableConvertor::ForCustomResource(columns);
}

namespace {
// The Content-Type kube-apiserver answers a Table with.
std::string TableContentType(const std::string& version) {
  return StrCat("application/json;as=Table;v=", version, ";g=meta.k8s.io");
}
}  // namespace

HttpResponse Core::Get(const HttpRequest& req, const Target& t) {
  std::optional<std::string> table = NegotiateTable(req.accept);
  Json obj;
  std::optional<TableConvertor> conv;
  {
    std::lock_guard<std::mutex> l(mu_);
    ResourceState* rs = FindLocked(t.group, t.plural);
    if (!rs) return StatusResp(ResourceNotFoundStatus());
    auto it = rs->objects.find(Key(t.ns, t.name));
    if (it == rs->objects.end()) return StatusResp(NotFoundStatus(t.group, t.plural, t.name));
    if (!table) return RawJson(200, RenderAs(*it->second, t.ApiVersion()));
    obj = it->second->obj;
    conv = TableConvertorLocked(t);
  }
  obj["apiVersion"] = t.ApiVersion();
  Json meta = {{"resourceVersion", MetaStr(obj, "resourceVersion")}};
  HttpResponse r = JsonResp(200, conv->ToTable({&obj}, meta, clock_->Now(),
                                               ParseIncludeObject(Param(req, "includeObject")),
                                               *table));
  r.content_type = TableContentType(*table);
  return r;
}

HttpResponse Core::List(const HttpRequest& req, const Target& t) {
  Selectors sel;
  if (auto err = ParseSelectors(req, t.info, t.custom, &sel)) return StatusResp(*err);
  int64_t limit = 0;
  std::string limit_s = Param(req, "limit");
  if (!limit_s.empty() && (!ParseInt(limit_s, &limit) || limit < 0)) limit = 0;
  std::string cont = Param(req, "continue");

  std::vector<StoredPtr> page;
  int64_t rv = 0;
  std::string next_token;
  int64_t remaining = 0;
  std::optional<std::string> table = NegotiateTable(req.accept);
  std::optional<TableConvertor> conv;
  {
    std::lock_guard<std::mutex> l(mu_);
    ResourceState* rs = FindLocked(t.group, t.plural);
    if (!rs) return StatusResp(ResourceNotFoundStatus());
    if (table) conv = TableConvertorLocked(t);
    const std::vector<StoredPtr>* items = nullptr;
    std::vector<StoredPtr> fresh;
    uint64_t snap_id = 0;
    size_t offset = 0;
    if (!cont.empty()) {
      std::string decoded;
      Json tok;
      if (!UnBase64Url(cont, &decoded)) {
        return StatusResp(BadRequestStatus("continue key is not valid: illegal base64 data"));
      }
      auto parsed = base::ParseJson(decoded);
      if (!parsed.ok() || !parsed->is_object() || !(*parsed)["id"].is_number_unsigned() ||
          !(*parsed)["off"].is_number_unsigned() || !(*parsed)["rv"].is_number_integer()) {
        return StatusResp(BadRequestStatus("continue key is not valid: incorrect encoded start "
                                           "resourceVersion (version meta.k8s.io/v1)"));
      }
      snap_id = (*parsed)["id"].get<uint64_t>();
      offset = (*parsed)["off"].get<uint64_t>();
      auto sit = snapshots_.find(snap_id);
      if (sit == snapshots_.end()) {
        ApiStatus s = ExpiredStatus(kContinueExpired);
        return StatusResp(s);
      }
      items = &sit->second.items;
      rv = sit->second.rv;
      if (offset > items->size()) offset = items->size();
    } else {
      rv = rv_;
      auto begin = rs->objects.begin();
      std::string prefix;
      if (!t.ns.empty() && rs->namespaced) {
        prefix = t.ns + "/";
        begin = rs->objects.lower_bound(prefix);
      }
      for (auto it = begin; it != rs->objects.end(); ++it) {
        if (!prefix.empty() && it->first.compare(0, prefix.size(), prefix) != 0) break;
        if (StoredMatches(*it->second, sel)) fresh.push_back(it->second);
      }
      items = &fresh;
    }
    size_t end = items->size();
    if (limit > 0 && offset + static_cast<size_t>(limit) < items->size()) {
      end = offset + static_cast<size_t>(limit);
      if (snap_id == 0) {
        snap_id = next_snapshot_++;
        Snapshot snap;
        snap.items = std::move(fresh);
        snap.rv = rv;
        snapshots_[snap_id] = std::move(snap);
        while (snapshots_.size() > std::max<size_t>(options_.list_snapshots, 1)) {
          snapshots_.erase(snapshots_.begin());
        }
        items = &snapshots_[snap_id].items;
      }
      Json tok = {{"v", "meta.k8s.io/v1"},
                  {"rv", rv},
                  {"start", (*items)[end]->key},
                  {"id", snap_id},
                  {"off", end}};
      next_token = Base64Url(base::DumpJson(tok));
      remaining = static_cast<int64_t>(items->size() - end);
    }
    page.assign(items->begin() + static_cast<std::ptrdiff_t>(offset),
                items->begin() + static_cast<std::ptrdiff_t>(end));
  }
  std::string av = t.ApiVersion();
  if (conv) {
    std::vector<Json> objs;
    objs.reserve(page.size());
    for (const StoredPtr& s : page) {
      objs.push_back(s->obj);
      objs.back()["apiVersion"] = av;
    }
    std::vector<const Json*> ptrs;
    for (const Json& o : objs) ptrs.push_back(&o);
    Json meta = {{"resourceVersion", std::to_string(rv)}};
    if (!next_token.empty()) {
      meta["continue"] = next_token;
      meta["remainingItemCount"] = remaining;
    }
    HttpResponse r = JsonResp(200, conv->ToTable(ptrs, meta, clock_->Now(),
                                                 ParseIncludeObject(Param(req, "includeObject")),
                                                 *table));
    r.content_type = TableContentType(*table);
    return r;
  }
  std::string body = StrCat("{\"kind\":\"", t.info.list_kind, "\",\"apiVersion\":\"", av,
                            "\",\"metadata\":{\"resourceVersion\":\"", rv, "\"");
  if (!next_token.empty()) {
    body += StrCat(",\"continue\":\"", next_token, "\",\"remainingItemCount\":", remaining);
  }
  body += "},\"items\":[";
  size_t total = body.size();
  for (const StoredPtr& s : page) total += s->text.size() + 1;
  body.reserve(total + 2);
  for (size_t i = 0; i < page.size(); ++i) {
    if (i) body += ',';
    body += RenderAs(*page[i], av);
  }
  body += "]}";
  return RawJson(200, std::move(body));
}

HttpResponse Core::Watch(const HttpRequest& req, const Target& t) {
  Selectors sel;
  if (auto err = ParseSelectors(req, t.info, t.custom, &sel)) return StatusResp(*err);
  if (t.legacy_watch && !t.name.empty()) {
    std::string fs = Param(req, "fieldSelector");
    auto merged = api::FieldSelector::Parse(
        StrCat(fs, fs.empty() ? "" : ",", "metadata.name=", t.name));
    if (!merged.ok()) return StatusResp(BadRequestStatus(base::FromAbsl(merged.status().message())));
    sel.fields = *std::move(merged);
  }
  std::string rv_param = Param(req, "resourceVersion");
  int64_t from = 0;
  if (!rv_param.empty() && (!ParseInt(rv_param, &from) || from < 0)) {
    return StatusResp(BadRequestStatus(StrCat("invalid resource version: ", Quote(rv_param))));
  }
  bool initial = ParamTrue(req, "sendInitialEvents") || rv_param.empty() || from == 0;
  auto w = std::make_shared<Watcher>(std::max<size_t>(options_.watch_queue_capacity, 1),
                                     t.ApiVersion());
  w->group = t.group;
  w->plural = t.plural;
  w->ns = t.info.namespaced ? t.ns : "";
  w->labels = std::move(sel.labels);
  w->fields = std::move(sel.fields);
  w->bookmarks = ParamTrue(req, "allowWatchBookmarks");
  w->kind = t.info.kind;
  std::string timeout = Param(req, "timeoutSeconds");
  int64_t timeout_s = 0;
  if (!timeout.empty() && ParseInt(timeout, &timeout_s) && timeout_s > 0) {
    w->deadline = absl::Now() + absl::Seconds(timeout_s);
  }

  std::optional<std::string> table = NegotiateTable(req.accept);
  if (table) {
    w->table_version = *table;
    w->include_object = ParseIncludeObject(Param(req, "includeObject"));
    w->clock = clock_;
  }
  HttpResponse r;
  r.code = 200;
  r.watch = w;
  std::lock_guard<std::mutex> l(mu_);
  ResourceState* rs = FindLocked(t.group, t.plural);
  if (!rs) return StatusResp(ResourceNotFoundStatus());
  if (table) w->table = std::make_shared<const TableConvertor>(TableConvertorLocked(t));
  if (initial) {
    for (const auto& [key, s] : rs->objects) {
      if (MatchesLocked(*w, *s)) w->Push({"ADDED", s, ""});
    }
    if (ParamTrue(req, "sendInitialEvents") && w->bookmarks) EnqueueBookmarkLocked(*w, true);
  } else {
    if (from < rs->history_floor) {
      ApiStatus s = ExpiredStatus(StrCat("too old resource version: ", from, " (",
                                         rs->history_floor, ")"));
      w->Push({"ERROR", nullptr, base::DumpJson(s.ToJson())});
      w->Close(false);
      return r;  // not registered: the stream ends after the error
    }
    for (const Event& e : rs->history) {
      if (e.rv > from) OfferLocked(*rs, *w, e);
    }
  }
  rs->watchers.push_back(w);
  watches_cv_.notify_all();
  return r;
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
