#include "api/apps.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "base/json.h"

namespace spiderpool::api {
namespace {

using base::Json;

TEST(Apps, Resources) {
  struct Want {
    const ResourceInfo& r;
    std::string api_version, kind, plural, singular;
    std::vector<std::string> short_names;
  };
  for (const Want& w : std::vector<Want>{
           {Deployment::Resource(), "apps/v1", "Deployment", "deployments", "deployment",
            {"deploy"}},
           {ReplicaSet::Resource(), "apps/v1", "ReplicaSet", "replicasets", "replicaset", {"rs"}},
           {StatefulSet::Resource(), "apps/v1", "StatefulSet", "statefulsets", "statefulset",
            {"sts"}},
           {DaemonSet::Resource(), "apps/v1", "DaemonSet", "daemonsets", "daemonset", {"ds"}},
           {Job::Resource(), "batch/v1", "Job", "jobs", "job", {}},
           {CronJob::Resource(), "batch/v1", "CronJob", "cronjobs", "cronjob", {"cj"}},
       }) {
    EXPECT_EQ(w.r.ApiVersion(), w.api_version);
    EXPECT_EQ(w.r.kind, w.kind);
    EXPECT_EQ(w.r.plural, w.plural);
    EXPECT_EQ(w.r.singular, w.singular);
    EXPECT_TRUE(w.r.namespaced);
    EXPECT_TRUE(w.r.has_status);
    EXPECT_EQ(w.r.short_names, w.short_names);
  }
  EXPECT_EQ(AppsKinds::kSize, 6u);
  EXPECT_EQ(StatefulSet::Resource().GroupResource(), "statefulsets.apps");
}

constexpr char kStatefulSet[] = R"({
  "apiVersion": "apps/v1",
  "kind": "StatefulSet",
  "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
               "generation": 2, "managedFields": [{"manager": "kubectl"}]},
  "spec": {
    "replicas": 3,
    "ordinals": {"start": 5},
    "selector": {"matchLabels": {"app": "web"}},
    "serviceName": "web",
    "podManagementPolicy": "Parallel",
    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
    "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
    "template": {
      "metadata": {"labels": {"app": "web"},
                   "annotations": {"ipam.spidernet.io/ippool": "{\"ipv4\":[\"p1\"]}"}},
      "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}],
               "terminationGracePeriodSeconds": 10}
    }
  },
  "status": {"observedGeneration": 2, "replicas": 3, "readyReplicas": 2, "currentReplicas": 3,
             "updatedReplicas": 3, "currentRevision": "web-1", "updateRevision": "web-1",
             "collisionCount": 0, "availableReplicas": 2,
             "conditions": [{"type": "X", "status": "True"}]}
})";

TEST(Apps, StatefulSetDecodesAndRoundTrips) {
  auto j = base::ParseJson(kStatefulSet);
  ASSERT_TRUE(j.ok());
  auto sts = Decode<StatefulSet>(*j);
  ASSERT_TRUE(sts.ok()) << sts.status();
  EXPECT_EQ(sts->spec.replicas, 3);
  ASSERT_TRUE(sts->spec.ordinals.has_value());
  EXPECT_EQ(sts->spec.ordinals->start, 5);
  EXPECT_EQ(sts->spec.template_.metadata.labels.at("app"), "web");
  EXPECT_EQ(sts->spec.template_.metadata.annotations.count("ipam.spidernet.io/ippool"), 1u);
  EXPECT_EQ(sts->spec.template_.spec.termination_grace_period_seconds, 10);
  EXPECT_EQ(sts->status.available_replicas, 2);
  EXPECT_EQ(sts->status.collision_count, 0);
  // Nothing is lost on a read-modify-write.
  EXPECT_EQ(Encode(*sts), *j);
}

TEST(Apps, StatefulSetOrdinals) {
  StatefulSet sts;
  EXPECT_EQ(StatefulSetReplicas(sts), 1);  // nil = 1
  EXPECT_EQ(StatefulSetOrdinalStart(sts), 0);
  EXPECT_TRUE(StatefulSetCoversOrdinal(sts, 0));
  EXPECT_FALSE(StatefulSetCoversOrdinal(sts, 1));
  sts.spec.replicas = 3;
  sts.spec.ordinals = StatefulSetOrdinals{.start = 5};
  EXPECT_FALSE(StatefulSetCoversOrdinal(sts, 4));
  EXPECT_TRUE(StatefulSetCoversOrdinal(sts, 5));
  EXPECT_TRUE(StatefulSetCoversOrdinal(sts, 7));
  EXPECT_FALSE(StatefulSetCoversOrdinal(sts, 8));
  sts.spec.replicas = 0;
  EXPECT_FALSE(StatefulSetCoversOrdinal(sts, 5));
}

TEST(Apps, ParseStatefulSetPodName) {
  auto p = ParseStatefulSetPodName("web-12");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->statefulset, "web");
  EXPECT_EQ(p->ordinal, 12);
  p = ParseStatefulSetPodName("my-db-0");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->statefulset, "my-db");
  EXPECT_EQ(p->ordinal, 0);
  for (const char* bad : {"web", "web-", "-1", "web-01", "web-x1", "web-1x", "", "web-99999999999"}) {
    EXPECT_FALSE(ParseStatefulSetPodName(bad).has_value()) << bad;
  }
  // Ordinals are int32 (the controller's replica count type).
  EXPECT_TRUE(ParseStatefulSetPodName("a-b-2147483647").has_value());
  EXPECT_FALSE(ParseStatefulSetPodName("a-b-2147483648").has_value());
}

