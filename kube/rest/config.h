#pragma once
// How to reach and authenticate to a Kubernetes API server, and the loaders that build it:
// a kubeconfig file (LoadKubeconfig), the pod's service account (InClusterConfig), or
// whichever applies (ConfigFromEnvOrDefault: $KUBECONFIG, then in-cluster, then
// ~/.kube/config).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/clock.h"

namespace spiderpool::kube {

struct Config {
  // "https://10.96.0.1:443", "https://[fd00::1]:6443", "http://127.0.0.1:8001" (kubectl proxy),
  // optionally with a path prefix ("https://rancher/k8s/clusters/c-1").
  std::string server;
  // Trusted CA bundle (PEM). When set, ONLY these roots are trusted (not the system's).
  // Empty = the system roots.
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;

  // Bearer token. With `bearer_token_file` set, the file wins: it is re-read at most every
  // `token_refresh_period` and immediately after a 401 (bound service-account tokens rotate);
  // `bearer_token` is then only the fallback while the file cannot be read.
  std::string bearer_token;
  std::string bearer_token_file;
  absl::Duration token_refresh_period = absl::Minutes(1);

  // TLS client certificate (PEM; the cert may be followed by intermediates) and key.
  std::string client_cert_pem;
  std::string client_key_pem;

  // Client-side token bucket applied to every request (client-go defaults). qps <= 0 turns
  // the limiter off.
  double qps = 5;
  int burst = 10;
  // Retries of 429 / 5xx answers that carry Retry-After (client-go: 10).
  int max_retries = 10;

  // Per-operation socket timeout of ordinary requests (connect, each read and write); also
  // sent as their `timeout` query parameter, so the server gives up when we do.
  absl::Duration timeout = absl::Seconds(30);
  // Socket read timeout of watch streams when the watch sets no timeout_seconds (otherwise
  // timeout_seconds + 30s).
  absl::Duration watch_read_timeout = absl::Minutes(10);

  std::string user_agent = "spiderpool/v1";
  // Namespace of the kubeconfig context / the service account (informational; "" if unknown).
  std::string namespace_;

  // Idle keep-alive connections kept for reuse: client-go's transport keeps 25 per host. With 8,
  // an agent's bursts (8 ADDs at once beside its background writes and reads) closed the
  // connections above 8 after each burst and paid a new TLS handshake for them at the next.
  int max_idle_connections = 25;

  // Time source for the rate limiter, Retry-After waits and token refresh (null = real).
  base::Clock* clock = nullptr;

  base::Clock& GetClock() const { return clock ? *clock : base::RealClock::Get(); }
};

// Reads a file referenced by a kubeconfig (returns its bytes or an error). Injectable so the
// decoder can be fuzzed without touching the filesystem.
using FileReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

struct KubeconfigOptions {
  // Use this context instead of current-context.
  std::string context;
  // Directory against which relative file paths are resolved (the kubeconfig's directory).
  std::string base_dir;
  // null = ReadFileToString.
  FileReader read_file;
};

// Decodes kubeconfig YAML (clusters / users / contexts / current-context). Supports
// certificate-authority(-data), insecure-skip-tls-verify, token, tokenFile,
// client-certificate(-data), client-key(-data) and the context's namespace. exec and
// auth-provider users are rejected (Unimplemented) unless a token or certificate is present.
// Errors name the missing context, cluster or user.
absl::StatusOr<Config> ParseKubeconfig(std::string_view yaml, const KubeconfigOptions& options = {});

// Loads a kubeconfig file; relative paths inside resolve against its directory.
absl::StatusOr<Config> LoadKubeconfig(const std::string& path, std::string_view context = "");

struct InClusterOptions {
  // Filesystem root under which /var/run/secrets/kubernetes.io/serviceaccount is read.
  std::string root = "/";
  // Environment lookup (null = getenv).
  std::function<std::optional<std::string>(const std::string& name)> getenv;
};

// The service account config of a pod: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT,
// the token FILE (re-read as it rotates), ca.crt and the namespace file.
// FailedPrecondition when not running in a cluster.
absl::StatusOr<Config> InClusterConfig(const InClusterOptions& options = {});

// $KUBECONFIG (first existing file of a ':'-separated list) -> in-cluster -> ~/.kube/config.
absl::StatusOr<Config> ConfigFromEnvOrDefault();

// Standard base64 (with or without padding; whitespace ignored).
absl::StatusOr<std::string> Base64Decode(std::string_view text);
std::string Base64Encode(std::string_view data);

// The parts of Config::server.
struct ServerAddress {
  bool tls = true;
  std::string host;  // without brackets for IPv6
  int port = 443;
  std::string base_path;  // "" or "/prefix" (no trailing slash)
};
absl::StatusOr<ServerAddress> ParseServerUrl(std::string_view url);

}  // namespace spiderpool::kube
