#include "kube/testing/test_cluster.h"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "api/core.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/yaml.h"
#include "kube/rest/errors.h"

namespace spiderpool::kube::testing {
namespace {

std::string RandomSuffix() {
  std::random_device rd;
  std::mt19937_64 rng(rd());
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(kChars[rng() % 36]);
  return s;
}

bool IsEstablished(const base::Json& crd) {
  const base::Json* conds = nullptr;
  if (crd.contains("status") && crd["status"].is_object() &&
      crd["status"].contains("conditions") && crd["status"]["conditions"].is_array()) {
    conds = &crd["status"]["conditions"];
  }
  if (conds == nullptr) return false;
  for (const auto& c : *conds) {
    if (c.value("type", "") == "Established" && c.value("status", "") == "True") return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(LoopbackOptions options) {
  std::unique_ptr<TestCluster> c(new TestCluster());
  const char* kubeconfig = std::getenv(kTestKubeconfigEnv);
  if (kubeconfig != nullptr && *kubeconfig != '\0') {
    SP_ASSIGN_OR_RETURN(c->config_, LoadKubeconfig(kubeconfig));
  } else {
    SP_ASSIGN_OR_RETURN(c->loopback_, LoopbackApiServer::Start(std::move(options)));
    SP_ASSIGN_OR_RETURN(c->config_, ParseKubeconfig(c->loopback_->KubeconfigYaml()));
  }
  SP_ASSIGN_OR_RETURN(c->rest_, c->NewRest());
  c->ns_ = "sp-test-" + RandomSuffix();
  DynamicClient namespaces(c->rest_, api::Namespace::Resource());
  base::Json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"},
                   {"metadata", {{"name", c->ns_}, {"labels", {{"spiderpool.test", "true"}}}}}};
  auto created = namespaces.Create(ns);
  if (!created.ok()) return base::Annotate(created.status(), "creating the test namespace");
  return c;
}

TestCluster::~TestCluster() {
  if (rest_ != nullptr && !ns_.empty()) {
    absl::Status s = DynamicClient(rest_, api::Namespace::Resource()).Delete("", ns_);
    if (!s.ok() && !kube::IsNotFound(s)) {
      SP_LOG(Warning).Msg("cannot delete the test namespace").KV("ns", ns_).KV("err", s.ToString());
    }
  }
  rest_.reset();
  if (loopback_) loopback_->Stop();
}

absl::StatusOr<std::shared_ptr<RestClient>> TestCluster::NewRest(double qps, int burst) const {
  Config cfg = config_;
  cfg.qps = qps;
  cfg.burst = burst;
  return RestClient::Create(std::move(cfg));
}

absl::Status TestCluster::ApplyCRDs(const std::string& dir, ApplyOptions options) const {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return absl::NotFoundError(base::StrCat("cannot open ", dir));
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".yaml") files.push_back(name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  DynamicClient crds(rest_, api::CustomResourceDefinitionResource());
  std::vector<std::string> names;
  for (const std::string& f : files) {
    std::ifstream in(dir + "/" + f);
    std::stringstream ss;
    ss << in.rdbuf();
    SP_ASSIGN_OR_RETURN(auto docs, base::ParseYamlDocuments(ss.str()));
    for (base::Json& doc : docs) {
      if (doc.value("kind", "") != "CustomResourceDefinition") continue;
      std::string name = doc["metadata"].value("name", "");
      auto created = crds.Create(doc);
      if (!created.ok() && kube::IsAlreadyExists(created.status()) && options.keep_existing) {
        // left as it is
      } else if (!created.ok() && kube::IsAlreadyExists(created.status())) {
        auto existing = crds.Get("", name);
        if (!existing.ok()) return existing.status();
        doc["metadata"]["resourceVersion"] = (*existing)["metadata"]["resourceVersion"];
        auto updated = crds.Update(doc);
        if (!updated.ok()) return base::Annotate(updated.status(), f);
      } else if (!created.ok()) {
        return base::Annotate(created.status(), f);
      }
      names.push_back(name);
    }
  }
  // Established is immediate on the loopback server; a real apiserver takes a moment.
  for (const std::string& name : names) {
    bool ok = false;
    for (int i = 0; i < 300 && !ok; ++i) {
      auto crd = crds.Get("", name);
      if (crd.ok() && IsEstablished(*crd)) {
        ok = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (!ok) return absl::DeadlineExceededError(base::StrCat("CRD ", name, " not Established"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> TestCluster::KubeconfigFor(const std::string& dir) const {
  if (loopback_ == nullptr) return std::string(std::getenv(kTestKubeconfigEnv));
  const std::string path = dir + "/kubeconfig";
  if (absl::Status s = loopback_->WriteKubeconfig(path); !s.ok()) return s;
  return path;
}

}  // namespace spiderpool::kube::testing
