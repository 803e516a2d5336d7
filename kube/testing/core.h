#pragma once
// The transport-independent heart of the loopback API server: the resource registry, the
// object store, watch fan-out with history, CRD handling, discovery and fault injection.
// apiserver.cc puts HTTPS, authentication and streaming in front of it; LoopbackApiServer::Call
// drives it directly.
//
// Concurrency: one mutex (mu_) guards registry + objects + watchers. Admission and schema
// validators run without it. Watch delivery never blocks writers: each watcher has a bounded
// queue, and an overflowing watcher is closed.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "api/labels.h"
#include "base/clock.h"
#include "base/json.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/latency.h"
#include "kube/testing/table.h"

namespace spiderpool::kube::testing::internal {

struct HttpRequest {
  std::string method;  // GET POST PUT PATCH DELETE
  std::string path;    // decoded path, no query
  std::multimap<std::string, std::string> params;  // decoded query parameters
  std::string body;
  std::string content_type;
  std::string accept;  // Accept header (Table negotiation)
  UserInfo user;
  bool network = false;       // came over HTTP (RandomFaults apply)
  bool faults_taken = false;  // faults already drawn for this request (a held timeout)
  // True once the client has closed the connection (HTTP requests; null = never).
  std::function<bool()> peer_gone;
};

class Watcher;

struct HttpResponse {
  int code = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // Set for a streaming watch: the body is produced by the watcher.
  std::shared_ptr<Watcher> watch;
};

// One stored object: the JSON, its serialization, cached labels.
struct Stored {
  base::Json obj;
  std::string text;  // DumpJson(obj)
  std::string key;   // "ns/name" or "name"
  int64_t rv = 0;
  api::Labels labels;
  std::vector<std::string> owner_uids;  // metadata.ownerReferences[].uid
};
using StoredPtr = std::shared_ptr<const Stored>;

// One queued watch output.
struct WatchItem {
  std::string type;           // ADDED MODIFIED DELETED BOOKMARK ERROR
  StoredPtr obj;              // object events
  std::string raw;            // BOOKMARK / ERROR: the serialized object
  // Not delivered before this time on the watcher's clock (LatencyModel::watch_delay).
  absl::Time due = absl::InfinitePast();
};

// A live watch stream. The producer side (Core, under its lock) pushes; the consumer (the
// HTTP thread) pops and writes.
class Watcher {
 public:
  Watcher(size_t capacity, std::string api_version) : capacity_(capacity),
                                                       api_version_(std::move(api_version)) {}
  // Producer: never blocks. Returns false if the watcher is closed (or just overflowed).
  // An item is never due before the one queued ahead of it (order is kept).
  bool Push(WatchItem item);
  // Ends the stream after already queued items (`drop` = discard them).
  void Close(bool drop = false);
  bool closed() const;
  // Consumer: waits until items are due (queued and past their `due` time on `clock`), the
  // stream closes, or `deadline`. Returns the due items (possibly none; all queued ones once
  // closed) and whether the stream is finished.
  std::vector<WatchItem> Wait(absl::Time deadline, bool* finished);
  // "{"type":...,"object":...}\n" for one item, in this watch's apiVersion.
  std::string Render(const WatchItem& item) const;
  const std::string& api_version() const { return api_version_; }

