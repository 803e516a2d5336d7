#include "base/certs.h"

#include "gtest/gtest.h"

namespace spiderpool::base {
namespace {

TEST(Certs, CaAndServingCert) {
  auto ca = GenerateCA("test-ca", absl::Hours(24));
  ASSERT_TRUE(ca.ok()) << ca.status();
  EXPECT_NE(ca->cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(ca->key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  auto ca_info = ParseCertificate(ca->cert_pem);
  ASSERT_TRUE(ca_info.ok()) << ca_info.status();
  EXPECT_TRUE(ca_info->is_ca);
  EXPECT_EQ(ca_info->common_name, "test-ca");
  EXPECT_EQ(ca_info->issuer_common_name, "test-ca");
  EXPECT_TRUE(VerifyCertificate(ca->cert_pem, ca->cert_pem).ok());

  auto srv = GenerateServingCert(*ca, "server", {"localhost", "svc.ns.svc"}, {"127.0.0.1", "::1"},
                                 absl::Hours(1));
  ASSERT_TRUE(srv.ok()) << srv.status();
  auto info = ParseCertificate(srv->cert_pem);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->is_ca);
  EXPECT_EQ(info->common_name, "server");
  EXPECT_EQ(info->issuer_common_name, "test-ca");
  EXPECT_EQ(info->dns_sans, (std::vector<std::string>{"localhost", "svc.ns.svc"}));
  EXPECT_EQ(info->ip_sans, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_LE(info->not_before, absl::Now());
  EXPECT_GT(info->not_after, absl::Now() + absl::Minutes(50));
  EXPECT_LT(info->not_after, absl::Now() + absl::Minutes(70));
  EXPECT_TRUE(VerifyCertificate(srv->cert_pem, ca->cert_pem).ok());
  EXPECT_TRUE(CheckKeyMatchesCert(srv->cert_pem, srv->key_pem).ok());
  EXPECT_FALSE(CheckKeyMatchesCert(srv->cert_pem, ca->key_pem).ok());
  // Expired at a time after not_after.
  EXPECT_FALSE(VerifyCertificate(srv->cert_pem, ca->cert_pem, absl::Now() + absl::Hours(2)).ok());
}

TEST(Certs, ClientCertCarriesGroups) {
  auto ca = GenerateCA("ca", absl::Hours(1));
  ASSERT_TRUE(ca.ok());
  auto c = GenerateClientCert(*ca, "alice", {"system:masters", "devs"}, absl::Hours(1));
  ASSERT_TRUE(c.ok()) << c.status();
  auto info = ParseCertificate(c->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->common_name, "alice");
  EXPECT_EQ(info->organizations, (std::vector<std::string>{"system:masters", "devs"}));
  EXPECT_TRUE(VerifyCertificate(c->cert_pem, ca->cert_pem).ok());
}

TEST(Certs, WrongCaFailsVerification) {
  auto ca1 = GenerateCA("ca1", absl::Hours(1));
  auto ca2 = GenerateCA("ca2", absl::Hours(1));
  ASSERT_TRUE(ca1.ok() && ca2.ok());
  auto srv = GenerateServingCert(*ca1, "s", {"localhost"}, {}, absl::Hours(1));
  ASSERT_TRUE(srv.ok());
  absl::Status st = VerifyCertificate(srv->cert_pem, ca2->cert_pem);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
}

TEST(Certs, BadInput) {
  auto ca = GenerateCA("ca", absl::Hours(1));
  ASSERT_TRUE(ca.ok());
  EXPECT_FALSE(ParseCertificate("garbage").ok());
  EXPECT_FALSE(ParseCertificate("").ok());
  EXPECT_FALSE(VerifyCertificate("x", ca->cert_pem).ok());
  EXPECT_FALSE(GenerateServingCert(*ca, "s", {}, {"300.1.1.1"}, absl::Hours(1)).ok());
  EXPECT_FALSE(GenerateServingCert(*ca, "s", {"a,b"}, {}, absl::Hours(1)).ok());
  CertAndKey broken{ca->cert_pem, "nope"};
  EXPECT_FALSE(GenerateServingCert(broken, "s", {"localhost"}, {}, absl::Hours(1)).ok());
  auto other = GenerateCA("other", absl::Hours(1));
  CertAndKey mismatched{ca->cert_pem, other->key_pem};
  EXPECT_FALSE(GenerateServingCert(mismatched, "s", {"localhost"}, {}, absl::Hours(1)).ok());
}

}  // namespace
}  // namespace spiderpool::base
