// Round trips every sample object (api/testdata/*.yaml, e2e/samples/*.yaml) through the C++
// types: YAML -> JSON -> decode -> encode must give the input back, and every malformed object
// (api/testdata/malformed/<kind>.yaml) must give exactly the expected field errors.

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/admission.h"
#include "api/kinds.h"
#include "base/json.h"
#include "base/yaml.h"
#include "base/testing/temp_dir.h"

namespace spiderpool::api {
namespace {

using ::spiderpool::base::testing::ReadFile;

namespace fs = std::filesystem;

std::vector<Json> ReadYamlDocs(const fs::path& path) {
  auto docs = base::ParseYamlDocuments(ReadFile(path));
  EXPECT_TRUE(docs.ok()) << path << ": " << docs.status();
  return docs.ok() ? *docs : std::vector<Json>{};
}

std::vector<fs::path> YamlFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Drops members whose value is null or {}: Go writes some zero structs as {} and zero
// MicroTimes as null, we omit both; the API server treats all three alike. (Set-vs-unset for
// std::optional fields such as `podAffinity: {}` or `routes: []` is checked in spider_test.)
Json Normalize(const Json& j) {
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      Json v = Normalize(it.value());
      if (v.is_null() || (v.is_object() && v.empty())) continue;
      out[it.key()] = std::move(v);
    }
    return out;
  }
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& e : j) out.push_back(Normalize(e));
    return out;
  }
  return j;
}

std::vector<std::string> ErrorStrings(const DecodeErrors& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs.errors) out.push_back(e.ToString());
  return out;
}

template <typename T>
void ExpectRoundTrip(const Json& in, const std::string& where) {
  DecodeErrors errs;
  T obj = DecodeInto<T>(in, &errs);
  EXPECT_TRUE(errs.ok()) << where << ": " << errs.ToStatus();
  Json out = Encode(obj);
  Json want = Normalize(in);
  Json got = Normalize(out);
  EXPECT_EQ(got, want) << where << ": round trip differs; JSON patch from input to output:\n"
                       << base::DumpJsonPretty(Json::diff(want, got));
}

// Finds the C++ type for the object's apiVersion/kind and calls f.template operator()<T>().
template <typename F>
bool WithKindOf(const Json& obj, F&& f) {
  std::string api_version = obj.value("apiVersion", "");
  std::string kind = obj.value("kind", "");
  bool found = false;
  auto try_kind = [&]<typename T>() {
    if (!found && T::Resource().ApiVersion() == api_version && T::Resource().kind == kind) {
      found = true;
      f.template operator()<T>();
    }
  };
  CoreKinds::ForEach(try_kind);
  SpiderKinds::ForEach(try_kind);
  if (!found && api_version == kAdmissionApiVersion && kind == kAdmissionReviewKind) {
    found = true;
    f.template operator()<AdmissionReview>();
  }
  return found;
}

std::string KindKey(const ResourceInfo& r) { return r.ApiVersion() + "/" + r.kind; }

TEST(RoundTrip, EveryTestdataObject) {
  std::set<std::string> seen;
  int objects = 0;
  for (const fs::path& file : YamlFiles("api/testdata")) {
    std::vector<Json> docs = ReadYamlDocs(file);
    for (size_t i = 0; i < docs.size(); ++i) {
      std::string where = file.string() + " document " + std::to_string(i);
      bool found = WithKindOf(docs[i], [&]<typename T>() {
        ExpectRoundTrip<T>(docs[i], where);
        if constexpr (ApiObject<T>) seen.insert(KindKey(T::Resource()));
      });
      EXPECT_TRUE(found) << where << ": unknown apiVersion/kind";
      ++objects;
    }
  }
  EXPECT_GE(objects, 20);
  // One realistic sample per kind.
  auto check = [&]<typename T>() {
    EXPECT_TRUE(seen.count(KindKey(T::Resource()))) << "no sample for " << T::Resource().kind;
  };
  CoreKinds::ForEach(check);
  SpiderKinds::ForEach(check);
}

