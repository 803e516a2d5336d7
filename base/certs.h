#pragma once
// X.509 helpers on OpenSSL 3 (EVP APIs): a throwaway CA, serving and client certificates for
// the loopback API server and the webhook server, and small parse/verify helpers.
// Keys are ECDSA P-256. Everything is PEM text in and out.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace spiderpool::base {

struct CertAndKey {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8 private key
};

// A self-signed CA certificate (basicConstraints CA:TRUE, keyUsage certSign|crlSign).
absl::StatusOr<CertAndKey> GenerateCA(std::string_view common_name, absl::Duration validity);

// A server certificate signed by `ca` (extendedKeyUsage serverAuth) with the given SANs.
// ip_sans are textual IPv4/IPv6 addresses.
absl::StatusOr<CertAndKey> GenerateServingCert(const CertAndKey& ca, std::string_view common_name,
                                               const std::vector<std::string>& dns_sans,
                                               const std::vector<std::string>& ip_sans,
                                               absl::Duration validity);

// A client certificate signed by `ca` (extendedKeyUsage clientAuth); Kubernetes reads the
// user from CN and groups from O.
absl::StatusOr<CertAndKey> GenerateClientCert(const CertAndKey& ca, std::string_view common_name,
                                              const std::vector<std::string>& organizations,
                                              absl::Duration validity);

struct CertInfo {
  std::string common_name;
  std::vector<std::string> organizations;
  std::string issuer_common_name;
  std::vector<std::string> dns_sans;
  std::vector<std::string> ip_sans;
  absl::Time not_before;
  absl::Time not_after;
  bool is_ca = false;
};

// Parses the first certificate of a PEM text.
absl::StatusOr<CertInfo> ParseCertificate(std::string_view cert_pem);

// Verifies `cert_pem` chains to `ca_pem` (and is within its validity period at `now`).
absl::Status VerifyCertificate(std::string_view cert_pem, std::string_view ca_pem,
                               absl::Time now = absl::Now());

// Checks that `key_pem` is the private key of `cert_pem`.
absl::Status CheckKeyMatchesCert(std::string_view cert_pem, std::string_view key_pem);

}  // namespace spiderpool::base
