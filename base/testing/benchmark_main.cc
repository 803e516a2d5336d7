// The main of every Google Benchmark binary: benchmark's own, with SIGPIPE ignored first as in
// every other main of the project (base/sigpipe.h).
#include "base/sigpipe.h"
#include "benchmark/benchmark.h"

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
