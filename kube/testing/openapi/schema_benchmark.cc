// Cost of what the loopback API server does per write: ValidateObject (prune + default +
// validate) of typical Spider objects against the real CRD schemas, plus Parse of a CRD.
// Run: bazel run -c opt //kube/testing/openapi:schema_benchmark

#include <fstream>
#include <sstream>
#include <string>

#include "base/json.h"
#include "base/yaml.h"
#include "benchmark/benchmark.h"
#include "kube/testing/openapi/schema.h"

namespace spiderpool::kube::testing::openapi {
namespace {

base::Json LoadCrdSchema(const std::string& file) {
  std::ifstream in("charts/spiderpool/crds/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = base::ParseYaml(text.str());
  if (!doc.ok()) return base::Json::object();
  return (*doc)["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

const char kPool[] = R"({"apiVersion":"spiderpool.spidernet.io/v2beta1","kind":"SpiderIPPool",
  "metadata":{"name":"default-v4-ippool","resourceVersion":"12","labels":{"a":"b"}},
  "spec":{"subnet":"172.18.0.0/16","ips":["172.18.30.131-172.18.30.140"],"gateway":"172.18.0.1",
  "multusName":["kube-system/macvlan-conf"],"podAffinity":{"matchLabels":{"app":"x"}},
  "routes":[{"dst":"10.0.0.0/8","gw":"172.18.0.2"}]},
  "status":{"allocatedIPs":"{\"172.18.30.131\":{\"pod\":\"default/a\",\"podUid\":\"u\"}}",
  "totalIPCount":10,"allocatedIPCount":1,"freeIPCount":9}})";

const char kSmc[] = R"({"apiVersion":"spiderpool.spidernet.io/v2beta1","kind":"SpiderMultusConfig",
  "metadata":{"name":"macvlan-conf","namespace":"kube-system"},
  "spec":{"cniType":"macvlan","macvlan":{"master":["eth0"],"ippools":{"ipv4":["default-v4-ippool"]}},
  "coordinator":{"podCIDRType":"auto"}}})";

void Run(benchmark::State& state, const char* file, const char* object) {
  auto schema = Schema::Parse(LoadCrdSchema(file));
  if (!schema.ok()) {
    state.SkipWithError("schema did not parse (run with bazel run)");
    return;
  }
  base::Json obj = *base::ParseJson(object);
  for (auto _ : state) {
    base::Json copy = obj;
    absl::Status st = ValidateObject(*schema, &copy);
    benchmark::DoNotOptimize(st);
  }
}

void BM_ValidateIPPool(benchmark::State& state) {
  Run(state, "spiderpool.spidernet.io_spiderippools.yaml", kPool);
}
BENCHMARK(BM_ValidateIPPool);

void BM_ValidateMultusConfig(benchmark::State& state) {
  Run(state, "spiderpool.spidernet.io_spidermultusconfigs.yaml", kSmc);
}
BENCHMARK(BM_ValidateMultusConfig);

void BM_ParseMultusConfigSchema(benchmark::State& state) {
  base::Json j = LoadCrdSchema("spiderpool.spidernet.io_spidermultusconfigs.yaml");
  for (auto _ : state) {
    auto s = Schema::Parse(j);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_ParseMultusConfigSchema);

}  // namespace
}  // namespace spiderpool::kube::testing::openapi