TEST(RoundTrip, E2ESamples) {
  for (const fs::path& file : YamlFiles("e2e/samples")) {
    for (const Json& doc : ReadYamlDocs(file)) {
      bool found = WithKindOf(doc, [&]<typename T>() { ExpectRoundTrip<T>(doc, file.string()); });
      EXPECT_TRUE(found) << file;
    }
  }
  auto pool_docs = ReadYamlDocs("e2e/samples/ippool.yaml");
  ASSERT_EQ(pool_docs.size(), 1u);
  auto pool = Decode<SpiderIPPool>(pool_docs[0]);
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ(pool->metadata.name, "ippool-test");
  EXPECT_EQ(pool->spec.ips, std::vector<std::string>{"172.18.30.131-172.18.30.140"});
  EXPECT_EQ(pool->spec.subnet, "172.18.0.0/16");
  EXPECT_EQ(pool->spec.gateway, "172.18.0.1");
  EXPECT_EQ(pool->spec.multus_name, std::vector<std::string>{"kube-system/macvlan-conf"});
  EXPECT_FALSE(pool->spec.ip_version.has_value());  // left to the mutating webhook
  EXPECT_FALSE(pool->spec.routes.has_value());

  auto smc_docs = ReadYamlDocs("e2e/samples/multusconfig.yaml");
  ASSERT_EQ(smc_docs.size(), 1u);
  auto smc = Decode<SpiderMultusConfig>(smc_docs[0]);
  ASSERT_TRUE(smc.ok()) << smc.status();
  EXPECT_EQ(smc->metadata.name, "macvlan-conf");
  EXPECT_EQ(smc->metadata.namespace_, "kube-system");
  EXPECT_EQ(smc->spec.cni_type, "macvlan");
  ASSERT_TRUE(smc->spec.macvlan.has_value());
  EXPECT_EQ(smc->spec.macvlan->master, std::vector<std::string>{"eth0"});
  EXPECT_FALSE(smc->spec.enable_coordinator.has_value());
}

TEST(RoundTrip, UnknownPodFieldsSurviveReadModifyWrite) {
  auto docs = ReadYamlDocs("api/testdata/pod.yaml");
  ASSERT_EQ(docs.size(), 1u);
  auto pod = Decode<Pod>(docs[0]);
  ASSERT_TRUE(pod.ok()) << pod.status();
  // Modify what we model...
  pod->metadata.labels["ipam.spidernet.io/touched"] = "true";
  pod->spec.containers[0].resources.limits["spidernet.io/eth1-nic"] = "1";
  pod->status.phase = "Succeeded";
  Json out = Encode(*pod);
  // ...and everything we do not model is still there.
  EXPECT_EQ(out["metadata"]["managedFields"][0]["manager"], "kube-controller-manager");
  EXPECT_EQ(out["spec"]["volumes"][0]["name"], "kube-api-access-8x2lq");
  EXPECT_EQ(out["spec"]["tolerations"][0]["tolerationSeconds"], 300);
  EXPECT_EQ(out["spec"]["dnsPolicy"], "ClusterFirst");
  EXPECT_EQ(out["spec"]["containers"][0]["ports"][0]["containerPort"], 8080);
  EXPECT_EQ(out["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(out["spec"]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.name");
  EXPECT_EQ(out["status"]["qosClass"], "Burstable");
  EXPECT_EQ(out["status"]["hostIPs"][0]["ip"], "10.6.0.11");
  EXPECT_EQ(out["status"]["containerStatuses"][0]["state"]["running"]["startedAt"],
            "2025-03-01T10:00:03Z");
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["limits"]["spidernet.io/eth1-nic"], "1");
  EXPECT_EQ(out["status"]["phase"], "Succeeded");
  // The typed view is right too.
  EXPECT_EQ(pod->spec.resource_claims[0].resource_claim_template_name, "nic-claim-template");
  EXPECT_EQ(pod->spec.resource_claims[1].resource_claim_name, "shared-gpu");
  EXPECT_EQ(pod->spec.containers[0].resources.claims[0].name, "nic");
  EXPECT_EQ(pod->spec.termination_grace_period_seconds, 30);
  EXPECT_EQ(PodIPs(*pod), std::vector<std::string>{"172.18.30.131"});
}

// ---- malformed objects --------------------------------------------------------------------

template <typename T>
std::vector<std::string> MalformedErrors(const std::string& file) {
  auto docs = ReadYamlDocs("api/testdata/malformed/" + file);
  EXPECT_EQ(docs.size(), 1u) << file;
  if (docs.size() != 1) return {};
  DecodeErrors errs;
  DecodeInto<T>(docs[0], &errs);
  // Decode() agrees and returns InvalidArgument joining them.
  auto st = Decode<T>(docs[0]);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.status().code(), absl::StatusCode::kInvalidArgument);
  return ErrorStrings(errs);
}

using Errors = std::vector<std::string>;

