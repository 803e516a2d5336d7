#pragma once
// String formats the apiserver validates in CRD schemas (apiextensions-apiserver's
// supportedFormats, names normalised by dropping '-' as go-openapi does), with go-openapi
// strfmt's checkers rewritten in C++.

#include <string>
#include <string_view>

namespace spiderpool::kube::testing::openapi {

// Normalises a format name the go-openapi way ("date-time" -> "datetime") and returns it when
// the apiserver validates that format; returns "" for formats the apiserver strips (int32,
// int64, float, double, and anything unknown), which it then ignores.
std::string EffectiveFormat(std::string_view format);

// True when `value` satisfies the (effective) format. Formats we do not check ("isbn",
// "isbn10", "isbn13", "creditcard") and "password" accept everything.
bool CheckFormat(std::string_view effective_format, std::string_view value);

}  // namespace spiderpool::kube::testing::openapi
