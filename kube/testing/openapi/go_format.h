#pragma once
// Go fmt/strconv/encoding/json renderings of JSON values, so that validation messages read
// exactly like kube-apiserver's (which formats Go values decoded from JSON: int64, float64,
// string, bool, nil, map[string]interface{}, []interface{}).

#include <string>
#include <string_view>

#include "base/json.h"

namespace spiderpool::kube::testing::openapi {

// strconv.Quote: "..." with Go escapes (\n, \x01, \u00a0, ...).
std::string GoQuote(std::string_view s);

// strconv.FormatFloat(f, 'g', -1, 64) == fmt's %v for a float64 ("1e+06", "0.5", "4094").
std::string GoFloat(double f);

// encoding/json's rendering of a float64 ("1e+21", "1e-7", "0.5", "4").
std::string GoJsonFloat(double f);

// %#v of a decoded JSON value: `map[string]interface {}{"a":1}`, `[]interface {}{"x"}`,
// `"s"`, `1`, `true`, `interface {}(nil)`.
std::string GoSharpV(const base::Json& v);

// How field.Error.ErrorBody prints a bad value: null -> `null`, numbers/bools with %v,
// strings with %q, maps/slices with %#v.
std::string GoBadValue(const base::Json& v);

// json.Marshal of a value (for enum "supported values"); strings are returned unquoted, as
// the apiserver does before quoting the whole list.
std::string GoEnumValue(const base::Json& v);

// Number of Unicode code points (Go's utf8.RuneCountInString; invalid bytes count as one).
size_t RuneCount(std::string_view s);

}  // namespace spiderpool::kube::testing::openapi
