// The admission server over real HTTPS (cpp-httplib client, raw OpenSSL handshakes) and through
// its transport-independent Handle().

#include "kube/webhook/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "api/admission.h"
#include "api/codec.h"
#include "base/certs.h"
#include "base/json.h"
#include "base/strings.h"
#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "kube/metrics/metrics.h"
#include "kube/testing/webhook_admission.h"
#include "kube/webhook/json_patch.h"

namespace spiderpool::kube::webhook {
namespace {

using base::Json;

Json Review(std::string_view uid, std::string_view op, Json object, Json old_object = nullptr) {
  Json req = {{"uid", uid},
              {"kind", {{"group", "example.com"}, {"version", "v1"}, {"kind", "Thing"}}},
              {"resource",
               {{"group", "example.com"}, {"version", "v1"}, {"resource", "things"}}},
              {"name", "t1"},
              {"operation", op},
              {"userInfo", {{"username", "admin"}}}};
  if (!object.is_null()) req["object"] = std::move(object);
  if (!old_object.is_null()) req["oldObject"] = std::move(old_object);
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", req}};
}

Json Thing(Json labels = Json::object()) {
  return {{"apiVersion", "example.com/v1"},
          {"kind", "Thing"},
          {"metadata", {{"name", "t1"}, {"labels", labels}}},
          {"spec", {{"size", 1}, {"unknownToTheTypes", true}}}};
}

// A TLS handshake with a raw OpenSSL client (no verification): the served certificate.
struct Handshake {
  bool ok = false;
  std::string peer_cert_pem;
};
Handshake Connect(int port, int min_version, int max_version) {
  Handshake out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_security_level(ctx, 0);  // let the client offer TLS 1.0/1.1 at all
  SSL_CTX_set_min_proto_version(ctx, min_version);
  SSL_CTX_set_max_proto_version(ctx, max_version);
  SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0");
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1) {
      out.ok = true;
      X509* peer = SSL_get1_peer_certificate(ssl);
      if (peer != nullptr) {
        BIO* bio = BIO_new(BIO_s_mem());
        PEM_write_bio_X509(bio, peer);
        char* data = nullptr;
        long n = BIO_get_mem_data(bio, &data);  // NOLINT(runtime/int)
        out.peer_cert_pem.assign(data, static_cast<size_t>(n));
        BIO_free(bio);
        X509_free(peer);
      }
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
  }
  close(fd);
  SSL_CTX_free(ctx);
  return out;
}

// An HTTPS call as kube-apiserver makes it: SNI and verification for `server_name`, only
// `ca_pem` trusted.
absl::StatusOr<testing::HttpsReply> Post(int port, std::string_view path, const Json& body,
                                         const std::string& ca_pem,
                                         std::string server_name = "hook.webhooks.svc") {
  testing::HttpsTarget t;
  t.dial_host = "127.0.0.1";
  t.dial_port = port;
  t.server_name = server_name;
  t.host_header = server_name + ":443";
  t.path_and_query = std::string(path) + "?timeout=10s";
  t.ca_pem = ca_pem;
  return testing::HttpsPost(t, base::DumpJson(body), absl::Now() + absl::Seconds(10));
}

std::string WriteTemp(const std::string& dir, const std::string& name, const std::string& data) {
  std::string path = dir + "/" + name;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << data;
  }
  std::rename(tmp.c_str(), path.c_str());  // atomic, as kubelet's secret volume update
  return path;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_ = *base::GenerateCA("test-ca", absl::Hours(1));
    serving_ = *base::GenerateServingCert(ca_, "hook", {"hook.webhooks.svc"}, {"127.0.0.1"},
                                          absl::Hours(1));
  }

  std::unique_ptr<AdmissionServer> StartServer(ServerOptions o = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    auto s = std::make_unique<AdmissionServer>(std::move(o));
    if (s->CertificatePem().empty() && !s->SetCertificate(serving_).ok()) {
      ADD_FAILURE() << "SetCertificate";
    }
    s->Validating("/validate", [](const api::AdmissionRequest& req) {
      if (req.name == "bad") {
        Decision d = Decision::Deny(422, "Thing.example.com \"bad\" is invalid: spec.size: nope");
        d.warnings = {"careful"};
        return d;
      }
      Decision d = Decision::Allow();
      d.warnings = {"w1"};
      return d;
    });
    s->Mutating("/mutate", [](const api::AdmissionRequest& req) {
      if (!req.object.is_object()) return Mutation::Unchanged();
      Json obj = req.object;
      obj["metadata"]["labels"]["mutated"] = "yes";
      obj["metadata"]["finalizers"] = Json::array({"example.com/f"});
      // What typed re-encoding would do: drop the field the types do not know.
      Json round_trip = req.object;
      round_trip["spec"].erase("unknownToTheTypes");
      obj["spec"].erase("unknownToTheTypes");
      return Mutation::Patched(std::move(obj), std::move(round_trip));
    });
    absl::Status st = s->Start();
    EXPECT_TRUE(st.ok()) << st;
    return s;
  }

  base::CertAndKey ca_;
  base::CertAndKey serving_;
};

