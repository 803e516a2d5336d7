#pragma once
// LoopbackApiServer: an in-process HTTPS server that behaves like kube-apiserver for what an
// operator uses. Integration tests start one on 127.0.0.1:0, point a real client at url() with
// ca_pem() and token() (or a kubeconfig from WriteKubeconfig) and exercise the same code paths
// they would against a real cluster.
//
// What it serves, for every registered group/version/resource (namespaced or cluster-scoped):
//   create (generateName, uid, creationTimestamp, resourceVersion, generation), get,
//   list (labelSelector, fieldSelector on metadata.name / metadata.namespace / spec.nodeName,
//   limit/continue pagination against a bounded set of list snapshots), update with optimistic
//   concurrency, merge / JSON / (built-in types only) strategic-merge patch, the status
//   subresource, delete with finalizers and preconditions, deletecollection, watch
//   (resourceVersion semantics, bookmarks, 410 as an ERROR event, selectors), discovery
//   (/version, /api, /api/v1, /apis, /apis/<g>/<v>), bearer-token (and client-certificate)
//   authentication, NamespaceLifecycle, and CustomResourceDefinitions (registered on create,
//   validated/pruned through a SchemaValidator, unregistered with their objects on delete).
//
// Also modelled because our code and tests depend on them: graceful deletion of pods bound to a
// node, asynchronous namespace deletion, kube-root-ca.crt and the default ServiceAccount in every
// namespace, the owner-reference garbage collector (controllers.h), validation of built-in kinds
// (builtin_validation.h), connections the server ends (idle keep-alive, watch timeouts).
// Deliberate differences from kube-apiserver (the full list is in README.md): no RBAC (every
// authenticated user may do everything), strategic merge patch is approximated (lists of
// objects merge by "name"), no server-side apply, no managedFields, no workload controllers.
//
// Admission webhooks registered in Mutating/ValidatingWebhookConfiguration objects are called
// over HTTPS (webhook_admission.h). get/list/watch answer meta.k8s.io Tables when the client
// asks (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, as kubectl get does; table.h).
//
// Thread-safety: every public method may be called from any thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/resource.h"
#include "base/clock.h"
#include "base/json.h"

namespace spiderpool::kube::testing {

// One API resource served by the server: api::ResourceInfo, the same description the product's
// clients use (singular and list_kind are filled by Normalized when left empty).
using ResourceInfo = api::ResourceInfo;

// metav1.StatusCause.
struct StatusCause {
  std::string reason = {};  // "FieldValueInvalid", "FieldValueRequired", ...
  std::string message = {};
  std::string field = {};  // "spec.ips[0]"
};

// A failure answer in the shape of a metav1.Status ("status":"Failure").
struct ApiStatus {
  int code = 500;
  std::string reason = {};  // "NotFound", "AlreadyExists", "Conflict", "Invalid", ...
  std::string message = {};
  // details (omitted from JSON when all empty)
  std::string name = {};
  std::string group = {};
  std::string kind = {};
  std::vector<StatusCause> causes = {};
  int retry_after_seconds = 0;  // details.retryAfterSeconds and the Retry-After header

