#include "api/labels.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_join.h"
#include "api/names.h"
#include "base/strings.h"

namespace spiderpool::api {
namespace {

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = neg ? -v : v;
  return true;
}

std::string_view OpString(SelectorOperator op) {
  switch (op) {
    case SelectorOperator::kEquals: return "=";
    case SelectorOperator::kNotEquals: return "!=";
    case SelectorOperator::kIn: return "in";
    case SelectorOperator::kNotIn: return "notin";
    case SelectorOperator::kExists: return "exists";
    case SelectorOperator::kDoesNotExist: return "!";
    case SelectorOperator::kGreaterThan: return "gt";
    case SelectorOperator::kLessThan: return "lt";
  }
  return "?";
}

// ---- label selector lexer ----
enum class Tok { kIdent, kNot, kEq, kDoubleEq, kNotEq, kGt, kLt, kComma, kOpen, kClose, kEnd };

struct Token {
  Tok kind;
  std::string text;
};

bool IsSpecial(char c) {
  return c == '!' || c == '=' || c == ',' || c == '(' || c == ')' || c == '<' || c == '>';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::vector<Token> Lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    switch (c) {
      case '!':
        if (i + 1 < s.size() && s[i + 1] == '=') {
          out.push_back({Tok::kNotEq, "!="});
          i += 2;
        } else {
          out.push_back({Tok::kNot, "!"});
          ++i;
        }
        continue;
      case '=':
        if (i + 1 < s.size() && s[i + 1] == '=') {
          out.push_back({Tok::kDoubleEq, "=="});
          i += 2;
        } else {
          out.push_back({Tok::kEq, "="});
          ++i;
        }
        continue;
      case ',': out.push_back({Tok::kComma, ","}); ++i; continue;
      case '(': out.push_back({Tok::kOpen, "("}); ++i; continue;
      case ')': out.push_back({Tok::kClose, ")"}); ++i; continue;
      case '<': out.push_back({Tok::kLt, "<"}); ++i; continue;
      case '>': out.push_back({Tok::kGt, ">"}); ++i; continue;
      default: break;
    }
    size_t j = i;
    while (j < s.size() && !IsSpace(s[j]) && !IsSpecial(s[j])) ++j;
    out.push_back({Tok::kIdent, std::string(s.substr(i, j - i))});
    i = j;
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text), toks_(Lex(text)) {}

  absl::StatusOr<Selector> Parse() {
    Selector sel;
    if (Peek().kind == Tok::kEnd) return sel;
    while (true) {
      absl::StatusOr<LabelRequirement> req = ParseRequirement();
      if (!req.ok()) return req.status();
      absl::Status st = sel.Add(*std::move(req));
      if (!st.ok()) return st;
      const Token& t = Next();
      if (t.kind == Tok::kEnd) break;
      if (t.kind != Tok::kComma) {
        return Error(base::StrCat("found '", t.text, "', expected: ',' or 'end of string'"));
      }
      if (Peek().kind == Tok::kEnd) return Error("found 'end of string', expected: a requirement");
    }
    return sel;
  }

 private:
  const Token& Peek() const { return toks_[pos_]; }
  const Token& Next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  absl::Status Error(std::string_view msg) const {
    return absl::InvalidArgumentError(
        base::StrCat("unable to parse label selector \"", text_, "\": ", msg));
  }

