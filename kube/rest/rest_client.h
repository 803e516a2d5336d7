#pragma once
// RestClient: HTTP(S) to the Kubernetes API server.
//
//   SP_ASSIGN_OR_RETURN(auto config, kube::ConfigFromEnvOrDefault());
//   SP_ASSIGN_OR_RETURN(std::shared_ptr<kube::RestClient> rest, kube::RestClient::Create(config));
//   SP_ASSIGN_OR_RETURN(kube::Response r, rest->Do({.method = "GET", .path = "/version"}));
//
// Every request goes through the client-side token bucket (Config::qps/burst), carries the
// bearer token (re-read from Config::bearer_token_file as it rotates, and once more after a
// 401), and is retried when the server answers 429 or 5xx WITH a Retry-After header (at most
// Config::max_retries times, waiting as told; client-go's rule). A GET whose pooled keep-alive
// connection turns out to be closed is resent once on a fresh connection (and the other idle
// connections dropped; an idle connection the server has closed is never reused); other transport
// failures are returned (client-go also retries GETs on fresh-connection resets, 1s apart; we
// leave that to the caller's backoff). Non-2xx answers become errors (see errors.h).
//
// Thread-safe: any number of threads may call Do/Watch concurrently. Keep-alive connections
// are pooled (one in use per request, up to Config::max_idle_connections kept idle); each
// watch uses its own connection.
//
// TLS: with Config::ca_pem only those roots are trusted (the system store is not consulted);
// server host names (and IP SANs) are verified; client certificates come from memory.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/resource.h"
#include "kube/rest/config.h"
#include "kube/rest/errors.h"
#include "kube/rest/rate_limiter.h"
#include "kube/rest/watch.h"

namespace spiderpool::kube {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Accept headers of client-go's metadata client: a GET or a WATCH answered with
// PartialObjectMetadata, a LIST with PartialObjectMetadataList (plain JSON from a server that
// cannot).
inline constexpr char kMetadataAccept[] =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
inline constexpr char kMetadataListAccept[] =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

struct Request {
  std::string method = "GET";
  // Absolute API path ("/api/v1/namespaces/default/pods"), without Config::server's prefix.
  // Segments must already be escaped (see ResourcePath / EscapePathSegment).
  std::string path;
  QueryParams query;  // escaped by the client
  std::string body;
  std::string content_type;  // default "application/json" when there is a body
  // Extra headers; an "Accept" here replaces the default "application/json".
  std::vector<std::pair<std::string, std::string>> headers;
  // Cancels rate-limiter and Retry-After waits and aborts the request in flight (kCancelled).
  std::stop_token stop;
};

struct Response {
  int code = 0;
  std::string body;
  // Header names lower-cased.
  std::multimap<std::string, std::string> headers;
  // First value of a header (case-insensitive name), "" if absent.
  std::string Header(std::string_view name) const;
};

// Counters, for tests and metrics.
struct RestClientStats {
  uint64_t requests = 0;      // HTTP requests sent (every attempt)
  uint64_t retries = 0;       // attempts after the first one
  uint64_t throttled = 0;     // requests that had to wait for the rate limiter
  uint64_t connections = 0;   // TCP/TLS connections opened (pool misses + watches)
  uint64_t token_reads = 0;   // bearer token file reads
  uint64_t dropped_idle = 0;  // idle keep-alive connections found closed by the server
};

class RestClient {
 public:
  // Validates the config (URL, PEMs) and builds the client. No connection is made yet.
  static absl::StatusOr<std::shared_ptr<RestClient>> Create(Config config);
  ~RestClient();
  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  // Sends the request (rate limited, retried as described above). 2xx -> the response;
  // anything else -> an error from StatusFromResponse (HTTP code, reason, Status payloads).
  // Transport failures: kUnavailable; client-side timeout: kDeadlineExceeded (IsTimeout);
  // TLS verification failure: kFailedPrecondition; stop requested: kCancelled.
  absl::StatusOr<Response> Do(const Request& request);
  // Like Do, but returns non-2xx answers as responses (errors only for transport failures).
  absl::StatusOr<Response> DoRaw(const Request& request);

  // Watches `path` (a collection path, e.g. from ResourcePath) and calls `callback` for each
  // ADDED / MODIFIED / DELETED / BOOKMARK event. Returns:
  //   OK               the server ended the stream, the callback returned false, or `stop` fired
  //                    (a blocked read is aborted promptly);
  //   an API error     the watch request was refused (410 -> IsGone), or an ERROR event
  //                    arrived (its Status becomes the error: 410 Expired -> IsGone); ERROR
  //                    events are never passed to the callback;
  //   kDataLoss        the stream was corrupt; kUnavailable etc. for transport failures.
  absl::Status Watch(std::string_view path, const WatchOptions& options,
                     const WatchCallback& callback, std::stop_token stop = {});
  absl::Status Watch(const api::ResourceInfo& resource, std::string_view namespace_name,
                     const WatchOptions& options, const WatchCallback& callback,
                     std::stop_token stop = {});

  const Config& config() const { return config_; }
  TokenBucketRateLimiter& rate_limiter() { return limiter_; }
  RestClientStats stats() const;

  class Impl;

 private:
  RestClient(Config config, std::unique_ptr<Impl> impl);
  const Config config_;
  TokenBucketRateLimiter limiter_;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes one path segment or query component (RFC 3986 unreserved kept).
std::string EscapeComponent(std::string_view text);
std::string EscapePathSegment(std::string_view segment);  // same as EscapeComponent
// "/api/v1[/namespaces/<ns>]/<plural>[/<name>[/<subresource>]]" or the /apis/<group>/...
// form. `namespace_name` is ignored for cluster-scoped resources; "" on a namespaced resource
// addresses all namespaces (valid for list/watch only).
std::string ResourcePath(const api::ResourceInfo& resource, std::string_view namespace_name,
                         std::string_view name = "", std::string_view subresource = "");

}  // namespace spiderpool::kube
