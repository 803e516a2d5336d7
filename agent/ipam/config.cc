#include "agent/ipam/config.h"

#include "base/yaml.h"

namespace spiderpool::agent::ipam {

absl::StatusOr<IPAMConfig> ParseIPAMConfig(std::string_view text) {
  absl::StatusOr<api::Json> j = base::ParseYaml(text);
  if (!j.ok()) return j.status();
  if (j->is_null()) return IPAMConfig{};  // an empty file: all defaults
  if (!j->is_object()) return absl::InvalidArgumentError("conf.yml: the top level must be a map");
  api::DecodeErrors errs;
  IPAMConfig config = api::DecodeInto<IPAMConfig>(*j, &errs);
  if (!errs.ok()) return errs.ToStatus("conf.yml");
  if (!config.enable_ipv4 && !config.enable_ipv6) {
    return absl::InvalidArgumentError(
        "conf.yml: enableIPv4 and enableIPv6 are both false; enable at least one family");
  }
  return config;
}

}  // namespace spiderpool::agent::ipam