TEST(Malformed, Pod) {
  EXPECT_EQ(MalformedErrors<Pod>("pod.yaml"),
            (Errors{
                "metadata.name: expected string, got integer 7",
                "metadata.labels[a]: expected string, got array",
                "spec.nodeName: expected string, got boolean true",
                "spec.containers[0].name: Required value",
                "spec.containers[0].env[0].name: Required value",
                "spec.containers[0].resources.limits[cpu]: expected string, got integer 1",
                "spec.terminationGracePeriodSeconds: expected integer, got string \"30\"",
                "spec.hostNetwork: expected boolean, got string \"yes\"",
                "spec.resourceClaims[0].name: Required value",
                "spec.resourceClaims[0].resourceClaimName: expected string, got integer 5",
                "status.podIPs[0].ip: Required value",
                "status.startTime: \"yesterday\" is not an RFC 3339 time",
                "status.containerStatuses[0].ready: Required value",
                "status.containerStatuses[0].restartCount: Required value",
            }));
}

TEST(Malformed, Node) {
  EXPECT_EQ(MalformedErrors<Node>("node.yaml"),
            (Errors{
                "spec.podCIDRs: expected array, got string \"10.244.1.0/24\"",
                "spec.taints[0].effect: unsupported value \"Sometimes\": supported values: "
                "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "spec.taints[1].key: Required value",
                "status.conditions[0].lastHeartbeatTime: expected RFC 3339 time string, got "
                "integer 12",
                "status.addresses[0].address: Required value",
                "status.nodeInfo: expected object, got array",
            }));
}

TEST(Malformed, Namespace) {
  EXPECT_EQ(MalformedErrors<Namespace>("namespace.yaml"),
            (Errors{
                "metadata.finalizers: expected array, got string \"kubernetes\"",
                "spec.finalizers[0]: expected string, got integer 1",
                "status.phase: expected string, got object",
            }));
}

TEST(Malformed, Lease) {
  EXPECT_EQ(MalformedErrors<Lease>("lease.yaml"),
            (Errors{
                "spec.holderIdentity: expected string, got integer 1",
                "spec.leaseDurationSeconds: expected 32-bit integer, got integer 3000000000",
                "spec.renewTime: \"2025-13-01T00:00:00.000000Z\" is not an RFC 3339 time",
            }));
}

TEST(Malformed, Event) {
  EXPECT_EQ(MalformedErrors<Event>("event.yaml"),
            (Errors{
                "involvedObject: Required value",
                "count: expected 32-bit integer, got string \"3\"",
                "series.lastObservedTime: Required value",
            }));
  EXPECT_EQ(MalformedErrors<events_v1::Event>("event_v1.yaml"),
            (Errors{
                "eventTime: Required value",
                "regarding: expected object, got string \"pod\"",
                "deprecatedCount: expected 32-bit integer, got number 1.5",
            }));
}

TEST(Malformed, ConfigMapAndSecret) {
  EXPECT_EQ(MalformedErrors<ConfigMap>("configmap.yaml"),
            (Errors{
                "immutable: expected boolean, got string \"false\"",
                "data[a]: expected string, got integer 1",
                "data[c]: expected string, got null",
            }));
  EXPECT_EQ(MalformedErrors<Secret>("secret.yaml"),
            (Errors{
                "data: expected object, got array",
                "type: expected string, got integer 5",
            }));
}

TEST(Malformed, SpiderIPPool) {
  EXPECT_EQ(MalformedErrors<SpiderIPPool>("spiderippool.yaml"),
            (Errors{
                "spec.ipVersion: unsupported value 5: supported values: \"4\", \"6\"",
                "spec.subnet: Required value",
                "spec.ips[1]: \"10.0.0.x\" is not an IP",
                "spec.ips[2]: \"10.0.0.300\" is not an IP",
                "spec.excludeIPs: expected array, got string \"10.0.0.5\"",
                "spec.gateway: \"10.0.0.0/24\" is not an IP",
                "spec.routes[0].gw: Required value",
                "spec.routes[1].dst: \"10.2.0.0\" is not a CIDR",
                "spec.podAffinity.matchExpressions[0].operator: unsupported value \"Like\": "
                "supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
                "spec.nodeName: expected array, got string \"worker-1\"",
                "spec.default: expected boolean, got string \"true\"",
                "status.allocatedIPs: expected string, got object",
                "status.totalIPCount: must be greater than or equal to 0, got -1",
            }));
}

TEST(Malformed, SpiderSubnet) {
  EXPECT_EQ(MalformedErrors<SpiderSubnet>("spidersubnet.yaml"),
            (Errors{
                "spec.ipVersion: expected integer, got string \"4\"",
                "spec.subnet: \"10.0.0.0/33\" is not a CIDR",
                "spec.ips[0]: \"10.0.0.9-10.0.0.1\" is not an IP range: its first IP is after "
                "its last",
                "spec.routes: expected array, got object",
                "status.controlledIPPools: expected string, got integer 5",
                "status.freeIPCount: must be greater than or equal to 0, got -3",
            }));
}

