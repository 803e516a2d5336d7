#pragma once
// The `pattern` keyword: Go RE2 patterns (what kube-apiserver compiles) run on std::regex
// (ECMAScript). This file is the single boundary to std::regex, which throws.
//
// Differences from the apiserver (Go regexp/RE2), by design or by necessity:
// - Translated: a leading `(?i)` becomes a case-insensitive regex; `\A` -> `^`, `\z` -> `$`.
// - Rejected here (RE2 rejects them too): back-references `\1`..`\9`, look-arounds `(?=`,
//   `(?!`, `(?<=`, `(?<!`.
// - Rejected here although RE2 accepts them: other inline flags (`(?s)`, `(?m)`, `(?U)`, or
//   `(?i)` not at the start), named groups `(?P<n>...)`, Unicode classes `\pL` / `\p{Greek}`,
//   `\Q...\E`. None of them appears in our CRDs; Parse reports the pattern as invalid.
// - Matching is on bytes, not runes: `.` and `[^x]` consume one byte of a multi-byte UTF-8
//   character (RE2 consumes the whole rune). Anchored ASCII patterns behave identically.
// - Both search (unanchored) like Go's MatchString; both treat `$` as end of text.
// Matching uses libstdc++'s polynomial (BFS) executor, so long inputs cannot exhaust the stack.

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace spiderpool::kube::testing::openapi {

class Regex {
 public:
  // Compiles a Go/RE2-style pattern. The error message explains what is wrong.
  static absl::StatusOr<Regex> Compile(std::string_view pattern);

  // True when the pattern matches anywhere in `s` (Go's regexp.MatchString).
  bool Search(std::string_view s) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;  // the compiled std::regex (kept out of this header)
  Regex(std::string pattern, std::shared_ptr<const Impl> impl)
      : pattern_(std::move(pattern)), impl_(std::move(impl)) {}

  std::string pattern_;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace spiderpool::kube::testing::openapi
