#pragma once
// A thread-safe cache of decoded objects keyed by "ns/name" (or "name"), with indexers.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace spiderpool::kube {

template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  // Registers an index; must happen before objects are added.
  void AddIndexer(const std::string& name, IndexFunc fn) {
    std::lock_guard<std::mutex> l(mu_);
    indexers_[name] = std::move(fn);
  }

  Ptr Get(const std::string& key) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }

  std::vector<Ptr> List() const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }

  std::vector<std::string> Keys() const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(k);
    return out;
  }

  size_t Size() const {
    std::lock_guard<std::mutex> l(mu_);
    return items_.size();
  }

  // Objects whose index `index` yields `value`. The built-in index "namespace" exists always.
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<Ptr> out;
    auto idx = indices_.find(index);
    if (idx == indices_.end()) return out;
    auto keys = idx->second.find(value);
    if (keys == idx->second.end()) return out;
    for (const std::string& k : keys->second) out.push_back(items_.at(k));
    return out;
  }

  // Returns the previous object (nullptr if new).
  Ptr Upsert(const std::string& key, Ptr obj) {
    std::lock_guard<std::mutex> l(mu_);
    Ptr old;
    auto it = items_.find(key);
    if (it != items_.end()) {
      old = it->second;
      Unindex(key);
      it->second = obj;
    } else {
      items_.emplace(key, obj);
    }
    Index(key, *obj);
    return old;
  }

  // Returns the removed object (nullptr if absent).
  Ptr Remove(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    Ptr old = it->second;
    Unindex(key);
    items_.erase(it);
    return old;
  }

 private:
  std::vector<std::pair<std::string, std::vector<std::string>>> IndexValues(const T& obj) const {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    out.push_back({"namespace", {obj.metadata.namespace_}});
    for (const auto& [name, fn] : indexers_) out.push_back({name, fn(obj)});
    return out;
  }
  void Index(const std::string& key, const T& obj) {
    std::vector<std::pair<std::string, std::vector<std::string>>>& values = indexed_[key];
    values = IndexValues(obj);
    for (const auto& [name, vs] : values) {
      for (const std::string& v : vs) indices_[name][v].insert(key);
    }
  }
  // From the values Index computed: an index function may be costly (the IP GC's parses
  // every allocation record of a pool), and an update would run it on the old object again.
  void Unindex(const std::string& key) {
    auto at = indexed_.find(key);
    if (at == indexed_.end()) return;
    for (const auto& [name, values] : at->second) {
      for (const std::string& v : values) {
        auto& m = indices_[name];
        auto it = m.find(v);
        if (it == m.end()) continue;
        it->second.erase(key);
        if (it->second.empty()) m.erase(it);
      }
    }
    indexed_.erase(at);
  }

  mutable std::mutex mu_;
  std::map<std::string, Ptr> items_;                                          // guarded by mu_
  std::map<std::string, IndexFunc> indexers_;                                 // guarded by mu_
  std::map<std::string, std::map<std::string, std::set<std::string>>> indices_;  // guarded by mu_
  // Per key, the index values its object was indexed under.                     // guarded by mu_
  std::map<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>> indexed_;
};

}  // namespace spiderpool::kube