Json Decode(const absl::StatusOr<testing::HttpsReply>& r) {
  if (!r.ok()) return Json{{"error", std::string(r.status().message())}};
  auto j = base::ParseJson(r->body);
  return j.ok() ? *j : Json(r->body);
}

TEST_F(ServerTest, HealthCheck) {
  auto s = StartServer();
  httplib::SSLClient cli("127.0.0.1", s->port());
  cli.enable_server_certificate_verification(false);
  auto res = cli.Get("/webhook-health-check");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "ok");
  auto post = cli.Post("/webhook-health-check", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  // controller-runtime's request counter (the chart's webhook alert), by path and HTTP code.
  const std::string m = kube::metrics::Registry::Default().Expose();
  EXPECT_NE(m.find("controller_runtime_webhook_requests_total{code=\"200\",webhook=\"/webhook-health-check\"} "),
            std::string::npos) << m;
  EXPECT_NE(m.find("controller_runtime_webhook_requests_total{code=\"405\",webhook=\"/webhook-health-check\"} "),
            std::string::npos) << m;
}

TEST_F(ServerTest, ValidatingAllowAndDenyEchoTheUid) {
  auto s = StartServer();
  auto r = Post(s->port(), "/validate", Review("uid-1", "CREATE", Thing()), ca_.cert_pem);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "application/json");
  Json j = Decode(r);
  EXPECT_EQ(j["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(j["kind"], "AdmissionReview");
  EXPECT_EQ(j["response"]["uid"], "uid-1");
  EXPECT_EQ(j["response"]["allowed"], true);
  EXPECT_EQ(j["response"]["warnings"], Json::array({"w1"}));
  EXPECT_FALSE(j["response"].contains("patch"));
  EXPECT_FALSE(j.contains("request"));

  Json bad = Review("uid-2", "UPDATE", Thing(), Thing());
  bad["request"]["name"] = "bad";
  Json d = Decode(Post(s->port(), "/validate", bad, ca_.cert_pem));
  EXPECT_EQ(d["response"]["uid"], "uid-2");
  EXPECT_EQ(d["response"]["allowed"], false);
  EXPECT_EQ(d["response"]["status"]["code"], 422);
  EXPECT_EQ(d["response"]["status"]["reason"], "Invalid");
  EXPECT_EQ(d["response"]["status"]["status"], "Failure");
  EXPECT_EQ(d["response"]["status"]["message"],
            "Thing.example.com \"bad\" is invalid: spec.size: nope");
  EXPECT_EQ(d["response"]["warnings"], Json::array({"careful"}));
  EXPECT_EQ(s->stats().requests, 2u);
  EXPECT_EQ(s->stats().denied, 1u);
  // Answered reviews (allowed or denied) count as 200.
  const std::string m = kube::metrics::Registry::Default().Expose();
  EXPECT_NE(m.find("controller_runtime_webhook_requests_total{code=\"200\",webhook=\"/validate\"} "),
            std::string::npos) << m;
}

TEST_F(ServerTest, MutatingAnswersWithABase64JsonPatch) {
  auto s = StartServer();
  Json object = Thing({{"a", "b"}});
  Json j = Decode(Post(s->port(), "/mutate", Review("uid-3", "CREATE", object), ca_.cert_pem));
  EXPECT_EQ(j["response"]["uid"], "uid-3");
  EXPECT_EQ(j["response"]["allowed"], true);
  ASSERT_EQ(j["response"]["patchType"], "JSONPatch");
  std::string text;
  ASSERT_TRUE(absl::Base64Unescape(j["response"]["patch"].get<std::string>(), &text));
  Json patch = *base::ParseJson(text);
  // The field the handler's "types" dropped is not removed.
  EXPECT_EQ(patch, *base::ParseJson(R"([
      {"op":"add","path":"/metadata/labels/mutated","value":"yes"},
      {"op":"add","path":"/metadata/finalizers","value":["example.com/f"]}])"));
  auto applied = base::ApplyJsonPatch(object, patch);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ((*applied)["spec"]["unknownToTheTypes"], true);
  EXPECT_EQ((*applied)["metadata"]["labels"]["a"], "b");

  // Nothing to change -> no patch at all.
  Json done = *applied;
  Json k = Decode(Post(s->port(), "/mutate", Review("uid-4", "UPDATE", done, object),
                       ca_.cert_pem));
  EXPECT_EQ(k["response"]["allowed"], true);
  EXPECT_FALSE(k["response"].contains("patch"));
  EXPECT_FALSE(k["response"].contains("patchType"));

  // DELETE: never a patch (kube-apiserver refuses patches there).
  Json del = Decode(Post(s->port(), "/mutate", Review("uid-5", "DELETE", nullptr, object),
                         ca_.cert_pem));
  EXPECT_EQ(del["response"]["allowed"], true);
  EXPECT_FALSE(del["response"].contains("patch"));
}

TEST_F(ServerTest, MutatingHandlerCanDeny) {
  auto s = StartServer();
  s->Mutating("/mutate-deny", [](const api::AdmissionRequest&) {
    return Mutation::Denied(Decision::Deny(403, "forbidden: no"));
  });
  Json j = Decode(Post(s->port(), "/mutate-deny", Review("u", "CREATE", Thing()), ca_.cert_pem));
  EXPECT_EQ(j["response"]["allowed"], false);
  EXPECT_EQ(j["response"]["status"]["code"], 403);
  EXPECT_EQ(j["response"]["status"]["reason"], "Forbidden");
  EXPECT_FALSE(j["response"].contains("patch"));
  // A denial is an answer (200); an internal error (status code >= 500) counts as 500.
  s->Mutating("/mutate-broken", [](const api::AdmissionRequest&) {
    return Mutation::Denied(Decision::Deny(500, "internal error: the cache is not synced"));
  });
  Json e = Decode(Post(s->port(), "/mutate-broken", Review("u2", "CREATE", Thing()), ca_.cert_pem));
  EXPECT_EQ(e["response"]["status"]["code"], 500);
  const std::string m = kube::metrics::Registry::Default().Expose();
  EXPECT_NE(m.find("controller_runtime_webhook_requests_total{code=\"200\",webhook=\"/mutate-deny\"} 1\n"),
            std::string::npos) << m;
  EXPECT_NE(m.find("controller_runtime_webhook_requests_total{code=\"500\",webhook=\"/mutate-broken\"} 1\n"),
            std::string::npos) << m;
  EXPECT_EQ(m.find("code=\"500\",webhook=\"/mutate-deny\""), std::string::npos) << m;
}

HttpReply Call(const AdmissionServer& s, std::string path, std::string body,
               std::string method = "POST", std::string ct = "application/json") {
  return s.Handle(HttpRequest{.method = std::move(method), .path = std::move(path),
                              .content_type = std::move(ct), .body = std::move(body)});
}

std::string Message(const HttpReply& r) {
  auto j = base::ParseJson(r.body);
  return j.ok() && j->is_object() ? j->value("message", "") : "";
}

TEST_F(ServerTest, MalformedRequestsAre4xxWithAMessage) {
  ServerOptions o;
  o.max_request_bytes = 4096;
  AdmissionServer s(o);
  s.Validating("/v", [](const api::AdmissionRequest&) { return Decision::Allow(); });
  const std::string good = base::DumpJson(Review("u", "CREATE", Thing()));
  EXPECT_EQ(Call(s, "/v", good).status, 200);

  HttpReply r = Call(s, "/v", "{not json");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_NE(Message(r).find("couldn't decode the AdmissionReview"), std::string::npos);
  EXPECT_EQ(base::ParseJson(r.body)->value("reason", ""), "BadRequest");

  Json v1beta1 = Review("u", "CREATE", Thing());
  v1beta1["apiVersion"] = "admission.k8s.io/v1beta1";
  r = Call(s, "/v", base::DumpJson(v1beta1));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Message(r), "unsupported AdmissionReview apiVersion \"admission.k8s.io/v1beta1\" "
                        "kind \"AdmissionReview\": this webhook serves admission.k8s.io/v1 "
                        "AdmissionReview");
  Json wrong_kind = Review("u", "CREATE", Thing());
  wrong_kind["kind"] = "Pod";
  EXPECT_EQ(Call(s, "/v", base::DumpJson(wrong_kind)).status, 400);

  Json no_request = Review("u", "CREATE", Thing());
  no_request.erase("request");
  EXPECT_EQ(Call(s, "/v", base::DumpJson(no_request)).status, 400);
  Json no_uid = Review("", "CREATE", Thing());
  EXPECT_EQ(Call(s, "/v", base::DumpJson(no_uid)).status, 400);
  Json bad_op = Review("u", "PATCH", Thing());
  r = Call(s, "/v", base::DumpJson(bad_op));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(Message(r).find("operation"), std::string::npos) << Message(r);
  EXPECT_EQ(Call(s, "/v", "[1,2]").status, 400);
  EXPECT_EQ(Call(s, "/v", "").status, 400);

  r = Call(s, "/v", good, "POST", "text/plain");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Message(r), "contentType=text/plain, expected application/json");
  EXPECT_EQ(Call(s, "/v", good, "POST", "application/json; charset=utf-8").status, 200);

  EXPECT_EQ(Call(s, "/nope", good).status, 404);
  EXPECT_EQ(Call(s, "/v", good, "GET").status, 405);
  r = Call(s, "/v", std::string(5000, ' '));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(Message(r), "request entity is too large; limit is 4096 bytes");
  EXPECT_EQ(s.stats().bad_requests, 12u);
}

