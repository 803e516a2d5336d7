#include "base/yaml.h"

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <yaml-cpp/yaml.h>

#include "absl/strings/numbers.h"
#include "base/strings.h"

namespace spiderpool::base {
namespace {

constexpr int kMaxYamlDepth = 128;

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

absl::StatusOr<Json> Convert(const YAML::Node& node, int depth) {
  if (depth > kMaxYamlDepth) {
    return absl::InvalidArgumentError(
        StrCat("invalid YAML: nested deeper than ", kMaxYamlDepth, " levels"));
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      if (node.Tag() == "!") return node.Scalar();  // quoted
      if (node.Tag() == "tag:yaml.org,2002:str") return node.Scalar();
      return ResolvePlainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (const auto& item : node) {
        auto v = Convert(item, depth + 1);
        if (!v.ok()) return v.status();
        arr.push_back(std::move(*v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return absl::InvalidArgumentError("invalid YAML: map keys must be scalars");
        }
        auto v = Convert(kv.second, depth + 1);
        if (!v.ok()) return v.status();
        obj[kv.first.Scalar()] = std::move(*v);
      }
      return obj;
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<Json>> ParseYamlDocuments(std::string_view text) {
  std::vector<Json> out;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    for (const auto& d : docs) {
      if (d.IsNull() || !d.IsDefined()) continue;
      auto j = Convert(d, 0);
      if (!j.ok()) return j.status();
      out.push_back(std::move(*j));
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
