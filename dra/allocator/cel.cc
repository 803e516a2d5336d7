#include "dra/allocator/cel.h"

#include <cctype>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/strings.h"

namespace spiderpool::dra::allocator {

using base::StrCat;

// Named (not anonymous): Expression::Node holds a Value.
namespace cel_internal {

using AttrDomain = std::map<std::string, api::DeviceAttribute>;
using AttrRoot = std::map<std::string, AttrDomain>;

struct Value {
  enum class Kind { kBool, kInt, kString, kList, kRoot, kDomain } kind = Kind::kBool;
  bool b = false;
  int64_t i = 0;
  std::string s;
  std::vector<Value> list;
  const AttrRoot* root = nullptr;
  const AttrDomain* domain = nullptr;
};

std::string_view KindName(Value::Kind k) {
  switch (k) {
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kString: return "string";
    case Value::Kind::kList: return "list";
    case Value::Kind::kRoot:
    case Value::Kind::kDomain: return "map";
  }
  return "?";
}

}  // namespace cel_internal

using cel_internal::AttrDomain;
using cel_internal::AttrRoot;
using cel_internal::KindName;
using cel_internal::Value;

struct Expression::Node {
  enum class Op { kOr, kAnd, kNot, kEq, kNe, kIn, kLiteral, kAccess } op = Op::kLiteral;
  std::shared_ptr<const Node> lhs, rhs;
  Value literal;                  // kLiteral (a list literal too)
  std::vector<std::string> path;  // kAccess: the steps after "device"
};

namespace {

using Node = Expression::Node;
using NodePtr = std::shared_ptr<const Node>;

struct Token {
  enum class Type { kEnd, kString, kInt, kIdent, kPunct } type = Type::kEnd;
  std::string text;  // the string's value, the identifier, the punctuation
  int64_t number = 0;
  size_t offset = 0;
};

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view in) {
  std::vector<Token> out;
  size_t i = 0;
  auto error = [&](size_t at, std::string_view what) {
    return absl::InvalidArgumentError(StrCat("CEL: at offset ", at, ": ", what));
  };
  while (i < in.size()) {
    const char c = in[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.offset = i;
    if (c == '"') {
      t.type = Token::Type::kString;
      ++i;
      bool closed = false;
      while (i < in.size()) {
        char d = in[i++];
        if (d == '"') {
          closed = true;
          break;
        }
        if (d != '\\') {
          t.text.push_back(d);
          continue;
        }
        if (i >= in.size()) break;
        char e = in[i++];
        switch (e) {
          case '\\': t.text.push_back('\\'); break;
          case '"': t.text.push_back('"'); break;
          case 'n': t.text.push_back('\n'); break;
          case 'r': t.text.push_back('\r'); break;
          case 't': t.text.push_back('\t'); break;
          case 'x': {
            if (i + 2 > in.size() || !std::isxdigit(static_cast<unsigned char>(in[i])) ||
                !std::isxdigit(static_cast<unsigned char>(in[i + 1]))) {
              return error(i, "bad \\x escape");
            }
            t.text.push_back(static_cast<char>(std::stoi(std::string(in.substr(i, 2)), nullptr, 16)));
            i += 2;
            break;
          }
          default: return error(i - 1, StrCat("unsupported escape \\", std::string(1, e)));
        }
      }
      if (!closed) return error(t.offset, "unterminated string");
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      t.type = Token::Type::kInt;
      size_t j = i;
      while (j < in.size() && std::isdigit(static_cast<unsigned char>(in[j]))) ++j;
      if (j - i > 18) return error(i, "integer too large");
      t.number = std::stoll(std::string(in.substr(i, j - i)));
      t.text = std::string(in.substr(i, j - i));
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      t.type = Token::Type::kIdent;
      size_t j = i;
      while (j < in.size() && (std::isalnum(static_cast<unsigned char>(in[j])) || in[j] == '_')) ++j;
      t.text = std::string(in.substr(i, j - i));
      i = j;
    } else {
      t.type = Token::Type::kPunct;
      std::string_view two = in.substr(i, 2);
      if (two == "==" || two == "!=" || two == "&&" || two == "||") {
        t.text = std::string(two);
        i += 2;
      } else if (std::string_view("()[],.!").find(c) != std::string_view::npos) {
        t.text = std::string(1, c);
        ++i;
      } else {
        return error(i, StrCat("unsupported character '", std::string(1, c), "'"));
      }
    }
    out.push_back(std::move(t));
  }
  out.push_back(Token{.type = Token::Type::kEnd, .offset = in.size()});
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  absl::StatusOr<NodePtr> ParseAll() {
    auto e = Or();
    if (!e.ok()) return e;
    if (Peek().type != Token::Type::kEnd) return Unexpected("end of expression");
    return e;
  }

 private:
  const Token& Peek() const { return t_[pos_]; }
  bool IsPunct(std::string_view p) const {
    return Peek().type == Token::Type::kPunct && Peek().text == p;
  }
  bool IsIdent(std::string_view id) const {
    return Peek().type == Token::Type::kIdent && Peek().text == id;
  }
  absl::Status Unexpected(std::string_view expected) const {
    const Token& t = Peek();
    std::string got = t.type == Token::Type::kEnd ? "end of expression" : StrCat("'", t.text, "'");
    return absl::InvalidArgumentError(StrCat("CEL: at offset ", t.offset, ": expected ", expected,
                                             ", got ", got, " (unsupported in this CEL subset)"));
  }
  static NodePtr Binary(Node::Op op, NodePtr l, NodePtr r) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->lhs = std::move(l);
    n->rhs = std::move(r);
    return n;
  }

  absl::StatusOr<NodePtr> Or() {
    auto l = And();
    if (!l.ok()) return l;
    NodePtr left = *l;
    while (IsPunct("||")) {
      ++pos_;
      auto r = And();
      if (!r.ok()) return r;
      left = Binary(Node::Op::kOr, left, *r);
    }
    return left;
  }
  absl::StatusOr<NodePtr> And() {
    auto l = Unary();
    if (!l.ok()) return l;
    NodePtr left = *l;
    while (IsPunct("&&")) {
      ++pos_;
      auto r = Unary();
      if (!r.ok()) return r;
      left = Binary(Node::Op::kAnd, left, *r);
    }
    return left;
  }
  absl::StatusOr<NodePtr> Unary() {
    if (IsPunct("!")) {
      ++pos_;
      auto e = Unary();
      if (!e.ok()) return e;
      return Binary(Node::Op::kNot, *e, nullptr);
    }
    return Rel();
  }
  absl::StatusOr<NodePtr> Rel() {
    auto l = Operand();
    if (!l.ok()) return l;
    std::optional<Node::Op> op;
    if (IsPunct("==")) op = Node::Op::kEq;
    else if (IsPunct("!=")) op = Node::Op::kNe;
    else if (IsIdent("in")) op = Node::Op::kIn;
    if (!op) return l;
    ++pos_;
    auto r = Operand();
    if (!r.ok()) return r;
    return Binary(*op, *l, *r);
  }
  absl::StatusOr<Value> Literal() {
    const Token& t = Peek();
    Value v;
    if (t.type == Token::Type::kString) {
      v.kind = Value::Kind::kString;
      v.s = t.text;
    } else if (t.type == Token::Type::kInt) {
      v.kind = Value::Kind::kInt;
      v.i = t.number;
    } else if (IsIdent("true") || IsIdent("false")) {
      v.kind = Value::Kind::kBool;
      v.b = t.text == "true";
    } else {
      return Unexpected("a string, integer or bool literal");
    }
    ++pos_;
    return v;
  }
  absl::StatusOr<NodePtr> Operand() {
    if (IsPunct("(")) {
      ++pos_;
      auto e = Or();
      if (!e.ok()) return e;
      if (!IsPunct(")")) return Unexpected("')'");
      ++pos_;
      return e;
    }
    if (IsPunct("[")) {
      ++pos_;
      auto n = std::make_shared<Node>();
      n->literal.kind = Value::Kind::kList;
      while (!IsPunct("]")) {
        if (!n->literal.list.empty()) {
          if (!IsPunct(",")) return Unexpected("',' or ']'");
          ++pos_;
        }
        auto v = Literal();
        if (!v.ok()) return v.status();
        n->literal.list.push_back(*std::move(v));
      }
      ++pos_;
      return NodePtr(n);
    }
    if (IsIdent("device")) {
      ++pos_;
      auto n = std::make_shared<Node>();
      n->op = Node::Op::kAccess;
      while (true) {
        if (IsPunct(".")) {
          ++pos_;
          if (Peek().type != Token::Type::kIdent) return Unexpected("a field name");
          n->path.push_back(Peek().text);
          ++pos_;
          if (IsPunct("(")) return Unexpected("a field (function calls are not supported)");
        } else if (IsPunct("[")) {
          ++pos_;
          if (Peek().type != Token::Type::kString) return Unexpected("a string key");
          n->path.push_back(Peek().text);
          ++pos_;
          if (!IsPunct("]")) return Unexpected("']'");
          ++pos_;
        } else {
          break;
        }
      }
      return NodePtr(n);
    }
    auto v = Literal();
    if (!v.ok()) return v.status();
    auto n = std::make_shared<Node>();
    n->literal = *std::move(v);
    return NodePtr(n);
  }

  std::vector<Token> t_;
  size_t pos_ = 0;
};

absl::StatusOr<Value> FromAttribute(const api::DeviceAttribute& a, std::string_view name) {
  Value v;
  if (a.bool_value) {
    v.kind = Value::Kind::kBool;
    v.b = *a.bool_value;
  } else if (a.int_value) {
    v.kind = Value::Kind::kInt;
    v.i = *a.int_value;
  } else if (a.string_value) {
    v.kind = Value::Kind::kString;
    v.s = *a.string_value;
  } else {
    return absl::InvalidArgumentError(
        StrCat("attribute ", name, ": only bool, int and string attributes are supported"));
  }
  return v;
}

absl::StatusOr<Value> Access(const std::vector<std::string>& path, const DeviceView& d) {
  if (path.empty()) return absl::InvalidArgumentError("CEL: 'device' itself is not a value here");
  if (path[0] == "driver") {
    if (path.size() > 1) return absl::InvalidArgumentError("CEL: device.driver has no fields");
    return Value{.kind = Value::Kind::kString, .s = d.driver};
  }
  if (path[0] != "attributes") {
    return absl::InvalidArgumentError(
        StrCat("CEL: device.", path[0], " is not supported (only driver and attributes)"));
  }
  if (path.size() == 1) return Value{.kind = Value::Kind::kRoot, .root = &d.attributes};
  auto dom = d.attributes.find(path[1]);
  if (dom == d.attributes.end()) {
    // An empty domain: CEL sees an empty map for a domain the device has no attribute in.
    static const AttrDomain kEmpty;
    if (path.size() == 2) return Value{.kind = Value::Kind::kDomain, .domain = &kEmpty};
    return absl::InvalidArgumentError(StrCat("no such key: ", path[2]));
  }
  if (path.size() == 2) return Value{.kind = Value::Kind::kDomain, .domain = &dom->second};
  if (path.size() > 3) return absl::InvalidArgumentError("CEL: attributes have no fields");
  auto a = dom->second.find(path[2]);
  if (a == dom->second.end()) return absl::InvalidArgumentError(StrCat("no such key: ", path[2]));
  return FromAttribute(a->second, path[2]);
}

bool SameScalar(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kBool: return a.b == b.b;
    case Value::Kind::kInt: return a.i == b.i;
    case Value::Kind::kString: return a.s == b.s;
    default: return false;
  }
}

