#include "ipam/selection.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "api/spider.h"
#include "base/ip.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::ipam {
namespace {

using base::StrCat;

std::string_view Msg(const absl::Status& s) { return base::FromAbsl(s.message()); }

// Go's fmt %v of a []string: "[a b]".
std::string GoList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? " " : "") + v[i];
  return out + "]";
}

// Go's fmt %v of a map[string]string: "map[k1:v1 k2:v2]" (keys sorted).
std::string GoMap(const std::map<std::string, std::string>& m) {
  std::string out = "map[";
  bool first = true;
  for (const auto& [k, v] : m) {
    out += StrCat(first ? "" : " ", k, ":", v);
    first = false;
  }
  return out + "]";
}

// k8s.io/apimachinery utilerrors.NewAggregate(errs).Error(): one message bare, several
// de-duplicated in "[a, b]".
std::string Aggregate(const std::vector<std::string>& msgs) {
  if (msgs.size() == 1) return msgs[0];
  std::vector<std::string> seen;
  for (const std::string& m : msgs) {
    if (std::find(seen.begin(), seen.end(), m) == seen.end()) seen.push_back(m);
  }
  std::string out;
  for (size_t i = 0; i < seen.size(); ++i) out += (i ? ", " : "") + seen[i];
  return seen.size() == 1 ? out : "[" + out + "]";
}

// A pool's IP version: spec.ipVersion (the mutating webhook always sets it), else the
// family of spec.subnet, else 0.
int PoolVersion(const api::SpiderIPPool& pool) {
  if (pool.spec.ip_version.has_value()) return static_cast<int>(*pool.spec.ip_version);
  auto p = base::IPPrefix::Parse(pool.spec.subnet);
  if (!p.ok()) return 0;
  return p->family() == base::IPFamily::kV4 ? 4 : 6;
}

// |spec.ips − excludeIPs| (upstream AssembleTotalIPs), for the auto-pool size check.
absl::StatusOr<absl::uint128> TotalIPs(const api::SpiderIPPool& pool) {
  SP_ASSIGN_OR_RETURN(std::vector<base::IPRange> ips, base::ParseIPRanges(pool.spec.ips));
  SP_ASSIGN_OR_RETURN(std::vector<base::IPRange> ex, base::ParseIPRanges(pool.spec.exclude_ips));
  return base::CountIPs(base::SubtractIPRanges(std::move(ips), std::move(ex)));
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// ---- Go path/filepath.Match ----------------------------------------------------------------

// getEsc: one (possibly escaped) character of a class; `i` advances past it.
bool ClassChar(std::string_view p, size_t& i, char& out) {
  if (i >= p.size() || p[i] == '-' || p[i] == ']') return false;
  if (p[i] == '\\') {
    ++i;
    if (i >= p.size()) return false;
  }
  out = p[i++];
  return i < p.size();  // a class must be closed after this character
}

// Parses a class starting after '['; sets `end` past the closing ']'. With `c`, reports
// whether `c` is in the class.
bool ParseClass(std::string_view p, size_t start, size_t& end, char c, bool& in_class) {
  size_t i = start;
  bool negated = false;
  if (i < p.size() && p[i] == '^') {
    negated = true;
    ++i;
  }
  bool match = false;
  int nrange = 0;
  while (true) {
    if (i < p.size() && p[i] == ']' && nrange > 0) {
      ++i;
      break;
    }
    char lo, hi;
    if (!ClassChar(p, i, lo)) return false;
    hi = lo;
    if (p[i] == '-') {
      ++i;
      if (!ClassChar(p, i, hi)) return false;
    }
    if (lo <= c && c <= hi) match = true;
    ++nrange;
  }
  end = i;
  in_class = match != negated;
  return true;
}

bool ValidPattern(std::string_view p) {
  for (size_t i = 0; i < p.size();) {
    if (p[i] == '\\') {
      if (i + 1 >= p.size()) return false;
      i += 2;
    } else if (p[i] == '[') {
      size_t end;
      bool unused;
      if (!ParseClass(p, i + 1, end, 'a', unused)) return false;
      i = end;
    } else {
      ++i;
    }
  }
  return true;
}

// Matches one star-free chunk at the start of `s`; the rest of `s`, or nullopt. The pattern
// was validated already.
std::optional<std::string_view> MatchChunk(std::string_view chunk, std::string_view s) {
  size_t i = 0;
  while (i < chunk.size()) {
    if (s.empty()) return std::nullopt;
    const char c = s[0];
    if (chunk[i] == '?') {
      if (c == '/') return std::nullopt;
      ++i;
    } else if (chunk[i] == '[') {
      size_t end;
      bool in_class = false;
      if (!ParseClass(chunk, i + 1, end, c, in_class) || !in_class || c == '/') {
        return std::nullopt;
      }
      i = end;
    } else {
      if (chunk[i] == '\\') ++i;
      if (chunk[i] != c) return std::nullopt;
      ++i;
    }
    s.remove_prefix(1);
  }
  return s;
}

// Go's scanChunk: leading stars, then the chunk up to the next star outside a class.
void ScanChunk(std::string_view& pattern, bool& star, std::string_view& chunk) {
  star = false;
  while (!pattern.empty() && pattern[0] == '*') {
    pattern.remove_prefix(1);
    star = true;
  }
  bool in_range = false;
  size_t i = 0;
  for (; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 < pattern.size()) ++i;
    } else if (c == '[') {
      in_range = true;
    } else if (c == ']') {
      in_range = false;
    } else if (c == '*' && !in_range) {
      break;
    }
  }
  chunk = pattern.substr(0, i);
  pattern.remove_prefix(i);
}

