#include "kube/testing/openapi/regex.h"

#include <regex>

#include "base/strings.h"

namespace spiderpool::kube::testing::openapi {

struct Regex::Impl {
  std::regex re;
};

namespace {

// Rewrites the RE2 constructs we translate and rejects the ones std::regex would silently
// interpret differently. Returns the ECMAScript pattern.
absl::StatusOr<std::string> Translate(std::string_view p, bool* icase) {
  *icase = false;
  if (p.substr(0, 4) == "(?i)") {
    *icase = true;
    p.remove_prefix(4);
  }
  std::string out;
  out.reserve(p.size());
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      if (i + 1 >= p.size()) return absl::InvalidArgumentError("trailing backslash");
      char n = p[i + 1];
      if (!in_class && n >= '1' && n <= '9') {
        return absl::InvalidArgumentError(base::StrCat("invalid escape sequence: `\\",
                                                       std::string(1, n),
                                                       "` (back-references are not supported)"));
      }
      if (n == 'p' || n == 'P' || n == 'Q' || n == 'E') {
        return absl::InvalidArgumentError(
            base::StrCat("unsupported escape sequence: `\\", std::string(1, n), "`"));
      }
      if (!in_class && n == 'A') {
        out += '^';
      } else if (!in_class && n == 'z') {
        out += '$';
      } else {
        out += c;
        out += n;
      }
      ++i;
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == '(' && i + 1 < p.size() && p[i + 1] == '?') {
      std::string_view rest = p.substr(i + 2);
      if (rest.substr(0, 1) == ":") {
        out += "(?:";
        i += 2;
        continue;
      }
      if (rest.substr(0, 1) == "=" || rest.substr(0, 1) == "!" || rest.substr(0, 2) == "<=" ||
          rest.substr(0, 2) == "<!") {
        return absl::InvalidArgumentError("invalid or unsupported Perl syntax: look-arounds");
      }
      return absl::InvalidArgumentError(
          "unsupported group syntax: only `(?:...)` and a leading `(?i)` are supported");
    }
    out += c;
  }
  if (in_class) return absl::InvalidArgumentError("missing closing ]");
  return out;
}

}  // namespace

absl::StatusOr<Regex> Regex::Compile(std::string_view pattern) {
  bool icase = false;
  auto translated = Translate(pattern, &icase);
  if (!translated.ok()) return translated.status();
  auto flags = std::regex::ECMAScript | std::regex::optimize | std::regex_constants::__polynomial;
  if (icase) flags |= std::regex::icase;
  try {
    auto impl = std::make_shared<const Impl>(Impl{std::regex(*translated, flags)});
    return Regex(std::string(pattern), std::move(impl));
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(base::StrCat("invalid regular expression: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(base::StrCat("invalid regular expression: ", e.what()));
  }
}

bool Regex::Search(std::string_view s) const {
  try {
    return std::regex_search(s.begin(), s.end(), impl_->re);
  } catch (const std::exception&) {
    // error_complexity / error_stack: treat as "does not match" (reported as a pattern error).
    return false;
  }
}

}  // namespace spiderpool::kube::testing::openapi