TEST_F(ServerTest, OversizedBodyOverHttpsIs413) {
  ServerOptions o;
  o.max_request_bytes = 2048;
  auto s = StartServer(o);
  Json big = Review("u", "CREATE", Thing({{"x", std::string(4000, 'a')}}));
  auto r = Post(s->port(), "/validate", big, ca_.cert_pem);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 413);
}

TEST_F(ServerTest, OnlyTls12AndNewer) {
  auto s = StartServer();
  EXPECT_FALSE(Connect(s->port(), TLS1_VERSION, TLS1_1_VERSION).ok);
  EXPECT_TRUE(Connect(s->port(), TLS1_2_VERSION, TLS1_2_VERSION).ok);
  EXPECT_TRUE(Connect(s->port(), TLS1_3_VERSION, TLS1_3_VERSION).ok);
}

TEST_F(ServerTest, StartNeedsACertificate) {
  AdmissionServer s({.host = "127.0.0.1", .port = 0});
  absl::Status st = s.Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  AdmissionServer f({.host = "127.0.0.1", .port = 0, .cert_file = "/nonexistent/tls.crt",
                     .key_file = "/nonexistent/tls.key"});
  EXPECT_FALSE(f.Start().ok());
  // A key that is not the certificate's is refused.
  auto other = *base::GenerateServingCert(ca_, "x", {"x"}, {}, absl::Hours(1));
  EXPECT_FALSE(s.SetCertificate({serving_.cert_pem, other.key_pem}).ok());
  EXPECT_FALSE(s.SetCertificate({"garbage", serving_.key_pem}).ok());
}

