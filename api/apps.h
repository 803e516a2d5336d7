#pragma once
// Kubernetes workload kinds the controller reads: apps/v1 Deployment, ReplicaSet, StatefulSet,
// DaemonSet and batch/v1 Job, CronJob. Field names follow k8s.io/api exactly. We model the
// fields IPAM uses (replica counts, selectors, pod template labels/annotations, StatefulSet
// ordinals); everything else is kept raw with `v.Unknown(unknown)`, so a read-modify-write
// loses nothing.
//
// Go pointers (`*int32`) are std::optional. Go value fields without omitempty (e.g.
// StatefulSetStatus.replicas) are plain members here and omitted when zero on encode: decoding
// must never reject an object whose status is still `{}`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "api/core.h"
#include "api/meta.h"
#include "api/resource.h"

namespace spiderpool::api {

// spec.template of every workload: labels/annotations of the pods it makes and their spec.
struct PodTemplateSpec {
  ObjectMeta metadata;
  PodSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};

// ---- Deployment (apps/v1) -----------------------------------------------------------------

struct DeploymentSpec {
  std::optional<int32_t> replicas;  // nil = 1
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;  // "template"
  int32_t min_ready_seconds = 0;
  std::optional<int32_t> revision_history_limit;
  bool paused = false;
  std::optional<int32_t> progress_deadline_seconds;
  Json unknown;  // strategy, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("replicas", replicas);
    v.Field("selector", selector);
    v.Field("template", template_);
    v.Field("minReadySeconds", min_ready_seconds);
    v.Field("revisionHistoryLimit", revision_history_limit);
    v.Field("paused", paused);
    v.Field("progressDeadlineSeconds", progress_deadline_seconds);
    v.Unknown(unknown);
  }
};

struct DeploymentStatus {
  int64_t observed_generation = 0;
  int32_t replicas = 0;
  int32_t updated_replicas = 0;
  int32_t ready_replicas = 0;
  int32_t available_replicas = 0;
  int32_t unavailable_replicas = 0;
  Json unknown;  // conditions, collisionCount, terminatingReplicas, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("observedGeneration", observed_generation);
    v.Field("replicas", replicas);
    v.Field("updatedReplicas", updated_replicas);
    v.Field("readyReplicas", ready_replicas);
    v.Field("availableReplicas", available_replicas);
    v.Field("unavailableReplicas", unavailable_replicas);
    v.Unknown(unknown);
  }
};

struct Deployment {
  SP_API_OBJECT_HEAD(Deployment)
  DeploymentSpec spec;
  DeploymentStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// ---- ReplicaSet (apps/v1) -----------------------------------------------------------------

struct ReplicaSetSpec {
  std::optional<int32_t> replicas;  // nil = 1
  int32_t min_ready_seconds = 0;
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("replicas", replicas);
    v.Field("minReadySeconds", min_ready_seconds);
    v.Field("selector", selector);
    v.Field("template", template_);
    v.Unknown(unknown);
  }
};

struct ReplicaSetStatus {
  int32_t replicas = 0;
  int32_t fully_labeled_replicas = 0;
  int32_t ready_replicas = 0;
  int32_t available_replicas = 0;
  int64_t observed_generation = 0;
  Json unknown;  // conditions, terminatingReplicas
  template <typename V>
  void Visit(V& v) {
    v.Field("replicas", replicas);
    v.Field("fullyLabeledReplicas", fully_labeled_replicas);
    v.Field("readyReplicas", ready_replicas);
    v.Field("availableReplicas", available_replicas);
    v.Field("observedGeneration", observed_generation);
    v.Unknown(unknown);
  }
};