absl::StatusOr<Value> Eval(const Node& n, const DeviceView& d);

absl::StatusOr<bool> EvalBool(const Node& n, const DeviceView& d) {
  auto v = Eval(n, d);
  if (!v.ok()) return v.status();
  if (v->kind != Value::Kind::kBool) {
    return absl::InvalidArgumentError(StrCat("CEL: expected bool, got ", KindName(v->kind)));
  }
  return v->b;
}

absl::StatusOr<Value> Eval(const Node& n, const DeviceView& d) {
  auto boolean = [](bool b) { return Value{.kind = Value::Kind::kBool, .b = b}; };
  switch (n.op) {
    case Node::Op::kLiteral: return n.literal;
    case Node::Op::kAccess: return Access(n.path, d);
    case Node::Op::kNot: {
      auto b = EvalBool(*n.lhs, d);
      if (!b.ok()) return b.status();
      return boolean(!*b);
    }
    case Node::Op::kAnd:
    case Node::Op::kOr: {
      const bool decisive = n.op == Node::Op::kOr;  // true decides ||, false decides &&
      auto l = EvalBool(*n.lhs, d);
      if (l.ok() && *l == decisive) return boolean(decisive);
      auto r = EvalBool(*n.rhs, d);
      if (r.ok() && *r == decisive) return boolean(decisive);
      if (!l.ok()) return l.status();
      if (!r.ok()) return r.status();
      return boolean(!decisive);
    }
    case Node::Op::kEq:
    case Node::Op::kNe: {
      auto l = Eval(*n.lhs, d);
      if (!l.ok()) return l;
      auto r = Eval(*n.rhs, d);
      if (!r.ok()) return r;
      if (l->kind != r->kind || l->kind == Value::Kind::kList || l->kind == Value::Kind::kRoot ||
          l->kind == Value::Kind::kDomain) {
        return absl::InvalidArgumentError(StrCat("CEL: no such overload: ", KindName(l->kind),
                                                 n.op == Node::Op::kEq ? " == " : " != ",
                                                 KindName(r->kind)));
      }
      return boolean(SameScalar(*l, *r) == (n.op == Node::Op::kEq));
    }
    case Node::Op::kIn: {
      auto l = Eval(*n.lhs, d);
      if (!l.ok()) return l;
      auto r = Eval(*n.rhs, d);
      if (!r.ok()) return r;
      if (r->kind == Value::Kind::kList) {
        for (const Value& e : r->list) {
          if (SameScalar(*l, e)) return boolean(true);
        }
        return boolean(false);
      }
      if ((r->kind == Value::Kind::kRoot || r->kind == Value::Kind::kDomain) &&
          l->kind == Value::Kind::kString) {
        return boolean(r->kind == Value::Kind::kRoot ? r->root->contains(l->s)
                                                     : r->domain->contains(l->s));
      }
      return absl::InvalidArgumentError(StrCat("CEL: no such overload: ", KindName(l->kind),
                                               " in ", KindName(r->kind)));
    }
  }
  return absl::InternalError("CEL: bad node");
}

}  // namespace

DeviceView DeviceView::Of(std::string_view driver, const api::Device& device) {
  DeviceView v;
  v.driver = std::string(driver);
  for (const auto& [name, value] : device.attributes) {
    const size_t slash = name.find('/');
    if (slash == std::string::npos) {
      v.attributes[std::string(driver)][name] = value;
    } else {
      v.attributes[name.substr(0, slash)][name.substr(slash + 1)] = value;
    }
  }
  return v;
}

absl::StatusOr<Expression> Expression::Parse(std::string_view text) {
  auto tokens = Tokenize(text);
  if (!tokens.ok()) return tokens.status();
  Parser p(*std::move(tokens));
  auto root = p.ParseAll();
  if (!root.ok()) return root.status();
  Expression e;
  e.text_ = std::string(text);
  e.root_ = *std::move(root);
  return e;
}

absl::StatusOr<bool> Expression::Evaluate(const DeviceView& device) const {
  return EvalBool(*root_, device);
}

}  // namespace spiderpool::dra::allocator
