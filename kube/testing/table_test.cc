// meta.k8s.io Table output: the pieces (JSONPath, ages, Accept negotiation, convertors) and the
// server answering kubectl's Accept header for get, list and watch, with the chart's real
// SpiderIPPool CRD.

#include "kube/testing/table.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/yaml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/test_client.h"

namespace spiderpool::kube::testing {
namespace {

using base::Json;

constexpr char kKubectlAccept[] =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
    "g=meta.k8s.io,application/json";

std::vector<Json> Find(std::string_view path, const Json& j) {
  auto p = JsonPath::Parse(path);
  EXPECT_TRUE(p.ok()) << path << ": " << p.status();
  if (!p.ok()) return {};
  return p->Find(j);
}

TEST(JsonPathTest, PrinterColumnPaths) {
  Json obj = {{"spec",
               {{"subnet", "10.0.0.0/8"},
                {"podAffinity",
                 {{"matchLabels", {{"ipam.spidernet.io/app-namespace", "team-a"}}}}},
                {"a", {{"b", {{"c", 1}}}}},
                {"multusName", {"kube-system/macvlan"}}}},
              {"status",
               {{"current", {{"ips", {{{"ipv4", "10.0.0.5/8"}}, {{"ipv4", "10.0.0.6/8"}}}}}},
                {"conditions",
                 {{{"type", "Synced"}, {"status", "False"}, {"n", 1}},
                  {{"type", "Ready"}, {"status", "True"}, {"n", 2}}}}}}};
  EXPECT_EQ(Find(".spec.subnet", obj), std::vector<Json>{"10.0.0.0/8"});
  EXPECT_EQ(Find("{.spec.subnet}", obj), std::vector<Json>{"10.0.0.0/8"});
  // client-go: ['x.y'] re-parses as .x.y, so dots must be escaped to stay in one key.
  EXPECT_EQ(Find(R"(.spec.podAffinity.matchLabels['ipam\.spidernet\.io/app\-namespace'])", obj),
            std::vector<Json>{"team-a"});
  EXPECT_EQ(Find(R"(.spec['a.b'].c)", obj), std::vector<Json>{1});
  EXPECT_TRUE(Find(".spec.podAffinity.matchLabels['ipam.spidernet.io/app-namespace']", obj)
                  .empty());
  EXPECT_EQ(Find(".status.current.ips[0].ipv4", obj), std::vector<Json>{"10.0.0.5/8"});
  EXPECT_EQ(Find(".status.current.ips[-1].ipv4", obj), std::vector<Json>{"10.0.0.6/8"});
  EXPECT_EQ(Find(".status.current.ips[*].ipv4", obj),
            (std::vector<Json>{"10.0.0.5/8", "10.0.0.6/8"}));
  EXPECT_EQ(Find(".status.current.ips[0:1].ipv4", obj), std::vector<Json>{"10.0.0.5/8"});
  EXPECT_EQ(Find(R"(.status.conditions[?(@.type=="Ready")].status)", obj),
            std::vector<Json>{"True"});
  EXPECT_EQ(Find(R"(.status.conditions[?(@.type!='Ready')].status)", obj),
            std::vector<Json>{"False"});
  EXPECT_EQ(Find(R"(.status.conditions[?(@.n>1)].type)", obj), std::vector<Json>{"Ready"});
  EXPECT_EQ(Find(R"(.status.conditions[?(@.missing)].type)", obj), std::vector<Json>{});
  EXPECT_EQ(Find(R"(.status.conditions[?(@.n)].type)", obj).size(), 2u);
  // Missing keys select nothing; out-of-range indexes and comparisons of different types are
  // errors, which also select nothing.
  EXPECT_TRUE(Find(".spec.nothing.here", obj).empty());
  EXPECT_TRUE(Find(".status.current.ips[5].ipv4", obj).empty());
  EXPECT_TRUE(Find(".spec.subnet[0]", obj).empty());
  EXPECT_TRUE(Find(R"(.status.conditions[?(@.n=="x")].type)", obj).empty());
  EXPECT_FALSE(JsonPath::Parse("..spec").ok());
  EXPECT_FALSE(JsonPath::Parse(".a[0,1]").ok());
  EXPECT_FALSE(JsonPath::Parse(".a[x]").ok());
  EXPECT_FALSE(JsonPath::Parse(".a[0").ok());
  EXPECT_FALSE(JsonPath::Parse(".a | b").ok());
}

TEST(JsonPathTest, Text) {
  EXPECT_EQ(JsonPathText("abc"), "abc");
  EXPECT_EQ(JsonPathText(42), "42");
  EXPECT_EQ(JsonPathText(3.0), "3");
  EXPECT_EQ(JsonPathText(1.5), "1.5");
  EXPECT_EQ(JsonPathText(1234567.5), "1.2345675e+06");
  EXPECT_EQ(JsonPathText(0.00001), "1e-05");
  EXPECT_EQ(JsonPathText(true), "true");
  EXPECT_EQ(JsonPathText(Json{"a", "b"}), R"(["a","b"])");
  EXPECT_EQ(JsonPathText(Json{{"b", 1}, {"a", 2}}), R"({"a":2,"b":1})");
}

TEST(HumanDurationTest, MatchesApimachinery) {
  EXPECT_EQ(HumanDuration(absl::Seconds(-5)), "<invalid>");
  EXPECT_EQ(HumanDuration(absl::Seconds(-1)), "0s");
  EXPECT_EQ(HumanDuration(absl::Seconds(0)), "0s");
  EXPECT_EQ(HumanDuration(absl::Seconds(119)), "119s");
  EXPECT_EQ(HumanDuration(absl::Seconds(120)), "2m");
  EXPECT_EQ(HumanDuration(absl::Seconds(130)), "2m10s");
  EXPECT_EQ(HumanDuration(absl::Minutes(10)), "10m");
  EXPECT_EQ(HumanDuration(absl::Minutes(179)), "179m");
  EXPECT_EQ(HumanDuration(absl::Hours(3)), "3h");
  EXPECT_EQ(HumanDuration(absl::Hours(3) + absl::Minutes(5)), "3h5m");
  EXPECT_EQ(HumanDuration(absl::Hours(8) + absl::Minutes(5)), "8h");
  EXPECT_EQ(HumanDuration(absl::Hours(47)), "47h");
  EXPECT_EQ(HumanDuration(absl::Hours(48)), "2d");
  EXPECT_EQ(HumanDuration(absl::Hours(50)), "2d2h");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * 30)), "30d");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * 365 * 2)), "2y");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * (365 * 2 + 10))), "2y10d");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * 365 * 9)), "9y");
}