  // Immutable after registration.
  std::string group, plural, ns;  // ns "" = all namespaces
  api::Selector labels;
  api::FieldSelector fields;
  bool bookmarks = false;
  absl::Time deadline = absl::InfiniteFuture();
  std::string kind;
  // Set for a watch that asked for Tables: object events are rendered as one-row Tables, the
  // first one with the column definitions.
  std::shared_ptr<const TableConvertor> table;
  std::string table_version;
  IncludeObject include_object = IncludeObject::kMetadata;
  // Set for a watch that asked for PartialObjectMetadata (client-go's metadata informers):
  // object events carry only the metadata, in meta.k8s.io/<this version>.
  std::string metadata_version;
  base::Clock* clock = nullptr;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchItem> queue_;  // guarded by mu_
  bool closed_ = false;           // guarded by mu_
  mutable bool table_headers_sent_ = false;  // only touched by the consumer (Render)
  size_t capacity_;
  std::string api_version_;
};

struct CoreOptions {
  size_t watch_history_size = 1000;
  size_t watch_queue_capacity = 100000;
  size_t list_snapshots = 16;
  base::Clock* clock = nullptr;
  SchemaValidatorFactory schema_validator_factory = {};
  std::shared_ptr<Admission> admission = {};
  std::vector<std::string> omit_builtin_versions = {};  // "group/version" of built-ins to skip
  // A watch without timeoutSeconds ends after a random duration in [min, 2*min], as
  // kube-apiserver's --min-request-timeout does (zero: never).
  absl::Duration watch_min_request_timeout = absl::ZeroDuration();
  LatencyModel latency = {};  // off by default
  // kube-apiserver's --request-timeout: the deadline of a non-watch request that comes over
  // HTTP (a shorter `timeout` query parameter wins).
  absl::Duration request_timeout = absl::Seconds(60);
  // Watch history is also bounded by the serialized size of the objects it keeps (0 = by
  // count only).
  size_t watch_history_bytes = 0;
};

// One stored object with the resource it belongs to (for the controllers).
struct ObjectRef {
  std::string group, version, plural;  // version: one the resource is served at
  bool namespaced = true;
  StoredPtr obj;
  std::string Path() const;  // "/api/v1/namespaces/ns/pods/name", "/apis/g/v/plural/name"
};

// Kinds of stored change, for EventHook.
using EventHook = std::function<void(std::string_view type, const ObjectRef& ref,
                                     const StoredPtr& prev)>;

class Core {
 public:
  explicit Core(CoreOptions options);
  ~Core();

  HttpResponse Handle(const HttpRequest& req);

  absl::Status RegisterResource(ResourceInfo info, SchemaValidator validator, bool custom);
  std::vector<ResourceInfo> Resources() const;
  void SetAdmission(std::shared_ptr<Admission> admission);
  std::vector<base::Json> ListObjects(std::string_view group, std::string_view version,
                                      std::string_view plural, std::string_view ns) const;
  std::vector<std::vector<base::Json>> ListObjectsAtOnce(
      const std::vector<ObjectsQuery>& queries) const;
  int64_t CurrentResourceVersion() const;

  // Watch bookkeeping for the HTTP layer.
  void EnqueueBookmark(const std::shared_ptr<Watcher>& w);
  void SetServerAddress(std::string address);
  void RemoveWatcher(const std::shared_ptr<Watcher>& w);
  size_t OpenWatches() const;
  bool WaitForWatches(size_t n, absl::Duration timeout) const;
  void CloseWatches();
  void CompactHistory();

  // Observes every stored change (ADDED/MODIFIED/DELETED) after it is made. Called with the
  // store locked: the hook may only queue work (the controllers do it on their own thread).
  void SetEventHook(EventHook hook);
  // Every served resource's objects: all of them (for a start-up resync).
  std::vector<ObjectRef> AllObjects() const;
  // Objects whose metadata.ownerReferences name one of `uids`.
  std::vector<ObjectRef> DependentsOf(const std::set<std::string>& uids) const;
  // The namespaced objects stored in `ns`.
  std::vector<ObjectRef> NamespaceContents(std::string_view ns) const;
  // The object, if stored.
  std::optional<ObjectRef> GetObject(std::string_view group, std::string_view plural,
                                     std::string_view ns, std::string_view name) const;
  // group/plural of a served apiVersion + kind.
  std::optional<ResourceInfo> ResourceFor(std::string_view api_version,
                                          std::string_view kind) const;
  // The namespace finalizer's last step (PUT namespaces/<ns>/finalize by the namespace
  // controller): drops "kubernetes" from spec.finalizers; a terminating namespace without
  // finalizers and contents is then removed.
  void FinalizeNamespace(std::string_view ns);

