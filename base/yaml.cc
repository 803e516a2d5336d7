#include "base/yaml.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <vector>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "absl/strings/numbers.h"
#include "base/strings.h"

namespace spiderpool::base {
namespace {

constexpr size_t kMaxYamlDepth = 128;
constexpr size_t kMaxYamlNodes = 2'000'000;
constexpr int kMaxYamlDocuments = 100'000;

bool IsOneOf(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (s == w) return true;
  }
  return false;
}

Json ResolvePlainScalar(const std::string& s) {
  if (IsOneOf(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (IsOneOf(s, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"})) {
    return true;
  }
  if (IsOneOf(s, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"})) {
    return false;
  }
  static const std::regex kInt("[-+]?(0|[1-9][0-9]*)");
  static const std::regex kFloat("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  if (std::regex_match(s, kInt)) {
    int64_t v;
    if (absl::SimpleAtoi(s, &v)) return v;
    uint64_t u;
    if (absl::SimpleAtoi(s, &u)) return u;
  }
  if (std::regex_match(s, kFloat)) {
    double d;
    if (absl::SimpleAtod(s, &d)) return d;
  }
  return s;
}

// Builds Json straight from the parser's events (no YAML::Node tree): bounded depth, a node
// budget that alias expansion also spends ("billion laughs"), and scalar resolution from the
// tag the parser reports ("!" = quoted, "?" = plain).
class JsonBuilder : public YAML::EventHandler {
 public:
  absl::Status status;
  Json root;
  bool has_root = false;
  size_t doc_start = 0;

  void OnDocumentStart(const YAML::Mark& mark) override { doc_start = mark.pos; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override {
    if (KeyExpected()) return SetKey("null");
    Add(nullptr, anchor);
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) return Fail("invalid YAML: unknown alias");
    if (KeyExpected()) return Fail("invalid YAML: map keys must be scalars");
    Spend(CountNodes(it->second));
    Add(it->second, 0);
  }
  void OnScalar(const YAML::Mark&, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (KeyExpected()) return SetKey(value);
    const bool quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
    Add(quoted ? Json(value) : ResolvePlainScalar(value), anchor);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Push(Json::array(), false, anchor);
  }
  void OnSequenceEnd() override { Pop(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Push(Json::object(), true, anchor);
  }
  void OnMapEnd() override { Pop(); }

 private:
  struct Frame {
    Json value;
    bool is_map = false;
    bool expecting_key = true;
    std::string key;
    YAML::anchor_t anchor = 0;
  };

  static size_t CountNodes(const Json& j) {
    size_t n = 1;
    if (j.is_structured()) {
      for (const auto& c : j) n += CountNodes(c);
    }
    return n;
  }
  void Fail(std::string msg) {
    if (status.ok()) status = absl::InvalidArgumentError(msg);
  }
  void Spend(size_t n) {
    nodes_ += n;
    if (nodes_ > kMaxYamlNodes) Fail(StrCat("invalid YAML: more than ", kMaxYamlNodes, " nodes"));
  }
  bool KeyExpected() const {
    return !stack_.empty() && stack_.back().is_map && stack_.back().expecting_key;
  }
  void SetKey(std::string key) {
    stack_.back().key = std::move(key);
    stack_.back().expecting_key = false;
  }
  void Push(Json v, bool is_map, YAML::anchor_t anchor) {
    if (KeyExpected()) Fail("invalid YAML: map keys must be scalars");
    if (stack_.size() >= kMaxYamlDepth) {
      Fail(StrCat("invalid YAML: nested deeper than ", kMaxYamlDepth, " levels"));
    }
    Spend(1);
    stack_.push_back(Frame{std::move(v), is_map, true, "", anchor});
  }
  void Pop() {
    if (stack_.empty()) return Fail("invalid YAML: unbalanced collection");
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Add(std::move(f.value), f.anchor, /*counted=*/true);
  }
  void Add(Json v, YAML::anchor_t anchor, bool counted = false) {
    if (!status.ok()) return;
    if (!counted) Spend(1);
    if (anchor != 0) anchors_[anchor] = v;
    if (stack_.empty()) {
      root = std::move(v);
      has_root = true;
      return;
    }
    Frame& top = stack_.back();
    if (!top.is_map) {
      top.value.push_back(std::move(v));
      return;
    }
    top.value[top.key] = std::move(v);
    top.expecting_key = true;
  }

  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Json> anchors_;
  size_t nodes_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<Json>> ParseYamlDocuments(std::string_view text) {
  std::vector<Json> out;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    size_t last_start = std::string::npos;
    for (int docs = 0;; ++docs) {
      JsonBuilder b;
      if (!parser.HandleNextDocument(b)) break;
      if (!b.status.ok()) return b.status;
      // yaml-cpp 0.7 can report the same empty document forever on some malformed input
      // (jbeder/yaml-cpp#1040): stop when a document does not advance the stream.
      if (b.doc_start == last_start || docs >= kMaxYamlDocuments) {
        return absl::InvalidArgumentError("invalid YAML: the parser made no progress");
      }
      last_start = b.doc_start;
      if (b.has_root && !b.root.is_null()) out.push_back(std::move(b.root));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat("invalid YAML: ", e.what()));
  }
  return out;
}

absl::StatusOr<Json> ParseYaml(std::string_view text) {
  auto docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status();
  if (docs->size() != 1) {
    return absl::InvalidArgumentError(
        StrCat("expected one YAML document, found ", docs->size()));
  }
  return std::move((*docs)[0]);
}

}  // namespace spiderpool::base