TEST(NegotiateTableTest, AcceptHeaders) {
  EXPECT_EQ(NegotiateTable(kKubectlAccept), "v1");
  EXPECT_EQ(NegotiateTable("application/json;as=Table;v=v1beta1;g=meta.k8s.io"), "v1beta1");
  EXPECT_EQ(NegotiateTable("application/json; as=Table; v=v1; g=meta.k8s.io"), "v1");
  EXPECT_EQ(NegotiateTable(""), std::nullopt);
  EXPECT_EQ(NegotiateTable("application/json"), std::nullopt);
  EXPECT_EQ(NegotiateTable("application/json, */*"), std::nullopt);
  EXPECT_EQ(NegotiateTable("application/json;as=Table;v=v2;g=meta.k8s.io,application/json"),
            std::nullopt);
  EXPECT_EQ(NegotiateTable("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,"
                           "application/json"),
            std::nullopt);
  EXPECT_EQ(NegotiateTable("application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io"),
            "v1");
  EXPECT_EQ(NegotiateTable("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
                           "application/json;as=Table;v=v1;g=meta.k8s.io"),
            "v1");
}

TEST(NegotiateAsTest, PartialObjectMetadata) {
  constexpr char kMetadataWatch[] =
      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
  EXPECT_EQ(NegotiateAs(kMetadataWatch, "PartialObjectMetadata"), "v1");
  EXPECT_EQ(NegotiateAs(kMetadataWatch, "PartialObjectMetadataList"), std::nullopt);
  EXPECT_EQ(NegotiateAs(kMetadataWatch, "Table"), std::nullopt);
  EXPECT_EQ(NegotiateAs("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                        "PartialObjectMetadataList"),
            "v1");
  EXPECT_EQ(NegotiateAs("application/json", "PartialObjectMetadata"), std::nullopt);
}

TEST(TableConvertorTest, CustomResourceColumns) {
  Json cols = Json::array({{{"name", "SUBNET"}, {"type", "string"}, {"jsonPath", ".spec.subnet"}},
                           {{"name", "COUNT"},
                            {"type", "integer"},
                            {"jsonPath", ".status.count"},
                            {"description", "how many"}},
                           {{"name", "RATIO"}, {"type", "number"}, {"jsonPath", ".status.ratio"}},
                           {{"name", "ON"}, {"type", "boolean"}, {"jsonPath", ".spec.on"},
                            {"priority", 1}},
                           {{"name", "SINCE"}, {"type", "date"}, {"jsonPath", ".status.since"}},
                           {{"name", "LIST"}, {"type", "string"}, {"jsonPath", ".spec.list"}},
                           {{"name", "WRONGTYPE"}, {"type", "integer"}, {"jsonPath", ".spec.subnet"}}});
  TableConvertor t = TableConvertor::ForCustomResource(cols);
  ASSERT_EQ(t.columns().size(), 8u);
  EXPECT_EQ(t.columns()[0].name, "Name");
  EXPECT_EQ(t.columns()[0].format, "name");
  EXPECT_EQ(t.columns()[1].description,
            "Custom resource definition column (in JSONPath format): .spec.subnet");
  EXPECT_EQ(t.columns()[2].description, "how many");
  EXPECT_EQ(t.columns()[4].priority, 1);
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  Json obj = {{"metadata", {{"name", "p1"}}},
              {"spec", {{"subnet", "10.0.0.0/8"}, {"on", true}, {"list", {"a", "b"}}}},
              {"status",
               {{"count", 7.0}, {"ratio", 2}, {"since", "2023-11-14T22:08:20Z"}}}};  // now - 5m
  Json cells = t.Cells(obj, now);
  EXPECT_EQ(cells[1], "10.0.0.0/8");
  EXPECT_EQ(cells[2], 7);
  EXPECT_TRUE(cells[2].is_number_integer());
  EXPECT_TRUE(cells[3].is_number_float());
  EXPECT_EQ(cells[3].get<double>(), 2.0);
  EXPECT_EQ(cells[4], true);
  EXPECT_EQ(cells[5], "5m");
  EXPECT_EQ(cells[6], R"(["a","b"])");
  EXPECT_TRUE(cells[7].is_null());
  // Missing values are null cells.
  Json bare = {{"metadata", {{"name", "p2"}}}};
  EXPECT_EQ(t.Cells(bare, now),
            Json::parse(R"(["p2",null,null,null,null,null,null,null])"));
  // A bad date string.
  obj["status"]["since"] = "yesterday";
  EXPECT_EQ(t.Cells(obj, now)[5], "<invalid>");

  // No declared columns: Name + Age (type date).
  TableConvertor d = TableConvertor::ForCustomResource(nullptr);
  ASSERT_EQ(d.columns().size(), 2u);
  EXPECT_EQ(d.columns()[1].name, "Age");
  EXPECT_EQ(d.columns()[1].type, "date");
  Json aged = {{"metadata", {{"name", "x"}, {"creationTimestamp", "2023-11-14T18:13:20Z"}}}};
  EXPECT_EQ(d.Cells(aged, now), (Json{"x", "4h"}));

  // An unparsable column ends the list (tableconvertor.New returns what it had).
  TableConvertor broken = TableConvertor::ForCustomResource(
      Json::array({{{"name", "A"}, {"type", "string"}, {"jsonPath", ".a"}},
                   {{"name", "B"}, {"type", "string"}, {"jsonPath", "..b"}},
                   {{"name", "C"}, {"type", "string"}, {"jsonPath", ".c"}}}));
  EXPECT_EQ(broken.columns().size(), 2u);
}

TEST(TableConvertorTest, BuiltinPrinters) {
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  std::string created = "2023-11-14T22:12:20Z";  // now - 60s
  auto names = [](const TableConvertor& t) {
    std::vector<std::string> out;
    for (const TableColumn& c : t.columns()) out.push_back(c.name + (c.priority ? "*" : ""));
    return out;
  };
  TableConvertor cm = TableConvertor::ForBuiltin("", "configmaps");
  EXPECT_EQ(names(cm), (std::vector<std::string>{"Name", "Data", "Age"}));
  EXPECT_EQ(cm.Cells({{"metadata", {{"name", "c"}, {"creationTimestamp", created}}},
                      {"data", {{"a", "1"}, {"b", "2"}}}},
                     now),
            (Json{"c", 2, "60s"}));
  TableConvertor pod = TableConvertor::ForBuiltin("", "pods");
  EXPECT_EQ(names(pod), (std::vector<std::string>{"Name", "Ready", "Status", "Restarts", "Age",
                                                  "IP*", "Node*", "Nominated Node*",
                                                  "Readiness Gates*"}));
  Json p = {{"metadata", {{"name", "p"}, {"creationTimestamp", created}}},
            {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "a"}}, {{"name", "b"}}}}}},
            {"status",
             {{"phase", "Running"},
              {"podIP", "10.0.0.9"},
              {"containerStatuses",
               {{{"ready", true}, {"restartCount", 2}, {"state", {{"running", Json::object()}}}},
                {{"ready", false},
                 {"restartCount", 1},
                 {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}}}}}}}};
  EXPECT_EQ(pod.Cells(p, now),
            (Json{"p", "1/2", "CrashLoopBackOff", "3", "60s", "10.0.0.9", "n1", "<none>",
                  "<none>"}));
  TableConvertor ns = TableConvertor::ForBuiltin("", "namespaces");
  EXPECT_EQ(names(ns), (std::vector<std::string>{"Name", "Status", "Age"}));
  TableConvertor crd = TableConvertor::ForBuiltin("apiextensions.k8s.io",
                                                  "customresourcedefinitions");
  EXPECT_EQ(names(crd), (std::vector<std::string>{"Name", "Created At"}));
  EXPECT_EQ(crd.Cells({{"metadata", {{"name", "x"}, {"creationTimestamp", created}}}}, now),
            (Json{"x", created}));
  TableConvertor other = TableConvertor::ForBuiltin("batch", "jobs");
  EXPECT_EQ(names(other), (std::vector<std::string>{"Name", "Age"}));
  TableConvertor node = TableConvertor::ForBuiltin("", "nodes");
  Json n = {{"metadata",
             {{"name", "n1"},
              {"creationTimestamp", created},
              {"labels", {{"node-role.kubernetes.io/control-plane", ""}}}}},
            {"status",
             {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
              {"nodeInfo", {{"kubeletVersion", "v1.35.0"}}}}}};
  Json nc = node.Cells(n, now);
  EXPECT_EQ(nc[1], "Ready");
  EXPECT_EQ(nc[2], "control-plane");
  EXPECT_EQ(nc[4], "v1.35.0");
}

