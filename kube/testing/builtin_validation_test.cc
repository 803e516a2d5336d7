// Validation of built-in kinds (builtin_validation.h): for each rule a valid object passes and
// an invalid one gets kube-apiserver's field path and message. The last tests go through the
// server (422 Invalid with the aggregated message and causes).

#include "kube/testing/builtin_validation.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/testing/apiserver.h"
#include "kube/testing/errors.h"

namespace spiderpool::kube::testing::internal {
namespace {

using base::Json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr char kLabelMsg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kSubdomainMsg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

// "field: body" of each error, in order.
std::vector<std::string> Errors(std::string_view group, std::string_view plural, const Json& obj,
                                const Json* old = nullptr) {
  std::vector<std::string> out;
  for (const FieldError& e : ValidateBuiltin(group, plural, obj, old)) {
    out.push_back(e.field.empty() ? e.body : e.field + ": " + e.body);
  }
  return out;
}

std::vector<std::string> Reasons(std::string_view group, std::string_view plural, const Json& obj) {
  std::vector<std::string> out;
  for (const FieldError& e : ValidateBuiltin(group, plural, obj, nullptr)) out.push_back(e.reason);
  return out;
}

Json Container(const std::string& name = "c", const std::string& image = "busybox") {
  return {{"name", name}, {"image", image}};
}

Json Pod() {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}, {"namespace", "default"}}},
          {"spec", {{"containers", Json::array({Container()})}}}};
}

Json PodTemplate(const Json& labels) {
  return {{"metadata", {{"labels", labels}}},
          {"spec", {{"containers", Json::array({Container()})}}}};
}

Json Workload(const std::string& kind) {
  Json labels = {{"app", "web"}};
  return {{"apiVersion", "apps/v1"},
          {"kind", kind},
          {"metadata", {{"name", "web"}, {"namespace", "default"}}},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", labels}}},
            {"template", PodTemplate(labels)}}}};
}

// ---- Pod ----

TEST(PodValidation, ValidPodPasses) { EXPECT_THAT(Errors("", "pods", Pod()), IsEmpty()); }

TEST(PodValidation, ContainersAreRequired) {
  Json pod = Pod();
  pod["spec"].erase("containers");
  EXPECT_THAT(Errors("", "pods", pod), ElementsAre("spec.containers: Required value"));
  EXPECT_THAT(Reasons("", "pods", pod), ElementsAre("FieldValueRequired"));
  pod["spec"]["containers"] = Json::array();
  EXPECT_THAT(Errors("", "pods", pod), ElementsAre("spec.containers: Required value"));
  pod.erase("spec");
  EXPECT_THAT(Errors("", "pods", pod), ElementsAre("spec.containers: Required value"));
}

TEST(PodValidation, ContainerNameIsARequiredUniqueDnsLabel) {
  Json pod = Pod();
  pod["spec"]["containers"] = {Container(""), Container("Web_1"), Container("a"), Container("a")};
  EXPECT_THAT(
      Errors("", "pods", pod),
      ElementsAre("spec.containers[0].name: Required value",
                  std::string("spec.containers[1].name: Invalid value: \"Web_1\": ") + kLabelMsg,
                  "spec.containers[3].name: Duplicate value: \"a\""));
  EXPECT_THAT(Reasons("", "pods", pod),
              ElementsAre("FieldValueRequired", "FieldValueInvalid", "FieldValueDuplicate"));
}

TEST(PodValidation, ImageIsRequiredAndTrimmed) {
  Json pod = Pod();
  pod["spec"]["containers"] = {{{"name", "a"}}, Container("b", " busybox")};
  EXPECT_THAT(Errors("", "pods", pod),
              ElementsAre("spec.containers[0].image: Required value",
                          "spec.containers[1].image: Invalid value: \" busybox\": must not have "
                          "leading or trailing whitespace"));
}

TEST(PodValidation, InitContainerNamesDoNotCollideWithContainers) {
  Json pod = Pod();
  pod["spec"]["initContainers"] = {Container("c"), Container("init")};
  EXPECT_THAT(Errors("", "pods", pod),
              ElementsAre("spec.initContainers[0].name: Duplicate value: \"c\""));
}

TEST(PodValidation, RestartAndDnsPolicyValues) {
  Json pod = Pod();
  pod["spec"]["restartPolicy"] = "OnFailure";
  pod["spec"]["dnsPolicy"] = "ClusterFirstWithHostNet";
  EXPECT_THAT(Errors("", "pods", pod), IsEmpty());
  pod["spec"]["restartPolicy"] = "Sometimes";
  pod["spec"]["dnsPolicy"] = "Google";
  EXPECT_THAT(Errors("", "pods", pod),
              ElementsAre("spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: "
                          "\"Always\", \"OnFailure\", \"Never\"",
                          "spec.dnsPolicy: Unsupported value: \"Google\": supported values: "
                          "\"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\""));
  EXPECT_THAT(Reasons("", "pods", pod),
              ElementsAre("FieldValueNotSupported", "FieldValueNotSupported"));
}

TEST(PodValidation, ContainerPorts) {
  Json pod = Pod();
  pod["spec"]["containers"][0]["ports"] = {{{"containerPort", 8080}, {"name", "http"}},
                                           {{"containerPort", 70000}},
                                           {{"name", "http"}, {"containerPort", 81}},
                                           {{"containerPort", 82}, {"protocol", "ICMP"}}};
  EXPECT_THAT(
      Errors("", "pods", pod),
      ElementsAre("spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be "
                  "between 1 and 65535, inclusive",
                  "spec.containers[0].ports[2].name: Duplicate value: \"http\"",
                  "spec.containers[0].ports[3].protocol: Unsupported value: \"ICMP\": "
                  "supported values: \"SCTP\", \"TCP\", \"UDP\""));
}

