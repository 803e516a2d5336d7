#include "operator/coordinator/cidrs.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "base/ip.h"
#include "base/yaml.h"

namespace spiderpool::op::coordinator {

namespace {

bool IsSeparator(char c) { return c == ',' || std::isspace(static_cast<unsigned char>(c)); }

std::vector<std::string_view> Split(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSeparator(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !IsSeparator(text[j])) ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string_view> Whitespace(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

void AddUnique(std::vector<std::string>* out, std::string v) {
  if (std::find(out->begin(), out->end(), v) == out->end()) out->push_back(std::move(v));
}

// j.<k1>.<k2>... or nullptr; never throws.
const base::Json* Path(const base::Json& j, std::initializer_list<std::string_view> keys) {
  const base::Json* cur = &j;
  for (std::string_view k : keys) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(std::string(k));
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string StringAt(const base::Json& j, std::initializer_list<std::string_view> keys) {
  const base::Json* v = Path(j, keys);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

bool Deleting(const base::Json& item) {
  const base::Json* ts = Path(item, {"metadata", "deletionTimestamp"});
  return ts != nullptr && !ts->is_null();
}

const base::Json* Items(const base::Json& list) {
  const base::Json* items = Path(list, {"items"});
  return items != nullptr && items->is_array() ? items : nullptr;
}

}  // namespace

std::vector<std::string> ParseCIDRList(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view part : Split(text)) {
    if (base::IPPrefix::Parse(part).ok()) AddUnique(&out, std::string(part));
  }
  return out;
}

std::optional<std::vector<std::string>> FlagCIDRs(const api::Pod& pod, std::string_view flag) {
  const std::string eq = std::string("--") + std::string(flag) + "=";
  const std::string bare = std::string("--") + std::string(flag);
  for (const api::Container& c : pod.spec.containers) {
    std::vector<std::string_view> tokens;
    for (const auto* list : {&c.command, &c.args}) {
      for (const std::string& arg : *list) {
        for (std::string_view t : Whitespace(arg)) tokens.push_back(t);
      }
    }
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string_view t = tokens[i];
      // A shell string may quote the value: --flag="a,b".
      auto unquote = [](std::string_view v) {
        while (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
        while (!v.empty() && (v.back() == '"' || v.back() == '\'')) v.remove_suffix(1);
        return v;
      };
      if (t.substr(0, eq.size()) == eq) return ParseCIDRList(unquote(t.substr(eq.size())));
      if (t == bare) {
        return i + 1 < tokens.size() ? ParseCIDRList(unquote(tokens[i + 1]))
                                     : std::vector<std::string>{};
      }
    }
  }
  return std::nullopt;
}

std::optional<std::vector<std::string>> KubeadmNetworkingCIDRs(const api::ConfigMap& cm,
                                                               std::string_view field) {
  auto it = cm.data.find("ClusterConfiguration");
  if (it == cm.data.end()) return std::nullopt;
  absl::StatusOr<base::Json> doc = base::ParseYaml(it->second);
  if (!doc.ok()) return std::nullopt;
  const base::Json* v = Path(*doc, {"networking", field});
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return ParseCIDRList(v->get<std::string>());
}

bool CiliumUsesClusterPool(std::string_view ipam_mode) {
  return ipam_mode.empty() || ipam_mode == "cluster-pool" || ipam_mode == "cluster-pool-v2beta";
}

CiliumConfigCIDRs CiliumClusterPoolCIDRs(const api::ConfigMap& cm) {
  CiliumConfigCIDRs out;
  if (auto it = cm.data.find("ipam"); it != cm.data.end()) {
    auto words = Whitespace(it->second);
    if (!words.empty()) out.ipam_mode = std::string(words.front());
  }
  for (const char* key : {"cluster-pool-ipv4-cidr", "cluster-pool-ipv6-cidr"}) {
    auto it = cm.data.find(key);
    if (it == cm.data.end()) continue;
    for (std::string_view part : Split(it->second)) {
      if (base::IPPrefix::Parse(part).ok()) {
        AddUnique(&out.cidrs, std::string(part));
      } else {
        out.invalid.push_back(std::string(part));
      }
    }
  }
  return out;
}

std::vector<std::string> CalicoPoolCIDRs(const base::Json& list) {
  std::vector<std::string> out;
  const base::Json* items = Items(list);
  if (items == nullptr) return out;
  for (const base::Json& item : *items) {
    if (Deleting(item)) continue;
    const base::Json* disabled = Path(item, {"spec", "disabled"});
    if (disabled != nullptr && disabled->is_boolean() && disabled->get<bool>()) continue;
    const std::string cidr = StringAt(item, {"spec", "cidr"});
    if (base::IPPrefix::Parse(cidr).ok()) AddUnique(&out, cidr);
  }
  return out;
}

bool HasLiveItems(const base::Json& list) {
  const base::Json* items = Items(list);
  if (items == nullptr) return false;
  return std::any_of(items->begin(), items->end(),
                     [](const base::Json& item) { return !Deleting(item); });
}

std::vector<std::string> ServiceCIDRObjectCIDRs(const base::Json& list) {
  std::vector<std::string> out;
  const base::Json* items = Items(list);
  if (items == nullptr) return out;
  for (const base::Json& item : *items) {
    if (Deleting(item)) continue;
    const base::Json* cidrs = Path(item, {"spec", "cidrs"});
    if (cidrs == nullptr || !cidrs->is_array()) continue;
    for (const base::Json& c : *cidrs) {
      if (!c.is_string()) continue;
      const std::string s = c.get<std::string>();
      if (base::IPPrefix::Parse(s).ok()) AddUnique(&out, s);
    }
  }
  return out;
}

}  // namespace spiderpool::op::coordinator
