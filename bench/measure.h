#pragma once
// What the benches measure about processes and agents, in one place: a process's memory, CPU
// and open files (/proc, getrusage), an agent's Prometheus counters and histograms (its
// /metrics endpoint, summed over agents), and percentiles of latency samples. Linux only; a
// process that is gone reads as zero.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/json.h"

namespace spiderpool::bench {

// Memory, threads and open files of one process (/proc/PID/status, /proc/PID/fd).
struct ProcStats {
  double rss_mb = 0;
  int threads = 0;
  int fds = 0;
};
ProcStats ReadProcStats(pid_t pid);
// Peak resident set (VmHWM) in kB; -1 when the process is gone.
int64_t PeakRssKb(pid_t pid);
// CPU seconds (user + system) a process has used so far (/proc/PID/stat utime + stime) and
// those of its reaped children (cutime + cstime).
double ProcCpuSeconds(pid_t pid);
double ProcChildrenCpuSeconds(pid_t pid);
// getrusage(`who`) user + system seconds (RUSAGE_SELF, RUSAGE_CHILDREN).
double RusageCpuSeconds(int who);

// The sum of counter `name` (every label set) on the /metrics of 127.0.0.1:`port`; 0 when
// unreachable.
double ScrapeCounter(int port, const std::string& name);
// A histogram summed over agents: bucket bound ("le", +Inf included) -> cumulative count.
using Buckets = std::map<double, double>;
// Adds histogram `name`'s buckets on the /metrics of 127.0.0.1:`port` into `*into`.
void ScrapeBuckets(int port, const std::string& name, Buckets* into);
// {"count", "within_50ms" (share), "p50_under_ms", "p99_under_ms" (the bucket bound the
// percentile falls under; null above the last bound)}; null for an empty histogram.
base::Json HistogramSummary(const Buckets& buckets);

// The sample at rank round(p × (n − 1)) of the sorted samples; 0 for none.
double Percentile(std::vector<double> samples, double p);

}  // namespace spiderpool::bench