// Go's Match loop: each chunk at its leftmost position, the last one anchored at the end;
// O(len(pattern) * len(name)), no exponential backtracking on user patterns.
bool GoMatch(std::string_view pattern, std::string_view name) {
  while (!pattern.empty()) {
    bool star;
    std::string_view chunk;
    ScanChunk(pattern, star, chunk);
    if (star && chunk.empty()) return name.find('/') == std::string_view::npos;
    std::optional<std::string_view> t = MatchChunk(chunk, name);
    if (t && (t->empty() || !pattern.empty())) {
      name = *t;
      continue;
    }
    bool advanced = false;
    if (star) {
      for (size_t i = 0; i < name.size() && name[i] != '/'; ++i) {
        t = MatchChunk(chunk, name.substr(i + 1));
        if (t) {
          if (pattern.empty() && !t->empty()) continue;
          name = *t;
          advanced = true;
          break;
        }
      }
    }
    if (!advanced) return false;
  }
  return name.empty();
}

// ---- Selection plumbing --------------------------------------------------------------------

class PoolIndex {
 public:
  explicit PoolIndex(const std::vector<const api::SpiderIPPool*>& pools) {
    by_name_.reserve(pools.size());
    for (const api::SpiderIPPool* p : pools) {
      if (p != nullptr) by_name_.emplace(p->metadata.name, p);
    }
  }
  const api::SpiderIPPool* Get(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }
  // The pools ordered by name (built on first use: only wildcards and rule 6 need it).
  const std::vector<const api::SpiderIPPool*>& Sorted() const {
    if (!sorted_built_) {
      for (const auto& [name, p] : by_name_) sorted_.push_back(p);
      std::sort(sorted_.begin(), sorted_.end(),
                [](const api::SpiderIPPool* a, const api::SpiderIPPool* b) {
                  return a->metadata.name < b->metadata.name;
                });
      sorted_built_ = true;
    }
    return sorted_;
  }

 private:
  // Keys view the pools' own names (the pools outlive the call).
  std::unordered_map<std::string_view, const api::SpiderIPPool*> by_name_;
  mutable std::vector<const api::SpiderIPPool*> sorted_;
  mutable bool sorted_built_ = false;
};

