#include "kube/informer/informer.h"

namespace spiderpool::kube::informer_internal {

std::string KeyOf(const base::Json& obj) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  const base::Json& m = obj["metadata"];
  std::string name = m.contains("name") && m["name"].is_string() ? m["name"].get<std::string>() : "";
  std::string ns = m.contains("namespace") && m["namespace"].is_string()
                       ? m["namespace"].get<std::string>()
                       : "";
  return ns.empty() ? name : ns + "/" + name;
}

metrics::Counter& DecodeErrors(metrics::Registry* registry, const std::string& resource) {
  metrics::Registry& r = registry != nullptr ? *registry : metrics::Registry::Default();
  return r.AddCounter("spiderpool_informer_decode_errors_total",
                      "Objects from the API server that did not decode and were skipped")
      .WithLabels({{"resource", resource}});
}

}  // namespace spiderpool::kube::informer_internal
