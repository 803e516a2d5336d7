// bazel run -c opt //bench:nad_reconcile_bench [-- n]   (default n = 1000)
// One JSON line: {"smcs":n,"smc_to_nad_reconcile_s":seconds}. See nad_reconcile.h.

#include <cstdio>
#include <cstdlib>

#include "base/sigpipe.h"
#include "bench/nad_reconcile.h"
#include "base/log.h"

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  spiderpool::base::SetLogLevel(spiderpool::base::LogLevel::kWarning);
  auto seconds = spiderpool::bench::MeasureSmcToNadSeconds(n);
  if (!seconds.ok()) {
    std::fprintf(stderr, "%s\n", seconds.status().ToString().c_str());
    return 1;
  }
  std::printf("{\"smcs\":%d,\"smc_to_nad_reconcile_s\":%.3f}\n", n, *seconds);
  return 0;
}