// Upstream ParseWildcardPoolNameList: patterns expand to every pool of `version` (by name)
// they match; plain names stay.
absl::StatusOr<std::vector<std::string>> ExpandWildcards(const std::vector<std::string>& names,
                                                         int version, const PoolIndex& index) {
  if (std::none_of(names.begin(), names.end(), [](const std::string& n) { return HasWildcard(n); })) {
    return names;
  }
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (!HasWildcard(n)) {
      out.push_back(n);
      continue;
    }
    for (const api::SpiderIPPool* pool : index.Sorted()) {
      const std::string& pool_name = pool->metadata.name;
      if (PoolVersion(*pool) != version) continue;
      auto m = WildcardMatch(n, pool_name);
      if (!m.ok()) {
        return absl::InvalidArgumentError(StrCat("failed to match wildcard: IPv", version,
                                                 " PoolName pattern '", n, "', character '",
                                                 pool_name, "', error: ", Msg(m.status())));
      }
      if (*m) out.emplace_back(pool_name);
    }
  }
  return out;
}

absl::StatusOr<NicCandidates> NicFromLists(std::string if_name, bool clean_gateway,
                                           const std::vector<std::string>& v4,
                                           const std::vector<std::string>& v6,
                                           const PoolIndex& index) {
  NicCandidates nic{.if_name = std::move(if_name), .clean_gateway = clean_gateway};
  if (!v4.empty()) {
    SP_ASSIGN_OR_RETURN(nic.ipv4_pools, ExpandWildcards(v4, 4, index));
  }
  if (!v6.empty()) {
    SP_ASSIGN_OR_RETURN(nic.ipv6_pools, ExpandWildcards(v6, 6, index));
  }
  return nic;
}

const std::vector<std::string> kK8sAPIVersions = {"v1", "apps/v1", "batch/v1"};
const std::vector<std::string> kK8sKinds = {"Pod",         "Deployment", "ReplicaSet",
                                            "DaemonSet",   "StatefulSet", "Job",
                                            "CronJob"};

bool IsBarePod(const PodOwner& o) { return o.api_version == "v1" && o.kind == "Pod"; }

// Upstream getAutoPoolIPNumber, except that a missing ippool-ip-number annotation adds the
// cluster default flexible number (the controller sizes pools that way, §2.7).
absl::StatusOr<std::optional<int64_t>> AutoPoolIPNumber(const SubnetAnnotation& anno,
                                                        const Annotations& pod_annotations,
                                                        const PodOwner& owner) {
  const bool has_number =
      pod_annotations.count(std::string(api::kAnnoIPPoolIPNumber)) > 0;
  if (!IsBuiltinController(owner)) {
    if (!has_number || anno.flexible_ip_number.has_value()) {
      return absl::InvalidArgumentError(StrCat(owner.kind, "/", owner.namespace_, "/", owner.name,
                                               " only supports fixed auto-created IPPool IP Number"));
    }
    return std::optional<int64_t>(anno.assign_ip_number);
  }
  if (owner.kind == "Pod") return std::optional<int64_t>(1);
  if (has_number && !anno.flexible_ip_number.has_value()) {
    return std::optional<int64_t>(anno.assign_ip_number);
  }
  if (!owner.replicas.has_value()) return std::optional<int64_t>();
  return std::optional<int64_t>(*owner.replicas + anno.flexible_ip_number.value_or(0));
}

}  // namespace

// ---- Public pieces -------------------------------------------------------------------------

absl::StatusOr<bool> WildcardMatch(std::string_view pattern, std::string_view name) {
  if (!ValidPattern(pattern)) return absl::InvalidArgumentError("syntax error in pattern");
  return GoMatch(pattern, name);
}

bool HasWildcard(std::string_view name) {
  return name.find('?') != std::string_view::npos || name.find('*') != std::string_view::npos ||
         (name.find('[') != std::string_view::npos && name.find(']') != std::string_view::npos);
}

bool PoolPriorityLess(const api::SpiderIPPool& a, const api::SpiderIPPool& b) {
  const api::IPPoolSpec& x = a.spec;
  const api::IPPoolSpec& y = b.spec;
  if (x.pod_affinity.has_value() != y.pod_affinity.has_value()) return x.pod_affinity.has_value();
  if (x.node_name.empty() != y.node_name.empty()) return !x.node_name.empty();
  if (x.node_affinity.has_value() != y.node_affinity.has_value()) {
    return x.node_affinity.has_value();
  }
  if (x.namespace_name.empty() != y.namespace_name.empty()) return !x.namespace_name.empty();
  if (x.namespace_affinity.has_value() != y.namespace_affinity.has_value()) {
    return x.namespace_affinity.has_value();
  }
  if (x.multus_name.empty() != y.multus_name.empty()) return !x.multus_name.empty();
  return false;
}

