#include "kube/testing/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "base/strings.h"

namespace spiderpool::kube::testing {

using base::Json;
using base::StrCat;

namespace {

// metav1.ObjectMeta{}.SwaggerDoc() texts kube-apiserver puts into column descriptions.
constexpr std::string_view kNameDescription =
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
constexpr std::string_view kCreationTimestampDescription =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";

const Json& At(const Json& j, std::string_view key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(std::string(key));
  return it == j.end() ? kNull : *it;
}

std::string Str(const Json& j, std::string_view key) {
  const Json& v = At(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

std::optional<absl::Time> ParseRfc3339(const std::string& s) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, s, &t, &err)) return std::nullopt;
  return t;
}

std::string AgeOf(const Json& object, absl::Time now) {
  std::string ts = Str(At(object, "metadata"), "creationTimestamp");
  auto t = ParseRfc3339(ts);
  if (!t) return "<unknown>";
  return HumanDuration(now - *t);
}

// apiextensions tableconvertor's cellForJSONValue.
Json CellForJsonValue(const std::string& type, const Json& value, absl::Time now) {
  if (value.is_null()) return nullptr;
  if (type == "integer") {
    if (value.is_number_integer()) return value;
    if (value.is_number_float()) {
      double d = value.get<double>();
      if (std::isfinite(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
    }
    return nullptr;
  }
  if (type == "number") {
    if (value.is_number()) return value.get<double>();
    return nullptr;
  }
  if (type == "boolean") return value.is_boolean() ? value : Json(nullptr);
  if (type == "string") return value.is_string() ? value : Json(nullptr);
  if (type == "date") {
    if (!value.is_string()) return nullptr;
    const std::string& s = value.get_ref<const std::string&>();
    if (s.empty() || s == "null") return "<unknown>";
    auto t = ParseRfc3339(s);
    if (!t) return "<invalid>";
    return HumanDuration(now - *t);
  }
  return nullptr;
}

TableColumn NameColumn() {
  return {"Name", "string", "name", std::string(kNameDescription), 0};
}
TableColumn AgeColumn() {
  return {"Age", "string", "", std::string(kCreationTimestampDescription), 0};
}

Json NameCell(const Json& o, absl::Time) { return Str(At(o, "metadata"), "name"); }
Json AgeCell(const Json& o, absl::Time now) { return AgeOf(o, now); }

std::string OrNone(std::string s) { return s.empty() ? "<none>" : s; }

int64_t CountKeys(const Json& j) { return j.is_object() ? static_cast<int64_t>(j.size()) : 0; }

// ---- built-in printers (k8s.io/kubernetes/pkg/printers/internalversion) ----

std::string PodStatus(const Json& pod) {
  const Json& status = At(pod, "status");
  std::string reason = Str(status, "phase");
  if (!Str(status, "reason").empty()) reason = Str(status, "reason");
  bool initializing = false;
  const Json& init = At(status, "initContainerStatuses");
  if (init.is_array()) {
    int i = 0;
    int total = static_cast<int>(At(At(pod, "spec"), "initContainers").size());
    for (const Json& c : init) {
      const Json& state = At(c, "state");
      const Json& term = At(state, "terminated");
      const Json& wait = At(state, "waiting");
      if (term.is_object() && At(term, "exitCode") == 0) {
        ++i;
        continue;
      }
      if (term.is_object()) {
        reason = Str(term, "reason").empty() ? StrCat("Init:ExitCode:", At(term, "exitCode").dump())
                                             : StrCat("Init:", Str(term, "reason"));
      } else if (wait.is_object() && !Str(wait, "reason").empty() &&
                 Str(wait, "reason") != "PodInitializing") {
        reason = StrCat("Init:", Str(wait, "reason"));
      } else {
        reason = StrCat("Init:", i, "/", total);
      }
      initializing = true;
      break;
    }
  }
  if (!initializing) {
    const Json& cs = At(status, "containerStatuses");
    if (cs.is_array()) {
      for (auto it = cs.rbegin(); it != cs.rend(); ++it) {
        const Json& state = At(*it, "state");
        const Json& wait = At(state, "waiting");
        const Json& term = At(state, "terminated");
        if (wait.is_object() && !Str(wait, "reason").empty()) {
          reason = Str(wait, "reason");
        } else if (term.is_object() && !Str(term, "reason").empty()) {
          reason = Str(term, "reason");
        } else if (term.is_object()) {
          const Json& sig = At(term, "signal");
          reason = sig.is_number_integer() && sig.get<int64_t>() != 0
                       ? StrCat("Signal:", sig.get<int64_t>())
                       : StrCat("ExitCode:", At(term, "exitCode").dump());
        }
      }
    }
  }
  if (!Str(At(pod, "metadata"), "deletionTimestamp").empty()) {
    reason = Str(status, "reason") == "NodeLost" ? "Unknown" : "Terminating";
  }
  return reason;
}

void AddPodPrinter(std::vector<TableColumn>* cols, std::vector<std::function<Json(const Json&, absl::Time)>>* cells) {
  cols->push_back({"Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0});
  cells->push_back([](const Json& o, absl::Time) {
    int64_t total = static_cast<int64_t>(At(At(o, "spec"), "containers").size());
    int64_t ready = 0;
    const Json& cs = At(At(o, "status"), "containerStatuses");
    if (cs.is_array()) {
      for (const Json& c : cs) ready += At(c, "ready") == true ? 1 : 0;
    }
    return Json(StrCat(ready, "/", total));
  });
  cols->push_back({"Status", "string", "", "The aggregate status of the containers in this pod.", 0});
  cells->push_back([](const Json& o, absl::Time) { return Json(PodStatus(o)); });
  cols->push_back({"Restarts", "string", "",
                   "The number of times the containers in this pod have been restarted and when "
                   "the last container in this pod has restarted.",
                   0});
  cells->push_back([](const Json& o, absl::Time) {
    int64_t restarts = 0;
    const Json& cs = At(At(o, "status"), "containerStatuses");
    if (cs.is_array()) {
      for (const Json& c : cs) {
        const Json& r = At(c, "restartCount");
        if (r.is_number_integer()) restarts += r.get<int64_t>();
      }
    }
    return Json(StrCat(restarts));
  });
  cols->push_back(AgeColumn());
  cells->push_back(AgeCell);
  cols->push_back({"IP", "string", "", "podIP address allocated to the pod.", 1});
  cells->push_back([](const Json& o, absl::Time) { return Json(OrNone(Str(At(o, "status"), "podIP"))); });
  cols->push_back({"Node", "string", "", "NodeName indicates in which node this pod is scheduled.", 1});
  cells->push_back([](const Json& o, absl::Time) { return Json(OrNone(Str(At(o, "spec"), "nodeName"))); });
  cols->push_back({"Nominated Node", "string", "",
                   "nominatedNodeName is set only when this pod preempts other pods on the node.", 1});
  cells->push_back([](const Json& o, absl::Time) {
    return Json(OrNone(Str(At(o, "status"), "nominatedNodeName")));
  });
  cols->push_back({"Readiness Gates", "string", "",
                   "If specified, all readiness gates will be evaluated for pod readiness.", 1});
  cells->push_back([](const Json& o, absl::Time) {
    const Json& gates = At(At(o, "spec"), "readinessGates");
    if (!gates.is_array() || gates.empty()) return Json("<none>");
    int64_t ok = 0;
    const Json& conds = At(At(o, "status"), "conditions");
    for (const Json& g : gates) {
      std::string type = Str(g, "conditionType");
      if (conds.is_array()) {
        for (const Json& c : conds) {
          if (Str(c, "type") == type && Str(c, "status") == "True") ++ok;
        }
      }
    }
    return Json(StrCat(ok, "/", gates.size()));
  });
}

std::string NodeAddress(const Json& node, std::string_view type) {
  const Json& addrs = At(At(node, "status"), "addresses");
  if (addrs.is_array()) {
    for (const Json& a : addrs) {
      if (Str(a, "type") == type) return Str(a, "address");
    }
  }
  return "<none>";
}

}  // namespace

// ---- public API ----

std::string HumanDuration(absl::Duration d) {
  int64_t seconds = absl::ToInt64Seconds(d);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return StrCat(seconds, "s");
  int64_t minutes = absl::ToInt64Minutes(d);
  if (minutes < 10) {
    int64_t s = seconds % 60;
    if (s == 0) return StrCat(minutes, "m");
    return StrCat(minutes, "m", s, "s");
  }
  if (minutes < 60 * 3) return StrCat(minutes, "m");
  int64_t hours = absl::ToInt64Hours(d);
  if (hours < 8) {
    int64_t m = minutes % 60;
    if (m == 0) return StrCat(hours, "h");
    return StrCat(hours, "h", m, "m");
  }
  if (hours < 48) return StrCat(hours, "h");
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    if (h == 0) return StrCat(hours / 24, "d");
    return StrCat(hours / 24, "d", h, "h");
  }
  if (hours < 24 * 365 * 2) return StrCat(hours / 24, "d");
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    if (dy == 0) return StrCat(hours / 24 / 365, "y");
    return StrCat(hours / 24 / 365, "y", dy, "d");
  }
  return StrCat(hours / 24 / 365, "y");
}

std::optional<std::string> NegotiateAs(std::string_view accept, std::string_view as_kind) {
  struct Clause {
    double q = 1;
    size_t index = 0;
    std::string type;
    std::map<std::string, std::string> params;
  };
  std::vector<Clause> clauses;
  size_t start = 0;
  while (start <= accept.size()) {
    size_t comma = accept.find(',', start);
    if (comma == std::string_view::npos) comma = accept.size();
    std::string_view part = accept.substr(start, comma - start);
    start = comma + 1;
    Clause c;
    c.index = clauses.size();
    size_t p = 0;
    bool first = true;
    while (p <= part.size()) {
      size_t semi = part.find(';', p);
      if (semi == std::string_view::npos) semi = part.size();
      std::string_view tok = part.substr(p, semi - p);
      p = semi + 1;
      while (!tok.empty() && (tok.front() == ' ' || tok.front() == '\t')) tok.remove_prefix(1);
      while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\t')) tok.remove_suffix(1);
      if (first) {
        c.type = std::string(tok);
        for (char& ch : c.type) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        first = false;
        continue;
      }
      size_t eq = tok.find('=');
      if (eq == std::string_view::npos) continue;
      std::string k(tok.substr(0, eq)), v(tok.substr(eq + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      if (k == "q") {
        c.q = std::atof(v.c_str());
      } else {
        c.params[k] = v;
      }
    }
    if (!c.type.empty() && c.q > 0) clauses.push_back(std::move(c));
    if (comma == accept.size()) break;
  }
  std::stable_sort(clauses.begin(), clauses.end(),
                   [](const Clause& a, const Clause& b) { return a.q > b.q; });
  for (const Clause& c : clauses) {
    bool json_like = c.type == "application/json" || c.type == "*/*" ||
                     c.type == "application/*" || c.type == "application/yaml";
    if (!json_like) continue;
    auto as = c.params.find("as");
    if (as == c.params.end()) return std::nullopt;  // a plain representation wins
    if (as->second != as_kind) continue;
    auto g = c.params.find("g");
    auto v = c.params.find("v");
    if (g == c.params.end() || g->second != "meta.k8s.io" || v == c.params.end()) continue;
    if (v->second == "v1" || v->second == "v1beta1") return v->second;
  }
  return std::nullopt;
}

base::Json PartialObjectMetadata(const base::Json& obj, std::string_view version) {
  base::Json out = {{"kind", "PartialObjectMetadata"},
                    {"apiVersion", StrCat("meta.k8s.io/", version)}};
  auto it = obj.find("metadata");
  out["metadata"] = it != obj.end() ? *it : base::Json::object();
  return out;
}

IncludeObject ParseIncludeObject(std::string_view value) {
  if (value == "None") return IncludeObject::kNone;
  if (value == "Object") return IncludeObject::kObject;
  return IncludeObject::kMetadata;
}

TableConvertor TableConvertor::ForCustomResource(const Json& additional_printer_columns) {
  TableConvertor t;
  t.columns_.push_back(NameColumn());
  t.cells_.push_back(NameCell);
  Json cols = additional_printer_columns;
  if (!cols.is_array() || cols.empty()) {
    // serveDefaultColumnsIfEmpty
    cols = Json::array({{{"name", "Age"},
                         {"type", "date"},
                         {"description", kCreationTimestampDescription},
                         {"jsonPath", ".metadata.creationTimestamp"}}});
  }
  for (const Json& col : cols) {
    std::string name = Str(col, "name");
    std::string json_path = Str(col, "jsonPath");
    auto path = JsonPath::Parse(json_path);
    // An unparsable column ends the list, like tableconvertor.New returning early.
    if (!path.ok()) break;
    std::string type = Str(col, "type");
    std::string desc = Str(col, "description");
    if (desc.empty()) desc = StrCat("Custom resource definition column (in JSONPath format): ", json_path);
    int priority = 0;
    const Json& pr = At(col, "priority");
    if (pr.is_number_integer()) priority = static_cast<int>(pr.get<int64_t>());
    t.columns_.push_back({name, type, Str(col, "format"), desc, priority});
    t.cells_.push_back([p = *std::move(path), type](const Json& o, absl::Time now) -> Json {
      std::vector<Json> found = p.Find(o);
      if (found.empty() || found[0].is_null()) return nullptr;
      if (type == "string") return JsonPathText(found[0]);
      return CellForJsonValue(type, found[0], now);
    });
  }
  return t;
}

TableConvertor TableConvertor::ForBuiltin(std::string_view group, std::string_view plural) {
  TableConvertor t;
  t.columns_.push_back(NameColumn());
  t.cells_.push_back(NameCell);
  auto add = [&t](TableColumn c, CellFn f) {
    t.columns_.push_back(std::move(c));
    t.cells_.push_back(std::move(f));
  };
  auto age = [&] { add(AgeColumn(), AgeCell); };
  if (group.empty() && plural == "pods") {
    AddPodPrinter(&t.columns_, &t.cells_);
  } else if (group.empty() && plural == "namespaces") {
    add({"Status", "string", "", "The status of the namespace", 0},
        [](const Json& o, absl::Time) { return Json(Str(At(o, "status"), "phase")); });
    age();
  } else if (group.empty() && plural == "configmaps") {
    add({"Data", "string", "", "Data contains the configuration data.", 0},
        [](const Json& o, absl::Time) {
          return Json(CountKeys(At(o, "data")) + CountKeys(At(o, "binaryData")));
        });
    age();
  } else if (group.empty() && plural == "secrets") {
    add({"Type", "string", "", "Used to facilitate programmatic handling of secret data.", 0},
        [](const Json& o, absl::Time) { return Json(Str(o, "type")); });
    add({"Data", "string", "", "Data contains the secret data.", 0},
        [](const Json& o, absl::Time) {
          return Json(CountKeys(At(o, "data")) + CountKeys(At(o, "stringData")));
        });
    age();
  } else if (group.empty() && plural == "nodes") {
    add({"Status", "string", "", "The status of the node", 0}, [](const Json& o, absl::Time) {
      std::string s = "Unknown";
      const Json& conds = At(At(o, "status"), "conditions");
      if (conds.is_array()) {
        for (const Json& c : conds) {
          if (Str(c, "type") != "Ready") continue;
          s = Str(c, "status") == "True" ? "Ready" : Str(c, "status") == "False" ? "NotReady"
                                                                                 : "Unknown";
        }
      }
      if (At(At(o, "spec"), "unschedulable") == true) s += ",SchedulingDisabled";
      return Json(s);
    });
    add({"Roles", "string", "", "The roles of the node", 0}, [](const Json& o, absl::Time) {
      std::set<std::string> roles;
      const Json& labels = At(At(o, "metadata"), "labels");
      if (labels.is_object()) {
        for (auto& [k, v] : labels.items()) {
          constexpr std::string_view kPrefix = "node-role.kubernetes.io/";
          if (k.rfind(kPrefix, 0) == 0 && k.size() > kPrefix.size()) {
            roles.insert(k.substr(kPrefix.size()));
          } else if (k == "kubernetes.io/role" && v.is_string() && !v.get<std::string>().empty()) {
            roles.insert(v.get<std::string>());
          }
        }
      }
      std::string out;
      for (const std::string& r : roles) out += (out.empty() ? "" : ",") + r;
      return Json(OrNone(out));
    });
    age();
    add({"Version", "string", "", "Kubelet Version reported by the node.", 0},
        [](const Json& o, absl::Time) {
          return Json(Str(At(At(o, "status"), "nodeInfo"), "kubeletVersion"));
        });
    add({"Internal-IP", "string", "", "List of addresses reachable to the node.", 1},
        [](const Json& o, absl::Time) { return Json(NodeAddress(o, "InternalIP")); });
    add({"External-IP", "string", "", "List of addresses reachable to the node.", 1},
        [](const Json& o, absl::Time) { return Json(NodeAddress(o, "ExternalIP")); });
    add({"OS-Image", "string", "", "OS Image reported by the node from /etc/os-release.", 1},
        [](const Json& o, absl::Time) {
          std::string s = Str(At(At(o, "status"), "nodeInfo"), "osImage");
          return Json(s.empty() ? "<unknown>" : s);
        });
    add({"Kernel-Version", "string", "", "Kernel Version reported by the node.", 1},
        [](const Json& o, absl::Time) {
          std::string s = Str(At(At(o, "status"), "nodeInfo"), "kernelVersion");
          return Json(s.empty() ? "<unknown>" : s);
        });
    add({"Container-Runtime", "string", "", "Container Runtime Version reported by the node.", 1},
        [](const Json& o, absl::Time) {
          std::string s = Str(At(At(o, "status"), "nodeInfo"), "containerRuntimeVersion");
          return Json(s.empty() ? "<unknown>" : s);
        });
  } else if (group.empty() && plural == "services") {
    add({"Type", "string", "", "The type of the service.", 0}, [](const Json& o, absl::Time) {
      std::string type = Str(At(o, "spec"), "type");
      return Json(type.empty() ? "ClusterIP" : type);
    });
    add({"Cluster-IP", "string", "", "The cluster IP of the service.", 0},
        [](const Json& o, absl::Time) { return Json(OrNone(Str(At(o, "spec"), "clusterIP"))); });
    add({"External-IP", "string", "", "The external IP of the service.", 0},
        [](const Json& o, absl::Time) {
          const Json& spec = At(o, "spec");
          std::string type = Str(spec, "type");
          if (type == "ExternalName") return Json(Str(spec, "externalName"));
          std::vector<std::string> ips;
          const Json& ingress = At(At(At(o, "status"), "loadBalancer"), "ingress");
          if (ingress.is_array()) {
            for (const Json& i : ingress) {
              std::string ip = Str(i, "ip").empty() ? Str(i, "hostname") : Str(i, "ip");
              if (!ip.empty()) ips.push_back(ip);
            }
          }
          const Json& ext = At(spec, "externalIPs");
          if (ext.is_array()) {
            for (const Json& i : ext) {
              if (i.is_string()) ips.push_back(i.get<std::string>());
            }
          }
          std::string out;
          for (const std::string& ip : ips) out += (out.empty() ? "" : ",") + ip;
          if (out.empty()) return Json(type == "LoadBalancer" ? "<pending>" : "<none>");
          return Json(out);
        });
    add({"Port(s)", "string", "", "The ports of the service.", 0}, [](const Json& o, absl::Time) {
      std::string out;
      const Json& ports = At(At(o, "spec"), "ports");
      if (ports.is_array()) {
        for (const Json& p : ports) {
          std::string proto = Str(p, "protocol").empty() ? "TCP" : Str(p, "protocol");
          std::string one = At(p, "port").dump();
          if (At(p, "nodePort").is_number_integer()) one += ":" + At(p, "nodePort").dump();
          out += (out.empty() ? "" : ",") + one + "/" + proto;
        }
      }
      return Json(OrNone(out));
    });
    age();
    add({"Selector", "string", "", "The selector of the service.", 1},
        [](const Json& o, absl::Time) {
          std::string out;
          const Json& sel = At(At(o, "spec"), "selector");
          if (sel.is_object()) {
            for (auto& [k, v] : sel.items()) {
              out += (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : "");
            }
          }
          return Json(OrNone(out));
        });
  } else if (group == "coordination.k8s.io" && plural == "leases") {
    add({"Holder", "string", "", "The holder of the lease.", 0},
        [](const Json& o, absl::Time) { return Json(Str(At(o, "spec"), "holderIdentity")); });
    age();
  } else if (group == "apps" && plural == "deployments") {
    add({"Ready", "string", "", "Number of the pod with ready state", 0},
        [](const Json& o, absl::Time) {
          const Json& r = At(At(o, "spec"), "replicas");
          const Json& ready = At(At(o, "status"), "readyReplicas");
          return Json(StrCat(ready.is_number_integer() ? ready.get<int64_t>() : 0, "/",
                             r.is_number_integer() ? r.get<int64_t>() : 1));
        });
    add({"Up-to-date", "integer", "", "Total number of non-terminated pods targeted by this "
                                      "deployment that have the desired template spec.", 0},
        [](const Json& o, absl::Time) {
          const Json& v = At(At(o, "status"), "updatedReplicas");
          return Json(v.is_number_integer() ? v.get<int64_t>() : 0);
        });
    add({"Available", "integer", "", "Total number of available pods (ready for at least "
                                     "minReadySeconds) targeted by this deployment.", 0},
        [](const Json& o, absl::Time) {
          const Json& v = At(At(o, "status"), "availableReplicas");
          return Json(v.is_number_integer() ? v.get<int64_t>() : 0);
        });
    age();
  } else if (group == "apiextensions.k8s.io" && plural == "customresourcedefinitions") {
    // The server's default table convertor (k8s.io/apiserver/pkg/registry/rest/table.go).
    add({"Created At", "date", "", std::string(kCreationTimestampDescription), 0},
        [](const Json& o, absl::Time) {
          auto t = ParseRfc3339(Str(At(o, "metadata"), "creationTimestamp"));
          if (!t) return Json("0001-01-01T00:00:00Z");
          return Json(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", *t, absl::UTCTimeZone()));
        });
  } else {
    age();
  }
  return t;
}

Json TableConvertor::Cells(const Json& object, absl::Time now) const {
  Json cells = Json::array();
  for (const CellFn& f : cells_) cells.push_back(f(object, now));
  return cells;
}

Json TableConvertor::Row(const Json& object, absl::Time now, IncludeObject include,
                         std::string_view table_version) const {
  Json row = {{"cells", Cells(object, now)}};
  switch (include) {
    case IncludeObject::kNone:
      row["object"] = nullptr;
      break;
    case IncludeObject::kMetadata:
      row["object"] = PartialObjectMetadata(object, table_version);
      break;
    case IncludeObject::kObject:
      row["object"] = object;
      break;
  }
  return row;
}

Json TableConvertor::ToTable(const std::vector<const Json*>& objects, const Json& list_metadata,
                             absl::Time now, IncludeObject include,
                             std::string_view table_version, bool headers) const {
  Json cols = nullptr;
  if (headers) {
    cols = Json::array();
    for (const TableColumn& c : columns_) {
      cols.push_back({{"name", c.name},
                      {"type", c.type},
                      {"format", c.format},
                      {"description", c.description},
                      {"priority", c.priority}});
    }
  }
  Json rows = Json::array();
  for (const Json* o : objects) rows.push_back(Row(*o, now, include, table_version));
  return {{"kind", "Table"},
          {"apiVersion", StrCat("meta.k8s.io/", table_version)},
          {"metadata", list_metadata.is_object() ? list_metadata : Json::object()},
          {"columnDefinitions", std::move(cols)},
          {"rows", std::move(rows)}};
}

}  // namespace spiderpool::kube::testing