TEST_F(ServerTest, CertificateFilesAreReloadedWithoutRestart) {
  base::testing::TempDir tmp("webhook");  // before the server, which reads the files in it
  const std::string& dir = tmp.path();
  std::string cert_file = WriteTemp(dir, "tls.crt", serving_.cert_pem);
  std::string key_file = WriteTemp(dir, "tls.key", serving_.key_pem);
  ServerOptions o;
  o.cert_file = cert_file;
  o.key_file = key_file;
  o.cert_reload_interval = absl::ZeroDuration();  // only explicit reloads: deterministic
  auto s = StartServer(o);
  EXPECT_EQ(Connect(s->port(), TLS1_2_VERSION, TLS1_3_VERSION).peer_cert_pem, serving_.cert_pem);
  auto before = Post(s->port(), "/validate", Review("u", "CREATE", Thing()), ca_.cert_pem);
  ASSERT_TRUE(before.ok()) << before.status();

  // Rotate to a certificate of another CA: the listener stays, the next handshake uses it.
  auto ca2 = *base::GenerateCA("second-ca", absl::Hours(1));
  auto serving2 = *base::GenerateServingCert(ca2, "hook", {"hook.webhooks.svc"}, {},
                                             absl::Hours(1));
  WriteTemp(dir, "tls.crt", serving2.cert_pem);
  WriteTemp(dir, "tls.key", serving2.key_pem);
  const int port = s->port();
  ASSERT_TRUE(s->ReloadCertificate().ok());
  EXPECT_EQ(s->port(), port);
  EXPECT_EQ(s->stats().cert_reloads, 1u);
  EXPECT_EQ(Connect(port, TLS1_2_VERSION, TLS1_3_VERSION).peer_cert_pem, serving2.cert_pem);
  auto old_ca = Post(port, "/validate", Review("u", "CREATE", Thing()), ca_.cert_pem);
  EXPECT_FALSE(old_ca.ok());
  auto new_ca = Post(port, "/validate", Review("u", "CREATE", Thing()), ca2.cert_pem);
  ASSERT_TRUE(new_ca.ok()) << new_ca.status();
  EXPECT_EQ(new_ca->status, 200);

  // A half-written pair (key of another certificate) is refused; the served one stays.
  WriteTemp(dir, "tls.key", serving_.key_pem);
  EXPECT_FALSE(s->ReloadCertificate().ok());
  EXPECT_EQ(s->CertificatePem(), serving2.cert_pem);
  EXPECT_EQ(Connect(port, TLS1_2_VERSION, TLS1_3_VERSION).peer_cert_pem, serving2.cert_pem);
}

