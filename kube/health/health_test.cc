#include "kube/health/health.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>

namespace spiderpool::kube::health {
namespace {

struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
};

Reply Fetch(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  auto res = client.Get(path.c_str());
  if (!res) return {-1, httplib::to_string(res.error()), ""};
  return {res->status, res->body, res->get_header_value("Content-Type")};
}

ServerOptions Loopback(metrics::Registry* registry = nullptr) {
  ServerOptions o;
  o.address = "127.0.0.1";
  o.port = 0;
  o.registry = registry;
  return o;
}

TEST(HealthServer, WithoutChecksReportsPing) {
  Server server(Loopback());
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.port(), 0);
  Reply r = Fetch(server.port(), "/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
  r = Fetch(server.port(), "/healthz?verbose");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "[+]ping ok\nhealthz check passed\n");
  r = Fetch(server.port(), "/readyz?verbose");
  EXPECT_EQ(r.body, "[+]ping ok\nreadyz check passed\n");
  r = Fetch(server.port(), "/livez?verbose");
  EXPECT_EQ(r.body, "[+]ping ok\nlivez check passed\n");
  EXPECT_EQ(Fetch(server.port(), "/healthz/ping").body, "ok");
}

TEST(HealthServer, AggregatesChecksSortedByName) {
  Server server(Loopback());
  std::atomic<bool> synced{false};
  ASSERT_TRUE(server.AddReadyzCheck("zeta", Ping).ok());
  ASSERT_TRUE(server
                  .AddReadyzCheck("informers",
                                  [&]() -> absl::Status {
                                    if (synced) return absl::OkStatus();
                                    return absl::UnavailableError("caches not synced");
                                  })
                  .ok());
  ASSERT_TRUE(server.AddHealthzCheck("alive", Ping).ok());
  ASSERT_TRUE(server.Start().ok());

  Reply r = Fetch(server.port(), "/readyz");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "[-]informers failed: reason withheld\n[+]zeta ok\nreadyz check failed\n");
  r = Fetch(server.port(), "/readyz/informers");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "internal server error: caches not synced\n");
  r = Fetch(server.port(), "/readyz/zeta");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(Fetch(server.port(), "/readyz/nope").status, 404);

  // Liveness is a separate set of checks.
  r = Fetch(server.port(), "/healthz?verbose");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "[+]alive ok\nhealthz check passed\n");

  synced = true;
  r = Fetch(server.port(), "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  r = Fetch(server.port(), "/readyz?verbose=1");
  EXPECT_EQ(r.body, "[+]informers ok\n[+]zeta ok\nreadyz check passed\n");
}

TEST(HealthServer, ExcludeSkipsChecksAndWarnsAboutUnknownNames) {
  Server server(Loopback());
  ASSERT_TRUE(server.AddHealthzCheck("a", Ping).ok());
  ASSERT_TRUE(server.AddHealthzCheck("b", [] { return absl::InternalError("x"); }).ok());
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(Fetch(server.port(), "/healthz").status, 500);
  Reply r = Fetch(server.port(), "/healthz?exclude=b");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  r = Fetch(server.port(), "/livez?exclude=b&exclude=nope&exclude=other&verbose");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            "[+]a ok\n[+]b excluded: ok\n"
            "warn: some health checks cannot be excluded: no matches for \"nope\",\"other\"\n"
            "livez check passed\n");
}

TEST(HealthServer, ShowFailureReasonsOption) {
  ServerOptions o = Loopback();
  o.show_failure_reasons = true;
  Server server(o);
  ASSERT_TRUE(server.AddReadyzCheck("db", [] { return absl::InternalError("no leader"); }).ok());
  ASSERT_TRUE(server.Start().ok());
  Reply r = Fetch(server.port(), "/readyz");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "[-]db failed: no leader\nreadyz check failed\n");
}

TEST(HealthServer, ChecksAddedAfterStartAreServed) {
  Server server(Loopback());
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(Fetch(server.port(), "/readyz").status, 200);
  ASSERT_TRUE(server.AddReadyzCheck("late", [] { return absl::UnavailableError("no"); }).ok());
  EXPECT_EQ(Fetch(server.port(), "/readyz").status, 500);
}

