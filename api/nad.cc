#include "api/nad.h"

namespace spiderpool::api {

const ResourceInfo& NetworkAttachmentDefinition::Resource() {
  static const ResourceInfo info{.group = std::string(kNADGroup),
                                 .version = "v1",
                                 .kind = "NetworkAttachmentDefinition",
                                 .plural = "network-attachment-definitions",
                                 .singular = "network-attachment-definition",
                                 .namespaced = true,
                                 .has_status = false,
                                 .short_names = {"net-attach-def"}};
  return info;
}

}  // namespace spiderpool::api
