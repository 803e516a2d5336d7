// chaos: IPAM under every failure at once (issue 18 point 1), one JSON line. See
// bench/chaos_harness.h for the scenario and bench/README.md for the numbers.
//
//   bazel run -c opt --symlink_prefix=/ //bench:chaos -- [--seed=1] [--nodes=10] [--pods=1000] [--min-duration-s=0]
//       [--workers-per-node=3] [--pool-ips=256] [--controllers=2] [--gc-interval-s=10]
//       [--max-hold-ms=300] [--rate-409=0.02] [--rate-429=0.01] [--rate-500=0.01]
//       [--rate-timeout=0.005] [--timeout-delay-ms=500] [--agent-kill-every-s=3]
//       [--watch-drop-every-s=4] [--connection-cut-every-s=5] [--leader-kill-every-s=30]
//       [--plugin-kill-rate=0.02] [--keep-logs=1]
//
// Exit status 0 when "ok" (every pod addressed, no duplicate, no leak, no crash).

#include <iostream>
#include <string>

#include "base/json.h"
#include "base/sigpipe.h"
#include "bench/chaos_harness.h"

namespace {

double Flag(int argc, char** argv, const std::string& name, double def) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return std::stod(a.substr(name.size() + 3));
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  using spiderpool::bench::ChaosOptions;
  ChaosOptions o;
  auto seconds = [](double s) { return absl::Milliseconds(static_cast<int64_t>(s * 1000)); };
  o.seed = static_cast<uint64_t>(Flag(argc, argv, "seed", 1));
  o.rig.nodes = static_cast<int>(Flag(argc, argv, "nodes", o.rig.nodes));
  o.rig.pool_ips = static_cast<int>(Flag(argc, argv, "pool-ips", o.rig.pool_ips));
  o.rig.controllers = static_cast<int>(Flag(argc, argv, "controllers", o.rig.controllers));
  o.rig.gc_interval = seconds(Flag(argc, argv, "gc-interval-s", 10));
  o.rig.keep_logs = Flag(argc, argv, "keep-logs", 0) != 0;
  o.pods = static_cast<int>(Flag(argc, argv, "pods", o.pods));
  o.min_duration = seconds(Flag(argc, argv, "min-duration-s", 0));
  o.workers_per_node = static_cast<int>(Flag(argc, argv, "workers-per-node", o.workers_per_node));
  o.max_hold = absl::Milliseconds(Flag(argc, argv, "max-hold-ms", 300));
  o.conflict_rate = Flag(argc, argv, "rate-409", o.conflict_rate);
  o.too_many_requests_rate = Flag(argc, argv, "rate-429", o.too_many_requests_rate);
  o.internal_error_rate = Flag(argc, argv, "rate-500", o.internal_error_rate);
  o.timeout_rate = Flag(argc, argv, "rate-timeout", o.timeout_rate);
  o.timeout_delay = absl::Milliseconds(Flag(argc, argv, "timeout-delay-ms", 500));
  o.agent_kill_every = seconds(Flag(argc, argv, "agent-kill-every-s", 3));
  o.watch_drop_every = seconds(Flag(argc, argv, "watch-drop-every-s", 4));
  o.connection_cut_every = seconds(Flag(argc, argv, "connection-cut-every-s", 5));
  o.leader_kill_every = seconds(Flag(argc, argv, "leader-kill-every-s", 30));
  o.plugin_kill_rate = Flag(argc, argv, "plugin-kill-rate", o.plugin_kill_rate);
  spiderpool::base::Json out = spiderpool::bench::RunChaos(o);
  std::cout << spiderpool::base::DumpJson(out) << std::endl;
  return out.value("ok", false) ? 0 : 1;
}
