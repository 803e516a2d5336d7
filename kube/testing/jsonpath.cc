#include "kube/testing/jsonpath.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/strings.h"

namespace spiderpool::kube::testing {

using base::Json;
using base::StrCat;

namespace {

// ---- JSONPath parsing (client-go util/jsonpath grammar) ----

bool IsTerminator(char c) {
  switch (c) {
    case ' ': case '\t': case '\r': case '\n':
    case '.': case ',': case '[': case ']': case '$': case '@': case '{': case '}':
      return true;
    default:
      return false;
  }
}

bool ParseIntText(std::string_view s, int* out) {
  if (s.empty() || s.size() > 10) return false;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
  }
  if (i >= s.size()) return false;
  long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = static_cast<int>(neg ? -v : v);
  return true;
}

absl::Status ParseSteps(std::string_view text, std::vector<JsonPath::Step>* out);

// [start:end:step] per client-go's sliceOperatorRex + parameter rules.
absl::Status ParseSlice(std::string_view text, JsonPath::Step* step) {
  std::string_view parts[3];
  size_t c1 = text.find(':');
  parts[0] = text.substr(0, c1);
  bool has[3] = {true, c1 != std::string_view::npos, false};
  if (has[1]) {
    std::string_view rest = text.substr(c1 + 1);
    size_t c2 = rest.find(':');
    parts[1] = rest.substr(0, c2);
    if (c2 != std::string_view::npos) {
      has[2] = true;
      parts[2] = rest.substr(c2 + 1);
      if (parts[2].find(':') != std::string_view::npos) {
        return absl::InvalidArgumentError(StrCat("invalid array index ", text));
      }
    }
  }
  for (int i = 0; i < 3; ++i) {
    std::string_view p = parts[i];
    for (size_t k = 0; k < p.size(); ++k) {
      if (!((p[k] >= '0' && p[k] <= '9') || (k == 0 && p[k] == '-'))) {
        return absl::InvalidArgumentError(StrCat("invalid array index ", text));
      }
    }
  }
  step->kind = JsonPath::Step::kSlice;
  // start
  if (!parts[0].empty()) {
    if (!ParseIntText(parts[0], &step->start)) {
      return absl::InvalidArgumentError(StrCat("array index ", parts[0], " is not a number"));
    }
    step->start_known = true;
  }
  // end: absent -> derived start+1; ":" with nothing -> unknown
  if (!has[1]) {
    step->end_known = true;
    step->end = step->start + 1;
    step->end_derived = true;
  } else if (!parts[1].empty()) {
    if (!ParseIntText(parts[1], &step->end)) {
      return absl::InvalidArgumentError(StrCat("array index ", parts[1], " is not a number"));
    }
    step->end_known = true;
  }
  if (has[2] && !parts[2].empty()) {
    if (!ParseIntText(parts[2], &step->step)) {
      return absl::InvalidArgumentError(StrCat("array index ", parts[2], " is not a number"));
    }
    step->step_known = true;
  }
  return absl::OkStatus();
}

// Go's strconv.Unquote for "..." / '...' (common escapes).
bool Unquote(std::string_view s, std::string* out) {
  if (s.size() < 2 || s.front() != s.back() || (s.front() != '"' && s.front() != '\'')) {
    return false;
  }
  out->clear();
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    char c = s[i];
    if (c != '\\') {
      *out += c;
      continue;
    }
    if (++i + 1 > s.size() - 1) return false;
    switch (s[i]) {
      case 'n': *out += '\n'; break;
      case 't': *out += '\t'; break;
      case 'r': *out += '\r'; break;
      case '\\': *out += '\\'; break;
      case '"': *out += '"'; break;
      case '\'': *out += '\''; break;
      default: return false;
    }
  }
  return true;
}

