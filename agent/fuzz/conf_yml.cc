// Fuzz target: the agent's conf.yml (the spiderpool-conf ConfigMap, YAML or JSON), parsed by
// ParseIPAMConfig at start-up. Property: nothing crashes; an error names what is wrong.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agent/ipam/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = spiderpool::agent::ipam::ParseIPAMConfig(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!config.ok() && config.status().message().empty()) __builtin_trap();
  return 0;
}
