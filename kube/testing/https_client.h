#pragma once
// The HTTPS client kube-apiserver's webhook admission uses, in small: one POST over TLS 1.2+
// (ALPN http/1.1, SNI, the given CA or the system roots), bounded by one deadline, with
// Go-like error texts. Used by WebhookAdmission (webhook_admission.h).

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace spiderpool::kube::testing {

// A plain HTTPS POST as the webhook client makes it. Errors carry Go-like texts.
struct HttpsTarget {
  std::string dial_host;    // where to connect (name or IP)
  int dial_port = 443;
  std::string server_name;  // SNI and certificate verification (DNS name or IP)
  std::string host_header;  // "name.ns.svc:443"
  std::string path_and_query = "/";
  std::string ca_pem;       // trusted roots; empty = the system roots
};
struct HttpsReply {
  int status = 0;
  std::string content_type;
  std::string body;
};
absl::StatusOr<HttpsReply> HttpsPost(const HttpsTarget& target, std::string_view body,
                                     absl::Time deadline);

// "host:port", "[v6]:port" (net.JoinHostPort).
std::string JoinHostPort(std::string_view host, int port);

}  // namespace spiderpool::kube::testing
