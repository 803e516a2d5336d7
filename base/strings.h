#pragma once
// Debian's abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0),
// which does not accept std::string_view. Our code uses std::string_view; these helpers bridge.

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace spiderpool::base {

inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view FromAbsl(absl::string_view s) { return {s.data(), s.size()}; }

namespace strings_internal {
template <typename T>
void AppendOne(std::string* out, const T& v) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out->append(std::string_view(v));
  } else if constexpr (std::is_convertible_v<const T&, absl::string_view>) {
    absl::string_view a = v;
    out->append(a.data(), a.size());
  } else {
    absl::AlphaNum an(v);
    out->append(an.data(), an.size());
  }
}
}  // namespace strings_internal

// absl::StrCat that also takes std::string_view.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (strings_internal::AppendOne(&out, args), ...);
  return out;
}

}  // namespace spiderpool::base
