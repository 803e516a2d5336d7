#include "dra/driver/driver.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <utility>

#include "api/spider.h"
#include "api/validation/validation.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "kube/rest/client.h"
#include "kube/rest/errors.h"

namespace spiderpool::dra::driver {

using api::resource_v1::AllocatedDeviceStatus;
using api::resource_v1::DeviceRequestAllocationResult;
using api::resource_v1::ResourceClaim;
using base::Json;
using base::StrCat;
using kubeletplugin::ClaimRef;
using kubeletplugin::PrepareResult;

namespace {

std::string ClaimName(const ClaimRef& ref) { return StrCat(ref.namespace_, "/", ref.name); }

std::string Msg(const absl::Status& s) { return std::string(base::FromAbsl(s.message())); }

checkpoint::StatusKey KeyOf(const DeviceRequestAllocationResult& r) {
  return {r.driver, r.pool, r.device, r.share_id};
}

bool MatchesKey(const AllocatedDeviceStatus& d, const checkpoint::StatusKey& k) {
  return d.driver == k.driver && d.pool == k.pool && d.device == k.device &&
         d.share_id.value_or("") == k.share_id.value_or("");
}

std::vector<kubeletplugin::PreparedDevice> ToAnswer(const std::vector<checkpoint::Device>& devs) {
  std::vector<kubeletplugin::PreparedDevice> out;
  for (const checkpoint::Device& d : devs) {
    out.push_back({.request_names = d.request_names,
                   .pool_name = d.pool,
                   .device_name = d.device,
                   .cdi_device_ids = d.cdi_device_ids,
                   .share_id = d.share_id});
  }
  return out;
}

}  // namespace

NetDriver::NetDriver(std::shared_ptr<kube::RestClient> rest, Options options)
    : rest_(std::move(rest)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &base::RealClock::Get()),
      specs_(options_.cdi_dir, options_.fs),
      checkpoint_({.dir = options_.plugin_dir,
                   .boot_id = options_.boot_id,
                   .boot_id_path = options_.boot_id_path,
                   .fs = options_.fs}) {
  if (options_.pool_name.empty()) options_.pool_name = options_.node_name;
  kube::metrics::Registry* reg =
      options_.registry != nullptr ? options_.registry : &kube::metrics::Registry::Default();
  prepared_gauge_ =
      &reg->AddGauge(kPreparedClaimsMetric,
                       "Claims prepared by the spiderpool DRA driver on this node (checkpoint "
                       "state PrepareCompleted).")
           .WithLabels();
}

NetDriver::~NetDriver() = default;

void NetDriver::SetGauge(const checkpoint::Data& data) {
  prepared_gauge_->Set(static_cast<double>(data.CountIn(checkpoint::ClaimState::kPrepareCompleted)));
}

absl::StatusOr<checkpoint::Data> NetDriver::LoadCheckpoint() {
  auto data = checkpoint_.Load();
  if (data.status().code() == absl::StatusCode::kDataLoss) {
    // Never trusted, moved aside: start empty. Claims prepared before are re-prepared on their
    // next Prepare (same answer) and Unprepare works by UID without the entry.
    SP_LOG(Error).Msg("DRA checkpoint discarded").KV("error", Msg(data.status()));
    data = checkpoint_.Load();
  }
  return data;
}

absl::Status NetDriver::Recover() {
  std::lock_guard<std::mutex> lock(mu_);
  auto data = checkpoint_.Load();
  absl::Status load_error;
  if (data.status().code() == absl::StatusCode::kDataLoss) {
    load_error = data.status();
    SP_LOG(Error).Msg("DRA checkpoint discarded").KV("error", Msg(data.status()));
    data = checkpoint_.Load();
  }
  if (!data.ok()) return data.status();
  RecoverStale(&*data, {});
  SetGauge(*data);
  return load_error;
}

void NetDriver::RecoverStale(checkpoint::Data* data, const std::vector<ClaimRef>& keep) {
  std::set<std::string> keep_uids;
  for (const ClaimRef& r : keep) keep_uids.insert(r.uid);
  std::vector<std::string> stale;
  for (const auto& [uid, c] : data->claims) {
    if (c.state == checkpoint::ClaimState::kPrepareStarted && !keep_uids.contains(uid)) {
      stale.push_back(uid);
    }
  }
  for (const std::string& uid : stale) {
    SP_LOG(Warning)
        .Msg("rolling back a claim whose prepare was interrupted")
        .KV("claimUID", uid)
        .KV("claim", StrCat(data->claims[uid].namespace_, "/", data->claims[uid].name));
    Rollback(uid, data, /*status_written=*/true);
  }
}

// ---- Prepare ------------------------------------------------------------------------------

std::map<std::string, PrepareResult> NetDriver::Prepare(const std::vector<ClaimRef>& claims) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, PrepareResult> out;
  auto data = LoadCheckpoint();
  if (!data.ok()) {
    for (const ClaimRef& c : claims) {
      out[c.uid].error = StrCat("ResourceClaim ", ClaimName(c), ": ", Msg(data.status()));
      RecordPrepareFailure(c, {}, out[c.uid].error);
    }
    return out;
  }
  RecoverStale(&*data, claims);
  for (const ClaimRef& c : claims) {
    if (out.contains(c.uid)) continue;  // the same claim twice in one request
    out[c.uid] = PrepareOne(c, &*data);
  }
  SetGauge(*data);
  return out;
}