  base::Json ToJson() const;
};

// The authenticated caller.
struct UserInfo {
  std::string username = {};
  std::string uid = {};
  std::vector<std::string> groups = {};
};

// ---- Admission seam -------------------------------------------------------------------
// The server calls the installed Admission on every create / update / patch / delete
// (also on the status subresource), in kube-apiserver's order:
//   decode -> Mutate -> (CRD) schema validation + pruning -> Validate -> persist.
// It never holds its own locks while calling admission, so an implementation may call back
// into the server (e.g. ListObjects to read webhook configurations) or do network I/O.
enum class AdmissionOperation { kCreate, kUpdate, kDelete };
std::string_view AdmissionOperationName(AdmissionOperation op);  // "CREATE", "UPDATE", "DELETE"

struct AdmissionAttributes {
  AdmissionOperation operation = AdmissionOperation::kCreate;
  ResourceInfo resource = {};  // group/version/kind/plural of the request
  std::string subresource = {};  // "" or "status"
  std::string namespace_name = {};
  std::string name = {};  // for CREATE with generateName: the generated name
  base::Json old_object = {};  // null for CREATE; the stored object for UPDATE/DELETE
  UserInfo user = {};
  bool dry_run = false;
  base::Json options = {};  // CreateOptions / UpdateOptions / DeleteOptions as sent (may be null)
};

class Admission {
 public:
  virtual ~Admission() = default;
  // Mutating phase. `object` is the new object (null JSON for DELETE); it may be modified.
  // Return an ApiStatus to reject the request with it.
  virtual std::optional<ApiStatus> Mutate(const AdmissionAttributes& attrs, base::Json* object) {
    return std::nullopt;
  }
  // Validating phase on the final object (null JSON for DELETE). Return an ApiStatus to reject.
  virtual std::optional<ApiStatus> Validate(const AdmissionAttributes& attrs,
                                            const base::Json& object) {
    return std::nullopt;
  }
};

// Resolves an admission webhook's clientConfig.service {namespace, name, port} to the
// "host:port" to dial (there is no cluster network). TLS still verifies the certificate for
// "<name>.<namespace>.svc". An error fails the webhook call (failurePolicy applies).
using ServiceResolver = std::function<absl::StatusOr<std::string>(
    std::string_view ns, std::string_view name, int port)>;

// ---- Schema seam (CustomResourceDefinitions) --------------------------------------------
// Validates `object` against one CRD version's openAPIV3Schema and prunes unknown fields in
// place. Returns the field errors (empty = valid); the server answers 422 Invalid with them.
using SchemaValidator = std::function<std::vector<StatusCause>(base::Json* object)>;
// Builds the validator for one CRD version from its spec.versions[].schema.openAPIV3Schema.
// An error rejects the CRD (422). The default uses kube/testing/openapi when linked in.
using SchemaValidatorFactory =
    std::function<absl::StatusOr<SchemaValidator>(const base::Json& open_api_v3_schema)>;
SchemaValidatorFactory DefaultSchemaValidatorFactory();

// ---- Fault injection ---------------------------------------------------------------------
// Which requests a fault applies to; empty strings match anything.
struct FaultMatch {
  std::string verb = {};  // get list watch create update patch delete deletecollection
  std::string resource = {};  // plural ("pods"); "pods/status" matches only the subresource
  std::string namespace_name = {};
  std::string name = {};
};

// One resource of ListObjectsAtOnce; ns empty = all namespaces.
struct ObjectsQuery {
  std::string group = {};
  std::string version = {};
  std::string plural = {};
  std::string ns = {};
};

// Requests the server has answered, by HTTP method (watches are GETs).
struct RequestCounts {
  int64_t get = 0, post = 0, put = 0, patch = 0, delete_ = 0, other = 0;
  // Of those: answered 504 Timeout because their deadline (LoopbackOptions::request_timeout or
  // a shorter `timeout` query parameter) passed while they waited in the latency model; and
  // dropped unserved because their client closed the connection while they waited.
  int64_t timed_out = 0, abandoned = 0;
  int64_t writes() const { return post + put + patch + delete_; }
};

// Seeded random faults on requests that come over HTTP (in-process Call() is exempt, so a
// harness can seed and inspect state undisturbed). Off by default (all rates 0). Each request
// to a resource draws once: with `conflict_rate` an update/patch answers 409 Conflict (not
// performed); with `too_many_requests_rate` 429 TooManyRequests + Retry-After
// `retry_after_seconds`; with `internal_error_rate` 500 InternalError (not performed); with
// `timeout_rate` a non-watch request IS performed (a write lands), its answer is held for
// `timeout_delay` and replaced by 504 Timeout, as kube-apiserver's timeout filter does.
struct RandomFaults {
  uint64_t seed = 1;
  FaultMatch match = {};
  double conflict_rate = 0;
  double too_many_requests_rate = 0;
  int retry_after_seconds = 1;
  double internal_error_rate = 0;
  double timeout_rate = 0;
  absl::Duration timeout_delay = absl::Seconds(1);
};

// Faults injected so far (RandomFaults draws, CloseWatches, CutConnections).
struct FaultCounts {
  int64_t conflicts = 0;          // 409
  int64_t too_many_requests = 0;  // 429
  int64_t internal_errors = 0;    // 500
  int64_t timeouts = 0;           // 504 after the request was performed
  int64_t watch_closes = 0;       // CloseWatches calls
  int64_t watches_closed = 0;     // streams open when CloseWatches was called
  int64_t connection_cuts = 0;    // CutConnections calls
  int64_t connections_cut = 0;    // sockets shut down by them
};

// ---- Latency model ----------------------------------------------------------------------
// How slow the server answers, to make benches see what a real kube-apiserver + etcd costs
// (kube/testing/latency.h; the benches' calibrated values are CalibratedLatencyModel()).
// Off by default (all zero): unit tests are unchanged. Applies to requests that come over
// HTTP (in-process Call() is exempt, like RandomFaults) and to the delivery of every watch
// event. Delays run on the server's clock (LoopbackOptions::clock).
//   - per_request: every request waits this long before it is served (handler + admission +
//     serialization; a HTTP worker thread is held, as a kube-apiserver goroutine is).
//   - per_write: every create/update/patch/delete/deletecollection waits this much more
//     (the etcd commit; writes to different objects overlap).
//   - per_object_write: writes (update/patch/delete, status included) of ONE object take turns
//     in arrival order (after their request delay); a write that lands holds the object this
//     long before it is answered (etcd + GuaranteedUpdate on one key): N concurrent writes of
//     one object that all land take >= N x per_object_write. A write that fails (409 on a stale
//     resourceVersion, 404, 422) waits for the turn but holds nothing, as kube-apiserver
//     answers a failed precondition without an etcd write.
//   - watch_delay: a watch event is delivered no earlier than this after the write that made
//     it (watch cache + fan-out); events keep their order.
//   - jitter: each delay above is stretched by a random factor in [1, 1 + jitter] (seeded).
struct LatencyModel {
  absl::Duration per_request = absl::ZeroDuration();
  absl::Duration per_write = absl::ZeroDuration();
  absl::Duration per_object_write = absl::ZeroDuration();
  absl::Duration watch_delay = absl::ZeroDuration();
  double jitter = 0;
  uint64_t seed = 1;
  bool enabled() const {
    return per_request > absl::ZeroDuration() || per_write > absl::ZeroDuration() ||
           per_object_write > absl::ZeroDuration() || watch_delay > absl::ZeroDuration();
  }
};

// The values the benches use by default: calibrated against a real kube-apiserver + etcd on
// the project's 2-core machine (reasoning and runs in bench/README.md, "ipam_e2e").
LatencyModel CalibratedLatencyModel();

struct LoopbackOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = pick a free port
  // Accepted bearer tokens; empty = one random token. Token users are "loopback-admin" in
  // groups system:masters + system:authenticated.
  std::vector<std::string> tokens = {};
  // Also accept TLS client certificates signed by the server's CA (CN = user, O = groups).
  bool accept_client_certificates = true;
  // Watch events kept for resuming watches from a resourceVersion: at most this many per
  // resource, and while there are more than one, at most watch_history_bytes of serialized
  // objects (0 = no byte bound). Older resourceVersions get 410 Gone, as they do from
  // kube-apiserver once its watch cache has moved past them.
  size_t watch_history_size = 1000;
  size_t watch_history_bytes = 64 << 20;
  // Events buffered for one slow watcher before its stream is closed (it must re-list).
  size_t watch_queue_capacity = 100000;
  // BOOKMARK period for watches with allowWatchBookmarks=true.
  absl::Duration bookmark_interval = absl::Seconds(1);
  // Paginated list snapshots kept for continue tokens (oldest dropped first -> 410).
  size_t list_snapshots = 16;
  // HTTP worker threads (each open watch occupies one).
  int worker_threads = 128;
  // Admission plugin. null = the default: WebhookAdmission (webhook_admission.h), which calls
  // the webhooks of the MutatingWebhookConfiguration / ValidatingWebhookConfiguration objects
  // stored in this server, like kube-apiserver (no configurations = allow everything).
  std::shared_ptr<Admission> admission = {};
  // false = no default admission at all (when `admission` is null).
  bool admission_webhooks = true;
  // How the default admission dials clientConfig.service webhooks; null =
  // ClusterServiceResolver (the Service object's dial-address annotation, clusterIP or
  // externalName).
  ServiceResolver service_resolver = {};
  SchemaValidatorFactory schema_validator_factory = {};  // null = DefaultSchemaValidatorFactory()
  // Built-in group/versions not to serve, e.g. {"resource.k8s.io/v1"} to act as an older
  // cluster (register the older version with RegisterResource).
  std::vector<std::string> omit_builtin_versions = {};
  base::Clock* clock = nullptr;  // for timestamps; null = base::RealClock::Get()
  // Existing CA to serve with (PEM); empty = generate a fresh one.
  std::string ca_cert_pem = {};
  std::string ca_key_pem = {};
  bool log_requests = false;
  // Connection behaviour, short by default so that every test run goes through the client's
  // reconnect paths (kube-apiserver: 90 s idle keep-alive, --min-request-timeout 1800 s).
  // An idle keep-alive connection is closed by the server after this long.
  absl::Duration keep_alive_idle_timeout = absl::Seconds(2);
  // A watch without timeoutSeconds is ended by the server after a random time in
  // [min, 2*min]; zero = never.
  absl::Duration watch_min_request_timeout = absl::Seconds(20);
  // kube-controller-manager's visible side (controllers.h): kube-root-ca.crt and the default
  // ServiceAccount in each namespace, namespace deletion, the owner-reference garbage
  // collector. false = a server alone: namespaces then stay Terminating.
  bool run_controllers = true;
  // Off by default; see LatencyModel. SetLatencyModel changes it at run time.
  LatencyModel latency = {};
  // kube-apiserver's --request-timeout (default 60 s): a non-watch request still waiting in
  // the latency model at its deadline (this, or its shorter `timeout` query parameter) is
  // answered 504 Timeout; a write that landed but was still holding its object is answered
  // 504 as well. A request whose client closes the connection while it waits is dropped
  // unserved (kube-apiserver cancels its context).
  absl::Duration request_timeout = absl::Seconds(60);
};

