// What kube-apiserver + kube-controller-manager do that the loopback server models, each found
// to matter on a real cluster: namespace defaults (kube-root-ca.crt, the default
// ServiceAccount) and asynchronous namespace deletion, graceful deletion of pods bound to a
// node, the owner-reference garbage collector, and connections the server ends (idle keep-alive,
// watch timeouts). If one of these tests fails, the loopback server has drifted from the real
// one again.

#include <signal.h>

#include <chrono>
#include <functional>
#include <thread>

#include "absl/time/clock.h"
#include "base/testing/wait.h"
#include "kube/rest/rest_client.h"
#include "kube/testing/apiserver_test_fixture.h"

namespace spiderpool::kube::testing::apiserver_test {
namespace {

using ::spiderpool::base::testing::WaitUntil;

std::unique_ptr<LoopbackApiServer> Start(LoopbackOptions o = {}) {
  auto s = LoopbackApiServer::Start(std::move(o));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

Json Namespace(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
}

Json OwnedConfigMap(const std::string& name, const Json& owner) {
  Json cm = ConfigMap(name);
  cm["metadata"]["ownerReferences"] = {{{"apiVersion", owner["apiVersion"]},
                                        {"kind", owner["kind"]},
                                        {"name", owner["metadata"]["name"]},
                                        {"uid", owner["metadata"]["uid"]}}};
  return cm;
}

TEST(LoopbackLifecycleTest, EveryNamespaceGetsTheRootCaConfigMapAndTheDefaultServiceAccount) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->Call("POST", "/api/v1/namespaces", Namespace("team-a")).code, 201);
  // Written by the controllers, shortly after (not in the create's answer).
  ASSERT_TRUE(WaitUntil([&] {
    return server->Call("GET", "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt").code ==
           200;
  }));
  auto cm = server->Call("GET", "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt");
  EXPECT_EQ(cm.body["data"]["ca.crt"], server->ca_pem());
  EXPECT_TRUE(WaitUntil([&] {
    return server->Call("GET", "/api/v1/namespaces/team-a/serviceaccounts/default").code == 200;
  }));
  // The namespaces that exist from the start have them too.
  EXPECT_TRUE(WaitUntil([&] {
    return server->Call("GET", "/api/v1/namespaces/default/configmaps/kube-root-ca.crt").code ==
           200;
  }));
  // Deleted: published again.
  ASSERT_EQ(server->Call("DELETE", "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt").code,
            200);
  EXPECT_TRUE(WaitUntil([&] {
    return server->Call("GET", "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt").code ==
           200;
  }));
}

TEST(LoopbackLifecycleTest, NamespaceDeletionIsAsynchronousAndWaitsForGracefulPods) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(server->Call("POST", "/api/v1/namespaces", Namespace("doomed")).code, 201);
  ASSERT_EQ(server->Call("POST", "/api/v1/namespaces/doomed/configmaps", ConfigMap("a")).code, 201);
  ASSERT_EQ(server->Call("POST", "/api/v1/namespaces/doomed/pods", Pod("p", "node-1")).code, 201);