absl::Status ParseOperand(std::string_view text, JsonPath::Step* filter) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return absl::InvalidArgumentError("empty filter operand");
  std::string s;
  if (text.front() == '"' || text.front() == '\'') {
    if (!Unquote(text, &s)) {
      return absl::InvalidArgumentError(StrCat("unquote string ", text, " error"));
    }
    filter->right_literal = s;
    return absl::OkStatus();
  }
  if (text == "true" || text == "false") {
    filter->right_literal = text == "true";
    return absl::OkStatus();
  }
  if (text.front() == '-' || text.front() == '+' || (text.front() >= '0' && text.front() <= '9')) {
    int i = 0;
    if (ParseIntText(text, &i)) {
      filter->right_literal = i;
      return absl::OkStatus();
    }
    std::string t(text);
    char* end = nullptr;
    double d = std::strtod(t.c_str(), &end);
    if (end && *end == '\0') {
      filter->right_literal = d;
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(StrCat("cannot parse number ", text));
  }
  return ParseSteps(text, &filter->right_path);
}

absl::Status ParseFilter(std::string_view text, size_t* pos, std::vector<JsonPath::Step>* out) {
  size_t i = *pos + 3;  // after "[?("
  size_t begin = i;
  bool quote_begin = false, quote_end = false;
  char pair = 0;
  while (true) {
    if (i >= text.size() || text[i] == '\n') return absl::InvalidArgumentError("unterminated filter");
    char c = text[i++];
    if (c == '"' || c == '\'') {
      if (!quote_begin) {
        quote_begin = true;
        pair = c;
        continue;
      }
      if (text[i - 2] != '\\' && c == pair) quote_end = true;
    } else if (c == ')') {
      if (quote_begin == quote_end) break;
    }
  }
  if (i >= text.size() || text[i] != ']') {
    return absl::InvalidArgumentError("unclosed array expect ]");
  }
  std::string_view inner = text.substr(begin, i - 1 - begin);
  *pos = i + 1;
  JsonPath::Step f;
  f.kind = JsonPath::Step::kFilter;
  // ^([^!<>=]+)([!<>=]+)(.+?)$
  size_t op_start = inner.find_first_of("!<>=");
  if (op_start == std::string_view::npos || op_start == 0) {
    f.op = "exists";
    absl::Status s = ParseSteps(inner, &f.left);
    if (!s.ok()) return s;
  } else {
    size_t op_end = inner.find_first_not_of("!<>=", op_start);
    if (op_end == std::string_view::npos) return absl::InvalidArgumentError("invalid filter");
    f.op = std::string(inner.substr(op_start, op_end - op_start));
    absl::Status s = ParseSteps(inner.substr(0, op_start), &f.left);
    if (!s.ok()) return s;
    s = ParseOperand(inner.substr(op_end), &f);
    if (!s.ok()) return s;
  }
  out->push_back(std::move(f));
  return absl::OkStatus();
}

absl::Status ParseSteps(std::string_view text, std::vector<JsonPath::Step>* out) {
  size_t pos = 0;
  while (pos < text.size()) {
    std::string_view rest = text.substr(pos);
    if (rest.substr(0, 3) == "[?(") {
      absl::Status s = ParseFilter(text, &pos, out);
      if (!s.ok()) return s;
      continue;
    }
    if (rest.substr(0, 2) == "..") {
      return absl::InvalidArgumentError("recursive descent (..) is not supported");
    }
    char c = text[pos];
    if (c == ' ' || c == '@' || c == '$') {
      ++pos;
      continue;
    }
    if (c == '.') {
      size_t i = pos + 1;
      std::string raw;
      while (i < text.size()) {
        char d = text[i];
        if (d == '\\') {
          raw += d;
          if (i + 1 < text.size()) raw += text[i + 1];
          i += 2;
          continue;
        }
        if (IsTerminator(d)) break;
        raw += d;
        ++i;
      }
      pos = i;
      JsonPath::Step st;
      if (raw == "*") {
        st.kind = JsonPath::Step::kWildcard;
      } else {
        raw.erase(std::remove(raw.begin(), raw.end(), '\\'), raw.end());
        st.field = raw;
      }
      out->push_back(std::move(st));
      continue;
    }
    if (c == '[') {
      size_t close = text.find(']', pos);
      size_t nl = text.find('\n', pos);
      if (close == std::string_view::npos || (nl != std::string_view::npos && nl < close)) {
        return absl::InvalidArgumentError("unterminated array");
      }
      std::string_view inner = text.substr(pos + 1, close - pos - 1);
      pos = close + 1;
      if (inner == "*") inner = ":";
      if (inner.find(',') != std::string_view::npos) {
        return absl::InvalidArgumentError("unions ([a,b]) are not supported");
      }
      if (inner.size() >= 2 && inner.front() == '\'' && inner.back() == '\'' &&
          inner.substr(1, inner.size() - 2).find('\'') == std::string_view::npos) {
        absl::Status s = ParseSteps(StrCat(".", inner.substr(1, inner.size() - 2)), out);
        if (!s.ok()) return s;
        continue;
      }
      JsonPath::Step st;
      absl::Status s = ParseSlice(inner, &st);
      if (!s.ok()) return s;
      out->push_back(std::move(st));
      continue;
    }
    return absl::InvalidArgumentError(
        StrCat("unrecognized character in action: ", std::string(1, c)));
  }
  return absl::OkStatus();
}