struct ReplicaSet {
  SP_API_OBJECT_HEAD(ReplicaSet)
  ReplicaSetSpec spec;
  ReplicaSetStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// ---- StatefulSet (apps/v1) ----------------------------------------------------------------

// spec.ordinals (k8s >= 1.26): the first ordinal of the pods, default 0.
struct StatefulSetOrdinals {
  int32_t start = 0;
  template <typename V>
  void Visit(V& v) {
    v.Field("start", start, {.minimum = 0});
  }
};

struct StatefulSetSpec {
  std::optional<int32_t> replicas;  // nil = 1
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;
  std::string service_name;
  std::string pod_management_policy;  // OrderedReady | Parallel
  std::optional<int32_t> revision_history_limit;
  int32_t min_ready_seconds = 0;
  std::optional<StatefulSetOrdinals> ordinals;
  Json unknown;  // volumeClaimTemplates, updateStrategy, persistentVolumeClaimRetentionPolicy
  template <typename V>
  void Visit(V& v) {
    v.Field("replicas", replicas);
    v.Field("selector", selector);
    v.Field("template", template_);
    v.Field("serviceName", service_name);
    v.Field("podManagementPolicy", pod_management_policy);
    v.Field("revisionHistoryLimit", revision_history_limit);
    v.Field("minReadySeconds", min_ready_seconds);
    v.Field("ordinals", ordinals);
    v.Unknown(unknown);
  }
};

struct StatefulSetStatus {
  int64_t observed_generation = 0;
  int32_t replicas = 0;
  int32_t ready_replicas = 0;
  int32_t current_replicas = 0;
  int32_t updated_replicas = 0;
  std::string current_revision;
  std::string update_revision;
  std::optional<int32_t> collision_count;
  int32_t available_replicas = 0;
  Json unknown;  // conditions
  template <typename V>
  void Visit(V& v) {
    v.Field("observedGeneration", observed_generation);
    v.Field("replicas", replicas);
    v.Field("readyReplicas", ready_replicas);
    v.Field("currentReplicas", current_replicas);
    v.Field("updatedReplicas", updated_replicas);
    v.Field("currentRevision", current_revision);
    v.Field("updateRevision", update_revision);
    v.Field("collisionCount", collision_count);
    v.Field("availableReplicas", available_replicas);
    v.Unknown(unknown);
  }
};

struct StatefulSet {
  SP_API_OBJECT_HEAD(StatefulSet)
  StatefulSetSpec spec;
  StatefulSetStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// spec.replicas, 1 when unset (the API server's default).
int32_t StatefulSetReplicas(const StatefulSet& sts);
// spec.ordinals.start, 0 when unset.
int32_t StatefulSetOrdinalStart(const StatefulSet& sts);
// True iff a pod with `ordinal` is one the StatefulSet wants now:
// start <= ordinal < start + replicas.
bool StatefulSetCoversOrdinal(const StatefulSet& sts, int64_t ordinal);

// A StatefulSet pod's name is "<statefulset name>-<ordinal>". Splits at the last '-'; nullopt
// when the suffix is not a canonical non-negative decimal ("web-01", "web-", "web" fail).
struct StatefulSetPodName {
  std::string statefulset;
  int64_t ordinal = 0;
};
std::optional<StatefulSetPodName> ParseStatefulSetPodName(std::string_view pod_name);

// ---- DaemonSet (apps/v1) ------------------------------------------------------------------

struct DaemonSetSpec {
  std::optional<LabelSelector> selector;
  PodTemplateSpec template_;
  int32_t min_ready_seconds = 0;
  std::optional<int32_t> revision_history_limit;
  Json unknown;  // updateStrategy
  template <typename V>
  void Visit(V& v) {
    v.Field("selector", selector);
    v.Field("template", template_);
    v.Field("minReadySeconds", min_ready_seconds);
    v.Field("revisionHistoryLimit", revision_history_limit);
    v.Unknown(unknown);
  }
};

struct DaemonSetStatus {
  int32_t current_number_scheduled = 0;
  int32_t number_misscheduled = 0;
  int32_t desired_number_scheduled = 0;
  int32_t number_ready = 0;
  int64_t observed_generation = 0;
  int32_t updated_number_scheduled = 0;
  int32_t number_available = 0;
  int32_t number_unavailable = 0;
  std::optional<int32_t> collision_count;
  Json unknown;  // conditions
  template <typename V>
  void Visit(V& v) {
    v.Field("currentNumberScheduled", current_number_scheduled);
    v.Field("numberMisscheduled", number_misscheduled);
    v.Field("desiredNumberScheduled", desired_number_scheduled);
    v.Field("numberReady", number_ready);
    v.Field("observedGeneration", observed_generation);
    v.Field("updatedNumberScheduled", updated_number_scheduled);
    v.Field("numberAvailable", number_available);
    v.Field("numberUnavailable", number_unavailable);
    v.Field("collisionCount", collision_count);
    v.Unknown(unknown);
  }
};

struct DaemonSet {
  SP_API_OBJECT_HEAD(DaemonSet)
  DaemonSetSpec spec;
  DaemonSetStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// ---- Job (batch/v1) -----------------------------------------------------------------------

struct JobSpec {
  std::optional<int32_t> parallelism;  // nil = 1
  std::optional<int32_t> completions;  // nil = "any one success"
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> backoff_limit;
  std::optional<LabelSelector> selector;
  std::optional<bool> manual_selector;
  PodTemplateSpec template_;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<std::string> completion_mode;  // NonIndexed | Indexed
  std::optional<bool> suspend;
  Json unknown;  // podFailurePolicy, backoffLimitPerIndex, successPolicy, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("parallelism", parallelism);
    v.Field("completions", completions);
    v.Field("activeDeadlineSeconds", active_deadline_seconds);
    v.Field("backoffLimit", backoff_limit);
    v.Field("selector", selector);
    v.Field("manualSelector", manual_selector);
    v.Field("template", template_);
    v.Field("ttlSecondsAfterFinished", ttl_seconds_after_finished);
    v.Field("completionMode", completion_mode);
    v.Field("suspend", suspend);
    v.Unknown(unknown);
  }
};

struct JobStatus {
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  std::optional<int32_t> ready;
  Json unknown;  // conditions, completedIndexes, uncountedTerminatedPods, ...
  template <typename V>
  void Visit(V& v) {
    v.Field("startTime", start_time);
    v.Field("completionTime", completion_time);
    v.Field("active", active);
    v.Field("succeeded", succeeded);
    v.Field("failed", failed);
    v.Field("ready", ready);
    v.Unknown(unknown);
  }
};

struct Job {
  SP_API_OBJECT_HEAD(Job)
  JobSpec spec;
  JobStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

// ---- CronJob (batch/v1) -------------------------------------------------------------------

struct JobTemplateSpec {
  ObjectMeta metadata;
  JobSpec spec;
  template <typename V>
  void Visit(V& v) {
    v.Field("metadata", metadata);
    v.Field("spec", spec);
  }
};

struct CronJobSpec {
  std::string schedule;  // required by the API server; not enforced when decoding
  std::optional<std::string> time_zone;
  std::optional<int64_t> starting_deadline_seconds;
  std::string concurrency_policy;  // Allow | Forbid | Replace
  std::optional<bool> suspend;
  JobTemplateSpec job_template;
  std::optional<int32_t> successful_jobs_history_limit;
  std::optional<int32_t> failed_jobs_history_limit;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("schedule", schedule);
    v.Field("timeZone", time_zone);
    v.Field("startingDeadlineSeconds", starting_deadline_seconds);
    v.Field("concurrencyPolicy", concurrency_policy);
    v.Field("suspend", suspend);
    v.Field("jobTemplate", job_template);
    v.Field("successfulJobsHistoryLimit", successful_jobs_history_limit);
    v.Field("failedJobsHistoryLimit", failed_jobs_history_limit);
    v.Unknown(unknown);
  }
};

struct CronJobStatus {
  std::vector<ObjectReference> active;
  std::optional<Time> last_schedule_time;
  std::optional<Time> last_successful_time;
  template <typename V>
  void Visit(V& v) {
    v.Field("active", active);
    v.Field("lastScheduleTime", last_schedule_time);
    v.Field("lastSuccessfulTime", last_successful_time);
  }
};

struct CronJob {
  SP_API_OBJECT_HEAD(CronJob)
  CronJobSpec spec;
  CronJobStatus status;
  Json unknown;
  template <typename V>
  void Visit(V& v) {
    v.Field("apiVersion", api_version);
    v.Field("kind", kind);
    v.Field("metadata", metadata);
    v.Field("spec", spec);
    v.Field("status", status);
    v.Unknown(unknown);
  }
};

}  // namespace spiderpool::api
