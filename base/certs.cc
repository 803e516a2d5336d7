#include "base/certs.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <ctime>
#include <memory>

#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::base {
namespace {

struct BioFree { void operator()(BIO* b) const { BIO_free_all(b); } };
struct X509Free { void operator()(X509* x) const { X509_free(x); } };
struct PkeyFree { void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); } };
struct ExtFree { void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); } };
struct StoreFree { void operator()(X509_STORE* s) const { X509_STORE_free(s); } };
struct StoreCtxFree { void operator()(X509_STORE_CTX* s) const { X509_STORE_CTX_free(s); } };
struct BnFree { void operator()(BIGNUM* b) const { BN_free(b); } };
struct NamesFree { void operator()(GENERAL_NAMES* n) const { GENERAL_NAMES_free(n); } };

using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// The OpenSSL error queue as text (and cleared).
std::string SslErrors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

absl::Status SslError(std::string_view what) {
  return absl::InternalError(StrCat(what, ": ", SslErrors()));
}

absl::StatusOr<X509Ptr> ReadCert(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return SslError("BIO_new_mem_buf");
  X509Ptr x(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!x) {
    ERR_clear_error();
    return absl::InvalidArgumentError("not a PEM certificate");
  }
  return x;
}

absl::StatusOr<PkeyPtr> ReadKey(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return SslError("BIO_new_mem_buf");
  PkeyPtr k(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!k) {
    ERR_clear_error();
    return absl::InvalidArgumentError("not a PEM private key");
  }
  return k;
}

std::string BioToString(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, n > 0 ? static_cast<size_t>(n) : 0);
}

absl::StatusOr<CertAndKey> ToPem(X509* cert, EVP_PKEY* key) {
  BioPtr cb(BIO_new(BIO_s_mem()));
  BioPtr kb(BIO_new(BIO_s_mem()));
  if (!cb || !kb) return SslError("BIO_new");
  if (PEM_write_bio_X509(cb.get(), cert) != 1) return SslError("PEM_write_bio_X509");
  if (PEM_write_bio_PrivateKey(kb.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return SslError("PEM_write_bio_PrivateKey");
  }
  return CertAndKey{BioToString(cb.get()), BioToString(kb.get())};
}

absl::Status AddExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(
      X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext) return SslError(StrCat("X509V3_EXT_conf_nid(", OBJ_nid2sn(nid), "=", value, ")"));
  if (X509_add_ext(cert, ext.get(), -1) != 1) return SslError("X509_add_ext");
  return absl::OkStatus();
}

absl::Status AddNameEntry(X509_NAME* name, const char* field, std::string_view value) {
  if (value.empty()) return absl::OkStatus();
  if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(value.data()),
                                 static_cast<int>(value.size()), -1, 0) != 1) {
    return SslError(StrCat("X509_NAME_add_entry_by_txt(", field, ")"));
  }
  return absl::OkStatus();
}

// A new certificate for `key` with subject CN/O, valid from one minute ago for `validity`.
absl::StatusOr<X509Ptr> NewCert(EVP_PKEY* key, std::string_view common_name,
                                const std::vector<std::string>& organizations,
                                absl::Duration validity) {
  X509Ptr x(X509_new());
  if (!x) return SslError("X509_new");
  if (X509_set_version(x.get(), 2) != 1) return SslError("X509_set_version");
  std::unique_ptr<BIGNUM, BnFree> bn(BN_new());
  if (!bn || BN_rand(bn.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1) {
    return SslError("BN_rand");
  }
  if (!BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x.get()))) {
    return SslError("BN_to_ASN1_INTEGER");
  }
  if (!X509_gmtime_adj(X509_getm_notBefore(x.get()), -60) ||
      !X509_gmtime_adj(X509_getm_notAfter(x.get()), absl::ToInt64Seconds(validity))) {
    return SslError("X509_gmtime_adj");
  }
  if (X509_set_pubkey(x.get(), key) != 1) return SslError("X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(x.get());
  for (const std::string& o : organizations) {
    if (absl::Status s = AddNameEntry(name, "O", o); !s.ok()) return s;
  }
  if (absl::Status s = AddNameEntry(name, "CN", common_name); !s.ok()) return s;
  return x;
}