std::string AutoPoolName(std::string_view app_name, int ip_version, std::string_view if_name,
                         std::string_view app_uid) {
  std::string_view last = app_uid;
  if (size_t pos = app_uid.rfind('-'); pos != std::string_view::npos) {
    last = app_uid.substr(pos + 1);
  }
  if (last.size() > 5) last = last.substr(0, 5);
  // 253 (DNS-1123 subdomain) - "auto4" - three '-' separators - the UID part. (Upstream
  // subtracts 7, which yields 254-character names the API server rejects; 8 keeps them valid.)
  const size_t max_custom = 253 - last.size() - 8;
  std::string name(app_name);
  if (name.size() + if_name.size() > max_custom) {
    name.resize(if_name.size() < max_custom ? max_custom - if_name.size() : 0);
  }
  std::string out = StrCat("auto", ip_version, "-", name, "-", if_name, "-", last);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string ApplicationLabelGV(std::string_view api_version) {
  std::string out(api_version);
  if (size_t pos = out.find('/'); pos != std::string::npos) out[pos] = '_';
  return out;
}

bool IsBuiltinController(const PodOwner& owner) {
  return Contains(kK8sAPIVersions, owner.api_version) && Contains(kK8sKinds, owner.kind);
}

bool IsAutoCreatedPool(const api::SpiderIPPool& pool) {
  return pool.metadata.labels.count(std::string(api::kLabelOwnerApplicationName)) > 0;
}

bool PoolAdmitsNode(const api::SpiderIPPool& pool, const NodeInfo& node) {
  const api::IPPoolSpec& spec = pool.spec;
  if (!spec.node_name.empty()) return Contains(spec.node_name, node.name);
  return !spec.node_affinity.has_value() || spec.node_affinity->Matches(node.labels);
}

std::string PoolFilterReason(const api::SpiderIPPool& pool, int ip_version,
                             const SelectionRequest& request, const SelectionConfig& config,
                             std::string_view nic, const absl::StatusOr<std::string>& nad) {
  const std::string& name = pool.metadata.name;
  const api::IPPoolSpec& spec = pool.spec;
  if (pool.metadata.IsDeleting()) return StrCat("terminating IPPool ", name);
  if (spec.disable.value_or(false)) return StrCat("disabled IPPool ", name);
  if (int v = PoolVersion(pool); v != ip_version) {
    return StrCat("expect an IPv", ip_version, " IPPool, but the version of the IPPool ", name,
                  " is IPv", v);
  }
  if (!PoolAdmitsNode(pool, request.node)) {
    return StrCat(spec.node_name.empty() ? "unmatched Node affinity of IPPool "
                                         : "unmatched Node name of IPPool ",
                  name);
  }
  if (!spec.namespace_name.empty()) {
    if (!Contains(spec.namespace_name, request.pod.namespace_)) {
      return StrCat("unmatched Namespace name of IPPool ", name);
    }
  } else if (spec.namespace_affinity.has_value() &&
             !spec.namespace_affinity->Matches(request.namespace_.labels)) {
    return StrCat("unmatched Namespace affinity of IPPool ", name);
  }
  if (spec.pod_affinity.has_value()) {
    if (IsAutoCreatedPool(pool)) {
      // Upstream IsMatchAutoPoolAffinity (strings.Cut semantics: "v1" -> group "v1").
      const PodOwner& o = request.pod.owner;
      std::string group = o.api_version, version;
      if (size_t pos = o.api_version.find('/'); pos != std::string::npos) {
        group = o.api_version.substr(0, pos);
        version = o.api_version.substr(pos + 1);
      }
      const std::map<std::string, std::string> want = {
          {std::string(api::kAppLabelAPIGroup), group},
          {std::string(api::kAppLabelAPIVersion), version},
          {std::string(api::kAppLabelKind), o.kind},
          {std::string(api::kAppLabelNamespace), o.namespace_},
          {std::string(api::kAppLabelName), o.name},
      };
      for (const auto& [k, v] : want) {
        auto it = spec.pod_affinity->match_labels.find(k);
        const std::string have = it == spec.pod_affinity->match_labels.end() ? "" : it->second;
        if (have != v) return StrCat("unmatched Pod annifity of auto-created IPool ", name);
      }
      return "";  // upstream returns here: multusName is not checked for auto pools
    }
    if (!spec.pod_affinity->Matches(request.pod.labels)) {
      return StrCat("unmatched Pod affinity of IPPool ", name);
    }
  }
  if (!spec.multus_name.empty()) {
    if (!nad.ok()) {
      if (nad.status().code() == absl::StatusCode::kFailedPrecondition) {
        return StrCat(Msg(nad.status()), ", the IPPool ", name, " specified multusName ",
                      GoList(spec.multus_name), " unmatched");
      }
      return std::string(Msg(nad.status()));
    }
    for (const std::string& m : spec.multus_name) {
      std::string expected = m.find('/') == std::string::npos
                                 ? StrCat(config.agent_namespace, "/", m)
                                 : m;
      if (expected == *nad) return "";
    }
    return StrCat("interface ", nic, " IPPool ", name, " specified multusName ",
                  GoList(spec.multus_name), " unmacthed multusCR ", *nad);
  }
  return "";
}

absl::StatusOr<std::vector<AutoPoolRef>> AutoPoolRefsForPod(const SelectionRequest& request,
                                                            const SelectionConfig& config) {
  std::vector<AutoPoolRef> refs;
  const Annotations& annos = request.pod.annotations;
  const bool has_anno = annos.count(std::string(api::kAnnoSubnets)) > 0 ||
                        annos.count(std::string(api::kAnnoSubnet)) > 0;
  if (!config.enable_spider_subnet || !has_anno) return refs;
  if (!config.enable_auto_pool_for_application) {
    return absl::InvalidArgumentError(StrCat("it's invalid to use '", api::kAnnoSubnets, "' or '",
                                             api::kAnnoSubnet,
                                             "' annotation when Auto-Pool feature is disabled"));
  }
  SP_ASSIGN_OR_RETURN(std::optional<SubnetAnnotation> anno,
                      ParseSubnetAnnotation(annos, config.cluster_subnet_default_flexible_ip_number));
  if (!anno.has_value()) return refs;
  const PodOwner& owner = request.pod.owner;
  if (IsBarePod(owner)) {
    return absl::InvalidArgumentError("SpiderSubnet feature doesn't support no-controller pod");
  }
  AnnoSubnetItem item;
  if (!anno->multiple.empty()) {
    for (const AnnoSubnetItem& i : anno->multiple) {
      if (i.interface_ == request.if_name) {
        item = i;
        break;
      }
    }
  } else {
    item = *anno->single;
  }
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> desired,
                      AutoPoolIPNumber(*anno, annos, owner));
  const bool builtin = IsBuiltinController(owner);
  for (int version : {4, 6}) {
    const std::vector<std::string>& subnets = version == 4 ? item.ipv4 : item.ipv6;
    const bool enabled = version == 4 ? config.enable_ipv4 : config.enable_ipv6;
    if (!enabled || subnets.empty()) continue;
    AutoPoolRef ref{.subnet = subnets[0], .ip_version = version, .if_name = request.if_name};
    ref.pool_name = AutoPoolName(owner.name, version, request.if_name, owner.uid);
    ref.match_labels = {
        {std::string(api::kLabelOwnerSpiderSubnet), ref.subnet},
        {std::string(api::kLabelOwnerApplicationGV), ApplicationLabelGV(owner.api_version)},
        {std::string(api::kLabelOwnerApplicationKind), owner.kind},
        {std::string(api::kLabelOwnerApplicationNamespace), owner.namespace_},
        {std::string(api::kLabelOwnerApplicationName), owner.name},
        {std::string(api::kLabelIPPoolInterface), request.if_name},
        {std::string(api::kLabelIPPoolVersion), version == 4 ? "IPv4" : "IPv6"},
    };
    if (builtin) ref.match_labels[std::string(api::kLabelOwnerApplicationUID)] = owner.uid;
    ref.desired_ip_number = desired;
    ref.reclaim = anno->reclaim_ip_pool;
    refs.push_back(std::move(ref));
  }
  return refs;
}

