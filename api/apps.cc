#include "api/apps.h"

#include <limits>

namespace spiderpool::api {

namespace {

ResourceInfo Workload(std::string group, std::string kind, std::string plural,
                      std::vector<std::string> short_names) {
  std::string singular = plural.substr(0, plural.size() - 1);  // "deployments" -> "deployment"
  return ResourceInfo{.group = std::move(group),
                      .version = "v1",
                      .kind = std::move(kind),
                      .plural = std::move(plural),
                      .singular = std::move(singular),
                      .namespaced = true,
                      .has_status = true,
                      .short_names = std::move(short_names)};
}

}  // namespace

const ResourceInfo& Deployment::Resource() {
  static const ResourceInfo info = Workload("apps", "Deployment", "deployments", {"deploy"});
  return info;
}

const ResourceInfo& ReplicaSet::Resource() {
  static const ResourceInfo info = Workload("apps", "ReplicaSet", "replicasets", {"rs"});
  return info;
}

const ResourceInfo& StatefulSet::Resource() {
  static const ResourceInfo info = Workload("apps", "StatefulSet", "statefulsets", {"sts"});
  return info;
}

const ResourceInfo& DaemonSet::Resource() {
  static const ResourceInfo info = Workload("apps", "DaemonSet", "daemonsets", {"ds"});
  return info;
}

const ResourceInfo& Job::Resource() {
  static const ResourceInfo info = Workload("batch", "Job", "jobs", {});
  return info;
}

const ResourceInfo& CronJob::Resource() {
  static const ResourceInfo info = Workload("batch", "CronJob", "cronjobs", {"cj"});
  return info;
}

int32_t StatefulSetReplicas(const StatefulSet& sts) { return sts.spec.replicas.value_or(1); }

int32_t StatefulSetOrdinalStart(const StatefulSet& sts) {
  return sts.spec.ordinals.has_value() ? sts.spec.ordinals->start : 0;
}

bool StatefulSetCoversOrdinal(const StatefulSet& sts, int64_t ordinal) {
  const int64_t start = StatefulSetOrdinalStart(sts);
  const int64_t replicas = StatefulSetReplicas(sts);
  return ordinal >= start && ordinal < start + replicas;
}

std::optional<StatefulSetPodName> ParseStatefulSetPodName(std::string_view pod_name) {
  const size_t dash = pod_name.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == pod_name.size()) {
    return std::nullopt;
  }
  std::string_view digits = pod_name.substr(dash + 1);
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;  // the controller writes %d
  int64_t ordinal = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    if (ordinal > (std::numeric_limits<int32_t>::max() - (c - '0')) / 10) return std::nullopt;
    ordinal = ordinal * 10 + (c - '0');
  }
  return StatefulSetPodName{.statefulset = std::string(pod_name.substr(0, dash)),
                            .ordinal = ordinal};
}

}  // namespace spiderpool::api