PrepareResult NetDriver::PrepareOne(const ClaimRef& ref, checkpoint::Data* data) {
  PrepareResult result;
  auto it = data->claims.find(ref.uid);
  if (it != data->claims.end()) {
    const checkpoint::PreparedClaim& c = it->second;
    std::error_code ec;
    if (c.state == checkpoint::ClaimState::kPrepareCompleted &&
        std::filesystem::exists(c.cdi_spec_path, ec)) {
      result.devices = ToAnswer(c.devices);
      return result;
    }
    // Interrupted (or the spec file vanished): undo what may exist, then prepare again.
    SP_LOG(Warning)
        .Msg("re-preparing a claim whose earlier prepare did not complete")
        .KV("claim", ClaimName(ref))
        .KV("claimUID", ref.uid)
        .KV("state", checkpoint::ClaimStateName(c.state));
    Rollback(ref.uid, data,
             /*status_written=*/c.state == checkpoint::ClaimState::kPrepareStarted);
  }
  PrepareFailure failure;
  absl::Status s = PrepareFresh(ref, data, &result, &failure);
  if (!s.ok()) {
    result.devices.clear();
    result.error = Msg(s);
    SP_LOG(Warning)
        .Msg("prepare failed")
        .KV("claim", ClaimName(ref))
        .KV("claimUID", ref.uid)
        .KV("error", result.error);
    RecordPrepareFailure(ref, failure, result.error);
  }
  return result;
}

void NetDriver::RecordPrepareFailure(const ClaimRef& ref, const PrepareFailure& failure,
                                     const std::string& error) {
  if (options_.recorder == nullptr) return;
  std::vector<api::ObjectReference> targets;
  if (failure.claim.has_value()) {
    for (const auto& consumer : failure.claim->status.reserved_for) {
      if (consumer.resource != "pods" || !consumer.api_group.empty()) continue;
      targets.push_back({.kind = "Pod",
                         .namespace_ = ref.namespace_,
                         .name = consumer.name,
                         .uid = consumer.uid,
                         .api_version = "v1"});
    }
  }
  {  // and the claim itself (the UID the kubelet asked for), as issue 15 asks: both
    targets.push_back({.kind = "ResourceClaim",
                       .namespace_ = ref.namespace_,
                       .name = ref.name,
                       .uid = ref.uid,
                       .api_version = ClaimResource().ApiVersion()});
  }
  std::string smcs;
  for (const std::string& key : failure.multus_configs) {
    smcs += (smcs.empty() ? "" : ", ") + key;
  }
  if (smcs.empty()) smcs = "not resolved";
  const std::string message =
      StrCat("NodePrepareResources of ResourceClaim ", ClaimName(ref), " (SpiderMultusConfigs: ",
             smcs, ") failed on node ", options_.node_name, ": ", error);
  for (const api::ObjectReference& target : targets) {
    options_.recorder->Event(target, "Warning", kEventReasonPrepareFailed, message);
  }
}

