// Pruning of unknown fields (apiextensions pruning/algorithm.go) and defaulting
// (defaulting/prunenulls.go + algorithm.go) of structural schemas.

#include <string>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "kube/testing/openapi/formats.h"
#include "kube/testing/openapi/go_format.h"
#include "kube/testing/openapi/schema.h"
#include "kube/testing/openapi/schema_internal.h"

namespace spiderpool::kube::testing::openapi::internal {

using base::StrCat;

namespace {

bool IsMetaField(const std::string& k) {
  return k == "apiVersion" || k == "kind" || k == "metadata";
}

class Pruner {
 public:
  explicit Pruner(std::vector<std::string>* out) : out_(out) {}

  // `embedded` marks the resource root / x-kubernetes-embedded-resource objects.
  void Prune(Json* x, const SchemaNode* s, bool embedded, const std::string& path) {
    if (s != nullptr && s->preserve_unknown_fields) {
      SkipPrune(x, s, embedded || s->embedded_resource, path);
      return;
    }
    if (x->is_object()) {
      if (s == nullptr) {
        for (auto it = x->begin(); it != x->end(); ++it) Record(Child(path, it.key()));
        *x = Json::object();
        return;
      }
      bool emb = embedded || s->embedded_resource;
      for (auto it = x->begin(); it != x->end();) {
        const std::string& k = it.key();
        if (emb && IsMetaField(k)) {
          ++it;
          continue;
        }
        auto prop = s->properties.find(k);
        if (prop != s->properties.end()) {
          Prune(&it.value(), prop->second.get(), false, Child(path, k));
          ++it;
        } else if (s->additional_properties_kind != SchemaNode::Additional::kUnset) {
          Prune(&it.value(), s->additional_properties.get(), false, Child(path, k));
          ++it;
        } else {
          if (!IsMetaField(k) || !path.empty()) Record(Child(path, k));
          it = x->erase(it);
        }
      }
    } else if (x->is_array()) {
      const SchemaNode* items = s == nullptr ? nullptr : s->items.get();
      for (size_t i = 0; i < x->size(); ++i) Prune(&(*x)[i], items, false, Index(path, i));
    }
  }

 private:
  void SkipPrune(Json* x, const SchemaNode* s, bool embedded, const std::string& path) {
    if (s == nullptr) return;
    if (x->is_object()) {
      for (auto it = x->begin(); it != x->end(); ++it) {
        const std::string& k = it.key();
        if (embedded && IsMetaField(k)) continue;
        auto prop = s->properties.find(k);
        if (prop != s->properties.end()) {
          Prune(&it.value(), prop->second.get(), false, Child(path, k));
        } else if (s->additional_properties_kind != SchemaNode::Additional::kUnset) {
          Prune(&it.value(), s->additional_properties.get(), false, Child(path, k));
        }
      }
    } else if (x->is_array()) {
      for (size_t i = 0; i < x->size(); ++i) {
        SkipPrune(&(*x)[i], s->items.get(), false, Index(path, i));
      }
    }
  }

  void Record(std::string path) {
    if (out_ != nullptr) out_->push_back(std::move(path));
  }

  std::vector<std::string>* out_;
};

}  // namespace

void PruneUnknownFields(Json* x, const SchemaNode* s, bool embedded,
                        std::vector<std::string>* pruned) {
  Pruner(pruned).Prune(x, s, embedded, "");
}

// ---- Defaulting (defaulting/prunenulls.go + algorithm.go) ------------------------------------

const SchemaNode* FieldSchema(const SchemaNode* s, const std::string& k) {
  if (s == nullptr) return nullptr;
  auto it = s->properties.find(k);
  if (it != s->properties.end()) return it->second.get();
  if (s->additional_properties_kind == SchemaNode::Additional::kSchema) {
    return s->additional_properties.get();
  }
  return nullptr;
}

void PruneNonNullableNullsWithoutDefaults(Json* x, const SchemaNode* s) {
  if (x->is_object()) {
    for (auto it = x->begin(); it != x->end();) {
      const SchemaNode* fs = FieldSchema(s, it.key());
      if (it.value().is_null() && fs != nullptr && !fs->nullable && !fs->default_value) {
        it = x->erase(it);
      } else {
        PruneNonNullableNullsWithoutDefaults(&it.value(), fs);
        ++it;
      }
    }
  } else if (x->is_array()) {
    const SchemaNode* items = s == nullptr ? nullptr : s->items.get();
    for (auto& e : *x) PruneNonNullableNullsWithoutDefaults(&e, items);
  }
}

bool IsNonNullableNull(const Json& x, const SchemaNode* s) {
  return x.is_null() && s != nullptr && !s->nullable;
}

void ApplyDefaults(Json* x, const SchemaNode* s) {
  if (s == nullptr) return;
  if (x->is_object()) {
    for (const auto& [k, prop] : s->properties) {
      if (!prop->default_value) continue;
      auto it = x->find(k);
      if (it == x->end() || IsNonNullableNull(*it, prop.get())) (*x)[k] = *prop->default_value;
    }
    for (auto it = x->begin(); it != x->end(); ++it) {
      auto prop = s->properties.find(it.key());
      if (prop != s->properties.end()) {
        ApplyDefaults(&it.value(), prop->second.get());
      } else if (s->additional_properties_kind == SchemaNode::Additional::kSchema) {
        const SchemaNode* ap = s->additional_properties.get();
        if (IsNonNullableNull(it.value(), ap)) {
          it.value() = ap->default_value ? *ap->default_value : Json(nullptr);
        }
        ApplyDefaults(&it.value(), ap);
      }
    }
  } else if (x->is_array()) {
    const SchemaNode* items = s->items.get();
    for (auto& e : *x) {
      if (IsNonNullableNull(e, items))
        e = items->default_value ? *items->default_value : Json(nullptr);
      ApplyDefaults(&e, items);
    }
  }
}

}  // namespace spiderpool::kube::testing::openapi::internal
