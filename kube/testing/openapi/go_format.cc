#include "kube/testing/openapi/go_format.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

namespace spiderpool::kube::testing::openapi {
namespace {

// Decodes one UTF-8 sequence at s[i]; returns the code point or -1 for an invalid byte, and
// sets *width (1 for invalid bytes).
int32_t DecodeRune(std::string_view s, size_t i, size_t* width) {
  auto b0 = static_cast<unsigned char>(s[i]);
  *width = 1;
  if (b0 < 0x80) return b0;
  int n;
  int32_t cp;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return -1;
  }
  if (i + n > s.size()) return -1;
  for (int k = 1; k < n; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong encodings, surrogates and out-of-range values are invalid.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return -1;
  }
  *width = n;
  return cp;
}

// An approximation of Go's unicode.IsPrint for non-ASCII code points: separators other than
// ASCII space, format characters, C1 controls, private use and non-characters are not printable.
bool IsPrintNonAscii(int32_t r) {
  if (r >= 0x80 && r <= 0xA0) return false;
  if (r == 0xAD) return false;
  if (r == 0x034F || r == 0x061C || r == 0x180E) return false;
  if (r >= 0x2000 && r <= 0x200F) return false;
  if (r >= 0x2028 && r <= 0x202F) return false;
  if (r >= 0x205F && r <= 0x206F) return false;
  if (r == 0x3000 || r == 0xFEFF) return false;
  if (r >= 0xE000 && r <= 0xF8FF) return false;
  if (r >= 0xFFF0 && r <= 0xFFFB) return false;
  if (r == 0xFFFE || r == 0xFFFF) return false;
  if (r >= 0xF0000) return false;
  if (r >= 0xE0000 && r <= 0xE007F) return false;
  return true;
}

void AppendHex(std::string* out, uint32_t v, int digits) {
  static const char kHex[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; --i) out->push_back(kHex[(v >> (4 * i)) & 0xF]);
}

// Shortest round-trip decimal digits of |f| and the decimal point position: |f| = 0.DIGITS * 10^dp.
void ShortestDigits(double f, std::string* digits, int* dp) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), std::fabs(f), std::chars_format::scientific);
  std::string_view s(buf, res.ptr - buf);  // "d.ddde+XX"
  size_t e = s.find('e');
  std::string_view mant = s.substr(0, e);
  int exp10 = 0;
  std::from_chars(s.data() + e + 1 + (s[e + 1] == '+' ? 1 : 0), s.data() + s.size(), exp10);
  digits->clear();
  for (char c : mant) {
    if (c != '.') digits->push_back(c);
  }
  while (digits->size() > 1 && digits->back() == '0') digits->pop_back();
  *dp = exp10 + 1;
}

std::string FormatE(bool neg, const std::string& d, int dp) {
  std::string out = neg ? "-" : "";
  out += d[0];
  if (d.size() > 1) {
    out += '.';
    out.append(d, 1, std::string::npos);
  }
  int exp = dp - 1;
  out += 'e';
  out += exp < 0 ? '-' : '+';
  int a = exp < 0 ? -exp : exp;
  if (a < 10) out += '0';
  out += std::to_string(a);
  return out;
}

std::string FormatF(bool neg, const std::string& d, int dp) {
  std::string out = neg ? "-" : "";
  int nd = static_cast<int>(d.size());
  if (dp <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-dp), '0');
    out += d;
  } else if (dp >= nd) {
    out += d;
    out.append(static_cast<size_t>(dp - nd), '0');
  } else {
    out.append(d, 0, dp);
    out += '.';
    out.append(d, dp, std::string::npos);
  }
  return out;
}

std::string IntString(const base::Json& v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      // Go decodes integers beyond int64 into float64.
      return GoFloat(static_cast<double>(u));
    }
    return std::to_string(u);
  }
  return std::to_string(v.get<int64_t>());
}

}  // namespace