// ---- evaluation ----

// Go text/template's basic kinds for comparisons.
enum class BasicKind { kBool, kInt, kFloat, kString, kOther };
BasicKind KindOf(const Json& v) {
  if (v.is_boolean()) return BasicKind::kBool;
  if (v.is_number_integer()) return BasicKind::kInt;
  if (v.is_number_float()) return BasicKind::kFloat;
  if (v.is_string()) return BasicKind::kString;
  return BasicKind::kOther;
}

// Returns false (with *error) when the operands cannot be compared.
bool Compare(const Json& l, const Json& r, const std::string& op, bool* error) {
  BasicKind kl = KindOf(l), kr = KindOf(r);
  if (kl != kr || kl == BasicKind::kOther) {
    *error = true;
    return false;
  }
  int cmp = 0;
  switch (kl) {
    case BasicKind::kBool:
      if (op != "==" && op != "!=") {
        *error = true;
        return false;
      }
      cmp = l.get<bool>() == r.get<bool>() ? 0 : 1;
      break;
    case BasicKind::kInt: {
      int64_t a = l.get<int64_t>(), b = r.get<int64_t>();
      cmp = a < b ? -1 : a > b ? 1 : 0;
      break;
    }
    case BasicKind::kFloat: {
      double a = l.get<double>(), b = r.get<double>();
      cmp = a < b ? -1 : a > b ? 1 : 0;
      break;
    }
    case BasicKind::kString: {
      int c = l.get_ref<const std::string&>().compare(r.get_ref<const std::string&>());
      cmp = c < 0 ? -1 : c > 0 ? 1 : 0;
      break;
    }
    default:
      *error = true;
      return false;
  }
  if (op == "==") return cmp == 0;
  if (op == "!=") return cmp != 0;
  if (op == "<") return cmp < 0;
  if (op == ">") return cmp > 0;
  if (op == "<=") return cmp <= 0;
  if (op == ">=") return cmp >= 0;
  *error = true;
  return false;
}