TEST(Malformed, SpiderReservedIP) {
  EXPECT_EQ(MalformedErrors<SpiderReservedIP>("spiderreservedip.yaml"),
            (Errors{
                "spec.ipVersion: unsupported value 0: supported values: \"4\", \"6\"",
                "spec.ips[0]: \"10.0.0.1-fd00::1\" mixes IPv4 and IPv6",
                "spec.ips[1]: expected string, got null",
            }));
}

TEST(Malformed, SpiderEndpoint) {
  EXPECT_EQ(MalformedErrors<SpiderEndpoint>("spiderendpoint.yaml"),
            (Errors{
                "status.current.uid: Required value",
                "status.current.node: Required value",
                "status.current.ips[0].interface: Required value",
                "status.current.ips[0].ipv4: \"10.0.0.5\" is not a CIDR",
                "status.current.ips[0].vlan: must be less than or equal to 4094, got 5000",
                "status.current.ips[0].ipv4Gateway: \"gw\" is not an IP",
                "status.ownerControllerName: Required value",
            }));
}

TEST(Malformed, SpiderMultusConfig) {
  EXPECT_EQ(
      MalformedErrors<SpiderMultusConfig>("spidermultusconfig.yaml"),
      (Errors{
          "spec.cniType: unsupported value \"bridge\": supported values: \"macvlan\", "
          "\"ipvlan\", \"vlan\", \"sriov\", \"ovs\", \"ib-sriov\", \"ipoib\", \"custom\"",
          "spec.macvlan.master: Required value",
          "spec.macvlan.mtu: must be greater than or equal to 0, got -1",
          "spec.macvlan.vlanID: must be less than or equal to 4094, got 4095",
          "spec.macvlan.bond.name: Required value",
          "spec.macvlan.bond.mode: must be less than or equal to 6, got 7",
          "spec.vlan.vlanMode: unsupported value \"trunk\": supported values: \"manual\", "
          "\"auto\"",
          "spec.ibsriov.linkState: unsupported value \"up\": supported values: \"auto\", "
          "\"enable\", \"disable\"",
          "spec.ovs.bridge: Required value",
          "spec.ovs.trunk[0].minID: must be greater than or equal to 0, got -1",
          "spec.enableCoordinator: expected boolean, got integer 1",
          "spec.coordinator.mode: unsupported value \"disable\": supported values: \"auto\", "
          "\"underlay\", \"overlay\", \"disabled\"",
          "spec.coordinator.hijackCIDR[0]: \"bogus\" is neither an IP nor a CIDR",
          "spec.chainCNIJsonData[0]: expected string, got object",
      }));
}

TEST(Malformed, SpiderCoordinator) {
  EXPECT_EQ(MalformedErrors<SpiderCoordinator>("spidercoordinator.yaml"),
            (Errors{
                "spec.mode: unsupported value \"hybrid\": supported values: \"auto\", "
                "\"underlay\", \"overlay\", \"disabled\"",
                "spec.podCIDRType: unsupported value \"flannel\": supported values: \"auto\", "
                "\"cluster\", \"calico\", \"cilium\", \"none\"",
                "spec.policyRoutes[0].gw: Required value",
                "spec.tunePodRoutes: expected boolean, got string \"true\"",
                "spec.hostRuleTable: expected integer, got string \"500\"",
                "spec.vethMTU: must be greater than or equal to 1, got 0",
                "status.phase: Required value",
                "status.serviceCIDR[0]: \"10.96.0.0\" is not a CIDR",
            }));
}

TEST(Malformed, SpiderClaimParameter) {
  EXPECT_EQ(MalformedErrors<SpiderClaimParameter>("spiderclaimparameter.yaml"),
            (Errors{
                "spec.enableRdma: expected boolean, got string \"yes\"",
                "spec.rdmaAcc: expected boolean, got integer 1",
                "spec.defaultNic.multusName: Required value",
                "spec.defaultNic.namespace: Required value",
                "spec.secondaryNics: expected array, got object",
            }));
}

TEST(Malformed, EveryKindHasAMalformedSample) {
  auto check = [&]<typename T>() {
    std::string kind = T::Resource().kind;
    std::transform(kind.begin(), kind.end(), kind.begin(), ::tolower);
    if (T::Resource().group == "events.k8s.io") kind += "_v1";
    EXPECT_TRUE(fs::exists("api/testdata/malformed/" + kind + ".yaml")) << kind;
  };
  CoreKinds::ForEach(check);
  SpiderKinds::ForEach(check);
}

}  // namespace
}  // namespace spiderpool::api
