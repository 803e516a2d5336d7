#include "agent/ifacer/plugin.h"

#include <utility>

#include "agent/cni/skel.h"
#include "agent/ifacer/netconf.h"
#include "base/json.h"
#include "base/strings.h"

namespace spiderpool::agent::ifacer {

namespace {

using cni::Fail;
using cni::SkelRequest;
using cni::Succeed;

constexpr std::string_view kAbout =
    "CNI plugin ifacer (host bond / VLAN interfaces, C++ reimplementation)";

cni::Outcome CmdAdd(const SkelRequest& req, const Hooks& hooks) {
  IfacerConf conf;
  if (auto e = DecodeIfacerConf(req.json, &conf)) return Fail(*e, req.echo);
  conf.cni_version = req.cni_version;
  if (conf.prev_result.has_value() && !conf.prev_result->is_null()) {
    if (auto e = cni::ValidatePrevResult(*conf.prev_result, conf.cni_version)) {
      return Fail(*e, conf.cni_version);
    }
  }
  if (ActionFor(conf) != Action::kNothing) {
    if (!hooks.open_links) {
      return Fail({kErrInternal, "no link operations available", ""}, conf.cni_version);
    }
    auto ops = hooks.open_links();
    if (!ops.ok()) {
      return Fail({kErrInternal,
                   base::StrCat("failed to open netlink: ",
                                base::FromAbsl(ops.status().message())),
                   ""},
                  conf.cni_version);
    }
    if (auto e = Apply(conf, **ops)) return Fail(*e, conf.cni_version);
  }
  return Succeed(AddResult(conf.prev_result, conf.cni_version));
}

}  // namespace

std::string AddResult(const std::optional<Json>& prev, const std::string& cni_version) {
  Json out;
  if (prev.has_value() && prev->is_object()) {
    out = *prev;
  } else {
    out = Json::object();
    out["dns"] = Json::object();
  }
  out["cniVersion"] = cni_version;
  return base::DumpJson(out);
}

cni::Outcome Run(const cni::Env& env, const Hooks& hooks) {
  SkelRequest req;
  if (auto done = cni::RunSkel(env, kAbout, hooks.read_stdin, &req)) return *std::move(done);
  // Upstream's DEL and CHECK do nothing (the links stay for the next pods; they do not
  // survive a reboot and the next ADD recreates them); GC/STATUS have nothing to check.
  if (req.command != "ADD") return Succeed();
  return CmdAdd(req, hooks);
}

}  // namespace spiderpool::agent::ifacer
