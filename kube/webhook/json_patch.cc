#include "kube/webhook/json_patch.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>

namespace spiderpool::kube::webhook {
namespace {

using base::Json;

Json Op(std::string_view op, const std::string& path) {
  Json j = Json::object();
  j["op"] = op;
  j["path"] = path;
  return j;
}

Json Op(std::string_view op, const std::string& path, const Json& value) {
  Json j = Op(op, path);
  j["value"] = value;
  return j;
}

void Diff(const Json& from, const Json& to, const std::string& path, Json* out) {
  if (from == to) return;
  if (from.is_object() && to.is_object()) {
    for (auto it = from.begin(); it != from.end(); ++it) {
      const std::string child = path + "/" + EscapeJsonPointerToken(it.key());
      auto t = to.find(it.key());
      if (t == to.end()) {
        out->push_back(Op("remove", child));
      } else {
        Diff(it.value(), *t, child, out);
      }
    }
    for (auto it = to.begin(); it != to.end(); ++it) {
      if (!from.contains(it.key())) {
        out->push_back(Op("add", path + "/" + EscapeJsonPointerToken(it.key()), it.value()));
      }
    }
    return;
  }
  if (from.is_array() && to.is_array()) {
    const size_t common = std::min(from.size(), to.size());
    for (size_t i = 0; i < common; ++i) {
      Diff(from[i], to[i], path + "/" + std::to_string(i), out);
    }
    // Surplus of `from`: remove from the end so earlier indices stay valid.
    for (size_t i = from.size(); i > common; --i) {
      out->push_back(Op("remove", path + "/" + std::to_string(i - 1)));
    }
    for (size_t i = common; i < to.size(); ++i) {
      out->push_back(Op("add", path + "/" + std::to_string(i), to[i]));
    }
    return;
  }
  out->push_back(Op("replace", path, to));
}

}  // namespace

std::string EscapeJsonPointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

base::Json CreateJsonPatch(const base::Json& from, const base::Json& to) {
  Json out = Json::array();
  Diff(from, to, "", &out);
  return out;
}

base::Json DropRoundTripOperations(const base::Json& patch, const base::Json& round_trip_patch) {
  if (!patch.is_array() || !round_trip_patch.is_array() || round_trip_patch.empty()) {
    return patch;
  }
  std::unordered_set<std::string> artifacts;
  for (const Json& rt : round_trip_patch) artifacts.insert(base::DumpJson(rt));
  Json out = Json::array();
  for (const Json& op : patch) {
    if (!artifacts.contains(base::DumpJson(op))) out.push_back(op);
  }
  return out;
}

}  // namespace spiderpool::kube::webhook
