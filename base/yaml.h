#pragma once
// The single boundary to yaml-cpp: YAML documents become base::Json values, resolving plain
// scalars the way Kubernetes' YAML reader does (null/~, true/false/yes/no/on/off, ints,
// floats); quoted scalars always stay strings.

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"

namespace spiderpool::base {

// All documents of a stream ("---" separated); empty documents are skipped.
absl::StatusOr<std::vector<Json>> ParseYamlDocuments(std::string_view text);
// Exactly one document.
absl::StatusOr<Json> ParseYaml(std::string_view text);

}  // namespace spiderpool::base