TEST_F(ServerTest, ProviderSourceAndPeriodicReload) {
  std::mutex mu;
  base::CertAndKey current = serving_;
  base::SimulatedClock clock;
  ServerOptions o;
  o.cert_provider = [&]() -> absl::StatusOr<base::CertAndKey> {
    std::lock_guard<std::mutex> l(mu);
    return current;
  };
  o.cert_reload_interval = absl::Seconds(10);
  o.clock = &clock;
  auto s = StartServer(o);
  EXPECT_EQ(s->CertificatePem(), serving_.cert_pem);
  auto next = *base::GenerateServingCert(ca_, "hook", {"hook.webhooks.svc"}, {}, absl::Hours(2));
  {
    std::lock_guard<std::mutex> l(mu);
    current = next;
  }
  // The reload loop wakes on the simulated clock.
  ASSERT_TRUE(clock.WaitForSleepers(1));
  clock.Advance(absl::Seconds(10));
  ASSERT_TRUE(clock.WaitForSleepers(1));  // parked again: the reload happened
  EXPECT_EQ(s->CertificatePem(), next.cert_pem);
  EXPECT_EQ(Connect(s->port(), TLS1_2_VERSION, TLS1_3_VERSION).peer_cert_pem, next.cert_pem);
  s->Stop();
  EXPECT_FALSE(s->running());
  s->Stop();  // idempotent
}

}  // namespace
}  // namespace spiderpool::kube::webhook
