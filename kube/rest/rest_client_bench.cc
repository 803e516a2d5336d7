// Measures the REST client's request rate over TLS against an in-process HTTPS server:
// pooled keep-alive connections vs. a new connection (TLS handshake) per request, and the
// pool under concurrency. Run: bazel run -c opt //kube/rest:rest_client_bench
#include <openssl/pem.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "base/certs.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "httplib.h"
#include "kube/rest/rest_client.h"

namespace {

using namespace spiderpool;

double Run(const kube::Config& config, int threads, int per_thread) {
  auto client = kube::RestClient::Create(config);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    std::exit(1);
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<std::jthread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < per_thread; ++i) {
        if (!(*client)->Do({.path = "/ok"}).ok()) std::abort();
      }
    });
  }
  workers.clear();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return threads * per_thread / secs;
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  bool only_fresh = argc > 1;
  auto ca = base::GenerateCA("bench-ca", absl::Hours(1));
  auto serving = base::GenerateServingCert(*ca, "server", {}, {"127.0.0.1"}, absl::Hours(1));
  BIO* b = BIO_new_mem_buf(serving->cert_pem.data(), static_cast<int>(serving->cert_pem.size()));
  X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  b = BIO_new_mem_buf(serving->key_pem.data(), static_cast<int>(serving->key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  httplib::SSLServer server(cert, key);
  server.set_tcp_nodelay(true);
  std::string body(2000, 'x');  // about the size of a small object
  server.Get("/ok", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"data\":\"" + body + "\"}", "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::yield();

  kube::Config config;
  config.server = base::StrCat("https://127.0.0.1:", port);
  config.ca_pem = ca->cert_pem;
  config.qps = -1;
  if (!only_fresh) {
    std::printf("pooled keep-alive, 1 thread:        %8.0f req/s\n", Run(config, 1, 3000));
    std::printf("pooled keep-alive, 4 threads:       %8.0f req/s\n", Run(config, 4, 1000));
  }
  kube::Config fresh = config;
  fresh.max_idle_connections = 0;
  std::printf("new connection per call, 1 thread:  %8.0f req/s\n", Run(fresh, 1, 300));
  std::printf("new connection per call, 4 threads: %8.0f req/s\n", Run(fresh, 4, 100));
  server.stop();
  t.join();
  X509_free(cert);
  EVP_PKEY_free(key);
}