absl::StatusOr<PkeyPtr> NewKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return SslError("EVP_EC_gen");
  return key;
}

absl::StatusOr<CertAndKey> IssueLeaf(const CertAndKey& ca, std::string_view common_name,
                                     const std::vector<std::string>& organizations,
                                     const std::string& san, const std::string& eku,
                                     absl::Duration validity) {
  auto ca_cert = ReadCert(ca.cert_pem);
  if (!ca_cert.ok()) return Annotate(ca_cert.status(), "CA certificate");
  auto ca_key = ReadKey(ca.key_pem);
  if (!ca_key.ok()) return Annotate(ca_key.status(), "CA key");
  if (X509_check_private_key(ca_cert->get(), ca_key->get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("CA key does not match the CA certificate");
  }
  auto key = NewKey();
  if (!key.ok()) return key.status();
  auto cert = NewCert(key->get(), common_name, organizations, validity);
  if (!cert.ok()) return cert.status();
  X509* x = cert->get();
  if (X509_set_issuer_name(x, X509_get_subject_name(ca_cert->get())) != 1) {
    return SslError("X509_set_issuer_name");
  }
  for (auto [nid, value] : std::vector<std::pair<int, std::string>>{
           {NID_basic_constraints, "critical,CA:FALSE"},
           {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
           {NID_ext_key_usage, eku},
           {NID_authority_key_identifier, "keyid:always"},
       }) {
    if (absl::Status s = AddExt(x, ca_cert->get(), nid, value); !s.ok()) return s;
  }
  if (!san.empty()) {
    if (absl::Status s = AddExt(x, ca_cert->get(), NID_subject_alt_name, san); !s.ok()) return s;
  }
  if (X509_sign(x, ca_key->get(), EVP_sha256()) == 0) return SslError("X509_sign");
  return ToPem(x, key->get());
}

absl::Time Asn1ToTime(const ASN1_TIME* t) {
  struct tm tm;
  std::memset(&tm, 0, sizeof(tm));
  if (ASN1_TIME_to_tm(t, &tm) != 1) return absl::InfinitePast();
  return absl::FromUnixSeconds(timegm(&tm));
}

}  // namespace

absl::StatusOr<CertAndKey> GenerateCA(std::string_view common_name, absl::Duration validity) {
  auto key = NewKey();
  if (!key.ok()) return key.status();
  auto cert = NewCert(key->get(), common_name, {}, validity);
  if (!cert.ok()) return cert.status();
  X509* x = cert->get();
  if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1) {
    return SslError("X509_set_issuer_name");
  }
  for (auto [nid, value] : std::vector<std::pair<int, std::string>>{
           {NID_basic_constraints, "critical,CA:TRUE"},
           {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
           {NID_subject_key_identifier, "hash"},
       }) {
    if (absl::Status s = AddExt(x, x, nid, value); !s.ok()) return s;
  }
  if (X509_sign(x, key->get(), EVP_sha256()) == 0) return SslError("X509_sign");
  return ToPem(x, key->get());
}

absl::StatusOr<CertAndKey> GenerateServingCert(const CertAndKey& ca, std::string_view common_name,
                                               const std::vector<std::string>& dns_sans,
                                               const std::vector<std::string>& ip_sans,
                                               absl::Duration validity) {
  std::string san;
  for (const std::string& d : dns_sans) {
    if (d.empty() || d.find_first_of(",:") != std::string::npos) {
      return absl::InvalidArgumentError(StrCat("invalid DNS SAN \"", d, "\""));
    }
    if (!san.empty()) san += ",";
    san += "DNS:" + d;
  }
  for (const std::string& ip : ip_sans) {
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip.c_str(), buf) != 1 && inet_pton(AF_INET6, ip.c_str(), buf) != 1) {
      return absl::InvalidArgumentError(StrCat("invalid IP SAN \"", ip, "\""));
    }
    if (!san.empty()) san += ",";
    san += "IP:" + ip;
  }
  return IssueLeaf(ca, common_name, {}, san, "serverAuth", validity);
}