TEST(HealthServer, RejectsBadAndDuplicateNames) {
  Server server(Loopback());
  EXPECT_EQ(server.AddHealthzCheck("", Ping).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server.AddHealthzCheck("a/b", Ping).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(server.AddHealthzCheck("a", Ping).ok());
  EXPECT_EQ(server.AddHealthzCheck("a", Ping).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(server.AddReadyzCheck("a", Ping).ok());  // another probe: fine
  EXPECT_EQ(server.AddAlias("relative", Probe::kReadiness).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HealthServer, AliasesServeAProbeOnAnotherPath) {
  Server server(Loopback());
  ASSERT_TRUE(server.AddReadyzCheck("r", [] { return absl::UnavailableError("not yet"); }).ok());
  ASSERT_TRUE(server.AddAlias("/v1/runtime/readiness", Probe::kReadiness).ok());
  ASSERT_TRUE(server.AddAlias("/v1/runtime/liveness", Probe::kLiveness).ok());
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.AddAlias("/late", Probe::kLiveness).code(),
            absl::StatusCode::kFailedPrecondition);
  Reply r = Fetch(server.port(), "/v1/runtime/readiness");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "[-]r failed: reason withheld\nreadyz check failed\n");
  EXPECT_EQ(Fetch(server.port(), "/v1/runtime/readiness/r").body,
            "internal server error: not yet\n");
  EXPECT_EQ(Fetch(server.port(), "/v1/runtime/liveness").body, "ok");
  // The alias is literal, not a regular expression.
  EXPECT_EQ(Fetch(server.port(), "/v1/runtimeXliveness").status, 404);
}

TEST(HealthServer, ServesTheRegistryOnMetrics) {
  metrics::Registry registry;
  registry.AddCounter("requests_total", "Requests.").WithLabels({{"code", "200"}}).Inc(7);
  Server server(Loopback(&registry));
  ASSERT_TRUE(server.Start().ok());
  Reply r = Fetch(server.port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.body,
            "# HELP requests_total Requests.\n"
            "# TYPE requests_total counter\n"
            "requests_total{code=\"200\"} 7\n");
}

TEST(HealthServer, MetricsCanBeTurnedOff) {
  ServerOptions o = Loopback();
  o.serve_metrics = false;
  Server server(o);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(Fetch(server.port(), "/metrics").status, 404);
}

TEST(HealthServer, StopsCleanlyAndCannotStartTwice) {
  Server server(Loopback());
  EXPECT_EQ(server.port(), 0);
  ASSERT_TRUE(server.Start().ok());
  int port = server.port();
  EXPECT_EQ(Fetch(port, "/healthz").status, 200);
  EXPECT_EQ(server.Start().code(), absl::StatusCode::kFailedPrecondition);
  server.Stop();
  server.Stop();  // idempotent
  EXPECT_EQ(server.port(), 0);
  EXPECT_EQ(Fetch(port, "/healthz").status, -1);  // nobody listens any more
}

TEST(HealthServer, StopRightAfterStart) {
  for (int i = 0; i < 20; ++i) {
    Server server(Loopback());
    ASSERT_TRUE(server.Start().ok());
    server.Stop();
  }
}

TEST(HealthServer, FixedPortAndBindConflict) {
  Server first(Loopback());
  ASSERT_TRUE(first.Start().ok());
  ServerOptions o = Loopback();
  o.port = first.port();
  Server second(o);
  absl::Status s = second.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(second.port(), 0);
  first.Stop();
  // The freed fixed port can be bound by a new server.
  Server third(o);
  ASSERT_TRUE(third.Start().ok());
  EXPECT_EQ(third.port(), o.port);
  EXPECT_EQ(Fetch(third.port(), "/healthz").status, 200);
}

TEST(HealthServer, SharedPortLetsASurgePodBindBesideTheOldOne) {
  ServerOptions o = Loopback();
  o.share_port = true;
  Server old_pod(o);
  ASSERT_TRUE(old_pod.Start().ok());
  o.port = old_pod.port();
  Server new_pod(o);
  ASSERT_TRUE(new_pod.Start().ok());  // without share_port this is the bind conflict above
  EXPECT_EQ(new_pod.port(), old_pod.port());
  old_pod.Stop();
  EXPECT_EQ(Fetch(new_pod.port(), "/healthz").status, 200);
}

}  // namespace
}  // namespace spiderpool::kube::health
