#include "dra/driver/params.h"

#include <set>

#include "absl/strings/str_join.h"
#include "base/strings.h"

namespace spiderpool::dra::driver {

using api::resource_v1::DeviceRequestAllocationResult;
using api::resource_v1::ResourceClaim;
using base::Json;
using base::StrCat;

namespace {

std::string Quoted(const Json& j) {
  std::string text = base::DumpJson(j);
  if (text.size() > 64) text = text.substr(0, 61) + "...";
  return text;
}

// A DNS-1123 subdomain (object names).
bool IsDNSSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) continue;
    if ((c == '-' || c == '.') && i > 0 && i + 1 < s.size()) continue;
    return false;
  }
  return true;
}

std::string NicKey(const api::ClaimNic& nic, std::string_view scp_namespace) {
  return StrCat(nic.namespace_.empty() ? scp_namespace : std::string_view(nic.namespace_), "/",
                nic.multus_name);
}

// The master NICs a SpiderMultusConfig attaches to.
std::vector<std::string> Masters(const api::SpiderMultusConfig& smc) {
  const auto& s = smc.spec;
  if (s.macvlan.has_value()) return s.macvlan->master;
  if (s.ipvlan.has_value()) return s.ipvlan->master;
  if (s.vlan.has_value()) return s.vlan->master;
  if (s.ipoib.has_value() && !s.ipoib->master.empty()) return {s.ipoib->master};
  return {};
}

}  // namespace

absl::StatusOr<ClaimParameterRef> ParseParameters(const Json& parameters) {
  if (!parameters.is_object()) {
    return absl::InvalidArgumentError(StrCat(
        "must be an object {\"apiVersion\": \"", kParametersApiVersion, "\", \"kind\": \"",
        kParametersKind, "\", \"name\": \"<name>\"}, got ", Quoted(parameters)));
  }
  std::vector<std::string> errs;
  auto check = [&](std::string_view key, std::string_view want) {
    auto it = parameters.find(key);
    if (it == parameters.end()) {
      errs.push_back(StrCat(key, ": Required value"));
    } else if (!it->is_string() || it->get<std::string>() != want) {
      errs.push_back(StrCat(key, ": must be ", want, ", got ", Quoted(*it)));
    }
  };
  check("apiVersion", kParametersApiVersion);
  check("kind", kParametersKind);
  ClaimParameterRef ref;
  auto name = parameters.find("name");
  if (name == parameters.end()) {
    errs.push_back("name: Required value");
  } else if (!name->is_string() || !IsDNSSubdomain(name->get<std::string>())) {
    errs.push_back(StrCat("name: must be the name of a SpiderClaimParameter (a DNS subdomain), got ",
                          Quoted(*name)));
  } else {
    ref.name = name->get<std::string>();
  }
  for (auto it = parameters.begin(); it != parameters.end(); ++it) {
    if (it.key() != "apiVersion" && it.key() != "kind" && it.key() != "name") {
      errs.push_back(StrCat(it.key(), ": unknown field (only apiVersion, kind and name)"));
    }
  }
  if (!errs.empty()) {
    std::string msg;
    for (const std::string& e : errs) msg += (msg.empty() ? "" : "; ") + e;
    return absl::InvalidArgumentError(msg);
  }
  return ref;
}

absl::StatusOr<std::optional<ClaimParameterRef>> ResolveParameters(
    const ResourceClaim& claim, std::string_view driver,
    const std::vector<const DeviceRequestAllocationResult*>& results) {
  std::optional<ClaimParameterRef> chosen;
  std::string chosen_by;  // the path of the config that chose it
  if (!claim.status.allocation.has_value()) return chosen;
  const auto& configs = claim.status.allocation->devices.config;
  for (const DeviceRequestAllocationResult* r : results) {
    std::optional<ClaimParameterRef> mine;
    std::string mine_by;
    for (size_t i = 0; i < configs.size(); ++i) {
      const auto& c = configs[i];
      if (!c.opaque.has_value() || c.opaque->driver != driver || !c.AppliesTo(r->request)) continue;
      const std::string path = StrCat("status.allocation.devices.config[", i, "].opaque.parameters");
      auto ref = ParseParameters(c.opaque->parameters);
      if (!ref.ok()) {
        return absl::InvalidArgumentError(StrCat(path, ": ", base::FromAbsl(ref.status().message())));
      }
      mine = *ref;  // later entries take precedence
      mine_by = path;
    }
    if (!mine.has_value()) continue;
    if (chosen.has_value() && *chosen != *mine) {
      return absl::InvalidArgumentError(
          StrCat(chosen_by, " names SpiderClaimParameter ", chosen->name, " but ", mine_by,
                 " names ", mine->name, ": the devices of one claim share one SpiderClaimParameter"));
    }
    chosen = mine;
    chosen_by = mine_by;
  }
  return chosen;
}

