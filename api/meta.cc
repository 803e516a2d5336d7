#include "api/meta.h"

#include <algorithm>

namespace spiderpool::api {

bool ObjectMeta::HasFinalizer(std::string_view f) const {
  return std::find(finalizers.begin(), finalizers.end(), f) != finalizers.end();
}

bool ObjectMeta::AddFinalizer(std::string_view f) {
  if (HasFinalizer(f)) return false;
  finalizers.emplace_back(f);
  return true;
}

bool ObjectMeta::RemoveFinalizer(std::string_view f) {
  auto it = std::remove(finalizers.begin(), finalizers.end(), f);
  if (it == finalizers.end()) return false;
  finalizers.erase(it, finalizers.end());
  return true;
}

const OwnerReference* ObjectMeta::ControllerRef() const {
  for (const OwnerReference& r : owner_references) {
    if (r.controller.value_or(false)) return &r;
  }
  return nullptr;
}

bool SetCondition(std::vector<Condition>* conditions, Condition c) {
  for (Condition& existing : *conditions) {
    if (existing.type != c.type) continue;
    if (existing.status == c.status) c.last_transition_time = existing.last_transition_time;
    if (existing == c) return false;
    existing = std::move(c);
    return true;
  }
  conditions->push_back(std::move(c));
  return true;
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const LabelSelectorRequirement& r : match_expressions) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    bool in_values =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !in_values) return false;
    if (r.op == "NotIn" && in_values) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
    if (r.op != "In" && r.op != "NotIn" && r.op != "Exists" && r.op != "DoesNotExist") {
      return false;  // an invalid operator selects nothing (validation reports it)
    }
  }
  return true;
}

}  // namespace spiderpool::api
