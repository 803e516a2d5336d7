// SpiderCoordinator: upstream pkg/coordinatormanager webhook (reference §1.6, §5).

#include <string>
#include <vector>

#include "api/validation/internal.h"
#include "api/validation/validation.h"
#include "base/strings.h"

namespace spiderpool::api::validation {

using base::StrCat;
using namespace internal;  // NOLINT(build/namespaces)

namespace {

constexpr std::string_view kCoordinatorKind = "SpiderCoordinator";
const std::vector<std::string> kPodCIDRTypes = {"auto", "cluster", "calico", "cilium", "none"};
const std::vector<std::string> kModes = {"auto", "underlay", "overlay", "disabled"};
const std::vector<std::string> kRPFilters = {"0", "1", "2"};

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  for (const std::string& e : v) {
    if (e == s) return true;
  }
  return false;
}

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// An IP or a CIDR (hijackCIDR entries, policyRoutes[].dst).
std::optional<IPFamily> IPOrCIDRFamily(std::string_view text) {
  if (text.find('/') != std::string_view::npos) {
    auto p = IPPrefix::Parse(text);
    if (!p.ok()) return std::nullopt;
    return p->family();
  }
  auto ip = IPAddress::Parse(text);
  if (!ip.ok()) return std::nullopt;
  return ip->family();
}

// A bare IP becomes a /32 or /128 CIDR; anything else is returned unchanged.
std::string BareIPToCIDR(const std::string& text) {
  if (text.find('/') != std::string::npos) return text;
  auto ip = IPAddress::Parse(text);
  if (!ip.ok()) return text;
  return StrCat(text, "/", ip->is_v4() ? 32 : 128);
}

Result NewCoordinatorResult(const api::SpiderCoordinator& c) {
  Result r;
  r.group = std::string(kGroup);
  r.kind = std::string(kCoordinatorKind);
  r.name = c.metadata.name;
  return r;
}

}  // namespace

ErrorList ValidateCoordinatorSpec(const api::CoordinatorSpec& spec, std::string_view path,
                                  bool require_optional_fields) {
  ErrorList errs;
  const std::string cidr_type_path = Child(path, "podCIDRType");
  if (!spec.pod_cidr_type.has_value()) {
    if (require_optional_fields) {
      errs.push_back(NotSupported(cidr_type_path, BadValue::String(""), kPodCIDRTypes));
    }
  } else if (!Contains(kPodCIDRTypes, *spec.pod_cidr_type)) {
    errs.push_back(NotSupported(cidr_type_path, BadValue::String(*spec.pod_cidr_type),
                                kPodCIDRTypes));
  }
  if (spec.mode.has_value() && !Contains(kModes, *spec.mode)) {
    errs.push_back(NotSupported(Child(path, "mode"), BadValue::String(*spec.mode), kModes));
  }
  for (size_t i = 0; i < spec.hijack_cidr.size(); ++i) {
    if (IPOrCIDRFamily(spec.hijack_cidr[i]).has_value()) continue;
    errs.push_back(Invalid(Index(Child(path, "hijackCIDR"), i),
                           BadValue::String(spec.hijack_cidr[i]),
                           "invalid IP or CIDR: write an IP address (10.0.0.1) or a CIDR "
                           "(10.0.0.0/8)"));
  }
  for (size_t i = 0; i < spec.policy_routes.size(); ++i) {
    const api::PolicyRoute& r = spec.policy_routes[i];
    std::string route_path = Index(Child(path, "policyRoutes"), i);
    std::optional<IPFamily> dst = IPOrCIDRFamily(r.dst);
    if (!dst.has_value()) {
      errs.push_back(Invalid(Child(route_path, "dst"), BadValue::String(r.dst),
                             "dst is an invalid IP address or CIDR"));
    }
    auto gw = IPAddress::Parse(r.gw);
    if (!gw.ok()) {
      errs.push_back(
          Invalid(Child(route_path, "gw"), BadValue::String(r.gw), "gw is an invalid IP address"));
    } else if (dst.has_value() && *dst != gw->family()) {
      errs.push_back(Invalid(Child(route_path, "gw"), BadValue::String(r.gw),
                             "dst and gw must use the same IP family"));
    }
  }
  if (spec.pod_mac_prefix.has_value() && !spec.pod_mac_prefix->empty()) {
    const std::string& prefix = *spec.pod_mac_prefix;
    std::string mac_path = Child(path, "podMACPrefix");
    bool valid = prefix.size() == 5 && prefix[2] == ':' && IsHex(prefix[0]) && IsHex(prefix[1]) &&
                 IsHex(prefix[3]) && IsHex(prefix[4]);
    if (!valid) {
      errs.push_back(Invalid(mac_path, BadValue::String(prefix),
                             "not a valid MAC prefix (write two hex bytes, e.g. \"0a:1b\")"));
    } else if ((HexValue(prefix[1]) & 1) != 0) {
      errs.push_back(Invalid(mac_path, BadValue::String(prefix),
                             "not a unicast MAC: the lowest bit of the first byte must be 0"));
    }
  }
  if (spec.tx_queue_len.has_value() && *spec.tx_queue_len < 0) {
    errs.push_back(Invalid(Child(path, "txQueueLen"), BadValue::Int(*spec.tx_queue_len),
                           "txQueueLen can't be less than 0"));
  }
  const std::string rp_path = Child(path, "podRPFilter");
  if (!spec.pod_rp_filter.has_value()) {
    if (require_optional_fields) errs.push_back(NotSupported(rp_path, BadValue::Null(), kRPFilters));
  } else if (*spec.pod_rp_filter > 2) {
    errs.push_back(NotSupported(rp_path, BadValue::Int(*spec.pod_rp_filter), kRPFilters));
  }
  if (spec.veth_link_address.has_value() && !spec.veth_link_address->empty() &&
      !IPAddress::Parse(*spec.veth_link_address).ok()) {
    errs.push_back(Invalid(Child(path, "vethLinkAddress"),
                           BadValue::String(*spec.veth_link_address),
                           "vethLinkAddress is an invalid IP address"));
  }
  if (spec.veth_mtu.has_value() && *spec.veth_mtu <= 0) {
    errs.push_back(Invalid(Child(path, "vethMTU"), BadValue::Int(*spec.veth_mtu),
                           "vethMTU must be greater than 0"));
  }
  return errs;
}