class LoopbackApiServer {
 public:
  static absl::StatusOr<std::unique_ptr<LoopbackApiServer>> Start(LoopbackOptions options = {});
  // Stops the server: open watches end, worker threads are joined.
  ~LoopbackApiServer();
  LoopbackApiServer(const LoopbackApiServer&) = delete;
  LoopbackApiServer& operator=(const LoopbackApiServer&) = delete;

  void Stop();

  std::string url() const;  // "https://127.0.0.1:PORT"
  int port() const;
  const std::string& ca_pem() const;
  const std::string& token() const;  // the first accepted token
  // Kubeconfig YAML: cluster "loopback" (server + certificate-authority-data), user
  // "loopback" (token), context "loopback" = current-context.
  std::string KubeconfigYaml() const;
  absl::Status WriteKubeconfig(const std::string& path) const;
  // A client certificate (PEM cert + key) for `user`, signed by the server CA.
  absl::StatusOr<std::pair<std::string, std::string>> IssueClientCertificate(
      std::string_view user, const std::vector<std::string>& groups) const;

  // Serves one more resource (idempotent for an identical ResourceInfo). `validator` runs on
  // create/update/patch like a CRD schema.
  absl::Status RegisterResource(ResourceInfo info, SchemaValidator validator = nullptr);
  std::vector<ResourceInfo> Resources() const;