  auto del = server->Call("DELETE", "/api/v1/namespaces/doomed");
  ASSERT_EQ(del.code, 200);
  EXPECT_EQ(del.body["status"]["phase"], "Terminating");
  EXPECT_TRUE(del.body["metadata"].contains("deletionTimestamp"));
  // Nothing new in a terminating namespace (kube-apiserver's NamespaceLifecycle admission).
  auto refused = server->Call("POST", "/api/v1/namespaces/doomed/configmaps", ConfigMap("b"));
  EXPECT_EQ(refused.code, 403);
  EXPECT_EQ(refused.body["message"],
            "configmaps \"b\" is forbidden: unable to create new content in namespace doomed "
            "because it is being terminated");
  // The controller deletes the contents; the pod on a node is only terminating (its kubelet
  // would finish it), so the namespace stays.
  // (The controller visits the kinds in turn: wait for both, not one after the other.)
  EXPECT_TRUE(WaitUntil([&] {
    return server->Call("GET", "/api/v1/namespaces/doomed/configmaps/a").code == 404 &&
           server->Call("GET", "/api/v1/namespaces/doomed/pods/p")
               .body["metadata"]
               .contains("deletionTimestamp");
  }));
  auto pod = server->Call("GET", "/api/v1/namespaces/doomed/pods/p");
  ASSERT_EQ(pod.code, 200);
  EXPECT_TRUE(pod.body["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(server->Call("GET", "/api/v1/namespaces/doomed").code, 200);
  // The kubelet's final delete: then the namespace goes.
  ASSERT_EQ(
      server->Call("DELETE", "/api/v1/namespaces/doomed/pods/p", {{"gracePeriodSeconds", 0}}).code,
      200);
  EXPECT_TRUE(WaitUntil([&] {
    return server->Call("GET", "/api/v1/namespaces/doomed").code == 404;
  }));
}

TEST(LoopbackLifecycleTest, PodBoundToANodeIsDeletedGracefully) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  const std::string pods = "/api/v1/namespaces/default/pods";
  Json p = Pod("bound", "node-1");
  p["spec"]["terminationGracePeriodSeconds"] = 45;
  ASSERT_EQ(server->Call("POST", pods, p).code, 201);
  absl::Time before = absl::Now();
  auto del = server->Call("DELETE", pods + "/bound");
  ASSERT_EQ(del.code, 200);
  EXPECT_EQ(del.body["metadata"]["deletionGracePeriodSeconds"], 45);
  absl::Time ts;
  std::string err;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_sec,
                              del.body["metadata"]["deletionTimestamp"].get<std::string>(), &ts,
                              &err));
  EXPECT_GE(ts, before + absl::Seconds(44));  // now + grace
  EXPECT_EQ(server->Call("GET", pods + "/bound").code, 200);
  // A shorter grace period shortens it; 0 removes the pod.
  auto shorter = server->Call("DELETE", pods + "/bound", {{"gracePeriodSeconds", 5}});
  EXPECT_EQ(shorter.body["metadata"]["deletionGracePeriodSeconds"], 5);
  EXPECT_EQ(server->Call("DELETE", pods + "/bound?gracePeriodSeconds=0").code, 200);
  EXPECT_EQ(server->Call("GET", pods + "/bound").code, 404);

  // Not bound to a node, or finished: gone at once.
  Json unbound = Pod("unbound", "");
  unbound["spec"].erase("nodeName");
  ASSERT_EQ(server->Call("POST", pods, unbound).code, 201);
  EXPECT_EQ(server->Call("DELETE", pods + "/unbound").code, 200);
  EXPECT_EQ(server->Call("GET", pods + "/unbound").code, 404);
  ASSERT_EQ(server->Call("POST", pods, Pod("done", "node-1")).code, 201);
  ASSERT_EQ(server->Call("PATCH", pods + "/done/status", {{"status", {{"phase", "Succeeded"}}}},
                         "application/merge-patch+json")
                .code,
            200);
  EXPECT_EQ(server->Call("DELETE", pods + "/done").code, 200);
  EXPECT_EQ(server->Call("GET", pods + "/done").code, 404);

  // A finalizer outlives a grace-0 delete; removing it then deletes the pod.
  Json held = Pod("held", "node-1");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  ASSERT_EQ(server->Call("POST", pods, held).code, 201);
  ASSERT_EQ(server->Call("DELETE", pods + "/held", {{"gracePeriodSeconds", 0}}).code, 200);
  auto kept = server->Call("GET", pods + "/held");
  ASSERT_EQ(kept.code, 200);
  EXPECT_EQ(kept.body["metadata"]["deletionGracePeriodSeconds"], 0);
  ASSERT_EQ(server->Call("PATCH", pods + "/held", {{"metadata", {{"finalizers", nullptr}}}},
                         "application/merge-patch+json")
                .code,
            200);
  EXPECT_EQ(server->Call("GET", pods + "/held").code, 404);
}

