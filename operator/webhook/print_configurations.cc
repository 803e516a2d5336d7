// Prints spiderpool-controller's MutatingWebhookConfiguration and ValidatingWebhookConfiguration
// (configurations.h) as one JSON List, valid YAML for `kubectl apply -f -` and the chart:
//   bazel run //operator/webhook:print-configurations -- [namespace [service]]

#include <iostream>
#include <string>

#include "api/codec.h"
#include "base/json.h"
#include "base/sigpipe.h"
#include "operator/webhook/configurations.h"

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
  namespace ow = spiderpool::op::webhook;
  ow::ConfigurationOptions o;
  if (argc > 1) o.service_namespace = argv[1];
  if (argc > 2) o.service_name = argv[2];
  spiderpool::base::Json list = {{"apiVersion", "v1"},
                                 {"kind", "List"},
                                 {"items",
                                  {spiderpool::api::Encode(ow::MutatingConfiguration(o)),
                                   spiderpool::api::Encode(ow::ValidatingConfiguration(o))}}};
  std::cout << spiderpool::base::DumpJsonPretty(list) << "\n";
  return 0;
}
