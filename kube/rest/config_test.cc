#include "kube/rest/config.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace spiderpool::kube {
namespace {

using base::testing::TempDir;

// Writes `content` to `rel` under `dir` (parent directories created); returns the file's path.
std::string WriteFile(const TempDir& dir, const std::string& rel, const std::string& content) {
  std::string p = dir.Join(rel);
  std::filesystem::create_directories(std::filesystem::path(p).parent_path());
  std::ofstream(p) << content;
  return p;
}

constexpr char kKubeconfig[] = R"(
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: Q0EtREFUQQ==
- name: dev-cluster
  cluster:
    server: https://[fd00::1]:6443/prefix/
    certificate-authority: certs/ca.pem
contexts:
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
    namespace: team-a
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
users:
- name: dev-user
  user:
    tokenFile: token
    client-certificate: /abs/cert.pem
    client-key-data: S0VZLURBVEE=
- name: prod-user
  user:
    token: 12345
)";

TEST(KubeconfigTest, CurrentContextWithFilesResolvedAgainstBaseDir) {
  std::map<std::string, std::string> files = {{"/kc/certs/ca.pem", "CA-FILE"},
                                              {"/abs/cert.pem", "CERT-FILE"}};
  KubeconfigOptions opts;
  opts.base_dir = "/kc";
  opts.read_file = [&](const std::string& path) -> absl::StatusOr<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return absl::NotFoundError(path);
    return it->second;
  };
  absl::StatusOr<Config> c = ParseKubeconfig(kKubeconfig, opts);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00::1]:6443/prefix/");
  EXPECT_EQ(c->ca_pem, "CA-FILE");
  EXPECT_EQ(c->bearer_token_file, "/kc/token");
  EXPECT_EQ(c->client_cert_pem, "CERT-FILE");
  EXPECT_EQ(c->client_key_pem, "KEY-DATA");
  EXPECT_EQ(c->namespace_, "team-a");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
}

TEST(KubeconfigTest, ContextOverrideAndNumericToken) {
  KubeconfigOptions opts;
  opts.context = "prod";
  opts.read_file = [](const std::string& p) -> absl::StatusOr<std::string> {
    return absl::NotFoundError(p);
  };
  absl::StatusOr<Config> c = ParseKubeconfig(kKubeconfig, opts);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA-DATA");
  EXPECT_EQ(c->bearer_token, "12345");
  EXPECT_EQ(c->namespace_, "");
}

TEST(KubeconfigTest, ErrorsNameTheMissingPiece) {
  KubeconfigOptions opts;
  opts.context = "nope";
  absl::StatusOr<Config> c = ParseKubeconfig(kKubeconfig, opts);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("context \"nope\""), std::string::npos)
      << c.status();

  c = ParseKubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: missing, user: u}}]
clusters: []
users: [{name: u, user: {token: t}}]
)");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("cluster \"missing\""), std::string::npos)
      << c.status();

  c = ParseKubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: ghost}}]
clusters: [{name: c, cluster: {server: "https://x"}}]
)");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("user \"ghost\""), std::string::npos)
      << c.status();

  c = ParseKubeconfig("clusters: []\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("current-context"), std::string::npos);

  // A referenced file that does not exist.
  opts = {};
  opts.read_file = [](const std::string& p) -> absl::StatusOr<std::string> {
    return absl::NotFoundError("no such file " + p);
  };
  c = ParseKubeconfig(kKubeconfig, opts);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("certificate-authority"), std::string::npos)
      << c.status();
}

TEST(KubeconfigTest, InsecureAndBadValues) {
  absl::StatusOr<Config> c = ParseKubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "http://127.0.0.1:8001", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->bearer_token, "abc");

  EXPECT_FALSE(ParseKubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "ftp://x"}}]
)").ok());
  EXPECT_FALSE(ParseKubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "https://x", certificate-authority-data: "!!notbase64"}}]
)").ok());
  absl::StatusOr<Config> exec = ParseKubeconfig(R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {exec: {command: aws}}}]
)");
  ASSERT_FALSE(exec.ok());
  EXPECT_EQ(exec.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(ParseKubeconfig("[1, 2").ok());
  EXPECT_FALSE(ParseKubeconfig("just a string").ok());
}

TEST(KubeconfigTest, LoadFromFileResolvesRelativePaths) {
  TempDir dir("kube-config");
  WriteFile(dir, "pki/ca.crt", "MY-CA");
  std::string path = WriteFile(dir, "kubeconfig", R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: pki/ca.crt}}]
users: [{name: u, user: {tokenFile: tok}}]
)");
  absl::StatusOr<Config> c = LoadKubeconfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, "MY-CA");
  EXPECT_EQ(c->bearer_token_file, dir.path() + "/tok");
  EXPECT_FALSE(LoadKubeconfig(dir.path() + "/missing").ok());
}