absl::StatusOr<CertAndKey> GenerateClientCert(const CertAndKey& ca, std::string_view common_name,
                                              const std::vector<std::string>& organizations,
                                              absl::Duration validity) {
  return IssueLeaf(ca, common_name, organizations, "", "clientAuth", validity);
}

absl::StatusOr<CertInfo> ParseCertificate(std::string_view cert_pem) {
  auto cert = ReadCert(cert_pem);
  if (!cert.ok()) return cert.status();
  X509* x = cert->get();
  CertInfo info;
  auto read_names = [](X509_NAME* name, int nid, std::vector<std::string>* out) {
    int idx = -1;
    while ((idx = X509_NAME_get_index_by_NID(name, nid, idx)) >= 0) {
      X509_NAME_ENTRY* e = X509_NAME_get_entry(name, idx);
      ASN1_STRING* s = X509_NAME_ENTRY_get_data(e);
      unsigned char* utf8 = nullptr;
      int n = ASN1_STRING_to_UTF8(&utf8, s);
      if (n >= 0) {
        out->emplace_back(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
        OPENSSL_free(utf8);
      }
    }
  };
  std::vector<std::string> cns, issuer_cns;
  read_names(X509_get_subject_name(x), NID_commonName, &cns);
  read_names(X509_get_subject_name(x), NID_organizationName, &info.organizations);
  read_names(X509_get_issuer_name(x), NID_commonName, &issuer_cns);
  if (!cns.empty()) info.common_name = cns.back();
  if (!issuer_cns.empty()) info.issuer_common_name = issuer_cns.back();
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr)));
  if (names) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names.get(), i);
      if (gn->type == GEN_DNS) {
        const ASN1_IA5STRING* s = gn->d.dNSName;
        info.dns_sans.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                                   static_cast<size_t>(ASN1_STRING_length(s)));
      } else if (gn->type == GEN_IPADD) {
        const ASN1_OCTET_STRING* s = gn->d.iPAddress;
        char buf[INET6_ADDRSTRLEN] = {0};
        int len = ASN1_STRING_length(s);
        const unsigned char* p = ASN1_STRING_get0_data(s);
        if (len == 4) {
          inet_ntop(AF_INET, p, buf, sizeof(buf));
        } else if (len == 16) {
          inet_ntop(AF_INET6, p, buf, sizeof(buf));
        }
        if (buf[0]) info.ip_sans.emplace_back(buf);
      }
    }
  }
  ERR_clear_error();
  info.not_before = Asn1ToTime(X509_get0_notBefore(x));
  info.not_after = Asn1ToTime(X509_get0_notAfter(x));
  info.is_ca = X509_check_ca(x) > 0;
  return info;
}

absl::Status VerifyCertificate(std::string_view cert_pem, std::string_view ca_pem,
                               absl::Time now) {
  auto cert = ReadCert(cert_pem);
  if (!cert.ok()) return cert.status();
  auto ca = ReadCert(ca_pem);
  if (!ca.ok()) return Annotate(ca.status(), "CA");
  std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
  std::unique_ptr<X509_STORE_CTX, StoreCtxFree> ctx(X509_STORE_CTX_new());
  if (!store || !ctx) return SslError("X509_STORE_new");
  if (X509_STORE_add_cert(store.get(), ca->get()) != 1) return SslError("X509_STORE_add_cert");
  if (X509_STORE_CTX_init(ctx.get(), store.get(), cert->get(), nullptr) != 1) {
    return SslError("X509_STORE_CTX_init");
  }
  X509_STORE_CTX_set_time(ctx.get(), 0, absl::ToTimeT(now));
  if (X509_verify_cert(ctx.get()) != 1) {
    int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return absl::PermissionDeniedError(
        StrCat("certificate verification failed: ", X509_verify_cert_error_string(err)));
  }
  return absl::OkStatus();
}

absl::Status CheckKeyMatchesCert(std::string_view cert_pem, std::string_view key_pem) {
  auto cert = ReadCert(cert_pem);
  if (!cert.ok()) return cert.status();
  auto key = ReadKey(key_pem);
  if (!key.ok()) return key.status();
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("private key does not match the certificate");
  }
  return absl::OkStatus();
}

}  // namespace spiderpool::base
