#pragma once
// client-go's JSONPath (k8s.io/client-go/util/jsonpath), the part CRD printer columns use.
//
// JsonPath supports what printer columns use: `.a.b`, `.a['x.y/z']` (backslash escapes, so
// `['ipam\.spidernet\.io/app']` is one key, exactly like client-go), `.a[0]`, `.a[-1]`,
// `.a[*]`, `.a[1:3]`, `.a.*`, and filters `[?(@.type=="Ready")]` (==, !=, <, >, <=, >=,
// existence). Recursive descent (`..`) and unions (`[0,1]`) are rejected.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"

namespace spiderpool::kube::testing {

class JsonPath {
 public:
  // `expr` like ".spec.subnet" (an optional surrounding "{...}" is accepted).
  static absl::StatusOr<JsonPath> Parse(std::string_view expr);
  // Every value the path selects, in order (missing keys select nothing).
  std::vector<base::Json> Find(const base::Json& root) const;

  struct Step {
    enum Kind { kField, kWildcard, kSlice, kFilter } kind = kField;
    std::string field;  // kField
    // kSlice: [start:end:step]; `known` flags as in client-go's ArrayNode params.
    int start = 0, end = 0, step = 1;
    bool start_known = false, end_known = false, end_derived = false, step_known = false;
    // kFilter: left path (relative to @), operator ("exists" when none), right operand.
    std::vector<Step> left;
    std::string op;
    std::vector<Step> right_path;  // when the right side is a path
    base::Json right_literal;      // otherwise
  };

 private:
  std::vector<Step> steps_;
};

// The text kubectl's JSONPath printer prints for one value: strings raw, numbers and booleans
// as Go's fmt does, maps/arrays as compact JSON.
std::string JsonPathText(const base::Json& value);

}  // namespace spiderpool::kube::testing