TEST(InClusterConfigTest, ReadsServiceAccount) {
  TempDir dir("kube-config");
  WriteFile(dir, "var/run/secrets/kubernetes.io/serviceaccount/token", "tok-1\n");
  WriteFile(dir, "var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "CA");
  WriteFile(dir, "var/run/secrets/kubernetes.io/serviceaccount/namespace", "kube-system\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  InClusterOptions opts;
  opts.root = dir.path();
  opts.getenv = [&](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<Config> c = InClusterConfig(opts);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->ca_pem, "CA");
  EXPECT_EQ(c->bearer_token, "tok-1\n");
  EXPECT_EQ(c->bearer_token_file,
            dir.path() + "/var/run/secrets/kubernetes.io/serviceaccount/token");
  EXPECT_EQ(c->namespace_, "kube-system");

  env.clear();
  absl::StatusOr<Config> none = InClusterConfig(opts);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ServerUrlTest, Parses) {
  absl::StatusOr<ServerAddress> a = ParseServerUrl("https://10.96.0.1");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->tls);
  EXPECT_EQ(a->host, "10.96.0.1");
  EXPECT_EQ(a->port, 443);
  EXPECT_EQ(a->base_path, "");
  a = ParseServerUrl("http://[::1]:8001/k8s/clusters/c-1/");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->tls);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 8001);
  EXPECT_EQ(a->base_path, "/k8s/clusters/c-1");
  EXPECT_FALSE(ParseServerUrl("10.0.0.1:443").ok());
  EXPECT_FALSE(ParseServerUrl("https://:443").ok());
  EXPECT_FALSE(ParseServerUrl("https://h:99999").ok());
  EXPECT_FALSE(ParseServerUrl("https://[::1").ok());
  EXPECT_FALSE(ParseServerUrl("https://user@h").ok());
}

TEST(Base64Test, RoundTripAndErrors) {
  for (std::string s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    absl::StatusOr<std::string> d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(*Base64Decode("YWJj\nZA"), "abcd");  // unpadded, with a newline
  EXPECT_FALSE(Base64Decode("a").ok());
  EXPECT_FALSE(Base64Decode("YW=Jj").ok());
  EXPECT_FALSE(Base64Decode("YW*j").ok());
  EXPECT_FALSE(Base64Decode("YQ===").ok());
}

}  // namespace
}  // namespace spiderpool::kube

namespace spiderpool::kube {
namespace {

TEST(KubeconfigTest, RejectsShapesThatTripTheYamlParser) {
  // yaml-cpp 0.7 loops forever on these (a ',' after a finished top-level node); they must be
  // rejected quickly instead.
  for (std::string_view text : {"\"\",", ",", "- a\n,", "[a],", "{a: 1},x", "  a: 1\n,",
                                "a: 1\n---\n,", "a: 1\n...\n,", "\"a\"\n,"}) {
    absl::StatusOr<Config> c = ParseKubeconfig(text);
    EXPECT_FALSE(c.ok()) << text;
  }
  // Aliases are refused (nested ones would expand exponentially).
  absl::StatusOr<Config> alias = ParseKubeconfig(R"(
current-context: a
x: &x [1, 2]
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: *x}}]
)");
  ASSERT_FALSE(alias.ok());
  EXPECT_NE(std::string(alias.status().message()).find("alias"), std::string::npos);
}

TEST(KubeconfigTest, AcceptsOrdinaryShapes) {
  // Leading document marker, comments, quoted keys, block scalars, '*' and '&' inside values,
  // multi-line quoted scalars.
  absl::StatusOr<Config> c = ParseKubeconfig(R"(---
# generated
"apiVersion": v1
current-context: 'a'
note: |
  - *not an alias
  ,
other: "multi
  line *x"
contexts:
- name: a
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster:
    server: "https://h:6443/?a=1&b=*2"
users:
- name: u
  user: {token: "abc*def"}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://h:6443/?a=1&b=*2");
  EXPECT_EQ(c->bearer_token, "abc*def");

  // JSON kubeconfigs.
  c = ParseKubeconfig(R"({"current-context":"a","contexts":[{"name":"a","context":{"cluster":"c"}}],
    "clusters":[{"name":"c","cluster":{"server":"https://h"}}]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://h");
}

}  // namespace
}  // namespace spiderpool::kube

namespace spiderpool::kube {
namespace {

TEST(ConfigFromEnvOrDefaultTest, KubeconfigEnvThenHome) {
  TempDir dir("kube-config");
  std::string path = WriteFile(dir, "kc", R"(
current-context: a
contexts: [{name: a, context: {cluster: c, user: u, namespace: from-env}}]
clusters: [{name: c, cluster: {server: "https://10.0.0.9"}}]
users: [{name: u, user: {token: t}}]
)");
  WriteFile(dir, "home/.kube/config", R"(
current-context: a
contexts: [{name: a, context: {cluster: c, namespace: from-home}}]
clusters: [{name: c, cluster: {server: "https://10.0.0.8"}}]
)");
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  // The first existing file of the list.
  setenv("KUBECONFIG", (dir.path() + "/missing:" + path).c_str(), 1);
  absl::StatusOr<Config> c = ConfigFromEnvOrDefault();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->namespace_, "from-env");
  // None of the list exists: an error, not a silent fallback.
  setenv("KUBECONFIG", (dir.path() + "/missing").c_str(), 1);
  EXPECT_FALSE(ConfigFromEnvOrDefault().ok());
  // Unset: not in a cluster, so ~/.kube/config.
  unsetenv("KUBECONFIG");
  setenv("HOME", (dir.path() + "/home").c_str(), 1);
  c = ConfigFromEnvOrDefault();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->namespace_, "from-home");
  setenv("HOME", (dir.path() + "/nowhere").c_str(), 1);
  EXPECT_EQ(ConfigFromEnvOrDefault().status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace spiderpool::kube