  absl::StatusOr<LabelRequirement> ParseRequirement() {
    LabelRequirement req;
    if (Peek().kind == Tok::kNot) {
      Next();
      const Token& key = Next();
      if (key.kind != Tok::kIdent) {
        return Error(base::StrCat("found '", key.text.empty() ? "end of string" : key.text,
                                  "', expected: identifier after '!'"));
      }
      req.key = key.text;
      req.op = SelectorOperator::kDoesNotExist;
      if (Peek().kind != Tok::kComma && Peek().kind != Tok::kEnd) {
        return Error(base::StrCat("found '", Peek().text, "', expected: ',' or 'end of string'"));
      }
      return req;
    }
    const Token& key = Next();
    if (key.kind != Tok::kIdent) {
      return Error(base::StrCat("found '", key.text.empty() ? "end of string" : key.text,
                                "', expected: !, identifier, or 'end of string'"));
    }
    req.key = key.text;
    const Token& op = Peek();
    switch (op.kind) {
      case Tok::kComma:
      case Tok::kEnd:
        req.op = SelectorOperator::kExists;
        return req;
      case Tok::kEq:
      case Tok::kDoubleEq:
      case Tok::kNotEq:
      case Tok::kGt:
      case Tok::kLt: {
        Next();
        req.op = op.kind == Tok::kNotEq ? SelectorOperator::kNotEquals
                 : op.kind == Tok::kGt  ? SelectorOperator::kGreaterThan
                 : op.kind == Tok::kLt  ? SelectorOperator::kLessThan
                                        : SelectorOperator::kEquals;
        const Token& v = Peek();
        if (v.kind == Tok::kIdent) {
          req.values.push_back(Next().text);
        } else if (v.kind == Tok::kComma || v.kind == Tok::kEnd) {
          req.values.push_back("");
        } else {
          return Error(base::StrCat("found '", v.text, "', expected: identifier"));
        }
        return req;
      }
      case Tok::kIdent: {
        if (op.text != "in" && op.text != "notin") break;
        Next();
        req.op = op.text == "in" ? SelectorOperator::kIn : SelectorOperator::kNotIn;
        if (Next().kind != Tok::kOpen) {
          return Error(base::StrCat("expected '(' after '", OpString(req.op), "'"));
        }
        // values: ident? (',' ident?)* ')'
        if (Peek().kind == Tok::kClose) {
          Next();
          return req;  // empty set; rejected by Add with a clear message
        }
        while (true) {
          const Token& v = Peek();
          if (v.kind == Tok::kIdent) {
            req.values.push_back(Next().text);
          } else if (v.kind == Tok::kComma || v.kind == Tok::kClose) {
            req.values.push_back("");
          } else {
            return Error(base::StrCat("found '", v.text.empty() ? "end of string" : v.text,
                                      "', expected: ',', ')' or identifier"));
          }
          const Token& sep = Next();
          if (sep.kind == Tok::kClose) break;
          if (sep.kind != Tok::kComma) {
            return Error(base::StrCat("found '", sep.text.empty() ? "end of string" : sep.text,
                                      "', expected: ',' or ')'"));
          }
        }
        return req;
      }
      default:
        break;
    }
    return Error(base::StrCat("found '", op.text,
                              "', expected: '=', '!=', '==', 'in', 'notin', '<', '>', ',' or "
                              "'end of string'"));
  }

  std::string_view text_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
};

}  // namespace

Labels LabelsOf(const base::Json& object) {
  Labels out;
  if (!object.is_object()) return out;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return out;
  auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return out;
  for (auto it = labels->begin(); it != labels->end(); ++it) {
    if (it.value().is_string()) out.emplace(it.key(), it.value().get_ref<const std::string&>());
  }
  return out;
}

bool LabelRequirement::Matches(const Labels& labels) const {
  auto it = labels.find(key);
  bool has = it != labels.end();
  switch (op) {
    case SelectorOperator::kEquals:
      return has && !values.empty() && it->second == values[0];
    case SelectorOperator::kNotEquals:
      return !has || values.empty() || it->second != values[0];
    case SelectorOperator::kIn:
      return has && std::find(values.begin(), values.end(), it->second) != values.end();
    case SelectorOperator::kNotIn:
      return !has || std::find(values.begin(), values.end(), it->second) == values.end();
    case SelectorOperator::kExists:
      return has;
    case SelectorOperator::kDoesNotExist:
      return !has;
    case SelectorOperator::kGreaterThan:
    case SelectorOperator::kLessThan: {
      int64_t have = 0, want = 0;
      if (!has || values.size() != 1 || !ParseInt64(it->second, &have) ||
          !ParseInt64(values[0], &want)) {
        return false;
      }
      return op == SelectorOperator::kGreaterThan ? have > want : have < want;
    }
  }
  return false;
}

std::string LabelRequirement::String() const {
  switch (op) {
    case SelectorOperator::kEquals: return base::StrCat(key, "=", values.empty() ? "" : values[0]);
    case SelectorOperator::kNotEquals:
      return base::StrCat(key, "!=", values.empty() ? "" : values[0]);
    case SelectorOperator::kIn: return base::StrCat(key, " in (", absl::StrJoin(values, ","), ")");
    case SelectorOperator::kNotIn:
      return base::StrCat(key, " notin (", absl::StrJoin(values, ","), ")");
    case SelectorOperator::kExists: return key;
    case SelectorOperator::kDoesNotExist: return base::StrCat("!", key);
    case SelectorOperator::kGreaterThan:
      return base::StrCat(key, ">", values.empty() ? "" : values[0]);
    case SelectorOperator::kLessThan:
      return base::StrCat(key, "<", values.empty() ? "" : values[0]);
  }
  return key;
}