absl::StatusOr<const api::SpiderIPPool*> FindAutoPool(
    const AutoPoolRef& ref, const PodOwner& owner,
    const std::vector<const api::SpiderIPPool*>& pools) {
  std::vector<const api::SpiderIPPool*> found;
  for (const api::SpiderIPPool* p : pools) {
    if (p == nullptr) continue;
    const auto& labels = p->metadata.labels;
    bool ok = std::all_of(ref.match_labels.begin(), ref.match_labels.end(), [&](const auto& kv) {
      auto it = labels.find(kv.first);
      return it != labels.end() && it->second == kv.second;
    });
    if (ok) found.push_back(p);
  }
  std::sort(found.begin(), found.end(), [](const api::SpiderIPPool* a, const api::SpiderIPPool* b) {
    return a->metadata.name < b->metadata.name;
  });
  if (IsBuiltinController(owner)) {
    if (found.size() > 1) {
      std::vector<std::string> names;
      for (const api::SpiderIPPool* p : found) names.push_back(p->metadata.name);
      return absl::InvalidArgumentError(StrCat(
          "it's invalid for '", owner.kind, "/", owner.namespace_, "/", owner.name,
          "' corresponding SpiderSubnet '", ref.subnet, "' owns multiple matchLables '",
          GoMap(ref.match_labels), "' corresponding IPPools '", GoList(names),
          "' for one specify application"));
    }
    return found.empty() ? nullptr : found[0];
  }
  // Third-party controllers: skip a reclaimable pool left by a previous app of the same name.
  for (const api::SpiderIPPool* p : found) {
    const auto& labels = p->metadata.labels;
    auto reclaim = labels.find(std::string(api::kLabelIPPoolReclaim));
    auto uid = labels.find(std::string(api::kLabelOwnerApplicationUID));
    if (reclaim != labels.end() && reclaim->second == "true" &&
        (uid == labels.end() || uid->second != owner.uid)) {
      continue;
    }
    return p;
  }
  return nullptr;
}

