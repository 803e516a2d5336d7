// Fuzz target: what a CNI plugin reads from the runtime, the environment and stdin, through the
// decoders of our plugins: libcni skel's preamble (RunSkel: CNI_* variables, stdin JSON,
// versions, names), the IPAM plugin's netconf (DecodeNetConf, prevResult) and CNI_ARGS
// (ParseCniArgs), the ifacer plugin's netconf (DecodeIfacerConf, bond options), and the agent's
// reading of a NetworkAttachmentDefinition's config (SpiderpoolIpamOf).
//
// Input: five lines, then stdin:
//   CNI_COMMAND \n CNI_CONTAINERID \n CNI_NETNS \n CNI_IFNAME \n CNI_ARGS \n <stdin bytes>
// (a missing line is an empty variable). Property: nothing crashes; an error outcome always
// prints a JSON object with a non-zero code and a msg.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/cni/cni.h"
#include "agent/cni/ipam_conf.h"
#include "agent/cni/skel.h"
#include "agent/ifacer/netconf.h"
#include "base/json.h"

namespace {

using namespace spiderpool::agent;

std::string_view NextLine(std::string_view* in) {
  const size_t nl = in->find('\n');
  std::string_view line = in->substr(0, nl);
  in->remove_prefix(nl == std::string_view::npos ? in->size() : nl + 1);
  return line;
}

void CheckFailure(const cni::Outcome& out) {
  if (out.exit_code == 0) return;
  auto j = spiderpool::base::ParseJson(out.stdout_text);
  if (!j.ok() || !j->is_object() || !j->contains("code") || !(*j)["code"].is_number_integer() ||
      (*j)["code"].get<int64_t>() == 0 || !j->contains("msg")) {
    __builtin_trap();  // an error outcome the runtime cannot read
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  cni::Env env;
  env.command = std::string(NextLine(&in));
  env.container_id = std::string(NextLine(&in));
  env.netns = std::string(NextLine(&in));
  env.ifname = std::string(NextLine(&in));
  env.args = std::string(NextLine(&in));
  env.path = "/opt/cni/bin";
  const std::string stdin_text(in);

  // The IPAM plugin's order: skel's preamble, then the typed netconf and CNI_ARGS.
  cni::SkelRequest req;
  auto read_stdin = [&](std::string* out, std::string*) {
    *out = stdin_text;
    return true;
  };
  if (std::optional<cni::Outcome> done = cni::RunSkel(env, "fuzz", read_stdin, &req)) {
    CheckFailure(*done);
  } else {
    cni::NetConf conf;
    if (!cni::DecodeNetConf(req.json, &conf).has_value()) {
      cni::K8sArgs args;
      (void)cni::ParseCniArgs(env.args, &args);
      cni::FillK8sArgsFromConf(conf, &args);
      if (conf.prev_result.has_value()) (void)cni::ValidatePrevResult(*conf.prev_result, req.version);
    }
    // The ifacer plugin decodes the same kind of stdin.
    ifacer::IfacerConf ifacer_conf;
    if (!ifacer::DecodeIfacerConf(req.json, &ifacer_conf).has_value()) {
      (void)ifacer::ActionFor(ifacer_conf);
    }
  }
  // The coordinator's preamble differs from skel's in its echo and check order.
  cni::SkelRequest req2;
  if (std::optional<cni::Outcome> done =
          cni::RunSkel(env, "fuzz", read_stdin, &req2,
                       {.echo_parsed_version = true, .supported_version_first = true})) {
    CheckFailure(*done);
  }
  // CNI_ARGS on its own, and the raw stdin as bond options text.
  cni::K8sArgs args;
  (void)cni::ParseCniArgs(env.args, &args);
  (void)ifacer::ParseBondOptions(stdin_text);
  // The same text as a NetworkAttachmentDefinition's spec.config (the agent's prewarm).
  (void)cni::SpiderpoolIpamOf(stdin_text);
  return 0;
}