  // Faults.
  void InjectDelay(absl::Duration delay, FaultMatch match);
  void FailNext(int n, int http_code, FaultMatch match, int retry_after_seconds);
  void ClearFaults();
  void SetRandomFaults(RandomFaults faults);
  FaultCounts fault_counts() const;
  void CountWatchClose(int64_t streams);
  void CountConnectionCut(int64_t sockets);
  void SetLatencyModel(LatencyModel model) { latency_.Set(model); }
  LatencyModel latency_model() const { return latency_.Get(); }
  size_t WritesWaitingForTurn() const { return latency_.WritesWaiting(); }
  // HTTP requests answered 504 because their deadline passed before they were served, and
  // requests dropped unserved because their client went away.
  int64_t timed_out() const { return timed_out_.load(std::memory_order_relaxed); }
  int64_t abandoned() const { return abandoned_.load(std::memory_order_relaxed); }

 private:
  struct VersionState {
    ResourceInfo info;  // version-specific view (has_status may differ)
    SchemaValidator validator;
    // A CRD version's selectableFields, without the leading dot ("status.current.node").
    std::vector<std::string> selectable_fields;
  };
  struct Event {
    std::string type;
    int64_t rv;
    StoredPtr obj;   // current (DELETED: final state with the delete RV)
    StoredPtr prev;  // previous state (MODIFIED/DELETED)
  };
  struct ResourceState {
    std::string group, plural, kind, singular, list_kind;
    bool namespaced = true;
    bool custom = false;  // served for a CRD (unstructured semantics)
    std::vector<std::string> short_names;
    std::map<std::string, VersionState> versions;  // by version
    std::string storage_version;
    std::map<std::string, StoredPtr> objects;  // by key
    std::deque<Event> history;
    size_t history_bytes = 0;   // serialized size of history's objects
    int64_t history_floor = 0;  // every event with rv > floor is in history
    std::list<std::shared_ptr<Watcher>> watchers;
  };
  struct Snapshot {
    std::vector<StoredPtr> items;
    int64_t rv = 0;
  };
  struct Fault {
    FaultMatch match;
    int remaining = 0;
    int code = 0;
    int retry_after = 0;
    absl::Duration delay;
  };
  // A parsed request path.
  struct Target {
    enum Kind {
      kRoot, kVersion, kHealth, kApi, kApis, kGroup, kGroupVersion, kResource, kOpenApi, kNotFound
    } kind = kNotFound;
    std::string group, version, ns, plural, name, sub;
    bool legacy_watch = false;
    bool ns_in_path = false;
    // Resolved for kResource:
    ResourceInfo info;
    bool custom = false;
    std::vector<std::string> selectable_fields;  // the CRD version's (VersionState)
    std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  };
  struct WriteCtx;

  // Routing.
  HttpResponse Dispatch(const HttpRequest& req);
  // Dispatch's last step: the request routed to its handler (after faults and latency).
  HttpResponse Serve(const HttpRequest& req, const Target& t, const std::string& verb,
                     const std::vector<std::string>& seg,
                     const std::optional<ApiStatus>& resolve_error);
  HttpResponse Discovery(const HttpRequest& req, const Target& t);
  HttpResponse OpenApi(const HttpRequest& req, const std::vector<std::string>& seg);
  HttpResponse Get(const HttpRequest& req, const Target& t);
  HttpResponse List(const HttpRequest& req, const Target& t);
  HttpResponse Watch(const HttpRequest& req, const Target& t);
  HttpResponse Create(const HttpRequest& req, const Target& t);
  HttpResponse Update(const HttpRequest& req, const Target& t, bool patch);
  HttpResponse Delete(const HttpRequest& req, const Target& t);
  HttpResponse DeleteCollection(const HttpRequest& req, const Target& t);