  // Admission may be swapped at any time (null = allow everything). Replacing it drops the
  // default webhook admission; wrap DefaultAdmission() to keep calling webhooks.
  void SetAdmission(std::shared_ptr<Admission> admission);
  // The webhook admission installed at start (null if `admission` was given or
  // admission_webhooks is false). It reads this server's store: do not use it after the
  // server is destroyed.
  std::shared_ptr<Admission> DefaultAdmission() const;

  // In-process request, no HTTP and no authentication (user "loopback-admin"): for seeding
  // and inspecting state in tests. `path_and_query` like "/api/v1/namespaces/default/pods".
  // Watch requests are refused (400). Fault injection applies.
  struct CallResult {
    int code = 0;
    base::Json body;
  };
  CallResult Call(std::string_view method, std::string_view path_and_query,
                  const base::Json& body = nullptr,
                  std::string_view content_type = "application/json");
  // Direct reads of the store (copies), e.g. for admission implementations. `ns` empty =
  // all namespaces.
  std::vector<base::Json> ListObjects(std::string_view group, std::string_view version,
                                      std::string_view plural, std::string_view ns = "") const;

  // Several ListObjects taken at one instant (one lock): a consistent snapshot across
  // resources, e.g. pools and endpoints for a checker.
  std::vector<std::vector<base::Json>> ListObjectsAtOnce(
      const std::vector<ObjectsQuery>& queries) const;

