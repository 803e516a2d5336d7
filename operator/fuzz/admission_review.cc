// Fuzz target: an AdmissionReview as kube-apiserver posts it to spiderpool-controller's
// webhooks, through the generic server (kube/webhook: body, content type, review envelope) into
// the real Spider handlers (operator/webhook: defaulting and validation of every kind, the Pod
// resource injection), with fixed caches (one pool, one subnet, one SpiderMultusConfig).
//
// Input: the first byte picks the webhook path (mutating or validating, per kind, or the Pod
// path), the rest is the request body. Properties: the answer is 200 or 4xx with a JSON body;
// a 200 answer is an AdmissionReview whose response echoes the request's uid; a patch, if
// any, applies to the request's object.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/admission.h"
#include "api/codec.h"
#include "api/spider.h"
#include "base/json.h"
#include "kube/webhook/json_patch.h"
#include "kube/webhook/server.h"
#include "operator/webhook/configurations.h"
#include "operator/webhook/handlers.h"
#include "operator/webhook/pod_inject.h"

namespace {

using namespace spiderpool;
namespace kw = spiderpool::kube::webhook;
namespace ow = spiderpool::op::webhook;

template <typename T>
std::vector<std::shared_ptr<const T>> One(const char* json) {
  auto t = api::Decode<T>(*base::ParseJson(json));
  if (!t.ok()) __builtin_trap();  // the fixed cache objects are valid
  return {std::make_shared<const T>(*t)};
}

struct Served {
  std::unique_ptr<kw::AdmissionServer> server;
  std::vector<std::string> paths;
};

const Served& Serve() {
  static const Served* served = [] {
    auto* s = new Served;
    s->server = std::make_unique<kw::AdmissionServer>(kw::ServerOptions{.max_request_bytes = 1 << 20});
    ow::HandlerOptions o;
    o.enable_claim_parameter = true;
    o.enable_pod_resource_inject = true;
    static const auto pools = One<api::SpiderIPPool>(
        R"({"metadata":{"name":"pool1"},"spec":{"ipVersion":4,"subnet":"10.0.0.0/24",)"
        R"("ips":["10.0.0.10-10.0.0.20"],"gateway":"10.0.0.1"}})");
    static const auto subnets = One<api::SpiderSubnet>(
        R"({"metadata":{"name":"subnet1"},"spec":{"ipVersion":4,"subnet":"10.1.0.0/16",)"
        R"("ips":["10.1.0.10-10.1.0.200"]}})");
    static const auto smcs = One<api::SpiderMultusConfig>(
        R"({"metadata":{"name":"macvlan","namespace":"kube-system","labels":)"
        R"({"cni.spidernet.io/rdma-resource-inject":"rdma"}},"spec":{"cniType":"macvlan",)"
        R"("macvlan":{"master":["eth0"],"rdmaResourceName":"spidernet.io/rdma"}}})");
    o.sources.ippools = [] { return absl::StatusOr<decltype(pools)>(pools); };
    o.sources.subnets = [] { return absl::StatusOr<decltype(subnets)>(subnets); };
    o.sources.net_attach_def_owners = [](std::string_view, std::string_view name)
        -> absl::StatusOr<std::optional<std::vector<api::OwnerReference>>> {
      if (name != "macvlan") return std::nullopt;
      return std::vector<api::OwnerReference>{};
    };
    o.sources.multus_config_exists = [](std::string_view, std::string_view name) {
      return absl::StatusOr<bool>(name == "macvlan");
    };
    o.sources.multus_configs = [] { return absl::StatusOr<decltype(smcs)>(smcs); };
    o.sources.namespace_annotations = [](const std::string&) {
      return absl::StatusOr<std::map<std::string, std::string>>(
          std::map<std::string, std::string>{});
    };
    ow::RegisterHandlers(s->server.get(), o);
    for (ow::Kind k : ow::MutatingKinds({.enable_claim_parameter = true})) {
      s->paths.push_back(ow::MutatePath(k));
    }
    for (ow::Kind k : ow::ValidatingKinds({.enable_claim_parameter = true})) {
      s->paths.push_back(ow::ValidatePath(k));
    }
    s->paths.push_back(std::string(ow::kPodMutatePath));
    return s;
  }();
  return *served;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Served& s = Serve();
  kw::HttpRequest req;
  req.path = s.paths[data[0] % s.paths.size()];
  req.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  kw::HttpReply r = s.server->Handle(req);
  if (!(r.status == 200 || (r.status >= 400 && r.status < 500))) __builtin_trap();
  auto body = base::ParseJson(r.body);
  if (!body.ok()) __builtin_trap();
  if (r.status != 200) return 0;
  auto review = api::Decode<api::AdmissionReview>(*body);
  if (!review.ok() || !review->response.has_value()) __builtin_trap();
  auto in = api::Decode<api::AdmissionReview>(*base::ParseJson(req.body));
  if (!in.ok() || !in->request.has_value() || review->response->uid != in->request->uid) {
    __builtin_trap();
  }
  if (review->response->patch.has_value()) {
    auto patch = api::ResponsePatch(*review->response);
    if (!patch.ok() || !base::ApplyJsonPatch(in->request->object, *patch).ok()) __builtin_trap();
  }
  return 0;
}