TEST(LoopbackLifecycleTest, GarbageCollectorDeletesDependentsOfDeletedOwners) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  auto owner = server->Call("POST", kCmPath, ConfigMap("owner"));
  ASSERT_EQ(owner.code, 201);
  ASSERT_EQ(server->Call("POST", kCmPath, OwnedConfigMap("dependent", owner.body)).code, 201);
  // Background (the default): the owner goes at once, the dependent after.
  ASSERT_EQ(server->Call("DELETE", std::string(kCmPath) + "/owner").code, 200);
  EXPECT_EQ(server->Call("GET", std::string(kCmPath) + "/owner").code, 404);
  EXPECT_TRUE(WaitUntil([&] {
    return server->Call("GET", std::string(kCmPath) + "/dependent").code == 404;
  }));

  // An owner reference to an object that does not exist (or another uid): collected.
  Json ghost = owner.body;
  ghost["metadata"]["name"] = "never-made";
  ASSERT_EQ(server->Call("POST", kCmPath, OwnedConfigMap("orphaned-at-birth", ghost)).code, 201);
  EXPECT_TRUE(WaitUntil([&] {
    return server->Call("GET", std::string(kCmPath) + "/orphaned-at-birth").code == 404;
  }));
}

TEST(LoopbackLifecycleTest, OrphanAndForegroundPropagation) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  const std::string cms = kCmPath;
  auto a = server->Call("POST", cms, ConfigMap("owner-a"));
  ASSERT_EQ(server->Call("POST", cms, OwnedConfigMap("kept", a.body)).code, 201);
  ASSERT_EQ(
      server->Call("DELETE", cms + "/owner-a", {{"propagationPolicy", "Orphan"}}).code, 200);
  EXPECT_TRUE(WaitUntil([&] { return server->Call("GET", cms + "/owner-a").code == 404; }));
  auto kept = server->Call("GET", cms + "/kept");
  ASSERT_EQ(kept.code, 200);
  EXPECT_FALSE(kept.body["metadata"].contains("ownerReferences"));

  auto b = server->Call("POST", cms, ConfigMap("owner-b"));
  ASSERT_EQ(server->Call("POST", cms, OwnedConfigMap("gone", b.body)).code, 201);
  auto del = server->Call("DELETE", cms + "/owner-b", {{"propagationPolicy", "Foreground"}});
  ASSERT_EQ(del.code, 200);
  EXPECT_EQ(del.body["metadata"]["finalizers"], Json::array({"foregroundDeletion"}));
  EXPECT_TRUE(WaitUntil([&] { return server->Call("GET", cms + "/owner-b").code == 404; }));
  EXPECT_EQ(server->Call("GET", cms + "/gone").code, 404);
}

TEST(LoopbackLifecycleTest, ServerEndsWatchesWithoutTimeoutSeconds) {
  auto server = Start({.watch_min_request_timeout = absl::Milliseconds(300)});
  ASSERT_NE(server, nullptr);
  TestClient client(*server);
  absl::Time start = absl::Now();
  WatchReader w(client, std::string(kCmPath) + "?watch=true");
  ASSERT_TRUE(w.WaitEnded(absl::Seconds(10)));
  absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_LT(took, absl::Seconds(5));
}

// The REST client in a process that keeps SIGPIPE's default action, on a server that closes
// idle keep-alive connections after 1 s: later requests reconnect and succeed.
TEST(LoopbackLifecycleTest, ClientSurvivesIdleConnectionsClosedByTheServer) {
  struct sigaction dfl = {}, old = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ASSERT_EQ(sigaction(SIGPIPE, &dfl, &old), 0);
  {
    auto server = Start({.keep_alive_idle_timeout = absl::Seconds(1)});
    ASSERT_NE(server, nullptr);
    kube::Config c{.server = server->url(), .ca_pem = server->ca_pem(),
                   .bearer_token = server->token()};
    auto rest = kube::RestClient::Create(c);
    ASSERT_TRUE(rest.ok()) << rest.status();
    for (int i = 0; i < 3; ++i) {
      auto r = (*rest)->Do({.path = "/api/v1/namespaces/default/configmaps"});
      EXPECT_TRUE(r.ok()) << r.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    }
  }
  sigaction(SIGPIPE, &old, nullptr);
}

}  // namespace
}  // namespace spiderpool::kube::testing::apiserver_test