TEST(TableConvertorTest, ToTableShape) {
  TableConvertor t = TableConvertor::ForBuiltin("", "configmaps");
  Json obj = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", "c"}, {"namespace", "default"}, {"resourceVersion", "7"}}},
              {"data", {{"k", "v"}}}};
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  Json table = t.ToTable({&obj}, {{"resourceVersion", "9"}}, now, IncludeObject::kMetadata, "v1");
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(table["metadata"], (Json{{"resourceVersion", "9"}}));
  EXPECT_EQ(table["columnDefinitions"][0],
            (Json{{"name", "Name"},
                  {"type", "string"},
                  {"format", "name"},
                  {"description", t.columns()[0].description},
                  {"priority", 0}}));
  EXPECT_EQ(table["rows"][0]["object"],
            (Json{{"kind", "PartialObjectMetadata"},
                  {"apiVersion", "meta.k8s.io/v1"},
                  {"metadata", obj["metadata"]}}));
  Json full = t.ToTable({&obj}, Json::object(), now, IncludeObject::kObject, "v1beta1", false);
  EXPECT_EQ(full["apiVersion"], "meta.k8s.io/v1beta1");
  EXPECT_TRUE(full["columnDefinitions"].is_null());
  EXPECT_EQ(full["rows"][0]["object"], obj);
  Json none = t.ToTable({&obj}, Json::object(), now, IncludeObject::kNone, "v1");
  EXPECT_TRUE(none["rows"][0]["object"].is_null());
}

