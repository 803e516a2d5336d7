// soak (issue 18 point 4): one real spiderpool-agent and one spiderpool-controller against the
// loopback API server with short idle (1 s) and watch (5-10 s) timeouts, under steady ADD/DEL
// churn through the real plugin for a long time (bench/chaos_harness.h's Rig and kubelet-like
// pod lifecycle, no faults). Samples RSS, threads and open fds of both processes every
// --sample-s and prints one JSON line: duration, ops, failures, crashes, and per process the
// first sample after --warmup-s, the last, the maximum, and the RSS growth per hour (least
// squares over the samples after warm-up).
//
//   bazel run -c opt --symlink_prefix=/ //bench:soak -- [--duration-s=600] [--warmup-s=60]
//       [--sample-s=10] [--workers=4] [--pool-ips=64] [--keep-logs=1]
//
// Not a test: numbers go to bench/README.md. Exit status 0 when nothing crashed and every
// ADD / DEL eventually succeeded.

#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/json.h"
#include "base/sigpipe.h"
#include "base/strings.h"
#include "bench/chaos_harness.h"
#include "bench/measure.h"

namespace {

using namespace spiderpool;

double Flag(int argc, char** argv, const std::string& name, double def) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--" + name + "=", 0) == 0) return std::stod(a.substr(name.size() + 3));
  }
  return def;
}

struct Sample {
  double t_s = 0;
  bench::ProcStats agent, controller;
};

// Least-squares slope of y over t, per hour.
double SlopePerHour(const std::vector<std::pair<double, double>>& ty) {
  if (ty.size() < 2) return 0;
  double st = 0, sy = 0, stt = 0, sty = 0;
  for (const auto& [t, y] : ty) {
    st += t;
    sy += y;
    stt += t * t;
    sty += t * y;
  }
  const double n = static_cast<double>(ty.size());
  const double den = n * stt - st * st;
  return den == 0 ? 0 : (n * sty - st * sy) / den * 3600.0;
}

base::Json Summary(const std::vector<Sample>& samples, size_t first,
                   bench::ProcStats Sample::*which) {
  std::vector<std::pair<double, double>> rss;
  double rss_max = 0;
  int threads_max = 0, fds_max = 0;
  for (size_t i = first; i < samples.size(); ++i) {
    const bench::ProcStats& p = samples[i].*which;
    rss.push_back({samples[i].t_s, p.rss_mb});
    rss_max = std::max(rss_max, p.rss_mb);
    threads_max = std::max(threads_max, p.threads);
    fds_max = std::max(fds_max, p.fds);
  }
  const bench::ProcStats& a = samples[first].*which;
  const bench::ProcStats& b = samples.back().*which;
  return base::Json{{"rss_mb_start", a.rss_mb},
                    {"rss_mb_end", b.rss_mb},
                    {"rss_mb_max", rss_max},
                    {"rss_mb_growth_per_hour", SlopePerHour(rss)},
                    {"threads_start", a.threads},
                    {"threads_end", b.threads},
                    {"threads_max", threads_max},
                    {"fds_start", a.fds},
                    {"fds_end", b.fds},
                    {"fds_max", fds_max}};
}

}  // namespace

int main(int argc, char** argv) {
  base::IgnoreSigpipe();
  const absl::Duration duration = absl::Seconds(Flag(argc, argv, "duration-s", 600));
  const absl::Duration warmup = absl::Seconds(Flag(argc, argv, "warmup-s", 60));
  const absl::Duration sample_every = absl::Seconds(Flag(argc, argv, "sample-s", 10));
  const int workers = static_cast<int>(Flag(argc, argv, "workers", 4));
  bench::RigOptions ro;
  ro.nodes = 1;
  ro.controllers = 1;
  ro.pool_ips = static_cast<int>(Flag(argc, argv, "pool-ips", 64));
  ro.keep_alive_idle_timeout = absl::Seconds(1);
  ro.watch_min_request_timeout = absl::Seconds(5);
  ro.gc_interval = absl::Seconds(30);
  ro.keep_logs = Flag(argc, argv, "keep-logs", 0) != 0;
  auto rig_or = bench::Rig::Start(ro);
  if (!rig_or.ok()) {
    std::cerr << rig_or.status() << "\n";
    return 1;
  }
  bench::Rig& rig = **rig_or;

  std::atomic<int64_t> adds{0}, dels{0}, add_execs{0}, del_execs{0}, failures{0};
  std::atomic<int> next_pod{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(1000 + w);
      int sandbox_seq = 0;
      while (!stop.load()) {
        bench::PodRef pod{base::StrCat("s", next_pod.fetch_add(1)), "", 0};
        if (!rig.CreatePod(&pod).ok()) {
          failures.fetch_add(1);
          continue;
        }
        bench::PodOutcome out =
            rig.AddLikeKubelet(pod, absl::Now() + absl::Seconds(60), 0, &rng, &sandbox_seq);
        add_execs.fetch_add(out.add_attempts);
        if (out.addressed) {
          adds.fetch_add(1);
        } else {
          failures.fetch_add(1);
          std::cerr << "soak: " << pod.name << " not addressed: " << out.last_error << "\n";
        }
        absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(0, 50)(rng)));
        bench::PodOutcome del;
        absl::Status s = rig.DeleteLikeKubelet(
            pod, out.addressed ? out.container_id : "none", absl::Now() + absl::Seconds(60), &del);
        del_execs.fetch_add(out.del_attempts + del.del_attempts);
        if (s.ok()) {
          dels.fetch_add(1);
        } else {
          failures.fetch_add(1);
          std::cerr << "soak: " << s << "\n";
        }
      }
    });
  }

  const absl::Time start = absl::Now();
  std::vector<Sample> samples;
  size_t first_after_warmup = 0;
  bool warm = false;
  while (true) {
    rig.ReapCrashes();
    const absl::Duration elapsed = absl::Now() - start;
    Sample s;
    s.t_s = absl::ToDoubleSeconds(elapsed);
    s.agent = bench::ReadProcStats(rig.agent_pid(0));
    s.controller = bench::ReadProcStats(rig.controller_pid(0));
    if (!warm && elapsed >= warmup) {
      warm = true;
      first_after_warmup = samples.size();
    }
    samples.push_back(s);
    if (elapsed >= duration) break;
    absl::SleepFor(sample_every);
  }
  stop = true;
  for (auto& t : threads) t.join();
  const double run_s = absl::ToDoubleSeconds(absl::Now() - start);
  if (!warm) first_after_warmup = 0;

  base::Json out{
      {"duration_s", run_s},
      {"warmup_s", absl::ToDoubleSeconds(warmup)},
      {"samples", samples.size() - first_after_warmup},
      {"workers", workers},
      {"pool_ips", ro.pool_ips},
      {"keep_alive_idle_timeout_s", 1},
      {"watch_min_request_timeout_s", 5},
      {"adds", adds.load()},
      {"dels", dels.load()},
      {"ops_per_s", static_cast<double>(adds.load() + dels.load()) / run_s},
      {"add_execs", add_execs.load()},
      {"del_execs", del_execs.load()},
      {"failures", failures.load()},
      {"crashes", rig.crashes()},
      {"agent", Summary(samples, first_after_warmup, &Sample::agent)},
      {"controller", Summary(samples, first_after_warmup, &Sample::controller)},
  };
  if (rig.crashes() > 0) out["crash_logs"] = rig.crash_logs();
  std::cout << base::DumpJson(out) << std::endl;
  return rig.crashes() == 0 && failures.load() == 0 ? 0 : 1;
}
