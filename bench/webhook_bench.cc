// Admission webhook latency: the Spider handlers (operator/webhook) on the HTTPS admission server
// (kube/webhook), called directly over loopback TLS the way kube-apiserver calls them.
//
//   bazel run -c opt //bench:webhook [-- requests existing_pools smc_count]
//
// Workload: `requests` (default 10000) AdmissionReviews for SpiderIPPool CREATE, alternating the
// mutating and the validating webhook, one keep-alive TLS connection, verified against the CA;
// the Context holds `existing_pools` (default 1000) cached pools, so every validation runs the
// overlap checks against all of them. Then 500 requests that each open a new TLS connection.
// Finally the SpiderMultusConfig -> NAD reconcile time of `smc_count` SMCs (default 1000) from
// //bench:nad_reconcile (operator/multus on the loopback API server). Prints one JSON line.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "api/spider.h"
#include "base/certs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "bench/measure.h"
#include "bench/nad_reconcile.h"
#include "httplib.h"
#include "kube/webhook/server.h"
#include "operator/webhook/configurations.h"
#include "operator/webhook/handlers.h"

namespace {

using spiderpool::base::Json;
using spiderpool::base::StrCat;
namespace ow = spiderpool::op::webhook;
namespace kw = spiderpool::kube::webhook;
using Clock = std::chrono::steady_clock;

X509_STORE* StoreFromPem(const std::string& pem) {
  X509_STORE* store = X509_STORE_new();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, x);
    X509_free(x);
  }
  BIO_free(bio);
  return store;
}

// `defaulted`: the object as the validating webhook gets it (after the mutating one).
std::string Review(int i, const std::string& subnet, bool defaulted) {
  Json pool = {{"apiVersion", "spiderpool.spidernet.io/v2beta1"},
               {"kind", "SpiderIPPool"},
               {"metadata", {{"name", StrCat("bench-", i)}}},
               {"spec",
                {{"subnet", subnet},
                 {"ips", {StrCat(subnet.substr(0, subnet.rfind('.')), ".10-",
                                 subnet.substr(0, subnet.rfind('.')), ".200")}},
                 {"gateway", StrCat(subnet.substr(0, subnet.rfind('.')), ".1")}}}};
  if (defaulted) {
    pool["spec"]["ipVersion"] = 4;
    pool["metadata"]["finalizers"] = {"spiderpool.spidernet.io"};
    pool["metadata"]["labels"] = {{"ipam.spidernet.io/ippool-cidr", "x"}};
  }
  Json req = {{"uid", StrCat("00000000-0000-0000-0000-", 100000000000 + i)},
              {"kind", {{"group", "spiderpool.spidernet.io"}, {"version", "v2beta1"},
                        {"kind", "SpiderIPPool"}}},
              {"resource", {{"group", "spiderpool.spidernet.io"}, {"version", "v2beta1"},
                            {"resource", "spiderippools"}}},
              {"name", StrCat("bench-", i)},
              {"operation", "CREATE"},
              {"userInfo", {{"username", "kubernetes-admin"}, {"groups", {"system:masters"}}}},
              {"object", pool},
              {"dryRun", false}};
  return spiderpool::base::DumpJson(
      {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", req}});
}

// One request on a new TLS connection, the way a Go client with a cached tls.Config makes it
// (one SSL_CTX for all connections, so no CA file is re-read: cpp-httplib's client reloads the
// system CA bundle on every connection, which would dominate the number). Returns false on any
// failure or a non-200 answer.
bool NewConnectionPost(SSL_CTX* ctx, int port, const std::string& path, const std::string& body) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, "spiderpool-controller.kube-system.svc");
    SSL_set1_host(ssl, "spiderpool-controller.kube-system.svc");
    if (SSL_connect(ssl) == 1 && SSL_get_verify_result(ssl) == X509_V_OK) {
      std::string req = StrCat("POST ", path, "?timeout=10s HTTP/1.1\r\n",
                               "Host: spiderpool-controller.kube-system.svc:443\r\n",
                               "Content-Type: application/json\r\nAccept: application/json\r\n",
                               "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n",
                               body);
      if (SSL_write(ssl, req.data(), static_cast<int>(req.size())) > 0) {
        std::string resp;
        char buf[16384];
        int n;
        while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) resp.append(buf, static_cast<size_t>(n));
        ok = resp.rfind("HTTP/1.1 200", 0) == 0 &&
             resp.find("\"allowed\":true") != std::string::npos;
      }
    }
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  close(fd);
  return ok;
}