std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    size_t w;
    int32_t r = DecodeRune(s, i, &w);
    if (r < 0) {
      out += "\\x";
      AppendHex(&out, static_cast<unsigned char>(s[i]), 2);
      i += 1;
      continue;
    }
    if (r == '"' || r == '\\') {
      out += '\\';
      out += static_cast<char>(r);
    } else if (r >= 0x20 && r < 0x7F) {
      out += static_cast<char>(r);
    } else if (r >= 0x80 && IsPrintNonAscii(r)) {
      out.append(s.substr(i, w));
    } else {
      switch (r) {
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          if (r < 0x20 || r == 0x7F) {
            out += "\\x";
            AppendHex(&out, static_cast<uint32_t>(r), 2);
          } else if (r > 0xFFFF) {
            out += "\\U";
            AppendHex(&out, static_cast<uint32_t>(r), 8);
          } else {
            out += "\\u";
            AppendHex(&out, static_cast<uint32_t>(r), 4);
          }
      }
    }
    i += w;
  }
  out += '"';
  return out;
}

std::string GoFloat(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  bool neg = std::signbit(f);
  if (f == 0) return neg ? "-0" : "0";
  std::string d;
  int dp;
  ShortestDigits(f, &d, &dp);
  // strconv's %g with the shortest precision uses %e when the exponent is < -4 or >= 6
  // (so a float64 1000000 prints as "1e+06", the well-known Go gotcha).
  int exp = dp - 1;
  if (exp < -4 || exp >= 6) return FormatE(neg, d, dp);
  return FormatF(neg, d, dp);
}

std::string GoJsonFloat(double f) {
  if (!std::isfinite(f)) return "null";
  bool neg = std::signbit(f);
  if (f == 0) return neg ? "-0" : "0";
  std::string d;
  int dp;
  ShortestDigits(f, &d, &dp);
  double a = std::fabs(f);
  if (a < 1e-6 || a >= 1e21) {
    std::string s = FormatE(neg, d, dp);
    // encoding/json trims "e-07" to "e-7".
    size_t n = s.size();
    if (n >= 4 && s[n - 4] == 'e' && s[n - 3] == '-' && s[n - 2] == '0') s.erase(n - 2, 1);
    return s;
  }
  return FormatF(neg, d, dp);
}

std::string GoSharpV(const base::Json& v) {
  switch (v.type()) {
    case base::Json::value_t::null:
      return "interface {}(nil)";
    case base::Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case base::Json::value_t::number_integer:
    case base::Json::value_t::number_unsigned:
      return IntString(v);
    case base::Json::value_t::number_float:
      return GoFloat(v.get<double>());
    case base::Json::value_t::string:
      return GoQuote(v.get_ref<const std::string&>());
    case base::Json::value_t::array: {
      std::string out = "[]interface {}{";
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ", ";
        first = false;
        out += GoSharpV(e);
      }
      return out + "}";
    }
    case base::Json::value_t::object: {
      std::string out = "map[string]interface {}{";
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {  // keys are sorted, like fmt's
        if (!first) out += ", ";
        first = false;
        out += GoQuote(it.key());
        out += ':';
        out += GoSharpV(it.value());
      }
      return out + "}";
    }
    default:
      return "interface {}(nil)";
  }
}

std::string GoBadValue(const base::Json& v) {
  switch (v.type()) {
    case base::Json::value_t::null:
      return "null";
    case base::Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case base::Json::value_t::number_integer:
    case base::Json::value_t::number_unsigned:
      return IntString(v);
    case base::Json::value_t::number_float:
      return GoFloat(v.get<double>());
    case base::Json::value_t::string:
      return GoQuote(v.get_ref<const std::string&>());
    default:
      return GoSharpV(v);
  }
}

std::string GoEnumValue(const base::Json& v) {
  switch (v.type()) {
    case base::Json::value_t::string:
      return v.get<std::string>();
    case base::Json::value_t::null:
      return "null";
    case base::Json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case base::Json::value_t::number_integer:
    case base::Json::value_t::number_unsigned:
      return IntString(v);
    case base::Json::value_t::number_float:
      return GoJsonFloat(v.get<double>());
    default:
      return base::DumpJson(v);
  }
}

size_t RuneCount(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    size_t w;
    DecodeRune(s, i, &w);
    i += w;
    ++n;
  }
  return n;
}

}  // namespace spiderpool::kube::testing::openapi