std::vector<const Json*> Eval(const std::vector<JsonPath::Step>& steps,
                              std::vector<const Json*> cur, bool* error) {
  for (const JsonPath::Step& st : steps) {
    std::vector<const Json*> next;
    switch (st.kind) {
      case JsonPath::Step::kField:
        for (const Json* v : cur) {
          if (v->is_null()) continue;
          if (st.field.empty()) {
            next.push_back(v);
            continue;
          }
          if (!v->is_object()) continue;
          auto it = v->find(st.field);
          if (it != v->end()) next.push_back(&*it);
        }
        break;
      case JsonPath::Step::kWildcard:
        for (const Json* v : cur) {
          if (v->is_object() || v->is_array()) {
            for (const Json& e : *v) next.push_back(&e);
          }
        }
        break;
      case JsonPath::Step::kSlice:
        for (const Json* v : cur) {
          if (v->is_null()) continue;
          if (!v->is_array()) {
            *error = true;
            return {};
          }
          int len = static_cast<int>(v->size());
          int start = st.start_known ? st.start : 0;
          if (start < 0) start += len;
          int end = st.end_known ? st.end : len;
          if (end < 0 || (end == 0 && st.end_derived)) end += len;
          if (end == start) continue;
          if (start >= len || start < 0 || end > len || end < 0 || start > end) {
            *error = true;
            return {};
          }
          int step = st.step_known ? st.step : 1;
          if (step <= 0) {
            *error = true;
            return {};
          }
          for (int i = start; i < end; i += step) next.push_back(&(*v)[static_cast<size_t>(i)]);
        }
        break;
      case JsonPath::Step::kFilter:
        for (const Json* v : cur) {
          if (v->is_null()) continue;
          if (!v->is_array()) {
            *error = true;
            return {};
          }
          for (const Json& e : *v) {
            bool err = false;
            std::vector<const Json*> lefts = Eval(st.left, {&e}, &err);
            if (st.op == "exists") {
              if (!lefts.empty()) next.push_back(&e);
              continue;
            }
            if (err) {
              *error = true;
              return {};
            }
            if (lefts.empty()) continue;
            if (lefts.size() > 1) {
              *error = true;
              return {};
            }
            const Json* right = &st.right_literal;
            if (!st.right_path.empty()) {
              std::vector<const Json*> rights = Eval(st.right_path, {&e}, &err);
              if (err || rights.size() > 1) {
                *error = true;
                return {};
              }
              if (rights.empty()) continue;
              right = rights[0];
            }
            bool cmp_err = false;
            bool pass = Compare(*lefts[0], *right, st.op, &cmp_err);
            if (cmp_err) {
              *error = true;
              return {};
            }
            if (pass) next.push_back(&e);
          }
        }
        break;
    }
    cur = std::move(next);
  }
  return cur;
}

// Go's %v for a float64: strconv 'g' with the shortest precision, %e form when the exponent is
// below -4 or at least 6.
std::string GoFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  // buf = d.ddddde±XX
  std::string s = buf;
  size_t e = s.find('e');
  int exp = std::atoi(s.c_str() + e + 1);
  std::string mant = s.substr(0, e);
  std::string digits;
  for (char c : mant) {
    if (c >= '0' && c <= '9') digits += c;
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int nd = static_cast<int>(digits.size());
  std::string sign = v < 0 ? "-" : "";
  if (exp < -4 || exp >= 6) {
    std::string out = sign + digits.substr(0, 1);
    if (nd > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  if (nd <= exp + 1) return sign + digits + std::string(static_cast<size_t>(exp + 1 - nd), '0');
  return sign + digits.substr(0, static_cast<size_t>(exp + 1)) + "." +
         digits.substr(static_cast<size_t>(exp + 1));
}

bool IntegralFloat(double d) {
  return std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18;
}

}  // namespace

absl::StatusOr<JsonPath> JsonPath::Parse(std::string_view expr) {
  std::string_view e = expr;
  while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
  while (!e.empty() && e.back() == ' ') e.remove_suffix(1);
  if (e.size() >= 2 && e.front() == '{' && e.back() == '}') e = e.substr(1, e.size() - 2);
  JsonPath p;
  absl::Status s = ParseSteps(e, &p.steps_);
  if (!s.ok()) return s;
  return p;
}

std::vector<Json> JsonPath::Find(const Json& root) const {
  bool error = false;
  std::vector<const Json*> found = Eval(steps_, {&root}, &error);
  std::vector<Json> out;
  if (error) return out;
  for (const Json* j : found) out.push_back(*j);
  return out;
}

std::string JsonPathText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (IntegralFloat(d)) return std::to_string(static_cast<int64_t>(d));
    return GoFloat(d);
  }
  if (v.is_null()) return "<nil>";
  return base::DumpJson(v);
}

}  // namespace spiderpool::kube::testing