Selector Selector::Nothing() {
  Selector s;
  s.nothing_ = true;
  return s;
}

absl::Status Selector::Add(LabelRequirement r) {
  if (std::vector<std::string> errs = IsQualifiedName(r.key); !errs.empty()) {
    return absl::InvalidArgumentError(
        base::StrCat("invalid label key \"", r.key, "\": ", absl::StrJoin(errs, "; ")));
  }
  switch (r.op) {
    case SelectorOperator::kIn:
    case SelectorOperator::kNotIn:
      if (r.values.empty()) {
        return absl::InvalidArgumentError(base::StrCat(
            "invalid requirement on \"", r.key,
            "\": for 'in', 'notin' operators, values set can't be empty"));
      }
      break;
    case SelectorOperator::kEquals:
    case SelectorOperator::kNotEquals:
      if (r.values.size() != 1) {
        return absl::InvalidArgumentError(base::StrCat(
            "invalid requirement on \"", r.key,
            "\": exact-match compatibility requires one single value"));
      }
      break;
    case SelectorOperator::kExists:
    case SelectorOperator::kDoesNotExist:
      if (!r.values.empty()) {
        return absl::InvalidArgumentError(base::StrCat(
            "invalid requirement on \"", r.key,
            "\": values set must be empty for exists and does not exist"));
      }
      break;
    case SelectorOperator::kGreaterThan:
    case SelectorOperator::kLessThan: {
      int64_t v = 0;
      if (r.values.size() != 1 || !ParseInt64(r.values[0], &v)) {
        return absl::InvalidArgumentError(base::StrCat(
            "invalid requirement on \"", r.key,
            "\": for 'Gt', 'Lt' operators, exactly one integer value is required"));
      }
      break;
    }
  }
  if (r.op != SelectorOperator::kGreaterThan && r.op != SelectorOperator::kLessThan) {
    for (const std::string& v : r.values) {
      if (std::vector<std::string> errs = IsValidLabelValue(v); !errs.empty()) {
        return absl::InvalidArgumentError(base::StrCat("invalid label value \"", v, "\" for key \"",
                                                       r.key, "\": ", absl::StrJoin(errs, "; ")));
      }
    }
  }
  std::sort(r.values.begin(), r.values.end());
  r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
  requirements_.push_back(std::move(r));
  std::stable_sort(requirements_.begin(), requirements_.end(),
                   [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
  return absl::OkStatus();
}

absl::StatusOr<Selector> Selector::Parse(std::string_view text) {
  return Parser(text).Parse();
}

absl::StatusOr<Selector> Selector::FromJson(const base::Json& selector) {
  if (selector.is_null()) return Nothing();
  if (!selector.is_object()) {
    return absl::InvalidArgumentError("label selector must be an object");
  }
  Selector out;
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    if (it.key() != "matchLabels" && it.key() != "matchExpressions") {
      return absl::InvalidArgumentError(
          base::StrCat("label selector: unknown field \"", it.key(), "\""));
    }
  }
  if (auto ml = selector.find("matchLabels"); ml != selector.end() && !ml->is_null()) {
    if (!ml->is_object()) {
      return absl::InvalidArgumentError("matchLabels: must be an object of strings");
    }
    for (auto it = ml->begin(); it != ml->end(); ++it) {
      if (!it.value().is_string()) {
        return absl::InvalidArgumentError(
            base::StrCat("matchLabels[", it.key(), "]: must be a string"));
      }
      absl::Status st = out.Add({it.key(), SelectorOperator::kEquals,
                                 {it.value().get_ref<const std::string&>()}});
      if (!st.ok()) {
        return absl::InvalidArgumentError(
            base::StrCat("matchLabels: ", base::FromAbsl(st.message())));
      }
    }
  }
  if (auto me = selector.find("matchExpressions"); me != selector.end() && !me->is_null()) {
    if (!me->is_array()) return absl::InvalidArgumentError("matchExpressions: must be a list");
    for (size_t i = 0; i < me->size(); ++i) {
      const base::Json& e = (*me)[i];
      std::string path = base::StrCat("matchExpressions[", i, "]");
      if (!e.is_object()) return absl::InvalidArgumentError(path + ": must be an object");
      auto key = e.find("key");
      auto op = e.find("operator");
      if (key == e.end() || !key->is_string()) {
        return absl::InvalidArgumentError(path + ".key: Required value");
      }
      if (op == e.end() || !op->is_string()) {
        return absl::InvalidArgumentError(path + ".operator: Required value");
      }
      LabelRequirement r;
      r.key = key->get<std::string>();
      const std::string& ops = op->get_ref<const std::string&>();
      if (ops == "In") {
        r.op = SelectorOperator::kIn;
      } else if (ops == "NotIn") {
        r.op = SelectorOperator::kNotIn;
      } else if (ops == "Exists") {
        r.op = SelectorOperator::kExists;
      } else if (ops == "DoesNotExist") {
        r.op = SelectorOperator::kDoesNotExist;
      } else {
        return absl::InvalidArgumentError(base::StrCat(
            path, ".operator: Unsupported value: \"", ops,
            "\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\""));
      }
      if (auto vals = e.find("values"); vals != e.end() && !vals->is_null()) {
        if (!vals->is_array()) return absl::InvalidArgumentError(path + ".values: must be a list");
        for (const base::Json& v : *vals) {
          if (!v.is_string()) {
            return absl::InvalidArgumentError(path + ".values: must be a list of strings");
          }
          r.values.push_back(v.get<std::string>());
        }
      }
      absl::Status st = out.Add(std::move(r));
      if (!st.ok()) {
        return absl::InvalidArgumentError(
            base::StrCat(path, ": ", base::FromAbsl(st.message())));
      }
    }
  }
  return out;
}

bool Selector::Matches(const Labels& labels) const {
  if (nothing_) return false;
  for (const LabelRequirement& r : requirements_) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

std::string Selector::String() const {
  std::string out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    if (i) out += ",";
    out += requirements_[i].String();
  }
  return out;
}

// ---- field selectors ----

namespace {

// Splits on unescaped `sep`, keeping escapes in place.
std::vector<std::string_view> SplitUnescaped(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

absl::StatusOr<std::string> UnescapeFieldValue(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    char c = v[i];
    if (c == '\\') {
      if (i + 1 >= v.size()) {
        return absl::InvalidArgumentError(
            base::StrCat("invalid field selector value \"", v, "\": trailing backslash"));
      }
      char n = v[++i];
      if (n != '\\' && n != ',' && n != '=') {
        return absl::InvalidArgumentError(base::StrCat(
            "invalid field selector value \"", v, "\": invalid escape sequence \\", std::string(1, n)));
      }
      out += n;
      continue;
    }
    if (c == ',' || c == '=') {
      return absl::InvalidArgumentError(base::StrCat(
          "invalid field selector value \"", v, "\": unescaped '", std::string(1, c), "'"));
    }
    out += c;
  }
  return out;
}

std::string EscapeFieldValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == ',' || c == '=') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

absl::StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector sel;
  // Trim.
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  if (text.empty()) return sel;
  for (std::string_view term : SplitUnescaped(text, ',')) {
    if (term.empty()) continue;  // like Kubernetes: empty terms are skipped
    size_t i = 0;
    bool found = false;
    FieldRequirement r;
    std::string_view rhs;
    for (; i < term.size(); ++i) {
      if (term[i] == '\\') {
        ++i;
        continue;
      }
      if (term.substr(i, 2) == "!=") {
        r.equals = false;
        rhs = term.substr(i + 2);
      } else if (term.substr(i, 2) == "==") {
        rhs = term.substr(i + 2);
      } else if (term[i] == '=') {
        rhs = term.substr(i + 1);
      } else {
        continue;
      }
      found = true;
      break;
    }
    if (!found) {
      return absl::InvalidArgumentError(base::StrCat(
          "invalid selector: '", text, "'; can't understand '", term, "'"));
    }
    std::string_view lhs = term.substr(0, i);
    while (!lhs.empty() && IsSpace(lhs.back())) lhs.remove_suffix(1);
    while (!lhs.empty() && IsSpace(lhs.front())) lhs.remove_prefix(1);
    if (lhs.empty()) {
      return absl::InvalidArgumentError(base::StrCat(
          "invalid selector: '", text, "'; field name is empty in '", term, "'"));
    }
    auto value = UnescapeFieldValue(rhs);
    if (!value.ok()) return value.status();
    r.field = std::string(lhs);
    r.value = *std::move(value);
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

bool FieldSelector::Matches(const std::map<std::string, std::string>& fields) const {
  return Matches([&fields](const std::string& f) -> std::optional<std::string> {
    auto it = fields.find(f);
    if (it == fields.end()) return std::nullopt;
    return it->second;
  });
}

std::string FieldSelector::String() const {
  std::string out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    if (i) out += ",";
    out += requirements_[i].field;
    out += requirements_[i].equals ? "=" : "!=";
    out += EscapeFieldValue(requirements_[i].value);
  }
  return out;
}

}  // namespace spiderpool::api