std::vector<std::string> MultusConfigKeys(const api::SpiderClaimParameter& scp) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const api::ClaimNic& nic) {
    std::string key = NicKey(nic, scp.metadata.namespace_);
    if (seen.insert(key).second) out.push_back(std::move(key));
  };
  if (scp.spec.default_nic.has_value()) add(*scp.spec.default_nic);
  for (const api::ClaimNic& nic : scp.spec.secondary_nics) add(nic);
  return out;
}

absl::StatusOr<cdi::ClaimSpec> BuildClaimSpec(const SpecInputs& in) {
  cdi::ClaimSpec spec;
  spec.claim_uid = in.claim_uid;
  spec.env.emplace_back(kEnvClaim, StrCat(in.claim_namespace, "/", in.claim_name));
  std::vector<std::string> devices;
  for (const DeviceRequestAllocationResult* r : in.results) {
    devices.push_back(StrCat(r->pool, "/", r->device));
  }
  spec.env.emplace_back(kEnvDevices, absl::StrJoin(devices, ","));
  if (in.parameters == nullptr) return spec;

  const api::SpiderClaimParameter& scp = *in.parameters;
  spec.env.emplace_back(kEnvParameters, StrCat(scp.metadata.namespace_, "/", scp.metadata.name));
  if (scp.spec.default_nic.has_value()) {
    spec.env.emplace_back(kEnvDefaultNetwork, NicKey(*scp.spec.default_nic, scp.metadata.namespace_));
  }
  std::vector<std::string> networks;
  for (const api::ClaimNic& nic : scp.spec.secondary_nics) {
    networks.push_back(NicKey(nic, scp.metadata.namespace_));
  }
  if (!networks.empty()) spec.env.emplace_back(kEnvNetworks, absl::StrJoin(networks, ","));
  std::vector<std::string> masters;
  std::set<std::string> seen;
  for (const std::string& key : MultusConfigKeys(scp)) {
    auto it = in.multus_configs.find(key);
    if (it == in.multus_configs.end()) {
      return absl::InternalError(StrCat("SpiderMultusConfig ", key, " was not fetched"));
    }
    for (const std::string& m : Masters(it->second)) {
      if (seen.insert(m).second) masters.push_back(m);
    }
  }
  if (!masters.empty()) spec.env.emplace_back(kEnvMasterNics, absl::StrJoin(masters, ","));
  if (scp.spec.enable_rdma) spec.env.emplace_back(kEnvRdma, "true");
  if (scp.spec.rdma_acc.value_or(false)) {
    if (in.rdma_library_path.empty()) {
      return absl::FailedPreconditionError(StrCat(
          "SpiderClaimParameter ", scp.metadata.namespace_, "/", scp.metadata.name,
          " sets rdmaAcc, but this agent has no RDMA library configured (the DRA rdma library "
          "path option is empty)"));
    }
    if (in.rdma_library_path.front() != '/') {
      return absl::FailedPreconditionError(
          StrCat("the RDMA library path must be absolute, got \"", in.rdma_library_path, "\""));
    }
    std::string base = in.rdma_library_path.substr(in.rdma_library_path.rfind('/') + 1);
    if (base.empty()) {
      return absl::FailedPreconditionError(
          StrCat("the RDMA library path names no file: \"", in.rdma_library_path, "\""));
    }
    spec.env.emplace_back(kEnvLdPreload, base);
    for (std::string_view dir : kRdmaLibraryDirs) {
      spec.mounts.push_back({.host_path = in.rdma_library_path,
                             .container_path = StrCat(dir, "/", base),
                             .options = {"ro", "nosuid", "nodev", "bind"}});
    }
  }
  auto pin = scp.metadata.annotations.find(std::string(api::kAnnoDRACDIVersion));
  if (pin != scp.metadata.annotations.end()) spec.version_pin = pin->second;
  return spec;
}

}  // namespace spiderpool::dra::driver
