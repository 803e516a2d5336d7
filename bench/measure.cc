#include "bench/measure.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <httplib.h>

#include "base/strings.h"

namespace spiderpool::bench {
namespace {

std::string ReadProcFile(pid_t pid, const char* name) {
  std::ifstream in(base::StrCat("/proc/", pid, "/", name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Seconds of /proc/PID/stat fields `first` to `last` (clock ticks); 0 if the process is gone.
double ProcStatSeconds(pid_t pid, int first, int last) {
  const std::string stat = ReadProcFile(pid, "stat");
  const size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= last && in >> field; ++i) {
    if (i >= first) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The /metrics text of 127.0.0.1:`port`; empty when unreachable.
std::string Metrics(int port) {
  httplib::Client c("127.0.0.1", port);
  auto res = c.Get("/metrics");
  if (!res || res->status != 200) return "";
  return res->body;
}

}  // namespace

ProcStats ReadProcStats(pid_t pid) {
  ProcStats out;
  std::istringstream in(ReadProcFile(pid, "status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) out.rss_mb = std::stod(line.substr(6)) / 1024.0;
    if (line.rfind("Threads:", 0) == 0) out.threads = std::stoi(line.substr(8));
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(base::StrCat("/proc/", pid, "/fd"), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++out.fds;
  }
  return out;
}

int64_t PeakRssKb(pid_t pid) {
  std::istringstream in(ReadProcFile(pid, "status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// Fields 14 and 15 are utime and stime; 16 and 17 cutime and cstime.
double ProcCpuSeconds(pid_t pid) { return ProcStatSeconds(pid, 14, 15); }
double ProcChildrenCpuSeconds(pid_t pid) { return ProcStatSeconds(pid, 16, 17); }

double RusageCpuSeconds(int who) {
  struct rusage ru;
  ::getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double ScrapeCounter(int port, const std::string& name) {
  std::istringstream in(Metrics(port));
  std::string line;
  double sum = 0;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) == 0 && (line.size() > name.size()) &&
        (line[name.size()] == ' ' || line[name.size()] == '{')) {
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return sum;
}

void ScrapeBuckets(int port, const std::string& name, Buckets* into) {
  std::istringstream in(Metrics(port));
  std::string line;
  const std::string prefix = name + "_bucket{le=\"";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t end = line.find('"', prefix.size());
    if (end == std::string::npos) continue;
    const std::string le = line.substr(prefix.size(), end - prefix.size());
    const double bound = le == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(le);
    (*into)[bound] += std::stod(line.substr(line.rfind(' ') + 1));
  }
}

base::Json HistogramSummary(const Buckets& b) {
  if (b.empty() || b.rbegin()->second == 0) return nullptr;
  const double total = b.rbegin()->second;
  auto under = [&](double q) -> base::Json {
    for (const auto& [bound, count] : b) {
      if (count >= q * total) {
        return std::isinf(bound) ? base::Json(nullptr) : base::Json(bound * 1000.0);
      }
    }
    return nullptr;
  };
  auto within = b.find(0.05);
  return {{"count", total},
          {"within_50ms", within == b.end() ? base::Json(nullptr) : base::Json(within->second / total)},
          {"p50_under_ms", under(0.5)},
          {"p99_under_ms", under(0.99)}};
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace spiderpool::bench
