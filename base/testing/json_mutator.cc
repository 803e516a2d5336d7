#include "base/testing/json_mutator.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>

namespace spiderpool::base::testing {

JsonMutator::JsonMutator(JsonMutatorOptions options)
    : options_(std::move(options)), rng_(options_.seed) {
  if (options_.seeds.empty()) options_.seeds.push_back(Json::object());
  for (const Json& s : options_.seeds) texts_.push_back(DumpJson(s));
}

size_t JsonMutator::Pick(size_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
}

std::string JsonMutator::Next(bool* structural) {
  if (structural != nullptr) *structural = false;
  if (static_cast<int>(Pick(100)) >= options_.structural_percent) {
    return MutateBytes(texts_[Pick(texts_.size())]);
  }
  if (structural != nullptr) *structural = true;
  return DumpJson(NextTree());
}

Json JsonMutator::NextTree() {
  Json j = options_.seeds[Pick(options_.seeds.size())];
  const size_t edits = static_cast<size_t>(std::max(1, options_.max_tree_edits));
  for (size_t i = 0, n = 1 + Pick(edits); i < n; ++i) MutateTree(&j);
  return j;
}

std::string JsonMutator::MutateBytes(std::string s) {
  static const std::string kTokens[] = {"{", "}", "[", "]", ",", ":", "\"", "null", "-1",
                                        "1e309", "\\u0000", "\xff", "true", "0.5"};
  switch (Pick(4)) {
    case 0:  // bit flips
      for (int i = 0, n = 1 + static_cast<int>(Pick(8)); i < n && !s.empty(); ++i) {
        s[Pick(s.size())] ^= static_cast<char>(1u << Pick(8));
      }
      return s;
    case 1:  // truncation
      return s.substr(0, Pick(s.size() + 1));
    case 2: {  // splice with another seed
      const std::string& other = texts_[Pick(texts_.size())];
      return s.substr(0, Pick(s.size() + 1)) + other.substr(Pick(other.size() + 1));
    }
    default: {  // token insertion or deletion
      const size_t pos = Pick(s.size() + 1);
      if (Pick(2) == 0) {
        s.insert(pos, kTokens[Pick(std::size(kTokens))]);
      } else {
        s.erase(pos, Pick(16));
      }
      return s;
    }
  }
}

Json JsonMutator::RandomScalar() {
  switch (Pick(3)) {
    case 0: return "10.0.0." + std::to_string(Pick(300));
    case 1: return static_cast<int64_t>(Pick(5000));
    default: return nullptr;
  }
}

Json JsonMutator::RandomValue() {
  static const char* const kCommon[] = {"", "\xc3\xa9t\xc3\xa9", "{not json", "9999-12-31T23:59:59Z"};
  switch (Pick(11)) {
    case 0: return nullptr;
    case 1: return Pick(2) == 0;
    case 2: return static_cast<int64_t>(Pick(10000)) - 5000;
    case 3: return Pick(2) ? Json(INT64_MAX) : Json(UINT64_MAX);
    case 4: return Pick(2) ? Json(1.5) : Json(1e300);
    case 5:
      if (!options_.strings.empty()) return options_.strings[Pick(options_.strings.size())];
      [[fallthrough]];
    case 6: return kCommon[Pick(std::size(kCommon))];
    case 7: return Json::object();
    case 8: return Json::array({RandomScalar()});
    case 9: return Json::object({{"key", RandomScalar()}});
    default: {  // a subtree of another seed (right shape, wrong place)
      Json j = options_.seeds[Pick(options_.seeds.size())];
      return *RandomNode(&j);
    }
  }
}

Json* JsonMutator::RandomNode(Json* j, Json** parent, std::string* key, size_t* index) {
  Json* cur = j;
  if (parent != nullptr) *parent = nullptr;
  while ((cur->is_object() || cur->is_array()) && !cur->empty() && Pick(4) != 0) {
    if (parent != nullptr) *parent = cur;
    if (cur->is_object()) {
      auto it = cur->begin();
      std::advance(it, Pick(cur->size()));
      if (key != nullptr) *key = it.key();
      cur = &it.value();
    } else {
      const size_t i = Pick(cur->size());
      if (index != nullptr) *index = i;
      cur = &(*cur)[i];
    }
  }
  return cur;
}

void JsonMutator::MutateTree(Json* j) {
  Json* parent = nullptr;
  std::string key;
  size_t index = 0;
  Json* node = RandomNode(j, &parent, &key, &index);
  switch (Pick(4)) {
    case 0:  // delete
      if (parent != nullptr && parent->is_object()) {
        parent->erase(key);
      } else if (parent != nullptr && parent->is_array()) {
        parent->erase(index);
      } else {
        *node = RandomValue();
      }
      return;
    case 1:  // duplicate an array element / add a key
      if (node->is_array() && !node->empty()) {
        Json copy = (*node)[Pick(node->size())];
        node->push_back(std::move(copy));
        return;
      }
      if (node->is_object()) {
        const std::string k = options_.keys.empty()
                                  ? "x-unknown-" + std::to_string(Pick(3))
                                  : options_.keys[Pick(options_.keys.size())];
        (*node)[k] = RandomValue();
        return;
      }
      *node = RandomValue();
      return;
    default:  // replace
      *node = RandomValue();
      return;
  }
}

}  // namespace spiderpool::base::testing
