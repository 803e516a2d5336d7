#include "kube/testing/test_client.h"

#include <openssl/pem.h>
#include <openssl/x509.h>

#include "kube/testing/apiserver.h"

namespace spiderpool::kube::testing {

using base::Json;

namespace {

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

}  // namespace

std::string HttpResult::Header(const std::string& key) const {
  auto it = headers.find(key);
  return it == headers.end() ? "" : it->second;
}

TestClient::TestClient(const LoopbackApiServer& server)
    : TestClient("127.0.0.1", server.port(), server.ca_pem(), server.token()) {}

TestClient::TestClient(std::string host, int port, std::string ca_pem, std::string token)
    : host_(std::move(host)), port_(port), ca_pem_(std::move(ca_pem)), token_(std::move(token)) {}

void TestClient::set_client_cert(std::string cert_pem, std::string key_pem) {
  cert_pem_ = std::move(cert_pem);
  key_pem_ = std::move(key_pem);
}

std::unique_ptr<httplib::SSLClient> TestClient::NewClient() const {
  std::unique_ptr<httplib::SSLClient> cli;
  if (!cert_pem_.empty()) {
    BIO* cb = BIO_new_mem_buf(cert_pem_.data(), static_cast<int>(cert_pem_.size()));
    BIO* kb = BIO_new_mem_buf(key_pem_.data(), static_cast<int>(key_pem_.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    cli = std::make_unique<httplib::SSLClient>(host_, port_, cert, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
  } else {
    cli = std::make_unique<httplib::SSLClient>(host_, port_);
  }
  cli->set_ca_cert_store(StoreFromPem(ca_pem_));
  cli->enable_server_certificate_verification(true);
  if (!token_.empty()) cli->set_bearer_token_auth(token_);
  cli->set_connection_timeout(10, 0);
  cli->set_read_timeout(absl::ToChronoMicroseconds(read_timeout_));
  cli->set_write_timeout(30, 0);
  return cli;
}

HttpResult TestClient::Request(const std::string& method, const std::string& path,
                               const std::string& body, const std::string& content_type) const {
  auto cli = NewClient();
  httplib::Result r(nullptr, httplib::Error::Unknown);
  if (method == "GET") {
    r = cli->Get(path);
  } else if (method == "POST") {
    r = cli->Post(path, body, content_type);
  } else if (method == "PUT") {
    r = cli->Put(path, body, content_type);
  } else if (method == "PATCH") {
    r = cli->Patch(path, body, content_type);
  } else if (method == "DELETE") {
    r = body.empty() ? cli->Delete(path) : cli->Delete(path, body, content_type);
  }
  HttpResult out;
  if (!r) {
    out.error = httplib::to_string(r.error());
    return out;
  }
  out.status = r->status;
  out.raw = r->body;
  out.headers = r->headers;
  auto parsed = base::ParseJson(r->body);
  if (parsed.ok()) out.body = *std::move(parsed);
  return out;
}

HttpResult TestClient::Get(const std::string& path) const {
  return Request("GET", path, "", "");
}
HttpResult TestClient::Post(const std::string& path, const Json& body) const {
  return Request("POST", path, base::DumpJson(body), "application/json");
}
HttpResult TestClient::Put(const std::string& path, const Json& body) const {
  return Request("PUT", path, base::DumpJson(body), "application/json");
}
HttpResult TestClient::Patch(const std::string& path, const Json& body,
                             const std::string& content_type) const {
  return Request("PATCH", path, base::DumpJson(body), content_type);
}
HttpResult TestClient::Delete(const std::string& path, const Json& body) const {
  return Request("DELETE", path, body.is_null() ? "" : base::DumpJson(body), "application/json");
}

WatchReader::WatchReader(const TestClient& client, const std::string& path)
    : cli_(client.NewClient()) {
  cli_->set_read_timeout(300, 0);
  thread_ = std::thread([this, path] {
    auto res = cli_->Get(
        path, httplib::Headers{},
        [this](const httplib::Response& response) {
          std::lock_guard<std::mutex> l(mu_);
          status_ = response.status;
          cv_.notify_all();
          return true;
        },
        [this](const char* data, size_t len) {
          std::lock_guard<std::mutex> l(mu_);
          partial_.append(data, len);
          size_t nl;
          while ((nl = partial_.find('\n')) != std::string::npos) {
            std::string line = partial_.substr(0, nl);
            partial_.erase(0, nl + 1);
            if (line.empty()) continue;
            auto j = base::ParseJson(line);
            events_.push_back(j.ok() ? *std::move(j) : Json(line));
          }
          cv_.notify_all();
          return true;
        });
    std::lock_guard<std::mutex> l(mu_);
    if (res && status_ == 0) status_ = res->status;
    if (res && res->status != 200 && !res->body.empty()) {
      auto j = base::ParseJson(res->body);
      if (j.ok()) events_.push_back(*std::move(j));
    }
    ended_ = true;
    cv_.notify_all();
  });
}

WatchReader::~WatchReader() {
  cli_->stop();
  if (thread_.joinable()) thread_.join();
}

std::optional<Json> WatchReader::Next(absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, absl::ToChronoNanoseconds(timeout), [&] { return !events_.empty() || ended_; });
  if (events_.empty()) return std::nullopt;
  Json j = std::move(events_.front());
  events_.pop_front();
  return j;
}

std::optional<Json> WatchReader::NextNonBookmark(absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    auto e = Next(deadline - absl::Now());
    if (!e || !e->is_object() || e->value("type", "") != "BOOKMARK") return e;
  }
}

bool WatchReader::WaitEnded(absl::Duration timeout) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, absl::ToChronoNanoseconds(timeout), [&] { return ended_; });
}

int WatchReader::status() const {
  std::lock_guard<std::mutex> l(mu_);
  return status_;
}

}  // namespace spiderpool::kube::testing