TEST(PodValidation, NodeNameAndServiceAccountAreSubdomains) {
  Json pod = Pod();
  pod["spec"]["nodeName"] = "Node_1";
  EXPECT_THAT(
      Errors("", "pods", pod),
      ElementsAre(std::string("spec.nodeName: Invalid value: \"Node_1\": ") + kSubdomainMsg));
}

TEST(PodValidation, Tolerations) {
  Json pod = Pod();
  pod["spec"]["tolerations"] = {{{"key", "a"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                                {{"operator", "Equal"}, {"value", "x"}},
                                {{"key", "b"}, {"effect", "Sometimes"}}};
  EXPECT_THAT(
      Errors("", "pods", pod),
      ElementsAre("spec.tolerations[1].operator: Invalid value: \"Equal\": operator must be "
                  "Exists when `key` is empty, which means \"match all values and all keys\"",
                  "spec.tolerations[2].effect: Unsupported value: \"Sometimes\": supported "
                  "values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""));
}

TEST(PodUpdate, ImageTolerationAdditionsAndDeadlineMayChange) {
  Json old = Pod();
  old["spec"]["nodeName"] = "n1";
  old["spec"]["tolerations"] = {{{"key", "a"}, {"operator", "Exists"}}};
  Json pod = old;
  pod["spec"]["containers"][0]["image"] = "busybox:2";
  pod["spec"]["tolerations"].push_back({{"key", "b"}, {"operator", "Exists"}});
  pod["spec"]["activeDeadlineSeconds"] = 30;
  pod["metadata"]["labels"] = {{"x", "y"}};
  pod["status"] = {{"phase", "Running"}};
  EXPECT_THAT(Errors("", "pods", pod, &old), IsEmpty());
  // Zero values a client writes back are not changes (kube decodes them as unset).
  pod["spec"]["hostNetwork"] = false;
  pod["spec"]["restartPolicy"] = "";
  pod["spec"]["volumes"] = Json::array();
  pod["spec"]["tolerations"][0]["effect"] = "";
  EXPECT_THAT(Errors("", "pods", pod, &old), IsEmpty());
}

TEST(PodUpdate, NodeNameCannotChange) {
  Json old = Pod();
  old["spec"]["nodeName"] = "n1";
  Json pod = old;
  pod["spec"]["nodeName"] = "n2";
  std::vector<std::string> errs = Errors("", "pods", pod, &old);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0],
              StartsWith("spec: Forbidden: pod updates may not change fields other than "
                         "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                         "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                         "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to "
                         "be set to 1 if it was previously negative)\n"));
  EXPECT_THAT(errs[0], ::testing::HasSubstr("nodeName: \"n2\""));
  // Setting it on an unbound pod is an update of spec too (kube binds through pods/binding).
  old["spec"].erase("nodeName");
  EXPECT_THAT(Errors("", "pods", pod, &old),
              ElementsAre(StartsWith("spec: Forbidden: pod updates")));
}

TEST(PodUpdate, ContainersCannotBeAddedAndTolerationsNotChanged) {
  Json old = Pod();
  old["spec"]["tolerations"] = {{{"key", "a"}, {"operator", "Exists"}}};
  Json pod = old;
  pod["spec"]["containers"].push_back(Container("d"));
  EXPECT_THAT(
      Errors("", "pods", pod, &old),
      ElementsAre("spec.containers: Forbidden: pod updates may not add or remove containers"));
  pod = old;
  pod["spec"]["tolerations"][0]["key"] = "b";
  EXPECT_THAT(Errors("", "pods", pod, &old),
              ElementsAre("spec.tolerations: Forbidden: existing toleration can not be modified "
                          "except its tolerationSeconds"));
  pod = old;
  pod["spec"]["activeDeadlineSeconds"] = 10;
  old["spec"]["activeDeadlineSeconds"] = 5;
  EXPECT_THAT(Errors("", "pods", pod, &old),
              ElementsAre("spec.activeDeadlineSeconds: Invalid value: 10: must be less than or "
                          "equal to previous value"));
}

// ---- other core kinds ----

TEST(NodeValidation, Taints) {
  Json node = {{"metadata", {{"name", "n1"}}},
               {"spec", {{"taints", {{{"key", "k"}, {"effect", "NoSchedule"}}}}}}};
  EXPECT_THAT(Errors("", "nodes", node), IsEmpty());
  node["spec"]["taints"].push_back({{"key", "k2"}});
  node["spec"]["taints"].push_back({{"key", "k3"}, {"effect", "Never"}});
  node["spec"]["taints"].push_back({{"key", "k"}, {"effect", "NoSchedule"}});
  EXPECT_THAT(
      Errors("", "nodes", node),
      ElementsAre("spec.taints[1].effect: Required value",
                  "spec.taints[2].effect: Unsupported value: \"Never\": supported values: "
                  "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                  "spec.taints[3]: Duplicate value: {\"Key\":\"k\",\"Value\":\"\",\"Effect\":"
                  "\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and "
                  "effect pair"));
}

TEST(NodeValidation, PodCidrAndProviderIdAreSetOnce) {
  Json old = {{"metadata", {{"name", "n1"}}}, {"spec", Json::object()}};
  Json node = old;
  node["spec"]["podCIDRs"] = {"10.0.0.0/24"};
  node["spec"]["providerID"] = "kind://n1";
  EXPECT_THAT(Errors("", "nodes", node, &old), IsEmpty());
  Json changed = node;
  changed["spec"]["podCIDRs"] = {"10.0.1.0/24"};
  changed["spec"]["providerID"] = "kind://n2";
  EXPECT_THAT(Errors("", "nodes", changed, &node),
              ElementsAre("spec.podCIDRs: Forbidden: node updates may not change podCIDR except "
                          "from \"\" to valid",
                          "spec.providerID: Forbidden: node updates may not change providerID "
                          "except from \"\" to valid"));
}

TEST(NamespaceValidation, SpecFinalizers) {
  Json ns = {{"metadata", {{"name", "a"}}},
             {"spec", {{"finalizers", {"kubernetes", "example.com/x"}}}}};
  EXPECT_THAT(Errors("", "namespaces", ns), IsEmpty());
  ns["spec"]["finalizers"].push_back("cleanup");
  EXPECT_THAT(Errors("", "namespaces", ns),
              ElementsAre("spec.finalizers: Invalid value: \"cleanup\": name is neither a standard "
                          "finalizer name nor is it fully qualified"));
}

TEST(MetadataValidation, FinalizersOfBuiltinsAreStandardOrQualified) {
  Json cm = {
      {"metadata", {{"name", "a"}, {"finalizers", {"kubernetes", "example.com/x", "mine"}}}}};
  EXPECT_THAT(Errors("", "configmaps", cm),
              ElementsAre("metadata.finalizers[2]: Invalid value: \"mine\": name is neither a "
                          "standard finalizer name nor is it fully qualified"));
  Json crd = {{"metadata",
               {{"name", "a.example.com"},
                {"finalizers", {"customresourcecleanup.apiextensions.k8s.io"}}}}};
  EXPECT_THAT(Errors("apiextensions.k8s.io", "customresourcedefinitions", crd), IsEmpty());
}

TEST(ConfigMapValidation, KeysAndDuplicates) {
  Json cm = {{"metadata", {{"name", "a"}}},
             {"data", {{"a.conf", "x"}, {"KEY_1", "y"}}},
             {"binaryData", {{"b-bin", "AAEC"}}}};
  EXPECT_THAT(Errors("", "configmaps", cm), IsEmpty());
  cm["data"]["bad key"] = "z";
  cm["data"]["b-bin"] = "again";
  cm["binaryData"][".."] = "AA==";
  EXPECT_THAT(Errors("", "configmaps", cm),
              ElementsAre("data[b-bin]: Invalid value: \"b-bin\": duplicate of key present in "
                          "binaryData",
                          "data[bad key]: Invalid value: \"bad key\": a valid config key must "
                          "consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                          "or 'KEY_NAME',  or 'key-name', regex used for validation is "
                          "'[-._a-zA-Z0-9]+')",
                          "binaryData[..]: Invalid value: \"..\": must not be '..'"));
}

TEST(ConfigMapValidation, ImmutableStaysImmutable) {
  Json old = {{"metadata", {{"name", "a"}}}, {"data", {{"k", "v"}}}, {"immutable", true}};
  Json cm = old;
  cm["metadata"]["labels"] = {{"x", "y"}};
  EXPECT_THAT(Errors("", "configmaps", cm, &old), IsEmpty());
  cm["data"]["k"] = "w";
  cm.erase("immutable");
  EXPECT_THAT(Errors("", "configmaps", cm, &old),
              ElementsAre("immutable: Forbidden: field is immutable when `immutable` is set",
                          "data: Forbidden: field is immutable when `immutable` is set"));
}

TEST(SecretValidation, TypeRequirementsAndImmutableType) {
  Json tls = {{"metadata", {{"name", "t"}}},
              {"type", "kubernetes.io/tls"},
              {"data", {{"tls.crt", "AA=="}}}};
  EXPECT_THAT(Errors("", "secrets", tls), ElementsAre("data[tls.key]: Required value"));
  tls["stringData"] = {{"tls.key", "k"}};
  EXPECT_THAT(Errors("", "secrets", tls), IsEmpty());
  Json opaque = {{"metadata", {{"name", "o"}}}, {"data", {{"a", "AA=="}}}};
  EXPECT_THAT(Errors("", "secrets", opaque), IsEmpty());
  Json retyped = opaque;
  retyped["type"] = "Opaque";
  EXPECT_THAT(Errors("", "secrets", retyped, &opaque), IsEmpty());
  retyped["type"] = "kubernetes.io/basic-auth";
  EXPECT_THAT(Errors("", "secrets", retyped, &opaque),
              ElementsAre("type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
                          "data[username]: Required value", "data[password]: Required value"));
}

TEST(ServiceValidation, PortsNamesAndTypes) {
  Json svc = {{"metadata", {{"name", "web"}}},
              {"spec", {{"selector", {{"app", "web"}}}, {"ports", {{{"port", 80}}}}}}};
  EXPECT_THAT(Errors("", "services", svc), IsEmpty());
  Json headless = {{"metadata", {{"name", "h"}}}, {"spec", {{"clusterIP", "None"}}}};
  EXPECT_THAT(Errors("", "services", headless), IsEmpty());
  Json external = {{"metadata", {{"name", "e"}}},
                   {"spec", {{"type", "ExternalName"}, {"externalName", "example.com."}}}};
  EXPECT_THAT(Errors("", "services", external), IsEmpty());

  Json bad = {{"metadata", {{"name", "1web"}}}, {"spec", {{"type", "Magic"}}}};
  EXPECT_THAT(
      Errors("", "services", bad),
      ElementsAre("metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of "
                  "lower case alphanumeric characters or '-', start with an alphabetic "
                  "character, and end with an alphanumeric character (e.g. 'my-name',  or "
                  "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                  "spec.ports: Required value",
                  "spec.type: Unsupported value: \"Magic\": supported values: "
                  "\"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""));
  Json ports = {{"metadata", {{"name", "web"}}},
                {"spec", {{"ports", {{{"port", 80}, {"name", "http"}}, {{"port", 0}}}}}}};
  EXPECT_THAT(Errors("", "services", ports),
              ElementsAre("spec.ports[1].name: Required value",
                          "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, "
                          "inclusive"));
  Json no_cname = {{"metadata", {{"name", "e"}}}, {"spec", {{"type", "ExternalName"}}}};
  EXPECT_THAT(Errors("", "services", no_cname), ElementsAre("spec.externalName: Required value"));
}

TEST(LeaseValidation, DurationAndTransitions) {
  Json lease = {
      {"metadata", {{"name", "l"}}},
      {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}, {"leaseTransitions", 0}}}};
  EXPECT_THAT(Errors("coordination.k8s.io", "leases", lease), IsEmpty());
  lease["spec"]["leaseDurationSeconds"] = 0;
  lease["spec"]["leaseTransitions"] = -1;
  lease["spec"]["preferredHolder"] = "b";
  EXPECT_THAT(
      Errors("coordination.k8s.io", "leases", lease),
      ElementsAre(
          "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
          "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
          "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"));
}

TEST(EventValidation, CoreEventNamespaceMatchesInvolvedObject) {
  Json ev = {{"metadata", {{"name", "e"}, {"namespace", "ns1"}}},
             {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", "ns1"}}},
             {"reason", "Started"},
             {"message", "m"},
             {"type", "Normal"},
             {"count", 1},
             {"firstTimestamp", "2024-01-01T00:00:00Z"},
             {"lastTimestamp", "2024-01-01T00:00:00Z"},
             {"source", {{"component", "c"}}}};
  EXPECT_THAT(Errors("", "events", ev), IsEmpty());
  ev["involvedObject"]["namespace"] = "ns2";
  EXPECT_THAT(Errors("", "events", ev),
              ElementsAre("involvedObject.namespace: Invalid value: \"ns2\": does not match "
                          "event.namespace"));
  // A cluster-scoped object's events live in "default".
  ev["involvedObject"].erase("namespace");
  EXPECT_THAT(Errors("", "events", ev),
              ElementsAre("involvedObject.namespace: Invalid value: \"\": does not match "
                          "event.namespace"));
  ev["metadata"]["namespace"] = "default";
  EXPECT_THAT(Errors("", "events", ev), IsEmpty());
}

TEST(EventValidation, CoreEventWithEventTimeNeedsReportingFields) {
  Json ev = {{"metadata", {{"name", "e"}, {"namespace", "ns1"}}},
             {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", "ns1"}}},
             {"eventTime", "2024-01-01T00:00:00.000000Z"},
             {"type", "Normal"}};
  EXPECT_THAT(
      Errors("", "events", ev),
      ElementsAre("reportingComponent: Required value",
                  "reportingComponent: Invalid value: \"\": name part must be non-empty",
                  "reportingComponent: Invalid value: \"\": name part must consist of "
                  "alphanumeric characters, '-', '_' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                  "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                  "reportingInstance: Required value", "action: Required value",
                  "reason: Required value"));
}

Json EventsV1() {
  return {{"apiVersion", "events.k8s.io/v1"},
          {"kind", "Event"},
          {"metadata", {{"name", "e"}, {"namespace", "ns1"}}},
          {"regarding", {{"kind", "Pod"}, {"name", "p"}, {"namespace", "ns1"}}},
          {"eventTime", "2024-01-01T00:00:00.000000Z"},
          {"reportingController", "example.com/ctl"},
          {"reportingInstance", "ctl-1"},
          {"action", "Bind"},
          {"reason", "Scheduled"},
          {"note", "bound"},
          {"type", "Normal"}};
}

TEST(EventValidation, EventsV1RequiredFieldsOnCreate) {
  EXPECT_THAT(Errors("events.k8s.io", "events", EventsV1()), IsEmpty());
  Json ev = EventsV1();
  ev.erase("eventTime");
  ev.erase("type");
  ev["deprecatedCount"] = 3;
  EXPECT_THAT(
      Errors("events.k8s.io", "events", ev),
      ElementsAre("eventTime: Required value", "type: Invalid value: \"\": has invalid value: ",
                  "deprecatedCount: Invalid value: \"\": needs to be unset"));
  ev = EventsV1();
  ev.erase("reportingInstance");
  ev.erase("action");
  ev["regarding"].erase("namespace");
  EXPECT_THAT(Errors("events.k8s.io", "events", ev),
              ElementsAre("involvedObject.namespace: Invalid value: \"\": does not match "
                          "event.namespace",
                          "reportingInstance: Required value", "action: Required value"));
}

TEST(EventValidation, EventsV1FieldsAreImmutable) {
  Json old = EventsV1();
  Json ev = old;
  ev["series"] = {{"count", 2}, {"lastObservedTime", "2024-01-01T00:01:00.000000Z"}};
  EXPECT_THAT(Errors("events.k8s.io", "events", ev, &old), IsEmpty());
  ev["note"] = "changed";
  EXPECT_THAT(Errors("events.k8s.io", "events", ev, &old),
              ElementsAre("message: Invalid value: \"changed\": field is immutable"));
}

// ---- apps ----

TEST(DeploymentValidation, ValidDeploymentPasses) {
  EXPECT_THAT(Errors("apps", "deployments", Workload("Deployment")), IsEmpty());
}

TEST(DeploymentValidation, SelectorIsRequired) {
  Json d = Workload("Deployment");
  d["spec"].erase("selector");
  EXPECT_THAT(Errors("apps", "deployments", d),
              ElementsAre("spec.selector: Required value",
                          "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: "
                          "`selector` does not match template `labels`"));
  d["spec"]["template"]["metadata"].erase("labels");
  EXPECT_THAT(Errors("apps", "deployments", d),
              ElementsAre("spec.selector: Required value",
                          "spec.template.metadata.labels: Invalid value: null: `selector` does not "
                          "match template `labels`"));
}

TEST(DeploymentValidation, SelectorMustBeNonEmptyAndMatch) {
  Json d = Workload("Deployment");
  d["spec"]["selector"] = Json::object();
  EXPECT_THAT(
      Errors("apps", "deployments", d),
      ElementsAre("spec.selector: Invalid value: {}: empty selector is invalid for deployment"));
  d["spec"]["selector"] = {{"matchLabels", {{"app", "db"}}}};
  EXPECT_THAT(Errors("apps", "deployments", d),
              ElementsAre("spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: "
                          "`selector` does not match template `labels`"));
  d["spec"]["selector"] = {{"matchExpressions", {{{"key", "app"}, {"operator", "In"}}}}};
  EXPECT_THAT(Errors("apps", "deployments", d),
              ElementsAre("spec.selector.matchExpressions[0].values: Required value: must be "
                          "specified when `operator` is 'In' or 'NotIn'",
                          "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\","
                          "\"operator\":\"In\"}]}: invalid label selector"));
}

TEST(DeploymentValidation, TemplateIsAPodTemplate) {
  Json d = Workload("Deployment");
  d["spec"]["replicas"] = -1;
  d["spec"]["template"]["spec"]["containers"] = Json::array();
  d["spec"]["template"]["spec"]["restartPolicy"] = "Never";
  EXPECT_THAT(Errors("apps", "deployments", d),
              ElementsAre("spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                          "spec.template.spec.containers: Required value",
                          "spec.template.spec.restartPolicy: Unsupported value: \"Never\": "
                          "supported values: \"Always\""));
  d = Workload("Deployment");
  d["spec"]["template"]["spec"]["containers"][0].erase("image");
  EXPECT_THAT(Errors("apps", "deployments", d),
              ElementsAre("spec.template.spec.containers[0].image: Required value"));
}

TEST(DeploymentValidation, SelectorIsImmutable) {
  Json old = Workload("Deployment");
  Json d = old;
  d["spec"]["replicas"] = 3;
  EXPECT_THAT(Errors("apps", "deployments", d, &old), IsEmpty());
  d["spec"]["selector"]["matchLabels"]["tier"] = "front";
  d["spec"]["template"]["metadata"]["labels"]["tier"] = "front";
  EXPECT_THAT(
      Errors("apps", "deployments", d, &old),
      ElementsAre("spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":"
                  "\"front\"}}: field is immutable"));
}

TEST(ReplicaSetValidation, SelectorIsRequired) {
  EXPECT_THAT(Errors("apps", "replicasets", Workload("ReplicaSet")), IsEmpty());
  Json rs = Workload("ReplicaSet");
  rs["spec"]["selector"] = Json::object();
  EXPECT_THAT(
      Errors("apps", "replicasets", rs),
      ElementsAre("spec.selector: Invalid value: {}: empty selector is invalid for deployment"));
}

TEST(DaemonSetValidation, SelectorMustMatch) {
  Json ds = Workload("DaemonSet");
  ds["spec"].erase("replicas");
  EXPECT_THAT(Errors("apps", "daemonsets", ds), IsEmpty());
  ds["spec"].erase("selector");
  EXPECT_THAT(Errors("apps", "daemonsets", ds),
              ElementsAre("spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: "
                          "`selector` does not match template `labels`"));
}

TEST(StatefulSetValidation, ServiceNameIsOptionalButALabel) {
  Json sts = Workload("StatefulSet");
  EXPECT_THAT(Errors("apps", "statefulsets", sts), IsEmpty());
  sts["spec"]["serviceName"] = "web";
  EXPECT_THAT(Errors("apps", "statefulsets", sts), IsEmpty());
  sts["spec"]["serviceName"] = "Web.Svc";
  sts["spec"]["podManagementPolicy"] = "Random";
  EXPECT_THAT(
      Errors("apps", "statefulsets", sts),
      ElementsAre("spec.podManagementPolicy: Invalid value: \"Random\": must be "
                  "'OrderedReady' or 'Parallel'",
                  std::string("spec.serviceName: Invalid value: \"Web.Svc\": ") + kLabelMsg));
}

TEST(StatefulSetValidation, NameIsALabelAndSelectorRequired) {
  Json sts = Workload("StatefulSet");
  sts["metadata"]["name"] = "web.v1";
  sts["spec"].erase("selector");
  EXPECT_THAT(Errors("apps", "statefulsets", sts),
              // IsDNS1123Label's answer for a valid subdomain that is no label.
              ElementsAre("metadata.name: Invalid value: \"web.v1\": must not contain dots",
                          "spec.selector: Required value",
                          "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: "
                          "`selector` does not match template `labels`"));
}

TEST(StatefulSetValidation, OnlySomeSpecFieldsMayChange) {
  Json old = Workload("StatefulSet");
  Json sts = old;
  sts["spec"]["replicas"] = 5;
  sts["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:2";
  EXPECT_THAT(Errors("apps", "statefulsets", sts, &old), IsEmpty());
  sts["spec"]["serviceName"] = "other";
  EXPECT_THAT(Errors("apps", "statefulsets", sts, &old),
              ElementsAre("spec: Forbidden: updates to statefulset spec for fields other than "
                          "'replicas', 'ordinals', 'template', 'updateStrategy', "
                          "'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
                          "'minReadySeconds' are forbidden"));
}

TEST(JobValidation, TemplateRestartPolicyIsOnFailureOrNever) {
  Json job = {{"metadata", {{"name", "j"}}}, {"spec", {{"template", PodTemplate({{"app", "j"}})}}}};
  EXPECT_THAT(Errors("batch", "jobs", job),
              ElementsAre("spec.template.spec.restartPolicy: Unsupported value: \"Always\": "
                          "supported values: \"OnFailure\", \"Never\""));
  job["spec"]["template"]["spec"]["restartPolicy"] = "Never";
  EXPECT_THAT(Errors("batch", "jobs", job), IsEmpty());
}

// ---- resource.k8s.io/v1 ----

Json Slice() {
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceSlice"},
      {"metadata", {{"name", "node1-nic.spidernet.io-x7k2p"}}},
      {"spec",
       {{"driver", "nic.spidernet.io"},
        {"nodeName", "node1"},
        {"pool", {{"name", "node1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
        {"devices",
         {{{"name", "eth0"},
           {"attributes",
            {{"nic.spidernet.io/mtu", {{"int", 1500}}}, {"ifName", {{"string", "eth0"}}}}}}}}}}};
}

TEST(ResourceSliceValidation, ValidSlicePasses) {
  EXPECT_THAT(Errors("resource.k8s.io", "resourceslices", Slice()), IsEmpty());
  Json all = Slice();
  all["spec"].erase("nodeName");
  all["spec"]["allNodes"] = true;
  EXPECT_THAT(Errors("resource.k8s.io", "resourceslices", all), IsEmpty());
}

TEST(ResourceSliceValidation, ExactlyOneNodeSelection) {
  Json s = Slice();
  s["spec"]["allNodes"] = true;
  EXPECT_THAT(Errors("resource.k8s.io", "resourceslices", s),
              ElementsAre("spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of "
                          "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
                          "required, but multiple fields are set"));
  s["spec"].erase("nodeName");
  s["spec"].erase("allNodes");
  EXPECT_THAT(Errors("resource.k8s.io", "resourceslices", s),
              ElementsAre("spec: Required value: exactly one of `nodeName`, `nodeSelector`, "
                          "`allNodes`, `perDeviceNodeSelection` is required"));
}

TEST(ResourceSliceValidation, DriverPoolAndDevices) {
  Json s = Slice();
  s["spec"]["driver"] = "";
  s["spec"]["pool"] = {{"name", ""}, {"generation", -1}, {"resourceSliceCount", 0}};
  s["spec"]["devices"].push_back({{"name", "Eth_1"}});
  s["spec"]["devices"].push_back({{"name", "eth0"}});
  EXPECT_THAT(
      Errors("resource.k8s.io", "resourceslices", s),
      ElementsAre("spec.driver: Required value",
                  std::string("spec.driver: Invalid value: \"\": ") + kSubdomainMsg,
                  "spec.pool.name: Required value",
                  "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
                  "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
                  std::string("spec.devices[1].name: Invalid value: \"Eth_1\": ") + kLabelMsg,
                  "spec.devices[2]: Duplicate value: \"eth0\""));
}

TEST(ResourceSliceValidation, PoolAndDriverAreImmutable) {
  Json old = Slice();
  Json s = old;
  s["spec"]["pool"]["generation"] = 2;
  EXPECT_THAT(Errors("resource.k8s.io", "resourceslices", s, &old), IsEmpty());
  s["spec"]["pool"]["name"] = "node2";
  EXPECT_THAT(Errors("resource.k8s.io", "resourceslices", s, &old),
              ElementsAre("spec.pool.name: Invalid value: \"node2\": field is immutable"));
}

TEST(ResourceSliceValidation, V1beta1IsValidatedInTheInternalShape) {
  Json s = {{"apiVersion", "resource.k8s.io/v1beta1"},
            {"metadata", {{"name", "s"}}},
            {"spec",
             {{"driver", "nic.spidernet.io"},
              {"nodeName", "node1"},
              {"allNodes", false},
              {"pool", {{"name", "node1"}, {"resourceSliceCount", 1}}},
              {"devices",
               {{{"name", "eth0"}, {"basic", {{"attributes", {{"mtu", {{"int", 1500}}}}}}}}}}}}};
  EXPECT_THAT(Errors("resource.k8s.io", "resourceslices", s), IsEmpty());
  s["spec"]["devices"][0]["basic"]["attributes"]["bad key"] = {{"int", 1}};
  EXPECT_THAT(
      Errors("resource.k8s.io", "resourceslices", s),
      ElementsAre("spec.devices[0].attributes[bad key]: Invalid value: \"bad key\": a valid "
                  "C identifier must start with alphabetic character or '_', followed by a "
                  "string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME', "
                  " or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"));
  Json claim = {
      {"apiVersion", "resource.k8s.io/v1beta1"},
      {"metadata", {{"name", "c"}}},
      {"spec", {{"devices", {{"requests", {{{"name", "nic"}, {"deviceClassName", "nic"}}}}}}}}};
  EXPECT_THAT(Errors("resource.k8s.io", "resourceclaims", claim), IsEmpty());
  claim["spec"]["devices"]["requests"][0].erase("deviceClassName");
  EXPECT_THAT(Errors("resource.k8s.io", "resourceclaims", claim),
              ElementsAre("spec.devices.requests[0]: Required value: exactly one of `exactly` or "
                          "`firstAvailable` is required"));
}

Json Claim() {
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", "c"}, {"namespace", "default"}}},
      {"spec",
       {{"devices",
         {{"requests", {{{"name", "nic"}, {"exactly", {{"deviceClassName", "nic.spidernet.io"}}}}}},
          {"config",
           {{{"requests", {"nic"}},
             {"opaque", {{"driver", "nic.spidernet.io"}, {"parameters", {{"a", 1}}}}}}}}}}}}};
}

TEST(ResourceClaimValidation, ValidClaimPasses) {
  EXPECT_THAT(Errors("resource.k8s.io", "resourceclaims", Claim()), IsEmpty());
  Json tmpl = {{"metadata", {{"name", "t"}}}, {"spec", {{"spec", Claim()["spec"]}}}};
  EXPECT_THAT(Errors("resource.k8s.io", "resourceclaimtemplates", tmpl), IsEmpty());
}

TEST(ResourceClaimValidation, Requests) {
  Json c = Claim();
  Json& reqs = c["spec"]["devices"]["requests"];
  reqs.push_back({{"name", "gpu"}});
  reqs.push_back({{"name", "x_y"},
                  {"exactly", {{"deviceClassName", "a"}}},
                  {"firstAvailable", {{{"name", "one"}, {"deviceClassName", "a"}}}}});
  reqs.push_back({{"name", "nic"}, {"exactly", Json::object()}});
  c["spec"]["devices"]["config"][0]["requests"].push_back("missing");
  EXPECT_THAT(Errors("resource.k8s.io", "resourceclaims", c),
              ElementsAre("spec.devices.requests[1]: Required value: exactly one of `exactly` or "
                          "`firstAvailable` is required",
                          std::string("spec.devices.requests[2].name: Invalid value: \"x_y\": ") +
                              kLabelMsg,
                          "spec.devices.requests[2]: Invalid value: null: exactly one of `exactly` "
                          "or `firstAvailable` is required, but multiple fields are set",
                          "spec.devices.requests[3].exactly.deviceClassName: Required value",
                          "spec.devices.requests[3]: Duplicate value: \"nic\"",
                          "spec.devices.config[0].requests[1]: Invalid value: \"missing\": must be "
                          "the name of a request in the claim or the name of a request and a "
                          "subrequest separated by '/'"));
}

TEST(ResourceClaimValidation, SpecIsImmutable) {
  Json old = Claim();
  Json c = old;
  c["metadata"]["labels"] = {{"a", "b"}};
  EXPECT_THAT(Errors("resource.k8s.io", "resourceclaims", c, &old), IsEmpty());
  c["spec"]["devices"]["requests"][0]["name"] = "nic2";
  std::vector<std::string> errs = Errors("resource.k8s.io", "resourceclaims", c, &old);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_THAT(errs[0], StartsWith("spec: Invalid value: {"));
  EXPECT_THAT(errs[0], ::testing::EndsWith(": field is immutable"));
}

TEST(DeviceClassValidation, SelectorsNeedCel) {
  Json dc = {
      {"metadata", {{"name", "nic.spidernet.io"}}},
      {"spec",
       {{"selectors", {{{"cel", {{"expression", "device.driver == \"nic.spidernet.io\""}}}}}}}}};
  EXPECT_THAT(Errors("resource.k8s.io", "deviceclasses", dc), IsEmpty());
  dc["spec"]["selectors"].push_back(Json::object());
  EXPECT_THAT(Errors("resource.k8s.io", "deviceclasses", dc),
              ElementsAre("spec.selectors[1].cel: Required value"));
}

// ---- admissionregistration.k8s.io/v1 ----

Json Webhooks() {
  return {{"metadata", {{"name", "spiderpool"}}},
          {"webhooks",
           {{{"name", "spiderippool.spiderpool.spidernet.io"},
             {"admissionReviewVersions", {"v1"}},
             {"sideEffects", "None"},
             {"failurePolicy", "Fail"},
             {"clientConfig",
              {{"service",
                {{"name", "spiderpool-controller"},
                 {"namespace", "kube-system"},
                 {"path", "/validate-spiderippool"},
                 {"port", 5722}}}}},
             {"rules",
              {{{"operations", {"CREATE", "UPDATE"}},
                {"apiGroups", {"spiderpool.spidernet.io"}},
                {"apiVersions", {"v2beta1"}},
                {"resources", {"spiderippools"}}}}}}}}};
}

TEST(WebhookConfigurationValidation, ValidConfigurationPasses) {
  EXPECT_THAT(Errors("admissionregistration.k8s.io", "validatingwebhookconfigurations", Webhooks()),
              IsEmpty());
  Json url = Webhooks();
  url["webhooks"][0]["clientConfig"] = {{"url", "https://127.0.0.1:5722/validate"}};
  url["webhooks"][0]["reinvocationPolicy"] = "IfNeeded";
  EXPECT_THAT(Errors("admissionregistration.k8s.io", "mutatingwebhookconfigurations", url),
              IsEmpty());
}

TEST(WebhookConfigurationValidation, NameSideEffectsAndVersions) {
  Json w = Webhooks();
  w["webhooks"][0]["name"] = "spiderpool.io";
  w["webhooks"][0].erase("sideEffects");
  w["webhooks"][0].erase("admissionReviewVersions");
  EXPECT_THAT(
      Errors("admissionregistration.k8s.io", "validatingwebhookconfigurations", w),
      ElementsAre("webhooks[0].name: Invalid value: \"spiderpool.io\": should be a domain "
                  "with at least three segments separated by dots",
                  "webhooks[0].sideEffects: Required value: must specify one of None, "
                  "NoneOnDryRun",
                  "webhooks[0].admissionReviewVersions: Required value: must specify one of "
                  "v1, v1beta1"));
  w = Webhooks();
  w["webhooks"][0]["sideEffects"] = "Unknown";
  w["webhooks"][0]["admissionReviewVersions"] = {"v2"};
  EXPECT_THAT(Errors("admissionregistration.k8s.io", "validatingwebhookconfigurations", w),
              ElementsAre("webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported "
                          "values: \"None\", \"NoneOnDryRun\"",
                          "webhooks[0].admissionReviewVersions: Invalid value: [\"v2\"]: must "
                          "include at least one of v1, v1beta1"));
}

TEST(WebhookConfigurationValidation, ClientConfigAndRules) {
  Json w = Webhooks();
  w["webhooks"][0]["clientConfig"]["url"] = "https://example.com/x";
  w["webhooks"][0]["rules"][0]["operations"] = {"CREATE", "PATCH"};
  EXPECT_THAT(
      Errors("admissionregistration.k8s.io", "validatingwebhookconfigurations", w),
      ElementsAre("webhooks[0].rules[0].operations[1]: Unsupported value: \"PATCH\": "
                  "supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
                  "webhooks[0].clientConfig: Required value: exactly one of url or service "
                  "is required"));
  w = Webhooks();
  w["webhooks"][0]["clientConfig"] = {{"url", "http://example.com/x?y=1"}};
  EXPECT_THAT(Errors("admissionregistration.k8s.io", "validatingwebhookconfigurations", w),
              ElementsAre("webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the "
                          "only allowed URL scheme; desired format: https://host[/path]",
                          "webhooks[0].clientConfig.url: Invalid value: \"y=1\": query parameters "
                          "are not permitted in the URL"));
}

// ---- through the server ----

TEST(BuiltinValidationServer, DeploymentWithoutSelectorIs422) {
  auto server = LoopbackApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  Json d = Workload("Deployment");
  d["metadata"] = {{"name", "x"}};
  d["spec"].erase("selector");
  d["spec"]["template"]["metadata"].erase("labels");
  auto r = (*server)->Call("POST", "/apis/apps/v1/namespaces/default/deployments", d);
  EXPECT_EQ(r.code, 422);
  EXPECT_EQ(r.body.value("reason", ""), "Invalid");
  EXPECT_EQ(r.body.value("message", ""),
            "Deployment.apps \"x\" is invalid: [spec.selector: Required value, "
            "spec.template.metadata.labels: Invalid value: null: `selector` does not match "
            "template `labels`]");
  ASSERT_TRUE(r.body["details"]["causes"].is_array());
  ASSERT_EQ(r.body["details"]["causes"].size(), 2u);
  EXPECT_EQ(r.body["details"]["causes"][0], Json({{"reason", "FieldValueRequired"},
                                                  {"message", "Required value"},
                                                  {"field", "spec.selector"}}));
  EXPECT_EQ(r.body["details"]["kind"], "Deployment");
  EXPECT_EQ(r.body["details"]["group"], "apps");

  // The valid one is created; a pod update that moves it to another node is refused.
  auto ok = (*server)->Call("POST", "/apis/apps/v1/namespaces/default/deployments",
                            Workload("Deployment"));
  EXPECT_EQ(ok.code, 201) << ok.body.dump();
  Json pod = Pod();
  pod["spec"]["nodeName"] = "n1";
  auto created = (*server)->Call("POST", "/api/v1/namespaces/default/pods", pod);
  ASSERT_EQ(created.code, 201) << created.body.dump();
  pod = created.body;
  pod["spec"]["nodeName"] = "n2";
  auto moved = (*server)->Call("PUT", "/api/v1/namespaces/default/pods/p", pod);
  EXPECT_EQ(moved.code, 422);
  EXPECT_THAT(moved.body.value("message", ""),
              StartsWith("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields "
                         "other than"));
  // Status writes are not spec updates.
  pod = created.body;
  pod["status"] = {{"phase", "Running"}};
  auto status = (*server)->Call("PUT", "/api/v1/namespaces/default/pods/p/status", pod);
  EXPECT_EQ(status.code, 200) << status.body.dump();
}

TEST(BuiltinValidationServer, PodWithoutContainersIs422) {
  auto server = LoopbackApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  auto r = (*server)->Call("POST", "/api/v1/namespaces/default/pods",
                           {{"metadata", {{"name", "p"}}}, {"spec", Json::object()}});
  EXPECT_EQ(r.code, 422);
  EXPECT_EQ(r.body.value("message", ""), "Pod \"p\" is invalid: spec.containers: Required value");
}

}  // namespace
}  // namespace spiderpool::kube::testing::internal