absl::Status MutateCoordinator(api::SpiderCoordinator* coord, const Context& /*ctx*/) {
  api::CoordinatorSpec& s = coord->spec;
  if (!s.mode.has_value()) s.mode = "auto";
  if (!s.tune_pod_routes.has_value()) s.tune_pod_routes = true;
  if (!s.host_rule_table.has_value()) s.host_rule_table = 500;
  if (!s.pod_rp_filter.has_value()) s.pod_rp_filter = 0;
  if (!s.tx_queue_len.has_value()) s.tx_queue_len = 0;
  if (!s.veth_link_address.has_value()) s.veth_link_address = "";
  if (!s.veth_mtu.has_value()) s.veth_mtu = 1500;
  if (coord->metadata.IsDeleting()) return absl::OkStatus();
  if (!s.pod_cidr_type.has_value()) {
    return absl::InvalidArgumentError("PodCIDRType is not allowed to be empty");
  }
  for (std::string& cidr : s.hijack_cidr) {
    if (cidr.find('/') != std::string::npos) continue;
    if (!IPAddress::Parse(cidr).ok()) {
      return absl::InvalidArgumentError(StrCat("invalid IP address: ", cidr));
    }
    cidr = BareIPToCIDR(cidr);
  }
  for (api::PolicyRoute& r : s.policy_routes) r.dst = BareIPToCIDR(r.dst);
  coord->metadata.AddFinalizer(api::kSpiderFinalizer);
  return absl::OkStatus();
}

Result ValidateCoordinatorCreate(const api::SpiderCoordinator& coord, const Context& /*ctx*/) {
  Result r = NewCoordinatorResult(coord);
  r.errors = ValidateCoordinatorSpec(coord.spec, "spec", /*require_optional_fields=*/true);
  return r;
}

Result ValidateCoordinatorUpdate(const api::SpiderCoordinator& /*old_coord*/,
                                 const api::SpiderCoordinator& coord, const Context& /*ctx*/) {
  Result r = NewCoordinatorResult(coord);
  r.errors = ValidateCoordinatorSpec(coord.spec, "spec", /*require_optional_fields=*/true);
  return r;
}

}  // namespace spiderpool::api::validation
