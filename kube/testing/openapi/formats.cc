#include "kube/testing/openapi/formats.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "kube/testing/openapi/regex.h"

namespace spiderpool::kube::testing::openapi {
namespace {

constexpr std::array<std::string_view, 24> kSupported = {
    "bsonobjectid", "uri",    "email",    "hostname",   "ipv4",     "ipv6",
    "cidr",         "mac",    "uuid",     "uuid3",      "uuid4",    "uuid5",
    "isbn",         "isbn10", "isbn13",   "creditcard", "ssn",      "hexcolor",
    "rgbcolor",     "byte",   "password", "date",       "duration", "datetime",
};

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}

int Num(std::string_view s) {
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// Go's net.ParseIP: dotted IPv4 (no leading zeros) or IPv6 (no zone).
bool ParseIp(std::string_view s, bool* v4) {
  std::string str(s);
  unsigned char buf[16];
  if (inet_pton(AF_INET, str.c_str(), buf) == 1) {
    *v4 = true;
    return true;
  }
  if (inet_pton(AF_INET6, str.c_str(), buf) == 1) {
    *v4 = false;
    return true;
  }
  return false;
}

bool IsIPv4(std::string_view s) {
  bool v4;
  return ParseIp(s, &v4) && s.find('.') != std::string_view::npos;
}

bool IsIPv6(std::string_view s) {
  bool v4;
  return ParseIp(s, &v4) && s.find(':') != std::string_view::npos;
}

bool IsCidr(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return false;
  bool v4;
  if (!ParseIp(s.substr(0, slash), &v4)) return false;
  std::string_view mask = s.substr(slash + 1);
  if (!AllDigits(mask) || mask.size() > 3) return false;
  int bits = Num(mask);
  // An IPv4-mapped IPv6 text form is still 128 bits wide for Go.
  bool text_v4 = v4;
  return bits <= (text_v4 ? 32 : 128);
}

// Go's net.ParseMAC: 6, 8 or 20 octets as xx:xx:.., xx-xx-.. or xxxx.xxxx.xxxx.
bool IsMac(std::string_view s) {
  if (s.size() < 14) return false;
  if (s[2] == ':' || s[2] == '-') {
    if ((s.size() + 1) % 3 != 0) return false;
    size_t n = (s.size() + 1) / 3;
    if (n != 6 && n != 8 && n != 20) return false;
    char sep = s[2];
    for (size_t i = 0; i < n; ++i) {
      size_t x = i * 3;
      if (!IsHex(s[x]) || !IsHex(s[x + 1])) return false;
      if (i + 1 < n && s[x + 2] != sep) return false;
    }
    return true;
  }
  if (s[4] == '.') {
    if ((s.size() + 1) % 5 != 0) return false;
    size_t n = 2 * (s.size() + 1) / 5;
    if (n != 6 && n != 8 && n != 20) return false;
    for (size_t x = 0; x < s.size(); x += 5) {
      for (size_t k = 0; k < 4; ++k) {
        if (!IsHex(s[x + k])) return false;
      }
      if (x + 4 < s.size() && s[x + 4] != '.') return false;
    }
    return true;
  }
  return false;
}

// (?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab]?[0-9a-f]{3}-?[0-9a-f]{12}$ family.
bool IsUuid(std::string_view s, char version) {
  std::string hex;
  size_t i = 0;
  const int groups[] = {8, 4, 4, 4, 12};
  for (int g = 0; g < 5; ++g) {
    if (g > 0 && i < s.size() && s[i] == '-') ++i;
    for (int k = 0; k < groups[g]; ++k, ++i) {
      if (i >= s.size() || !IsHex(s[i])) return false;
      hex += static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    }
  }
  if (i != s.size()) return false;
  if (version != 0) {
    if (hex[12] != version) return false;
    if (version != '3' && std::string_view("89ab").find(hex[16]) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// time.Parse("2006-01-02", s).
bool IsDate(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  std::string_view y = s.substr(0, 4), m = s.substr(5, 2), d = s.substr(8, 2);
  if (!AllDigits(y) || !AllDigits(m) || !AllDigits(d)) return false;
  int year = Num(y), month = Num(m), day = Num(d);
  if (month < 1 || month > 12 || day < 1) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int max = kDays[month - 1] + (month == 2 && IsLeap(year) ? 1 : 0);
  return day <= max;
}

// go-openapi strfmt.IsDateTime: date, 't', hh:mm:ss(.frac)?(z|+hh:mm), compared lower-cased.
bool IsDateTime(std::string_view s) {
  if (s.size() < 4) return false;
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t t = lower.find('t');
  if (t == std::string::npos || !IsDate(std::string_view(lower).substr(0, t))) return false;
  std::string_view rest = std::string_view(lower).substr(t + 1);
  size_t next_t = rest.find('t');
  if (next_t != std::string_view::npos) rest = rest.substr(0, next_t);
  // ^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$
  if (rest.size() < 9) return false;
  if (!AllDigits(rest.substr(0, 2)) || rest[2] != ':' || !AllDigits(rest.substr(3, 2)) ||
      rest[5] != ':' || !AllDigits(rest.substr(6, 2))) {
    return false;
  }
  if (rest.substr(0, 2) > "23" || rest.substr(3, 2) > "59" || rest.substr(6, 2) > "59") {
    return false;
  }
  std::string_view tail = rest.substr(8);
  if (tail.size() >= 2 && IsDigit(tail[1]) && tail[0] != '+' && tail[0] != '-') {
    size_t k = 1;
    while (k < tail.size() && IsDigit(tail[k])) ++k;
    tail = tail.substr(k);
  }
  if (tail == "z") return true;
  return tail.size() == 6 && (tail[0] == '+' || tail[0] == '-') && AllDigits(tail.substr(1, 2)) &&
         tail[3] == ':' && AllDigits(tail.substr(4, 2));
}

bool IsBase64(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return false;
  size_t pad = 0;
  if (s.back() == '=') pad = (s[s.size() - 2] == '=') ? 2 : 1;
  for (size_t i = 0; i < s.size() - pad; ++i) {
    char c = s[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/')) return false;
  }
  return true;
}

bool IsSsn(std::string_view s) {
  // govalidator: exactly 11 characters matching ^\d{3}[- ]?\d{2}[- ]?\d{4}$.
  if (s.size() != 11) return false;
  auto sep = [](char c) { return c == '-' || c == ' '; };
  return AllDigits(s.substr(0, 3)) && sep(s[3]) && AllDigits(s.substr(4, 2)) && sep(s[6]) &&
         AllDigits(s.substr(7, 4));
}

bool IsHexColor(std::string_view s) {
  if (!s.empty() && s[0] == '#') s.remove_prefix(1);
  return (s.size() == 3 || s.size() == 6) && std::all_of(s.begin(), s.end(), IsHex);
}

bool IsRgbColor(std::string_view s) {
  static const auto* re = new absl::StatusOr<Regex>(Regex::Compile(
      "^rgb\\(\\s*(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])\\s*,\\s*(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|"
      "25[0-5])\\s*,\\s*(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])\\s*\\)$"));
  return re->ok() && (*re)->Search(s);
}

// go-openapi's HostnamePattern with \p{S}\p{L} approximated by "any non-ASCII byte", plus
// the 255-octet and 63-octet label limits.
bool IsHostname(std::string_view s) {
  static const auto* re = new absl::StatusOr<Regex>(Regex::Compile(
      "^([a-zA-Z0-9]((-?[a-zA-Z0-9]{0,62})?)|([a-zA-Z0-9](([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)"
      "(\\.)){1,}([a-zA-Z0-9])(-?[a-zA-Z0-9]){1,62})$"));
  if (s.size() > 255) return false;
  std::string mapped(s);
  for (char& c : mapped) {
    if (static_cast<unsigned char>(c) >= 0x80) c = 'a';
  }
  if (!re->ok() || !(*re)->Search(mapped)) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    size_t end = dot == std::string_view::npos ? s.size() : dot;
    if (end - start > 63) return false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// Approximation of net/mail.ParseAddress: "local@domain" or "Name <local@domain>".
bool IsEmail(std::string_view s) {
  auto addr_ok = [](std::string_view a) {
    size_t at = a.find('@');
    if (at == std::string_view::npos || at == 0 || at + 1 >= a.size()) return false;
    if (a.find('@', at + 1) != std::string_view::npos) return false;
    for (char c : a) {
      if (std::isspace(static_cast<unsigned char>(c)) || c == '<' || c == '>' || c == ',' ||
          static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
    }
    return a.back() != '.';
  };
  if (!s.empty() && s.back() == '>') {
    size_t lt = s.rfind('<');
    if (lt == std::string_view::npos) return false;
    return addr_ok(s.substr(lt + 1, s.size() - lt - 2));
  }
  return addr_ok(s);
}

// Approximation of url.ParseRequestURI: an absolute URI ("scheme:...") or an absolute path,
// without control characters or spaces.
bool IsRequestUri(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == ' ') return false;
  }
  if (s[0] == '/') return true;
  size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (size_t i = 1; i < colon; ++i) {
    char c = s[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.')) {
      return false;
    }
  }
  return true;
}

// time.ParseDuration ("1h30m", "-1.5s", "0") or a Scala-style "<n> <unit>".
bool IsDuration(std::string_view s) {
  std::string_view g = s;
  if (!g.empty() && (g[0] == '+' || g[0] == '-')) g.remove_prefix(1);
  if (g == "0") return true;
  auto go_style = [](std::string_view x) {
    if (x.empty()) return false;
    static const std::array<std::string_view, 7> kUnits = {"ns", "us", "\xC2\xB5s", "\xCE\xBCs",
                                                           "ms", "s",  "m"};
    while (!x.empty()) {
      size_t i = 0;
      bool digits = false;
      while (i < x.size() && IsDigit(x[i])) ++i, digits = true;
      if (i < x.size() && x[i] == '.') {
        ++i;
        while (i < x.size() && IsDigit(x[i])) ++i, digits = true;
      }
      if (!digits) return false;
      x.remove_prefix(i);
      size_t u = 0;
      while (u < x.size() && !IsDigit(x[u]) && x[u] != '.') ++u;
      std::string_view unit = x.substr(0, u);
      if (unit != "h" && std::find(kUnits.begin(), kUnits.end(), unit) == kUnits.end()) {
        return false;
      }
      x.remove_prefix(u);
    }
    return true;
  };
  if (go_style(g)) return true;
  static const auto* re = new absl::StatusOr<Regex>(Regex::Compile(
      "^\\s*\\d+\\s*(ns|nanos?|nanoseconds?|us|micros?|microseconds?|ms|millis?|milliseconds?|s|"
      "secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)\\s*$"));
  return re->ok() && (*re)->Search(s);
}

}  // namespace

std::string EffectiveFormat(std::string_view format) {
  std::string normalized;
  for (char c : format) {
    if (c != '-') normalized += c;
  }
  if (std::find(kSupported.begin(), kSupported.end(), normalized) == kSupported.end()) return "";
  return normalized;
}

bool CheckFormat(std::string_view f, std::string_view v) {
  if (f == "ipv4") return IsIPv4(v);
  if (f == "ipv6") return IsIPv6(v);
  if (f == "cidr") return IsCidr(v);
  if (f == "mac") return IsMac(v);
  if (f == "uuid") return IsUuid(v, 0);
  if (f == "uuid3") return IsUuid(v, '3');
  if (f == "uuid4") return IsUuid(v, '4');
  if (f == "uuid5") return IsUuid(v, '5');
  if (f == "date") return IsDate(v);
  if (f == "datetime") return IsDateTime(v);
  if (f == "byte") return IsBase64(v);
  if (f == "ssn") return IsSsn(v);
  if (f == "hexcolor") return IsHexColor(v);
  if (f == "rgbcolor") return IsRgbColor(v);
  if (f == "hostname") return IsHostname(v);
  if (f == "email") return IsEmail(v);
  if (f == "uri") return IsRequestUri(v);
  if (f == "duration") return IsDuration(v);
  if (f == "bsonobjectid") return v.size() == 24 && std::all_of(v.begin(), v.end(), IsHex);
  return true;  // password, isbn*, creditcard
}

}  // namespace spiderpool::kube::testing::openapi
