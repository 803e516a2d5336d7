#include "operator/subnet/plan.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "api/validation/validation.h"
#include "base/strings.h"
#include "ipam/selection.h"

namespace spiderpool::op::subnet {

namespace {

namespace dipam = ::spiderpool::ipam;
using base::IPAddress;
using base::IPRange;
using base::StrCat;

constexpr std::string_view kSubnetKind = "SpiderSubnet";

template <typename Meta>
std::string ControllerKind(const Meta& meta) {
  const api::OwnerReference* ref = meta.ControllerRef();
  return ref == nullptr ? "" : ref->kind;
}

template <typename T>
Application Base(const T& obj, std::string api_version, std::string kind,
                 const api::PodTemplateSpec& tmpl) {
  Application app;
  app.api_version = std::move(api_version);
  app.kind = std::move(kind);
  app.namespace_ = obj.metadata.namespace_;
  app.name = obj.metadata.name;
  app.uid = obj.metadata.uid;
  app.pod_annotations = tmpl.metadata.annotations;
  app.host_network = tmpl.spec.host_network;
  app.controller_kind = ControllerKind(obj.metadata);
  app.deleting = obj.metadata.IsDeleting();
  return app;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  return a + b;
}

std::vector<IPRange> Union(std::vector<IPRange> a, const std::vector<IPRange>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return base::MergeIPRanges(std::move(a));
}

std::vector<IPRange> Intersect(const std::vector<IPRange>& a, std::vector<IPRange> b) {
  // a ∩ b = a - (a - b)
  return base::SubtractIPRanges(a, base::SubtractIPRanges(a, std::move(b)));
}

// `ip` + k within its family (k is smaller than the remaining space by construction).
IPAddress Offset(const IPAddress& ip, absl::uint128 k) {
  if (ip.is_v4()) return IPAddress::V4(static_cast<uint32_t>(ip.value() + k));
  return IPAddress::V6(ip.value() + k);
}

std::string RangesText(const std::vector<IPRange>& r) {
  std::vector<std::string> f = base::FormatIPRanges(r);
  std::string out = "[";
  for (size_t i = 0; i < f.size(); ++i) out += (i == 0 ? "" : " ") + f[i];
  return out + "]";
}

}  // namespace

// ---- Applications ---------------------------------------------------------------------------

Application ApplicationOf(const api::Deployment& d) {
  Application app = Base(d, "apps/v1", "Deployment", d.spec.template_);
  app.replicas = d.spec.replicas.value_or(1);
  return app;
}

Application ApplicationOf(const api::ReplicaSet& rs) {
  Application app = Base(rs, "apps/v1", "ReplicaSet", rs.spec.template_);
  app.replicas = rs.spec.replicas.value_or(1);
  return app;
}

Application ApplicationOf(const api::StatefulSet& sts) {
  Application app = Base(sts, "apps/v1", "StatefulSet", sts.spec.template_);
  app.replicas = sts.spec.replicas.value_or(1);
  return app;
}

Application ApplicationOf(const api::DaemonSet& ds) {
  Application app = Base(ds, "apps/v1", "DaemonSet", ds.spec.template_);
  app.replicas = ds.status.desired_number_scheduled;
  return app;
}

Application ApplicationOf(const api::Job& job) {
  Application app = Base(job, "batch/v1", "Job", job.spec.template_);
  app.replicas = JobPodNumber(job.spec.parallelism, job.spec.completions);
  return app;
}

Application ApplicationOf(const api::CronJob& cj) {
  Application app = Base(cj, "batch/v1", "CronJob", cj.spec.job_template.spec.template_);
  app.replicas =
      JobPodNumber(cj.spec.job_template.spec.parallelism, cj.spec.job_template.spec.completions);
  return app;
}

int64_t JobPodNumber(std::optional<int32_t> parallelism, std::optional<int32_t> completions) {
  // Negative values are rejected by the API server; count them as 0 here.
  if (completions.has_value()) return *completions == 0 ? 1 : std::max<int64_t>(0, *completions);
  if (parallelism.has_value()) return *parallelism == 0 ? 1 : std::max<int64_t>(0, *parallelism);
  return 1;
}

bool HasSubnetAnnotation(const dipam::Annotations& pod_annotations) {
  return pod_annotations.count(std::string(api::kAnnoSubnets)) > 0 ||
         pod_annotations.count(std::string(api::kAnnoSubnet)) > 0;
}

std::string SkipReason(const Application& app) {
  if (!HasSubnetAnnotation(app.pod_annotations)) return "no SpiderSubnet annotation";
  if (app.host_network) return "HostNetwork mode";
  if ((app.kind == "ReplicaSet" || app.kind == "Job") && !app.controller_kind.empty()) {
    return StrCat("controlled by a ", app.controller_kind);
  }
  return "";
}

std::string ApplicationString(std::string_view api_version, std::string_view kind,
                              std::string_view ns, std::string_view name) {
  return StrCat(dipam::ApplicationLabelGV(api_version), "_", kind, "_", ns, "_", name);
}

std::optional<PoolOwner> PoolOwnerOf(const api::SpiderIPPool& pool) {
  const auto& l = pool.metadata.labels;
  auto get = [&](std::string_view key) {
    auto it = l.find(std::string(key));
    return it == l.end() ? std::string() : it->second;
  };
  if (l.count(std::string(api::kLabelOwnerApplicationName)) == 0) return std::nullopt;
  return PoolOwner{.gv = get(api::kLabelOwnerApplicationGV),
                   .kind = get(api::kLabelOwnerApplicationKind),
                   .namespace_ = get(api::kLabelOwnerApplicationNamespace),
                   .name = get(api::kLabelOwnerApplicationName),
                   .uid = get(api::kLabelOwnerApplicationUID),
                   .subnet = get(api::kLabelOwnerSpiderSubnet),
                   .reclaim = get(api::kLabelIPPoolReclaim) == "true"};
}

std::string IdentityKey(std::string_view gv, std::string_view kind, std::string_view ns,
                        std::string_view name) {
  return StrCat(gv, "/", kind, "/", ns, "/", name);
}

std::string IdentityKey(const Application& app) {
  return IdentityKey(dipam::ApplicationLabelGV(app.api_version), app.kind, app.namespace_,
                     app.name);
}

// ---- What an application wants ---------------------------------------------------------------

absl::StatusOr<std::vector<AutoPoolWant>> WantedAutoPools(const Application& app,
                                                          const WantConfig& config) {
  std::vector<AutoPoolWant> out;
  absl::StatusOr<std::optional<dipam::SubnetAnnotation>> anno = dipam::ParseSubnetAnnotation(
      app.pod_annotations, config.cluster_subnet_default_flexible_ip_number);
  if (!anno.ok()) return anno.status();
  if (!anno->has_value()) return out;
  const dipam::SubnetAnnotation& a = **anno;
  std::vector<dipam::AnnoSubnetItem> items = a.multiple;
  if (items.empty() && a.single.has_value()) items.push_back(*a.single);

  AutoPoolWant proto;
  if (a.flexible_ip_number.has_value()) {
    proto.ip_number = SaturatingAdd(std::max<int64_t>(0, app.replicas), *a.flexible_ip_number);
    proto.ip_number_annotation = StrCat("+", *a.flexible_ip_number);
  } else {
    proto.ip_number = a.assign_ip_number;
    proto.ip_number_annotation = StrCat(a.assign_ip_number);
  }
  proto.reclaim = a.reclaim_ip_pool;
  for (const dipam::AnnoSubnetItem& item : items) {
    for (int version : {4, 6}) {
      const std::vector<std::string>& subnets = version == 4 ? item.ipv4 : item.ipv6;
      const bool enabled = version == 4 ? config.enable_ipv4 : config.enable_ipv6;
      if (!enabled || subnets.empty()) continue;
      AutoPoolWant w = proto;
      w.subnet = subnets[0];
      w.ip_version = version;
      w.if_name = item.interface_;
      out.push_back(std::move(w));
    }
  }
  return out;
}

// ---- The pool object -------------------------------------------------------------------------

std::map<std::string, std::string> AutoPoolLabels(const Application& app, const AutoPoolWant& want,
                                                  const std::string& cidr_label) {
  return {
      {std::string(api::kLabelOwnerSpiderSubnet), want.subnet},
      {std::string(api::kLabelOwnerApplicationGV), dipam::ApplicationLabelGV(app.api_version)},
      {std::string(api::kLabelOwnerApplicationKind), app.kind},
      {std::string(api::kLabelOwnerApplicationNamespace), app.namespace_},
      {std::string(api::kLabelOwnerApplicationName), app.name},
      {std::string(api::kLabelOwnerApplicationUID), app.uid},
      {std::string(api::kLabelIPPoolInterface), want.if_name},
      {std::string(api::kLabelIPPoolReclaim), want.reclaim ? "true" : "false"},
      {std::string(api::kLabelIPPoolVersion), want.ip_version == 4 ? "IPv4" : "IPv6"},
      {std::string(api::kLabelIPPoolCIDR), cidr_label},
  };
}

api::LabelSelector AutoPoolPodAffinity(const Application& app) {
  std::string group, version = app.api_version;
  if (size_t pos = app.api_version.find('/'); pos != std::string::npos) {
    group = app.api_version.substr(0, pos);
    version = app.api_version.substr(pos + 1);
  }
  api::LabelSelector sel;
  sel.match_labels = {
      {std::string(api::kAppLabelAPIGroup), group},
      {std::string(api::kAppLabelAPIVersion), version},
      {std::string(api::kAppLabelKind), app.kind},
      {std::string(api::kAppLabelNamespace), app.namespace_},
      {std::string(api::kAppLabelName), app.name},
  };
  return sel;
}

absl::StatusOr<api::SpiderIPPool> NewAutoPool(const std::string& name, const Application& app,
                                              const AutoPoolWant& want,
                                              const api::SpiderSubnet& subnet,
                                              std::vector<std::string> ips) {
  absl::StatusOr<std::string> cidr =
      api::validation::CIDRLabelValue(subnet.spec.subnet, want.ip_version);
  if (!cidr.ok()) {
    return absl::InvalidArgumentError(StrCat("failed to parse '", subnet.spec.subnet,
                                             "' when allocating empty Auto-created IPPool '", name,
                                             "'"));
  }
  api::SpiderIPPool pool;
  pool.SetTypeMeta();
  pool.metadata.name = name;
  pool.metadata.labels = AutoPoolLabels(app, want, *cidr);
  pool.metadata.annotations[std::string(api::kAnnoIPPoolIPNumber)] = want.ip_number_annotation;
  pool.metadata.owner_references.push_back(
      api::OwnerReference{.api_version = std::string(api::kSpiderApiVersion),
                          .kind = std::string(kSubnetKind),
                          .name = subnet.metadata.name,
                          .uid = subnet.metadata.uid,
                          .controller = true,
                          .block_owner_deletion = true});
  pool.metadata.AddFinalizer(api::kSpiderFinalizer);
  pool.spec.ip_version = want.ip_version;
  pool.spec.subnet = subnet.spec.subnet;
  pool.spec.ips = std::move(ips);
  pool.spec.gateway = subnet.spec.gateway;
  pool.spec.routes = subnet.spec.routes;
  pool.spec.pod_affinity = AutoPoolPodAffinity(app);
  return pool;
}

bool RefreshAutoPool(api::SpiderIPPool* pool, const Application& app, const AutoPoolWant& want,
                     const std::vector<std::string>& ips) {
  bool changed = false;
  auto set = [&changed](std::map<std::string, std::string>& m, std::string_view k,
                        const std::string& v) {
    auto [it, inserted] = m.try_emplace(std::string(k), v);
    if (!inserted && it->second != v) {
      it->second = v;
      changed = true;
    }
    changed = changed || inserted;
  };
  set(pool->metadata.labels, api::kLabelOwnerApplicationUID, app.uid);
  set(pool->metadata.labels, api::kLabelIPPoolReclaim, want.reclaim ? "true" : "false");
  set(pool->metadata.annotations, api::kAnnoIPPoolIPNumber, want.ip_number_annotation);
  if (pool->spec.ips != ips) {
    pool->spec.ips = ips;
    changed = true;
  }
  return changed;
}

// ---- Subnet IP planning ----------------------------------------------------------------------

std::string ReleasingKey(std::string_view pool_name) { return StrCat(pool_name, kReleasingSuffix); }

std::string PoolOfKey(std::string_view key) {
  if (key.size() > kReleasingSuffix.size() &&
      key.substr(key.size() - kReleasingSuffix.size()) == kReleasingSuffix) {
    key.remove_suffix(kReleasingSuffix.size());
  }
  return std::string(key);
}

std::vector<IPRange> TakeLowest(const std::vector<IPRange>& ranges, absl::uint128 n) {
  std::vector<IPRange> out;
  for (const IPRange& r : ranges) {
    if (n == 0) break;
    const absl::uint128 c = r.Count();
    if (c <= n) {
      out.push_back(r);
      n -= c;
    } else {
      out.emplace_back(r.first(), Offset(r.first(), n - 1));
      n = 0;
    }
  }
  return out;
}

absl::StatusOr<Plan> PlanPoolIPs(const PlanInput& in) {
  Plan plan;
  const std::vector<IPRange> own = Union(in.entry, in.releasing);
  std::vector<IPRange> base = in.pool.has_value() ? *in.pool : in.entry;

  // Repair: pool IPs its record lacks. Another pool's record wins unless the IP is in use here.
  const std::vector<IPRange> missing = base::SubtractIPRanges(base, own);
  const std::vector<IPRange> conflict = Intersect(missing, in.others);
  if (!conflict.empty()) {
    const std::vector<IPRange> busy = Intersect(conflict, in.allocated);
    if (!busy.empty()) {
      return absl::FailedPreconditionError(
          StrCat("IPs ", RangesText(busy),
                 " are allocated in the IPPool but the SpiderSubnet hands them to another "
                 "IPPool"));
    }
    base = base::SubtractIPRanges(std::move(base), conflict);
    plan.conflicts_dropped = conflict;
  }

  const absl::uint128 n = base::CountIPs(base);
  const absl::uint128 d = static_cast<uint64_t>(std::max<int64_t>(0, in.desired));
  if (n < d) {
    absl::uint128 need = d - n;
    std::vector<IPRange> reuse = TakeLowest(base::SubtractIPRanges(own, base), need);
    need -= base::CountIPs(reuse);
    if (need > 0) {
      std::vector<IPRange> free = base::SubtractIPRanges(in.subnet_usable, in.reserved);
      free = base::SubtractIPRanges(std::move(free), in.others);
      free = base::SubtractIPRanges(std::move(free), own);
      free = base::SubtractIPRanges(std::move(free), base);
      const absl::uint128 left = base::CountIPs(free);
      if (left < need) {
        return absl::ResourceExhaustedError(StrCat("insufficient subnet FreeIPs, required '",
                                                   base::Uint128ToString(need), "' but only left '",
                                                   base::Uint128ToString(left), "'"));
      }
      plan.claimed = TakeLowest(free, need);
    }
    plan.target = Union(Union(base, reuse), plan.claimed);
  } else if (n > d) {
    const std::vector<IPRange> removable = base::SubtractIPRanges(base, in.allocated);
    const std::vector<IPRange> drop = TakeLowest(removable, n - d);
    const absl::uint128 short_by = n - d - base::CountIPs(drop);
    plan.over_desired =
        short_by > absl::uint128(static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            ? std::numeric_limits<int64_t>::max()
            : static_cast<int64_t>(short_by);
    plan.target = base::SubtractIPRanges(base, drop);
  } else {
    plan.target = base;
  }
  plan.releasing = base::SubtractIPRanges(Union(own, base), plan.target);
  return plan;
}

absl::StatusOr<std::vector<IPRange>> ParseMerged(const std::vector<std::string>& texts,
                                                 base::IPFamily family, std::string_view what) {
  absl::StatusOr<std::vector<IPRange>> r = base::ParseIPRanges(texts, family);
  if (!r.ok()) {
    return absl::InvalidArgumentError(StrCat(what, base::FromAbsl(r.status().message())));
  }
  return base::MergeIPRanges(*std::move(r));
}

absl::StatusOr<std::vector<IPRange>> AllocatedRanges(const api::SpiderIPPool& pool,
                                                     base::IPFamily family) {
  absl::StatusOr<api::PoolIPAllocations> records = pool.AllocatedIPs();
  if (!records.ok()) return records.status();
  std::vector<IPRange> out;
  for (const auto& [ip_text, record] : *records) {
    absl::StatusOr<IPAddress> ip = IPAddress::Parse(ip_text);
    if (!ip.ok() || ip->family() != family) continue;  // AllocatedIPs() checked the keys
    out.emplace_back(*ip, *ip);
  }
  return base::MergeIPRanges(std::move(out));
}

}  // namespace spiderpool::op::subnet