api::ResourceInfo NetDriver::ClaimResource() const {
  api::ResourceInfo info = ResourceClaim::Resource();
  info.version = options_.api_version.empty() ? "v1" : options_.api_version;
  return info;
}

absl::Status NetDriver::ReadAllocatedClaim(const ClaimRef& ref, AllocatedClaim* out,
                                           PrepareFailure* failure) {
  const std::string what = StrCat("ResourceClaim ", ClaimName(ref));
  kube::DynamicClient claims(rest_, ClaimResource());
  auto raw = claims.Get(ref.namespace_, ref.name);
  if (!raw.ok()) {
    if (kube::IsNotFound(raw.status())) return absl::NotFoundError(StrCat(what, " not found"));
    return absl::UnavailableError(StrCat("getting ", what, ": ", Msg(raw.status())));
  }
  out->raw = std::move(*raw);
  auto claim = api::resource_v1::DecodeResourceClaim(out->raw);
  if (!claim.ok()) {
    return absl::DataLossError(StrCat("decoding ", what, ": ", Msg(claim.status())));
  }
  if (claim->metadata.uid == ref.uid) failure->claim = *claim;  // another UID: not our pods
  if (claim->metadata.uid != ref.uid) {
    return absl::FailedPreconditionError(
        StrCat(what, " has UID ", claim->metadata.uid, ", the kubelet asked for UID ", ref.uid,
               " (the claim was deleted and re-created)"));
  }
  if (!claim->status.allocation.has_value()) {
    return absl::FailedPreconditionError(StrCat(what, " is not allocated (no status.allocation)"));
  }
  out->claim = std::move(*claim);
  out->results = out->claim.ResultsFor(options_.driver_name);
  if (out->results.empty()) {
    return absl::FailedPreconditionError(StrCat(what, " has no device allocated by driver ",
                                                options_.driver_name));
  }
  for (const DeviceRequestAllocationResult* r : out->results) {
    if (r->pool != options_.pool_name) {
      return absl::FailedPreconditionError(
          StrCat(what, ": device ", r->pool, "/", r->device, " (request ", r->request,
                 ") is allocated from pool ", r->pool, ", not from this node's pool ",
                 options_.pool_name, " (node ", options_.node_name, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status NetDriver::LoadClaimParameters(const ClaimRef& ref, const AllocatedClaim& claim,
                                            SpecInputs* inputs,
                                            std::optional<api::SpiderClaimParameter>* scp,
                                            PrepareFailure* failure) {
  const std::string what = StrCat("ResourceClaim ", ClaimName(ref));
  auto ref_params = ResolveParameters(claim.claim, options_.driver_name, claim.results);
  if (!ref_params.ok()) return absl::InvalidArgumentError(StrCat(what, ": ", Msg(ref_params.status())));
  if (!ref_params->has_value()) return absl::OkStatus();
  const std::string scp_name = StrCat(ref.namespace_, "/", (*ref_params)->name);
  auto got = kube::Client<api::SpiderClaimParameter>(rest_).Get(ref.namespace_, (*ref_params)->name);
  if (!got.ok()) {
    if (kube::IsNotFound(got.status())) {
      return absl::NotFoundError(
          StrCat("SpiderClaimParameter ", scp_name, " not found (named by ", what, ")"));
    }
    if (got.status().code() == absl::StatusCode::kDataLoss) {
      return absl::InvalidArgumentError(StrCat("SpiderClaimParameter ", scp_name,
                                               " (named by ", what, ") is invalid: ",
                                               Msg(got.status())));
    }
    return absl::UnavailableError(
        StrCat("getting SpiderClaimParameter ", scp_name, ": ", Msg(got.status())));
  }
  *scp = std::move(*got);
  if ((*scp)->metadata.namespace_.empty()) (*scp)->metadata.namespace_ = ref.namespace_;
  failure->multus_configs = MultusConfigKeys(**scp);
  // The webhook's rules, with the referenced SpiderMultusConfigs fetched once each.
  kube::Client<api::SpiderMultusConfig> smcs(rest_);
  absl::Status fetch_error;
  api::validation::Context ctx;
  ctx.multus_config_exists = [&](std::string_view ns, std::string_view name) -> absl::StatusOr<bool> {
    const std::string key = StrCat(ns, "/", name);
    if (inputs->multus_configs.contains(key)) return true;
    auto smc = smcs.Get(ns, name);
    if (kube::IsNotFound(smc.status())) return false;
    if (!smc.ok()) {
      fetch_error = smc.status();
      return smc.status();
    }
    inputs->multus_configs[key] = std::move(*smc);
    return true;
  };
  api::validation::Result r = api::validation::ValidateClaimParameterCreate(**scp, ctx);
  if (!fetch_error.ok() && fetch_error.code() != absl::StatusCode::kDataLoss) {
    return absl::UnavailableError(StrCat("getting the SpiderMultusConfigs of SpiderClaimParameter ",
                                         scp_name, ": ", Msg(fetch_error)));
  }
  if (!r.ok()) {
    return absl::InvalidArgumentError(StrCat("SpiderClaimParameter ", scp_name, " (named by ",
                                             what, ") is invalid: ", r.Message()));
  }
  inputs->parameters = &**scp;
  return absl::OkStatus();
}

checkpoint::PreparedClaim NetDriver::StartedEntry(const ClaimRef& ref,
                                                  const AllocatedClaim& claim,
                                                  const std::string& cdi_device_id) const {
  checkpoint::PreparedClaim entry;
  entry.state = checkpoint::ClaimState::kPrepareStarted;
  entry.namespace_ = ref.namespace_;
  entry.name = ref.name;
  entry.cdi_spec_path = specs_.PathFor(ref.uid);
  for (const DeviceRequestAllocationResult* r : claim.results) {
    entry.devices.push_back({.request_names = {r->request},
                             .pool = r->pool,
                             .device = r->device,
                             .share_id = r->share_id,
                             .cdi_device_ids = {cdi_device_id}});
    entry.status_devices.push_back(KeyOf(*r));
  }
  return entry;
}

absl::Status NetDriver::WriteReadyStatuses(const ClaimRef& ref, const AllocatedClaim& claim,
                                           const std::string& cdi_device_id) {
  const api::Time now{absl::FromUnixSeconds(absl::ToUnixSeconds(clock_->Now()))};
  return UpdateDeviceStatuses(
      ref, [&](const ResourceClaim& current,
               std::vector<AllocatedDeviceStatus>* devices) -> absl::StatusOr<bool> {
        bool changed = false;
        for (const DeviceRequestAllocationResult* r : claim.results) {
          AllocatedDeviceStatus e;
          for (const AllocatedDeviceStatus& d : *devices) {
            if (MatchesKey(d, KeyOf(*r))) e = d;  // keep networkData, data, other conditions
          }
          e.driver = r->driver;
          e.pool = r->pool;
          e.device = r->device;
          e.share_id = r->share_id;
          api::Condition ready;
          ready.type = std::string(api::resource_v1::kDeviceConditionReady);
          ready.status = "True";
          ready.observed_generation = current.metadata.generation;
          ready.last_transition_time = now;
          ready.reason = kReadyReason;
          ready.message = StrCat("CDI device ", cdi_device_id, " prepared on node ",
                                 options_.node_name);
          api::SetCondition(&e.conditions, std::move(ready));
          changed |= api::resource_v1::UpsertDeviceStatus(devices, std::move(e));
        }
        return changed;
      },
      &claim.raw);
}

absl::Status NetDriver::PrepareFresh(const ClaimRef& ref, checkpoint::Data* data,
                                     PrepareResult* out, PrepareFailure* failure) {
  const std::string what = StrCat("ResourceClaim ", ClaimName(ref));
  AllocatedClaim claim;
  if (absl::Status s = ReadAllocatedClaim(ref, &claim, failure); !s.ok()) return s;
  SpecInputs inputs{.claim_uid = ref.uid,
                    .claim_namespace = ref.namespace_,
                    .claim_name = ref.name,
                    .results = claim.results,
                    .rdma_library_path = options_.rdma_library_path};
  std::optional<api::SpiderClaimParameter> scp;
  if (absl::Status s = LoadClaimParameters(ref, claim, &inputs, &scp, failure); !s.ok()) return s;
  auto claim_spec = BuildClaimSpec(inputs);
  if (!claim_spec.ok()) return base::Annotate(claim_spec.status(), what);
  auto spec = cdi::BuildSpec(*claim_spec, {.max_version = options_.cdi_max_version});
  if (!spec.ok()) return base::Annotate(spec.status(), StrCat(what, ": building the CDI spec"));

  data->claims[ref.uid] = StartedEntry(ref, claim, spec->device_id);
  if (absl::Status s = checkpoint_.Save(*data); !s.ok()) {
    data->claims.erase(ref.uid);  // the file still has the previous content
    return base::Annotate(s, what);
  }
  if (absl::Status s = specs_.Write(*spec); !s.ok()) {
    Rollback(ref.uid, data, /*status_written=*/false);
    return base::Annotate(s, what);
  }
  if (absl::Status st = WriteReadyStatuses(ref, claim, spec->device_id); !st.ok()) {
    Rollback(ref.uid, data, /*status_written=*/true);
    return base::Annotate(st, StrCat(what, ": writing status.devices"));
  }

  data->claims[ref.uid].state = checkpoint::ClaimState::kPrepareCompleted;
  if (absl::Status s = checkpoint_.Save(*data); !s.ok()) {
    Rollback(ref.uid, data, /*status_written=*/true);
    return base::Annotate(s, what);
  }
  out->devices = ToAnswer(data->claims[ref.uid].devices);
  SP_LOG(Info)
      .Msg("prepared claim")
      .KV("claim", ClaimName(ref))
      .KV("claimUID", ref.uid)
      .KV("devices", claim.results.size())
      .KV("cdiVersion", spec->version)
      .KV("parameters", scp.has_value() ? scp->metadata.name : std::string("-"));
  return absl::OkStatus();
}

void NetDriver::Rollback(const std::string& uid, checkpoint::Data* data, bool status_written) {
  auto it = data->claims.find(uid);
  ClaimRef ref{.uid = uid};
  std::vector<checkpoint::StatusKey> keys;
  if (it != data->claims.end()) {
    ref.namespace_ = it->second.namespace_;
    ref.name = it->second.name;
    keys = it->second.status_devices;
  }
  if (absl::Status s = specs_.Remove(uid); !s.ok()) {
    SP_LOG(Error).Msg("rollback: removing the CDI spec failed").KV("claimUID", uid).KV("error", Msg(s));
  }
  if (status_written && !ref.name.empty() && !keys.empty()) {
    if (absl::Status s = RemoveStatusEntries(ref, &keys); !s.ok()) {
      SP_LOG(Warning)
          .Msg("rollback: removing status.devices entries failed (left for unprepare)")
          .KV("claim", ClaimName(ref))
          .KV("error", Msg(s));
    }
  }
  if (it == data->claims.end()) return;
  data->claims.erase(it);
  if (absl::Status s = checkpoint_.Save(*data); !s.ok()) {
    // The file keeps PrepareStarted: the next call rolls it back again.
    SP_LOG(Error).Msg("rollback: saving the checkpoint failed").KV("claimUID", uid).KV("error", Msg(s));
  }
}

// ---- status.devices -----------------------------------------------------------------------

absl::Status NetDriver::UpdateDeviceStatuses(
    const ClaimRef& ref,
    const std::function<absl::StatusOr<bool>(const ResourceClaim&,
                                             std::vector<AllocatedDeviceStatus>*)>& mutate,
    const Json* fresh) {
  kube::DynamicClient claims(rest_, ClaimResource());
  return kube::RetryOnConflict(options_.conflict_retry, [&]() -> absl::Status {
    absl::StatusOr<Json> raw;
    if (fresh != nullptr) {
      raw = *fresh;
      fresh = nullptr;  // a conflict means it is stale: GET from now on
    } else {
      raw = claims.Get(ref.namespace_, ref.name);
    }
    if (!raw.ok()) return raw.status();
    auto claim = api::resource_v1::DecodeResourceClaim(*raw);
    if (!claim.ok()) return absl::DataLossError(Msg(claim.status()));
    if (claim->metadata.uid != ref.uid) {
      return absl::NotFoundError(StrCat("ResourceClaim ", ClaimName(ref), " now has UID ",
                                        claim->metadata.uid, ", not ", ref.uid));
    }
    std::vector<AllocatedDeviceStatus> devices = claim->status.devices;
    SP_ASSIGN_OR_RETURN(bool changed, mutate(*claim, &devices));
    if (!changed) return absl::OkStatus();
    for (size_t i = 0; i < devices.size(); ++i) {
      if (devices[i].driver != options_.driver_name) continue;
      SP_RETURN_IF_ERROR(
          api::resource_v1::ValidateDeviceStatus(devices[i], StrCat("status.devices[", i, "]")));
    }
    // Only status.devices changes; everything else goes back exactly as the server sent it
    // (with its resourceVersion: a concurrent write makes this a 409 and a retry).
    Json obj = std::move(*raw);
    if (!obj["status"].is_object()) obj["status"] = Json::object();
    // Other drivers' entries are copied as the server sent them (mutate only replaces, removes
    // or appends entries of this driver, so theirs keep their order).
    std::vector<Json> theirs;
    if (auto it = obj["status"].find("devices"); it != obj["status"].end() && it->is_array()) {
      for (const Json& e : *it) {
        if (!e.is_object() || !e.contains("driver") || e["driver"] != options_.driver_name) {
          theirs.push_back(e);
        }
      }
    }
    Json merged = Json::array();
    size_t next_theirs = 0;
    for (const AllocatedDeviceStatus& d : devices) {
      if (d.driver != options_.driver_name && next_theirs < theirs.size()) {
        merged.push_back(std::move(theirs[next_theirs++]));
      } else {
        merged.push_back(api::Encode(d));
      }
    }
    if (merged.empty()) {
      obj["status"].erase("devices");
    } else {
      obj["status"]["devices"] = std::move(merged);
    }
    auto put = claims.UpdateStatus(obj, {.field_manager = options_.driver_name});
    return put.status();
  }, *clock_);
}

absl::Status NetDriver::RemoveStatusEntries(const ClaimRef& ref,
                                            const std::vector<checkpoint::StatusKey>* keys) {
  absl::Status s = UpdateDeviceStatuses(
      ref, [&](const ResourceClaim&, std::vector<AllocatedDeviceStatus>* devices) -> absl::StatusOr<bool> {
        size_t n = api::resource_v1::RemoveDeviceStatuses(
            devices, options_.driver_name, [&](const AllocatedDeviceStatus& d) {
              if (keys == nullptr) return d.pool == options_.pool_name;
              return std::any_of(keys->begin(), keys->end(),
                                 [&](const checkpoint::StatusKey& k) { return MatchesKey(d, k); });
            });
        return n > 0;
      });
  if (kube::IsNotFound(s) || absl::IsNotFound(s)) return absl::OkStatus();  // claim gone
  return s;
}

absl::Status NetDriver::ReportNetworkData(const ClaimRef& claim, const NetworkData& data,
                                          std::string_view device) {
  std::lock_guard<std::mutex> lock(mu_);
  api::resource_v1::NetworkDeviceData nd{.interface_name = data.interface_name,
                                         .ips = data.ips,
                                         .hardware_address = data.hardware_address};
  // Check the shape before any API call (the server would refuse it anyway).
  const bool clear = nd == api::resource_v1::NetworkDeviceData{};  // empty: remove it
  AllocatedDeviceStatus probe{.driver = options_.driver_name, .pool = "p", .device = "d"};
  probe.network_data = nd;
  SP_RETURN_IF_ERROR(api::resource_v1::ValidateDeviceStatus(probe, "networkData"));
  const std::string what = StrCat("ResourceClaim ", ClaimName(claim));
  absl::Status s = UpdateDeviceStatuses(
      claim, [&](const ResourceClaim& current,
                 std::vector<AllocatedDeviceStatus>* devices) -> absl::StatusOr<bool> {
        bool changed = false, found = false;
        for (const DeviceRequestAllocationResult* r : current.ResultsFor(options_.driver_name)) {
          if (!device.empty() && r->device != device) continue;
          found = true;
          AllocatedDeviceStatus e{.driver = r->driver, .pool = r->pool, .device = r->device,
                                  .share_id = r->share_id};
          bool existed = false;
          for (const AllocatedDeviceStatus& d : *devices) {
            if (MatchesKey(d, KeyOf(*r))) {
              e = d;
              existed = true;
            }
          }
          if (clear && !existed) continue;  // nothing to remove
          if (clear) {
            e.network_data.reset();
          } else {
            e.network_data = nd;
          }
          changed |= api::resource_v1::UpsertDeviceStatus(devices, std::move(e));
        }
        if (!found) {
          return absl::FailedPreconditionError(
              device.empty() ? StrCat(what, " has no device allocated by driver ", options_.driver_name)
                             : StrCat(what, " has no device ", device, " allocated by driver ",
                                      options_.driver_name));
        }
        return changed;
      });
  if (kube::IsNotFound(s)) return absl::NotFoundError(StrCat(what, " (UID ", claim.uid, ") not found"));
  return base::Annotate(s, StrCat("reporting networkData of ", what));
}

// ---- Unprepare ----------------------------------------------------------------------------

std::map<std::string, std::string> NetDriver::Unprepare(const std::vector<ClaimRef>& claims) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> out;
  auto data = LoadCheckpoint();
  if (!data.ok()) {
    for (const ClaimRef& c : claims) {
      out[c.uid] = StrCat("ResourceClaim ", ClaimName(c), ": ", Msg(data.status()));
    }
    return out;
  }
  RecoverStale(&*data, claims);
  bool changed = false;
  std::vector<std::string> removed;
  for (const ClaimRef& c : claims) {
    if (out.contains(c.uid)) continue;
    bool had = data->claims.contains(c.uid);
    out[c.uid] = UnprepareOne(c, &*data, &changed);
    if (had && !data->claims.contains(c.uid)) removed.push_back(c.uid);
  }
  if (changed) {
    if (absl::Status s = checkpoint_.Save(*data); !s.ok()) {
      // The entries stay in the file: report the claims so the kubelet retries.
      for (const std::string& uid : removed) {
        if (out[uid].empty()) out[uid] = Msg(s);
      }
      if (auto reloaded = checkpoint_.Load(); reloaded.ok()) data = std::move(reloaded);
    }
  }
  SetGauge(*data);
  return out;
}

std::string NetDriver::UnprepareOne(const ClaimRef& ref, checkpoint::Data* data, bool* changed) {
  const std::string what = StrCat("ResourceClaim ", ClaimName(ref));
  auto it = data->claims.find(ref.uid);
  if (absl::Status s = specs_.Remove(ref.uid); !s.ok()) {
    return StrCat(what, ": ", Msg(s));  // keep the checkpoint entry: the kubelet retries
  }
  std::vector<checkpoint::StatusKey> keys;
  if (it != data->claims.end()) keys = it->second.status_devices;
  ClaimRef status_ref = ref;
  if (it != data->claims.end() && status_ref.name.empty()) {
    status_ref.namespace_ = it->second.namespace_;
    status_ref.name = it->second.name;
  }
  if (!status_ref.name.empty()) {
    // Best effort: the claim is usually being deleted or deallocated (which clears the list).
    absl::Status s = RemoveStatusEntries(status_ref, it != data->claims.end() ? &keys : nullptr);
    if (!s.ok()) {
      SP_LOG(Warning)
          .Msg("unprepare: removing status.devices entries failed")
          .KV("claim", ClaimName(status_ref))
          .KV("error", Msg(s));
    }
  }
  if (it != data->claims.end()) {
    data->claims.erase(it);
    *changed = true;
    SP_LOG(Info).Msg("unprepared claim").KV("claim", ClaimName(ref)).KV("claimUID", ref.uid);
  }
  return "";
}

}  // namespace spiderpool::dra::driver
