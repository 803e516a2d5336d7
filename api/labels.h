#pragma once
// Label and field selectors, as Kubernetes parses and evaluates them.
//
//   auto sel = Selector::Parse("app=web,tier!=db,env in (prod,qa),!legacy");
//   if (sel.ok() && sel->Matches(LabelsOf(object))) ...
//
// Selector::FromJson builds the same thing from a metav1.LabelSelector JSON object
// (matchLabels + matchExpressions), with metav1.LabelSelectorAsSelector's semantics: an empty
// selector ({}) matches everything, a null selector matches nothing.
// FieldSelector parses "metadata.name=x,spec.nodeName!=n1" (=, ==, !=; `\` escapes , = and \).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"

namespace spiderpool::api {

using Labels = std::map<std::string, std::string>;

// metadata.labels of a Kubernetes object (non-string values are ignored).
Labels LabelsOf(const base::Json& object);

enum class SelectorOperator {
  kEquals,        // "=" (also "==")
  kNotEquals,     // "!="
  kIn,            // "in (a,b)"
  kNotIn,         // "notin (a,b)"
  kExists,        // "key"
  kDoesNotExist,  // "!key"
  kGreaterThan,   // "key>1"
  kLessThan,      // "key<1"
};

struct LabelRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kExists;
  std::vector<std::string> values;  // sorted for in/notin

  bool Matches(const Labels& labels) const;
  std::string String() const;  // canonical text, e.g. "env in (prod,qa)"
};

class Selector {
 public:
  // Matches everything.
  Selector() = default;
  static Selector Everything() { return Selector(); }
  static Selector Nothing();

  // Parses the string form. Whitespace around tokens is allowed. Errors are InvalidArgument
  // with a message naming the offending requirement.
  static absl::StatusOr<Selector> Parse(std::string_view text);
  // From a metav1.LabelSelector JSON value. null -> Nothing(); {} -> Everything().
  static absl::StatusOr<Selector> FromJson(const base::Json& selector);

  bool Matches(const Labels& labels) const;
  bool Matches(const base::Json& object) const { return Matches(LabelsOf(object)); }
  bool Empty() const { return !nothing_ && requirements_.empty(); }
  bool MatchesNothing() const { return nothing_; }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }
  // Canonical string form (requirements sorted by key); "" for everything.
  std::string String() const;

  // Adds one requirement after validating key, operator and values.
  absl::Status Add(LabelRequirement requirement);

 private:
  std::vector<LabelRequirement> requirements_;
  bool nothing_ = false;
};

struct FieldRequirement {
  std::string field;  // "metadata.name"
  bool equals = true;  // false for "!="
  std::string value;
};

class FieldSelector {
 public:
  FieldSelector() = default;  // matches everything
  static absl::StatusOr<FieldSelector> Parse(std::string_view text);

  // `get` returns the value of a field, or nullopt when the object has no such field
  // (compared as ""). 
  template <typename Getter>
  bool Matches(const Getter& get) const {
    for (const FieldRequirement& r : requirements_) {
      std::optional<std::string> v = get(r.field);
      bool eq = v.value_or("") == r.value;
      if (eq != r.equals) return false;
    }
    return true;
  }
  bool Matches(const std::map<std::string, std::string>& fields) const;
  bool Empty() const { return requirements_.empty(); }
  const std::vector<FieldRequirement>& requirements() const { return requirements_; }
  std::string String() const;

 private:
  std::vector<FieldRequirement> requirements_;
};

}  // namespace spiderpool::api