// ---- through the server ----

std::string ReadRunfile(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  std::filesystem::path p = srcdir && ws ? std::filesystem::path(srcdir) / ws / rel
                                         : std::filesystem::path(rel);
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TableServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LoopbackOptions o;
    o.run_controllers = false;  // only the objects the tests write (no kube-root-ca.crt)
    o.clock = &clock_;
    o.bookmark_interval = absl::Hours(1);
    auto s = LoopbackApiServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    client_ = std::make_unique<TestClient>(*server_);
  }

  HttpResult GetTable(const std::string& path, const std::string& accept = kKubectlAccept) {
    auto cli = client_->NewClient();
    auto r = cli->Get(path, httplib::Headers{{"Accept", accept}});
    HttpResult out;
    if (!r) return out;
    out.status = r->status;
    out.raw = r->body;
    out.headers = r->headers;
    auto parsed = base::ParseJson(r->body);
    if (parsed.ok()) out.body = *parsed;
    return out;
  }

  void LoadCrd() {
    auto crd = base::ParseYaml(
        ReadRunfile("charts/spiderpool/crds/spiderpool.spidernet.io_spiderippools.yaml"));
    ASSERT_TRUE(crd.ok()) << crd.status();
    auto r = server_->Call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", *crd);
    ASSERT_EQ(r.code, 201) << base::DumpJson(r.body);
  }

  base::SimulatedClock clock_;
  std::unique_ptr<LoopbackApiServer> server_;
  std::unique_ptr<TestClient> client_;
};