TEST(Apps, WorkloadsDecode) {
  auto ds = DecodeJson<DaemonSet>(
      R"({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {}},
          "status": {"desiredNumberScheduled": 4, "numberReady": 3,
                     "currentNumberScheduled": 4, "numberMisscheduled": 0}})");
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->status.desired_number_scheduled, 4);

  auto job = DecodeJson<Job>(
      R"({"spec": {"parallelism": 2, "completions": 5, "completionMode": "Indexed",
                   "podFailurePolicy": {"rules": []}, "template": {"spec": {"restartPolicy": "Never"}}},
          "status": {"active": 2, "succeeded": 1, "ready": 2}})");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec.parallelism, 2);
  EXPECT_EQ(job->spec.completions, 5);
  EXPECT_EQ(job->spec.template_.spec.restart_policy, "Never");
  EXPECT_TRUE(job->spec.unknown.contains("podFailurePolicy"));

  auto cj = DecodeJson<CronJob>(
      R"({"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"parallelism": 3}}},
          "status": {"active": [{"kind": "Job", "name": "j1", "namespace": "ns"}],
                     "lastScheduleTime": "2024-01-02T03:04:05Z"}})");
  ASSERT_TRUE(cj.ok()) << cj.status();
  EXPECT_EQ(cj->spec.job_template.spec.parallelism, 3);
  ASSERT_EQ(cj->status.active.size(), 1u);
  EXPECT_EQ(cj->status.active[0].name, "j1");

  auto deploy = DecodeJson<Deployment>(
      R"({"spec": {"replicas": 2, "strategy": {"type": "Recreate"}, "template": {}},
          "status": {"replicas": 2, "readyReplicas": 1}})");
  ASSERT_TRUE(deploy.ok()) << deploy.status();
  EXPECT_EQ(deploy->spec.replicas, 2);
  auto rs = DecodeJson<ReplicaSet>(R"({"spec": {"replicas": 0}, "status": {"replicas": 1}})");
  ASSERT_TRUE(rs.ok()) << rs.status();
  EXPECT_EQ(rs->spec.replicas, 0);  // an explicit 0 is kept (not "unset")
  EXPECT_EQ(Encode(*rs)["spec"]["replicas"], 0);

  // An empty status (the API server writes one on create) is fine.
  EXPECT_TRUE(DecodeJson<StatefulSet>(R"({"status": {}})").ok());
  // Errors name the field.
  auto bad = DecodeJson<StatefulSet>(R"({"spec": {"replicas": "three", "ordinals": {"start": -1}}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("spec.replicas"), std::string::npos);
  EXPECT_NE(std::string(bad.status().message()).find("spec.ordinals.start"), std::string::npos);
}

// Fuzz-style: deterministic random mutations of the workload JSON must never crash the
// decoders, and whatever decodes cleanly must re-encode stably.
class JsonMutator {
 public:
  explicit JsonMutator(uint64_t seed) : rng_(seed) {}
  size_t Pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  Json RandomScalar() {
    switch (Pick(7)) {
      case 0: return nullptr;
      case 1: return static_cast<int64_t>(Pick(5)) - 2;
      case 2: return 1e300;
      case 3: return "x";
      case 4: return Json::array();
      case 5: return Json::object();
      default: return Pick(2) == 0;
    }
  }
  void Mutate(Json* j) {
    if ((j->is_object() || j->is_array()) && !j->empty() && Pick(4) != 0) {
      size_t i = Pick(j->size());
      auto it = j->begin();
      std::advance(it, static_cast<std::ptrdiff_t>(i));
      if (Pick(5) == 0 && j->is_object()) {
        j->erase(it.key());
        return;
      }
      Mutate(&*it);
      return;
    }
    *j = RandomScalar();
  }

 private:
  std::mt19937_64 rng_;
};

template <typename T>
void CheckStable(const Json& j) {
  DecodeErrors errs;
  T obj = DecodeInto<T>(j, &errs);
  Json enc = Encode(obj);  // partially decoded objects encode too
  if (!errs.ok()) {
    for (const FieldError& e : errs.errors) EXPECT_FALSE(e.message.empty());
    return;
  }
  DecodeErrors errs2;
  T again = DecodeInto<T>(enc, &errs2);
  ASSERT_TRUE(errs2.ok()) << base::DumpJson(enc);
  EXPECT_EQ(Encode(again), enc);
}

TEST(Apps, MutationsNeverCrash) {
  auto seed = base::ParseJson(kStatefulSet);
  ASSERT_TRUE(seed.ok());
  JsonMutator m(0xa9951);
  for (int i = 0; i < 3000; ++i) {
    Json j = *seed;
    int n = 1 + static_cast<int>(m.Pick(4));
    for (int k = 0; k < n; ++k) m.Mutate(&j);
    AppsKinds::ForEach([&]<typename T>() { CheckStable<T>(j); });
  }
}

}  // namespace
}  // namespace spiderpool::api