Json Stats(const std::vector<double>& ms) {
  using spiderpool::bench::Percentile;
  auto r = [](double x) { return static_cast<double>(static_cast<int64_t>(x * 1000 + 0.5)) / 1000; };
  return {{"p50", r(Percentile(ms, 0.50))}, {"p90", r(Percentile(ms, 0.90))},
          {"p99", r(Percentile(ms, 0.99))}, {"max", r(Percentile(ms, 1.0))}};
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  const int requests = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int existing = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int smc_count = argc > 3 ? std::atoi(argv[3]) : 1000;
  spiderpool::base::SetLogSink([](std::string_view) {});  // quiet

  auto ca = spiderpool::base::GenerateCA("bench-ca", absl::Hours(1));
  auto serving = spiderpool::base::GenerateServingCert(
      *ca, "spidernet.io", {"spiderpool-controller.kube-system.svc"}, {"127.0.0.1"},
      absl::Hours(1));
  if (!ca.ok() || !serving.ok()) return 1;

  // The cache as the controller's informer would hold it: `existing` pools, distinct /24s.
  std::vector<std::shared_ptr<const spiderpool::api::SpiderIPPool>> pools;
  for (int i = 0; i < existing; ++i) {
    spiderpool::api::SpiderIPPool p;
    p.SetTypeMeta();
    p.metadata.name = StrCat("existing-", i);
    p.spec.ip_version = 4;
    p.spec.subnet = StrCat("10.", i / 256, ".", i % 256, ".0/24");
    p.spec.ips = {StrCat("10.", i / 256, ".", i % 256, ".10-10.", i / 256, ".", i % 256, ".250")};
    pools.push_back(std::make_shared<const spiderpool::api::SpiderIPPool>(std::move(p)));
  }
  kw::AdmissionServer server({.host = "127.0.0.1", .port = 0, .worker_threads = 4});
  if (!server.SetCertificate(*serving).ok()) return 1;
  ow::HandlerOptions h;
  h.sources.ippools = [&pools]() -> absl::StatusOr<
                                      std::vector<std::shared_ptr<const spiderpool::api::SpiderIPPool>>> {
    return pools;
  };
  h.sources.subnets = []() -> absl::StatusOr<
                               std::vector<std::shared_ptr<const spiderpool::api::SpiderSubnet>>> {
    return std::vector<std::shared_ptr<const spiderpool::api::SpiderSubnet>>{};
  };
  ow::RegisterHandlers(&server, h);
  if (absl::Status s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "start: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  const std::string mutate = ow::MutatePath(ow::Kind::kIPPool);
  const std::string validate = ow::ValidatePath(ow::Kind::kIPPool);

  std::vector<std::string> bodies;
  bodies.reserve(static_cast<size_t>(requests));
  for (int i = 0; i < requests; ++i) {
    bodies.push_back(Review(i, StrCat("192.168.", i % 256, ".0/24"), /*defaulted=*/i % 2 == 1));
  }

  httplib::SSLClient cli("127.0.0.1", server.port());
  cli.set_ca_cert_store(StoreFromPem(ca->cert_pem));
  cli.enable_server_certificate_verification(true);
  cli.set_keep_alive(true);
  cli.set_tcp_nodelay(true);
  auto call = [&](httplib::SSLClient& c, const std::string& path, const std::string& body) {
    auto res = c.Post((path + "?timeout=10s").c_str(), body, "application/json");
    if (!res || res->status != 200 || res->body.find("\"allowed\":true") == std::string::npos) {
      std::fprintf(stderr, "request failed: %s\n",
                   res ? res->body.c_str() : httplib::to_string(res.error()).c_str());
      std::exit(1);
    }
  };
  for (size_t i = 0; i < 200; ++i) {
    call(cli, i % 2 ? validate : mutate, bodies[i % bodies.size()]);
  }

  std::vector<double> mut_ms, val_ms, all_ms;
  const auto start = Clock::now();
  for (int i = 0; i < requests; ++i) {
    const bool validating = i % 2 == 1;
    const auto t0 = Clock::now();
    call(cli, validating ? validate : mutate, bodies[static_cast<size_t>(i)]);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    (validating ? val_ms : mut_ms).push_back(ms);
    all_ms.push_back(ms);
  }
  const double total_s = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> fresh_ms;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_cert_store(ctx, StoreFromPem(ca->cert_pem));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  for (int i = 0; i < 500; ++i) {
    const auto t0 = Clock::now();
    if (!NewConnectionPost(ctx, server.port(), validate,
                           bodies[(2 * static_cast<size_t>(i) + 1) % bodies.size()])) {
      std::fprintf(stderr, "new-connection request failed\n");
      return 1;
    }
    fresh_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  SSL_CTX_free(ctx);
  server.Stop();

  Json out = {{"requests", requests},
              {"existing_pools", existing},
              {"keepalive",
               {{"mutating_ms", Stats(mut_ms)},
                {"validating_ms", Stats(val_ms)},
                {"all_ms", Stats(all_ms)},
                {"requests_per_s", static_cast<int64_t>(requests / total_s)}}},
              {"new_connection_validating_ms", Stats(fresh_ms)}};
  if (smc_count > 0) {
    absl::StatusOr<double> nad = spiderpool::bench::MeasureSmcToNadSeconds(smc_count);
    out["smc_count"] = smc_count;
    if (nad.ok()) {
      out["smc_to_nad_reconcile_s"] = static_cast<double>(static_cast<int64_t>(*nad * 1000)) / 1000;
    } else {
      out["smc_to_nad_reconcile_s"] = nullptr;
      out["smc_to_nad_error"] = std::string(nad.status().message());
    }
  } else {
    out["smc_to_nad_reconcile_s"] = nullptr;
  }
  std::printf("%s\n", spiderpool::base::DumpJson(out).c_str());
  return 0;
}