std::vector<std::string> ColumnNames(const Json& table) {
  std::vector<std::string> out;
  for (const Json& c : table["columnDefinitions"]) out.push_back(c["name"]);
  return out;
}

TEST_F(TableServerTest, SpiderIPPoolPrinterColumns) {
  LoadCrd();
  auto sample = base::ParseYaml(ReadRunfile("e2e/samples/ippool.yaml"));
  ASSERT_TRUE(sample.ok()) << sample.status();
  const std::string pools = "/apis/spiderpool.spidernet.io/v2beta1/spiderippools";
  auto c = server_->Call("POST", pools, *sample);
  ASSERT_EQ(c.code, 201) << base::DumpJson(c.body);
  Json status = c.body;
  status["status"] = {{"allocatedIPCount", 3},
                      {"totalIPCount", 10},
                      {"reservedIPCount", 2},
                      {"freeIPCount", 5}};
  ASSERT_EQ(server_->Call("PUT", pools + "/ippool-test/status", status).code, 200);
  clock_.Advance(absl::Minutes(5));

  HttpResult r = GetTable(pools);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.Header("Content-Type"), "application/json;as=Table;v=v1;g=meta.k8s.io");
  const Json& t = r.body;
  EXPECT_EQ(t["kind"], "Table");
  EXPECT_EQ(t["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(t["metadata"]["resourceVersion"], std::to_string(server_->CurrentResourceVersion()));
  EXPECT_EQ(ColumnNames(t),
            (std::vector<std::string>{"Name", "VERSION", "SUBNET", "ALLOCATED-IP-COUNT",
                                      "TOTAL-IP-COUNT", "FREE-IP-COUNT", "RESERVED-IP-COUNT",
                                      "DEFAULT", "DISABLE", "NodeName", "MultusName",
                                      "APP-NAMESPACE"}));
  EXPECT_EQ(t["columnDefinitions"][3]["type"], "integer");
  EXPECT_EQ(t["columnDefinitions"][6]["priority"], 0);
  EXPECT_EQ(t["columnDefinitions"][8]["priority"], 10);
  ASSERT_EQ(t["rows"].size(), 1u);
  const Json& row = t["rows"][0];
  // VERSION is unset in the sample (the webhook would default it): null. default/disable
  // come from the schema defaults.
  EXPECT_EQ(row["cells"],
            Json::parse(R"(["ippool-test",null,"172.18.0.0/16",3,10,5,2,false,false,null,)"
                        R"("[\"kube-system/macvlan-conf\"]",null])"))
      << row["cells"].dump();
  EXPECT_EQ(row["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(row["object"]["metadata"]["name"], "ippool-test");

  // get by name, the full object on request.
  r = GetTable(pools + "/ippool-test?includeObject=Object");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["rows"][0]["object"]["kind"], "SpiderIPPool");
  EXPECT_EQ(r.body["rows"][0]["object"]["spec"]["subnet"], "172.18.0.0/16");
  // Plain JSON when Table is not asked for.
  r = GetTable(pools + "/ippool-test", "application/json");
  EXPECT_EQ(r.body["kind"], "SpiderIPPool");
}

TEST_F(TableServerTest, BuiltinAgesAndPagination) {
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces/default/configmaps",
                            {{"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}})
                  .code,
              201);
  }
  clock_.Advance(absl::Minutes(3) + absl::Seconds(7));
  HttpResult r = GetTable("/api/v1/namespaces/default/configmaps?limit=2");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(ColumnNames(r.body), (std::vector<std::string>{"Name", "Data", "Age"}));
  ASSERT_EQ(r.body["rows"].size(), 2u);
  EXPECT_EQ(r.body["rows"][0]["cells"], (Json{"a", 1, "3m7s"}));
  EXPECT_EQ(r.body["metadata"]["remainingItemCount"], 1);
  std::string cont = r.body["metadata"]["continue"];
  r = GetTable("/api/v1/namespaces/default/configmaps?limit=2&continue=" + cont);
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["rows"].size(), 1u);
  EXPECT_EQ(r.body["rows"][0]["cells"][0], "c");
  EXPECT_FALSE(r.body["metadata"].contains("continue"));
  // Cluster-wide list (kubectl get -A): namespaces come from the row objects.
  r = GetTable("/api/v1/configmaps");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["rows"][2]["object"]["metadata"]["namespace"], "default");
  // Namespaces print their phase.
  r = GetTable("/api/v1/namespaces/default");
  EXPECT_EQ(r.body["rows"][0]["cells"][1], "Active");
  // v1beta1 only.
  r = GetTable("/api/v1/namespaces/default/configmaps/a",
               "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
  EXPECT_EQ(r.body["apiVersion"], "meta.k8s.io/v1beta1");
  EXPECT_EQ(r.body["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
}

// client-go's metadata informers: GET with as=PartialObjectMetadata and LIST with
// as=PartialObjectMetadataList get only the objects' metadata.
TEST_F(TableServerTest, PartialObjectMetadataGetAndList) {
  const std::string path = "/api/v1/namespaces/default/configmaps";
  for (const char* name : {"a", "b"}) {
    ASSERT_EQ(server_->Call("POST", path,
                            {{"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}},
                             {"data", {{"big", std::string(1000, 'x')}}}})
                  .code,
              201);
  }
  HttpResult one = GetTable(
      path + "/a", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  ASSERT_EQ(one.status, 200) << one.raw;
  EXPECT_EQ(one.body["kind"], "PartialObjectMetadata");
  EXPECT_EQ(one.body["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(one.body["metadata"]["name"], "a");
  EXPECT_EQ(one.body["metadata"]["labels"]["app"], "x");
  EXPECT_FALSE(one.body.contains("data"));
  EXPECT_EQ(one.headers.find("Content-Type")->second,
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");

  HttpResult list = GetTable(
      path + "?limit=1",
      "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json");
  ASSERT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(list.body["kind"], "PartialObjectMetadataList");
  EXPECT_EQ(list.body["apiVersion"], "meta.k8s.io/v1");
  ASSERT_EQ(list.body["items"].size(), 1u);
  EXPECT_EQ(list.body["items"][0]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(list.body["items"][0]["metadata"]["name"], "a");
  EXPECT_FALSE(list.body["items"][0].contains("data"));
  EXPECT_FALSE(list.body["metadata"]["continue"].get<std::string>().empty());
  // Without the metadata clause: the full objects.
  HttpResult full = GetTable(path, "application/json");
  EXPECT_EQ(full.body["kind"], "ConfigMapList");
  EXPECT_TRUE(full.body["items"][0].contains("data"));
}

TEST_F(TableServerTest, WatchSendsTableRows) {
  ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces/default/configmaps",
                          {{"metadata", {{"name", "a"}}}})
                .code,
            201);
  // WatchReader sends no Accept header; use a raw client with kubectl's, which (like every Go
  // client) also accepts gzip: the watch must still stream event by event, not be buffered in
  // a compressor until the end.
  auto cli = client_->NewClient();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Json> events;
  std::string partial;
  std::thread reader([&] {
    cli->Get("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0",
             httplib::Headers{{"Accept", kKubectlAccept}, {"Accept-Encoding", "gzip"}},
             [&](const char* data, size_t len) {
               std::lock_guard<std::mutex> l(mu);
               partial.append(data, len);
               size_t nl;
               while ((nl = partial.find('\n')) != std::string::npos) {
                 auto j = base::ParseJson(partial.substr(0, nl));
                 partial.erase(0, nl + 1);
                 if (j.ok()) events.push_back(*j);
               }
               cv.notify_all();
               return true;
             });
  });
  auto wait_events = [&](size_t n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(10), [&] { return events.size() >= n; });
  };
  ASSERT_TRUE(server_->WaitForWatches(1));
  ASSERT_EQ(server_->Call("POST", "/api/v1/namespaces/default/configmaps",
                          {{"metadata", {{"name", "b"}}}, {"data", {{"x", "y"}}}})
                .code,
            201);
  ASSERT_TRUE(wait_events(2));
  server_->CloseWatches();
  cli->stop();
  reader.join();
  std::lock_guard<std::mutex> l(mu);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["kind"], "Table");
  EXPECT_EQ(ColumnNames(events[0]["object"]), (std::vector<std::string>{"Name", "Data", "Age"}));
  EXPECT_EQ(events[0]["object"]["rows"][0]["cells"][0], "a");
  EXPECT_EQ(events[1]["type"], "ADDED");
  EXPECT_TRUE(events[1]["object"]["columnDefinitions"].is_null());
  EXPECT_EQ(events[1]["object"]["rows"][0]["cells"], (Json{"b", 1, "0s"}));
  EXPECT_EQ(events[1]["object"]["metadata"]["resourceVersion"],
            events[1]["object"]["rows"][0]["object"]["metadata"]["resourceVersion"]);
}

}  // namespace
}  // namespace spiderpool::kube::testing