// ---- SelectPools ---------------------------------------------------------------------------

namespace {

// SelectPools' last two steps.

// No pool named twice for one NIC and family; every pool exists.
absl::Status PrecheckPools(const Selection& sel, const PoolIndex& index) {
  for (const NicCandidates& nic : sel.nics) {
    for (const std::vector<std::string>* list : {&nic.ipv4_pools, &nic.ipv6_pools}) {
      std::unordered_set<std::string_view> marks;
      marks.reserve(list->size());
      for (const std::string& name : *list) {
        if (!marks.insert(name).second) {
          return absl::InvalidArgumentError(StrCat("wrong input, duplicate IPPool ", name,
                                                   " specified for NIC ", nic.if_name));
        }
        if (index.Get(name) == nullptr) {
          return absl::NotFoundError(StrCat("failed to get original IPPool ", name,
                                            ": spiderippools.spiderpool.spidernet.io \"", name,
                                            "\" not found"));
        }
      }
    }
  }

  return absl::OkStatus();
}

// Drops the pools a NIC cannot use (PoolFilterReason; none left is an error naming every
// reason), then orders the rest by PoolPriorityLess.
absl::Status FilterAndOrderPools(const SelectionRequest& request, const SelectionConfig& config,
                                 const PoolIndex& index, Selection* sel_out) {
  Selection& sel = *sel_out;
  const Annotations& annos = request.pod.annotations;
  std::map<std::string, absl::StatusOr<std::string>> nad_cache;
  auto nad_for = [&](const std::string& nic) -> const absl::StatusOr<std::string>& {
    auto it = nad_cache.find(nic);
    if (it != nad_cache.end()) return it->second;
    absl::StatusOr<std::string> nad;
    if (auto given = request.nad_by_nic.find(nic); given != request.nad_by_nic.end()) {
      nad = given->second;
    } else {
      nad = NetworkForNIC(annos, request.pod.namespace_, nic, config.multus_cluster_network,
                          config.agent_namespace);
    }
    return nad_cache.emplace(nic, std::move(nad)).first->second;
  };
  for (NicCandidates& nic : sel.nics) {
    for (int version : {4, 6}) {
      std::vector<std::string>& list = version == 4 ? nic.ipv4_pools : nic.ipv6_pools;
      if (list.empty()) continue;
      std::vector<const api::SpiderIPPool*> kept;
      std::vector<std::string> reasons;
      for (const std::string& name : list) {
        const api::SpiderIPPool& pool = *index.Get(name);
        static const absl::StatusOr<std::string> kUnused = std::string();
        const absl::StatusOr<std::string>& nad =
            pool.spec.multus_name.empty() ? kUnused : nad_for(nic.if_name);
        std::string reason = PoolFilterReason(pool, version, request, config, nic.if_name, nad);
        if (reason.empty()) {
          kept.push_back(&pool);
        } else {
          reasons.push_back(std::move(reason));
        }
      }
      if (kept.empty()) {
        return absl::FailedPreconditionError(StrCat("no IPPool available, all IPv", version,
                                                    " IPPools ", GoList(list), " of ", nic.if_name,
                                                    " filtered out: ", Aggregate(reasons)));
      }
      std::stable_sort(kept.begin(), kept.end(),
                       [](const api::SpiderIPPool* a, const api::SpiderIPPool* b) {
                         return PoolPriorityLess(*a, *b);
                       });
      list.clear();
      for (const api::SpiderIPPool* p : kept) list.push_back(p->metadata.name);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Selection> SelectPools(const SelectionRequest& request,
                                      const SelectionConfig& config,
                                      const std::vector<const api::SpiderIPPool*>& pools) {
  const PoolIndex index(pools);
  const Annotations& annos = request.pod.annotations;
  Selection sel;
  bool chosen = false;

  // Rule 1: subnet annotations -> the app's auto pools.
  if (config.enable_spider_subnet) {
    SP_ASSIGN_OR_RETURN(std::vector<AutoPoolRef> refs, AutoPoolRefsForPod(request, config));
    const bool has_anno = annos.count(std::string(api::kAnnoSubnets)) > 0 ||
                          annos.count(std::string(api::kAnnoSubnet)) > 0;
    if (has_anno) {
      NicCandidates nic{.if_name = request.if_name, .clean_gateway = request.clean_gateway};
      for (const AutoPoolRef& ref : refs) {
        SP_ASSIGN_OR_RETURN(const api::SpiderIPPool* pool,
                            FindAutoPool(ref, request.pod.owner, pools));
        if (pool == nullptr) {
          return absl::UnavailableError(StrCat(
              "no matching auto-created IPPool candidate with matchLables '",
              GoMap(ref.match_labels), "'"));
        }
        if (ref.desired_ip_number.has_value()) {
          auto total = TotalIPs(*pool);
          if (!total.ok() || *total < absl::uint128(static_cast<uint64_t>(
                                           std::max<int64_t>(0, *ref.desired_ip_number)))) {
            return absl::UnavailableError(StrCat(
                "auto-created IPPool ", pool->metadata.name, " does not have the desired ",
                *ref.desired_ip_number, " IPs yet"));
          }
        }
        (ref.ip_version == 4 ? nic.ipv4_pools : nic.ipv6_pools).push_back(pool->metadata.name);
      }
      sel.rule = SelectionRule::kSubnetAnnotation;
      sel.nics.push_back(std::move(nic));
      chosen = true;
    }
  }

  // Rule 2: ipam.spidernet.io/ippools.
  if (!chosen) {
    if (auto it = annos.find(std::string(api::kAnnoPodIPPools)); it != annos.end()) {
      SP_ASSIGN_OR_RETURN(std::vector<AnnoIPPoolItem> items, ParsePodIPPoolsAnnotation(it->second));
      for (AnnoIPPoolItem& item : items) {
        SP_ASSIGN_OR_RETURN(NicCandidates n, NicFromLists(item.interface_, item.clean_gateway,
                                                          item.ipv4, item.ipv6, index));
        item.ipv4 = n.ipv4_pools;
        item.ipv6 = n.ipv6_pools;
      }
      const bool no_name = !items.empty() &&
                           std::all_of(items.begin(), items.end(),
                                       [](const AnnoIPPoolItem& i) { return i.interface_.empty(); });
      absl::Status v = ValidateAndMutateMultiNIC(items, request.if_name);
      if (!v.ok()) {
        return absl::InvalidArgumentError(StrCat("wrong input, invalid format of Pod annotation '",
                                                 api::kAnnoPodIPPools, "': ", Msg(v)));
      }
      for (AnnoIPPoolItem& item : items) {
        sel.nics.push_back({.if_name = item.interface_,
                            .ipv4_pools = std::move(item.ipv4),
                            .ipv6_pools = std::move(item.ipv6),
                            .clean_gateway = item.clean_gateway});
      }
      sel.rule = SelectionRule::kPodIPPoolsAnnotation;
      sel.multiple_nic_no_name = no_name;
      chosen = true;
    }
  }

  // Rule 3: ipam.spidernet.io/ippool.
  if (!chosen) {
    if (auto it = annos.find(std::string(api::kAnnoPodIPPool)); it != annos.end()) {
      SP_ASSIGN_OR_RETURN(AnnoPodIPPool a, ParsePodIPPoolAnnotation(it->second));
      SP_ASSIGN_OR_RETURN(NicCandidates n, NicFromLists(request.if_name, request.clean_gateway,
                                                        a.ipv4, a.ipv6, index));
      sel.nics.push_back(std::move(n));
      sel.rule = SelectionRule::kPodIPPoolAnnotation;
      chosen = true;
    }
  }

  // Rule 4: namespace default pools.
  if (!chosen) {
    SP_ASSIGN_OR_RETURN(NamespaceDefaultPools ns,
                        ParseNamespaceDefaultPools(request.namespace_.annotations));
    if (!ns.ipv4.empty() || !ns.ipv6.empty()) {
      SP_ASSIGN_OR_RETURN(NicCandidates n, NicFromLists(request.if_name, request.clean_gateway,
                                                        ns.ipv4, ns.ipv6, index));
      sel.nics.push_back(std::move(n));
      sel.rule = SelectionRule::kNamespaceDefault;
      chosen = true;
    }
  }

  // Rule 5: the CNI config's default pools.
  if (!chosen && (!request.default_ipv4_pools.empty() || !request.default_ipv6_pools.empty())) {
    SP_ASSIGN_OR_RETURN(NicCandidates n,
                        NicFromLists(request.if_name, request.clean_gateway,
                                     request.default_ipv4_pools, request.default_ipv6_pools, index));
    sel.nics.push_back(std::move(n));
    sel.rule = SelectionRule::kCNIDefault;
    chosen = true;
  }

  // Rule 6: cluster default pools (spec.default=true), by name.
  if (!chosen) {
    NicCandidates n{.if_name = request.if_name, .clean_gateway = request.clean_gateway};
    for (const api::SpiderIPPool* pool : index.Sorted()) {
      if (!pool->spec.default_.value_or(false)) continue;
      (PoolVersion(*pool) == 4 ? n.ipv4_pools : n.ipv6_pools).push_back(pool->metadata.name);
    }
    if (n.ipv4_pools.empty() && n.ipv6_pools.empty()) {
      return absl::FailedPreconditionError(
          "no IPPool available, no pool selection rules of any type are specified");
    }
    sel.nics.push_back(std::move(n));
    sel.rule = SelectionRule::kClusterDefault;
  }

  // Families switched off are dropped silently (upstream filterPoolMisspecified).
  for (NicCandidates& nic : sel.nics) {
    if (!config.enable_ipv4) nic.ipv4_pools.clear();
    if (!config.enable_ipv6) nic.ipv6_pools.clear();
  }

  SP_RETURN_IF_ERROR(PrecheckPools(sel, index));
  SP_RETURN_IF_ERROR(FilterAndOrderPools(request, config, index, &sel));
  return sel;
}

}  // namespace spiderpool::ipam
