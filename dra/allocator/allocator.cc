#include "dra/allocator/allocator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_join.h"
#include "base/json.h"
#include "base/strings.h"
#include "dra/allocator/cel.h"

namespace spiderpool::dra::allocator {

namespace rv1 = ::spiderpool::api::resource_v1;
using base::StrCat;

namespace {

struct Candidate {
  DeviceId id;
  DeviceView view;
};

struct Request {
  std::string name;
  const api::DeviceClass* device_class = nullptr;
  std::string class_name;
  std::vector<Expression> class_selectors;
  std::vector<Expression> selectors;
  int64_t count = 1;
};

std::string Shorten(const std::string& s) {
  return s.size() <= 120 ? s : StrCat(s.substr(0, 117), "...");
}

}  // namespace

std::set<DeviceId> InUse(const std::vector<rv1::ResourceClaim>& claims,
                         const std::string& except_uid) {
  std::set<DeviceId> out;
  for (const rv1::ResourceClaim& c : claims) {
    if (!c.status.allocation || (!except_uid.empty() && c.metadata.uid == except_uid)) continue;
    for (const auto& r : c.status.allocation->devices.results) {
      out.emplace(r.driver, r.pool, r.device);
    }
  }
  return out;
}

absl::StatusOr<Outcome> Allocate(const rv1::ResourceClaim& claim,
                                 const std::vector<api::DeviceClass>& classes,
                                 const std::vector<api::ResourceSlice>& slices,
                                 const std::set<DeviceId>& in_use) {
  const std::string who = StrCat("ResourceClaim ", claim.metadata.namespace_, "/", claim.metadata.name);
  const rv1::DeviceClaim& dc = claim.spec.devices;
  if (!dc.constraints.empty()) {
    return absl::UnimplementedError(StrCat(who, ": spec.devices.constraints: not supported by this allocator"));
  }
  Outcome out;
  std::vector<Request> requests;
  for (size_t i = 0; i < dc.requests.size(); ++i) {
    const rv1::DeviceRequest& r = dc.requests[i];
    const std::string path = StrCat("spec.devices.requests[", i, "]");
    if (!r.first_available.empty() || !r.exactly) {
      return absl::UnimplementedError(StrCat(who, ": ", path, ": only `exactly` is supported"));
    }
    const rv1::ExactDeviceRequest& e = *r.exactly;
    if (!e.allocation_mode.empty() && e.allocation_mode != rv1::kAllocationModeExactCount) {
      return absl::UnimplementedError(StrCat(who, ": ", path, ".exactly.allocationMode: ",
                                             e.allocation_mode, " is not supported"));
    }
    if (e.admin_access.value_or(false) || e.capacity.has_value()) {
      return absl::UnimplementedError(
          StrCat(who, ": ", path, ".exactly: adminAccess / capacity are not supported"));
    }
    Request req{.name = r.name, .class_name = e.device_class_name, .count = e.count > 0 ? e.count : 1};
    for (const api::DeviceClass& c : classes) {
      if (c.metadata.name == e.device_class_name) req.device_class = &c;
    }
    if (req.device_class == nullptr) {
      out.reason = StrCat("request \"", r.name, "\": device class ", e.device_class_name,
                          " does not exist");
      return out;
    }
    for (size_t k = 0; k < req.device_class->spec.selectors.size(); ++k) {
      const auto& s = req.device_class->spec.selectors[k];
      if (!s.cel) {
        return absl::UnimplementedError(StrCat("DeviceClass ", e.device_class_name, ": spec.selectors[",
                                               k, "]: only cel selectors are supported"));
      }
      auto x = Expression::Parse(s.cel->expression);
      if (!x.ok()) {
        return absl::InvalidArgumentError(StrCat("DeviceClass ", e.device_class_name, ": spec.selectors[",
                                                 k, "].cel.expression: ", x.status().message()));
      }
      req.class_selectors.push_back(*std::move(x));
    }
    for (size_t k = 0; k < e.selectors.size(); ++k) {
      if (!e.selectors[k].cel) {
        return absl::UnimplementedError(
            StrCat(who, ": ", path, ".exactly.selectors[", k, "]: only cel selectors are supported"));
      }
      auto x = Expression::Parse(e.selectors[k].cel->expression);
      if (!x.ok()) {
        return absl::InvalidArgumentError(StrCat(who, ": ", path, ".exactly.selectors[", k,
                                                 "].cel.expression: ", x.status().message()));
      }
      req.selectors.push_back(*std::move(x));
    }
    requests.push_back(std::move(req));
  }

  // The newest generation of each (driver, pool), node-local slices only.
  std::map<std::pair<std::string, std::string>, int64_t> newest;
  for (const api::ResourceSlice& s : slices) {
    auto key = std::make_pair(s.spec.driver, s.spec.pool.name);
    newest[key] = std::max(newest[key], s.spec.pool.generation);
  }
  std::vector<const api::ResourceSlice*> sorted;
  for (const api::ResourceSlice& s : slices) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
    return a->metadata.name < b->metadata.name;
  });
  std::map<std::string, std::vector<Candidate>> by_node;
  for (const api::ResourceSlice* s : sorted) {
    if (!s->spec.node_name.has_value() || s->spec.node_name->empty()) continue;
    if (s->spec.pool.generation != newest[{s->spec.driver, s->spec.pool.name}]) continue;
    auto& list = by_node[*s->spec.node_name];
    for (const api::Device& d : s->spec.devices) {
      list.push_back({DeviceId{s->spec.driver, s->spec.pool.name, d.name},
                      DeviceView::Of(s->spec.driver, d)});
    }
  }
  if (by_node.empty()) {
    out.reason = "no node publishes devices (no ResourceSlices)";
    return out;
  }

  std::vector<std::string> why;
  for (const auto& [node, candidates] : by_node) {
    std::set<DeviceId> taken;
    std::vector<rv1::DeviceRequestAllocationResult> results;
    std::string failure;
    for (const Request& req : requests) {
      // Candidates through the class selectors, then each request selector in turn: the
      // first selector that leaves nothing names the reason.
      std::vector<const Candidate*> left;
      for (const Candidate& c : candidates) left.push_back(&c);
      auto filter = [&](const std::vector<Expression>& exprs, std::string_view what) -> bool {
        for (size_t k = 0; k < exprs.size(); ++k) {
          std::vector<const Candidate*> next;
          std::string error;
          for (const Candidate* c : left) {
            absl::StatusOr<bool> m = exprs[k].Evaluate(c->view);
            if (!m.ok()) {
              error = std::string(m.status().message());
              break;
            }
            if (*m) next.push_back(c);
          }
          if (!error.empty()) {
            failure = StrCat("request \"", req.name, "\": ", what, " selector ", k, " (",
                             Shorten(exprs[k].text()), "): CEL runtime error: ", error);
            return false;
          }
          if (next.empty()) {
            failure = StrCat("request \"", req.name, "\": ", left.size(), " device(s) left, none passes ",
                             what, " selector ", k, " (", Shorten(exprs[k].text()), ")");
            return false;
          }
          left = std::move(next);
        }
        return true;
      };
      if (!filter(req.class_selectors, StrCat("DeviceClass ", req.class_name)) ||
          !filter(req.selectors, "the request's")) {
        break;
      }
      int64_t got = 0;
      for (const Candidate* c : left) {
        if (got == req.count) break;
        if (in_use.contains(c->id) || taken.contains(c->id)) continue;
        taken.insert(c->id);
        results.push_back({.request = req.name, .driver = std::get<0>(c->id),
                           .pool = std::get<1>(c->id), .device = std::get<2>(c->id)});
        ++got;
      }
      if (got < req.count) {
        failure = StrCat("request \"", req.name, "\": ", left.size(), " matching device(s), ",
                         left.size() - static_cast<size_t>(got), " in use; ", req.count, " needed");
        break;
      }
    }
    if (!failure.empty()) {
      why.push_back(StrCat(node, ": ", failure));
      continue;
    }
    out.allocated = true;
    out.node = node;
    out.allocation.devices.results = std::move(results);
    for (const Request& req : requests) {
      for (const auto& c : req.device_class->spec.config) {
        if (!c.opaque) continue;
        out.allocation.devices.config.push_back(
            {.source = std::string(rv1::kConfigSourceClass), .requests = {req.name},
             .opaque = rv1::OpaqueDeviceConfiguration{.driver = c.opaque->driver,
                                                      .parameters = c.opaque->parameters}});
      }
    }
    for (const rv1::DeviceClaimConfiguration& c : dc.config) {
      out.allocation.devices.config.push_back(
          {.source = std::string(rv1::kConfigSourceClaim), .requests = c.requests, .opaque = c.opaque});
    }
    out.allocation.node_selector = base::Json{
        {"nodeSelectorTerms",
         base::Json::array({base::Json{{"matchFields", base::Json::array({base::Json{
                                {"key", "metadata.name"}, {"operator", "In"},
                                {"values", base::Json::array({node})}}})}}})}};
    return out;
  }
  out.reason = StrCat("cannot allocate all claims: ", absl::StrJoin(why, "; "));
  return out;
}

}  // namespace spiderpool::dra::allocator