  // Helpers (the *Locked ones require mu_).
  ResourceState* FindLocked(std::string_view group, std::string_view plural);
  const ResourceState* FindLocked(std::string_view group, std::string_view plural) const;
  std::optional<ApiStatus> ResolveLocked(Target* t);
  int64_t NextRvLocked() { return ++rv_; }
  std::vector<base::Json> ListObjectsLocked(std::string_view group, std::string_view version,
                                            std::string_view plural, std::string_view ns) const;
  size_t CountOpenLocked() const;  // registered watchers that are not closed
  StoredPtr MakeStored(base::Json obj, std::string key, int64_t rv) const;
  void EmitLocked(ResourceState& rs, std::string type, StoredPtr obj, StoredPtr prev);
  ObjectRef RefLocked(const ResourceState& rs, StoredPtr obj) const;
  // A terminating namespace goes away when it is empty and has no finalizers left.
  void MaybeRemoveNamespaceLocked(std::string_view ns);
  void EnqueueBookmarkLocked(Watcher& w, bool initial_events_end);
  // `due`: when a live event may be delivered (LatencyModel::watch_delay); replays are due at once.
  void OfferLocked(const ResourceState& rs, Watcher& w, const Event& e,
                   absl::Time due = absl::InfinitePast()) const;
  bool MatchesLocked(const Watcher& w, const Stored& s) const;
  // Removes an object for good (DELETED event; namespace/CRD side effects).
  void RemoveLocked(ResourceState& rs, const StoredPtr& cur);
  void AfterRemoveLocked(ResourceState& rs, const Stored& removed);
  void UnregisterCrdLocked(const base::Json& crd);
  std::optional<ApiStatus> ApplyCrdLocked(const base::Json& crd,
                                         const std::map<std::string, SchemaValidator>& validators);
  std::optional<ApiStatus> PlanCrd(const base::Json& crd,
                                   std::map<std::string, SchemaValidator>* validators) const;
  void SetCrdStatus(base::Json* crd, const base::Json* old) const;
  std::optional<ApiStatus> CheckNamespaceLocked(const Target& t, std::string_view name) const;
  // The Table printer for a resource: the CRD version's additionalPrinterColumns, or the
  // built-in printer.
  TableConvertor TableConvertorLocked(const Target& t) const;
  std::optional<ApiStatus> TakeFault(const Target& t, std::string_view verb,
                                     absl::Duration* delay);

  std::string NowRfc3339() const;
  std::string NewUid();
  std::string RandomSuffix();

  CoreOptions options_;
  base::Clock* clock_;

  mutable std::mutex mu_;
  mutable std::condition_variable watches_cv_;
  int64_t rv_ = 0;                                      // guarded by mu_
  std::map<std::pair<std::string, std::string>, ResourceState> resources_;  // (group, plural)
  std::map<uint64_t, Snapshot> snapshots_;              // guarded by mu_
  uint64_t next_snapshot_ = 1;                          // guarded by mu_
  std::shared_ptr<Admission> admission_;                // guarded by mu_
  std::string server_address_;                          // guarded by mu_
  std::mt19937_64 rng_;                                 // guarded by mu_

  EventHook event_hook_;                                // guarded by mu_
  // The garbage collector's graph (kube-controller-manager keeps one too): owner uid ->
  // (group, plural, key) of every object naming it, maintained by EmitLocked.
  using DependentKey = std::tuple<std::string, std::string, std::string>;
  std::unordered_map<std::string, std::set<DependentKey>> dependents_;  // guarded by mu_

  // 504 Timeout for a request whose deadline passed (counted in timed_out_).
  HttpResponse DeadlineExceeded();
  // Draws the random fault of one network request: 0 none, else 409/429/500/504.
  int DrawRandomFault(const Target& t, std::string_view verb);

  mutable std::mutex faults_mu_;
  std::vector<Fault> faults_;  // guarded by faults_mu_
  RandomFaults random_faults_;        // guarded by faults_mu_
  std::mt19937_64 fault_rng_;         // guarded by faults_mu_
  FaultCounts fault_counts_;          // guarded by faults_mu_

  LatencyState latency_;  // its own lock; never takes mu_
  std::atomic<int64_t> timed_out_{0};
  std::atomic<int64_t> abandoned_{0};
};

}  // namespace spiderpool::kube::testing::internal