  int64_t CurrentResourceVersion() const;
  // Watch streams registered for events and not closed (by CloseWatches, overflow, timeout or
  // a deleted CRD).
  size_t OpenWatches() const;
  // Blocks until at least `n` watch streams are open, i.e. their initial events are queued
  // and every later write will reach them. Tests use it instead of sleeping.
  bool WaitForWatches(size_t n, absl::Duration timeout = absl::Seconds(10)) const;

  // ---- Fault injection (thread-safe) ----
  // Delays every matching request (zero clears).
  void InjectDelay(absl::Duration delay, FaultMatch match = {});
  // The next `n` matching requests fail with `http_code` and a proper Status body
  // (429 TooManyRequests + Retry-After, 500 InternalError, 409 Conflict, 503 ServiceUnavailable,
  // 504 Timeout, ...).
  void FailNext(int n, int http_code, FaultMatch match = {}, int retry_after_seconds = 0);
  void ClearFaults();
  RequestCounts request_counts() const;
  // Ends every open watch stream (clients see EOF).
  void CloseWatches();
  // Random faults (see RandomFaults); all rates 0 = off. Replaces the previous setting.
  void SetRandomFaults(RandomFaults faults);
  FaultCounts fault_counts() const;
  // Shuts down every accepted connection at once, as an apiserver restart looks to clients:
  // in-flight requests and watch streams end, keep-alive connections are gone; the store and
  // the listener stay. Returns how many connections were cut.
  int CutConnections();
  // Replaces the latency model (see LatencyModel; a default-constructed one turns it off).
  // Requests already waiting keep their delay.
  void SetLatencyModel(LatencyModel model);
  LatencyModel latency_model() const;
  // Writes waiting for their object's turn (per_object_write) behind another write of it: lets
  // a test know a request is queued, with its deadline set, before it moves the clock.
  size_t WritesWaitingForTurn() const;
  // Forgets watch history and list snapshots: older resourceVersions get 410 on watch and
  // outstanding continue tokens expire.
  void CompactHistory();

  class Impl;

 private:
  explicit LoopbackApiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spiderpool::kube::testing
