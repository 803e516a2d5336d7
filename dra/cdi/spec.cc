#include "dra/cdi/spec.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::dra::cdi {
namespace {

using base::Json;
using base::StrCat;

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsLetter(c) || IsDigit(c); }

std::string Quoted(std::string_view s) {
  // Error messages quote names as JSON strings so odd bytes stay visible.
  return Json(std::string(s)).dump(-1, ' ', true, Json::error_handler_t::replace);
}

// Length of the UTF-8 sequence at s[i] and its code point; 0 when invalid (overlong,
// surrogate, beyond U+10FFFF, truncated).
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n;
  uint32_t v, min;
  if ((c & 0xE0) == 0xC0) {
    n = 2, v = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, v = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b(i + k) & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

// Text fields: valid UTF-8 without NUL (Go strings and OCI specs cannot carry NUL safely).
absl::Status ValidateText(std::string_view field, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) return absl::InvalidArgumentError(StrCat(field, ": invalid UTF-8 at byte ", i));
    if (cp == 0) return absl::InvalidArgumentError(StrCat(field, ": contains a NUL byte"));
    i += n;
  }
  return absl::OkStatus();
}

absl::Status ValidateAbsPath(std::string_view field, std::string_view p) {
  if (p.empty()) return absl::InvalidArgumentError(StrCat(field, ": empty path"));
  if (p[0] != '/') {
    return absl::InvalidArgumentError(StrCat(field, ": path ", Quoted(p), " is not absolute"));
  }
  return ValidateText(field, p);
}

absl::Status ValidateIfName(std::string_view field, std::string_view n) {
  if (n.empty() || n.size() > 15 || n == "." || n == "..") {
    return absl::InvalidArgumentError(
        StrCat(field, ": interface name ", Quoted(n), " must have 1-15 characters"));
  }
  for (char c : n) {
    if (c == '/' || c == ':' || static_cast<unsigned char>(c) <= 0x20 ||
        static_cast<unsigned char>(c) >= 0x7F) {
      return absl::InvalidArgumentError(
          StrCat(field, ": invalid character in interface name ", Quoted(n)));
    }
  }
  return absl::OkStatus();
}

bool VersionAtLeast(std::string_view version, std::string_view min) {
  return version.empty() || CompareVersions(version, min) >= 0;
}

bool NonEmpty(const Json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (it->is_array() || it->is_object() || it->is_string()) return !it->empty();
  return true;
}

}  // namespace

const std::vector<std::string>& KnownVersions() {
  static const auto* v = new std::vector<std::string>{"0.3.0", "0.4.0", "0.5.0", "0.6.0",
                                                      "0.7.0", "0.8.0", "1.0.0", "1.1.0"};
  return *v;
}

int CompareVersions(std::string_view a, std::string_view b) {
  const auto& v = KnownVersions();
  auto ia = std::find(v.begin(), v.end(), a) - v.begin();
  auto ib = std::find(v.begin(), v.end(), b) - v.begin();
  if (ia == static_cast<long>(v.size())) ia = -1;
  if (ib == static_cast<long>(v.size())) ib = -1;
  return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

absl::StatusOr<std::string> ParseVersion(std::string_view v) {
  std::string_view s = v;
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  for (const auto& k : KnownVersions()) {
    if (s == k) return k;
  }
  std::string known;
  for (const auto& k : KnownVersions()) known += (known.empty() ? "" : ", ") + k;
  return absl::InvalidArgumentError(
      StrCat("unknown cdiVersion ", Quoted(v), " (known: ", known, ")"));
}

MinVersion MinimumVersion(const Json& spec) {
  MinVersion out{"0.3.0", ""};
  auto need = [&](const char* v, std::string reason) {
    if (CompareVersions(v, out.version) > 0) out = {v, std::move(reason)};
  };
  if (!spec.is_object()) return out;
  std::vector<std::pair<std::string, const Json*>> edits;
  if (auto it = spec.find("containerEdits"); it != spec.end()) {
    edits.emplace_back("containerEdits", &*it);
  }
  if (NonEmpty(spec, "annotations")) need("0.6.0", "spec annotations");
  if (auto k = spec.find("kind"); k != spec.end() && k->is_string()) {
    const std::string& kind = k->get_ref<const std::string&>();
    if (auto slash = kind.find('/');
        slash != std::string::npos && kind.find('.', slash) != std::string::npos) {
      need("0.6.0", StrCat("class name of kind ", Quoted(kind), " contains a dot"));
    }
  }
  if (auto d = spec.find("devices"); d != spec.end() && d->is_array()) {
    for (size_t i = 0; i < d->size(); ++i) {
      const Json& dev = (*d)[i];
      if (!dev.is_object()) continue;
      std::string at = StrCat("devices[", i, "]");
      if (auto n = dev.find("name"); n != dev.end() && n->is_string()) {
        const std::string& name = n->get_ref<const std::string&>();
        if (!name.empty() && IsDigit(name[0])) {
          need("0.5.0", StrCat(at, ".name ", Quoted(name), " starts with a digit"));
        }
      }
      if (NonEmpty(dev, "annotations")) need("0.6.0", StrCat(at, ".annotations"));
      if (auto it = dev.find("containerEdits"); it != dev.end()) {
        edits.emplace_back(StrCat(at, ".containerEdits"), &*it);
      }
    }
  }
  for (const auto& [at, e] : edits) {
    if (!e->is_object()) continue;
    if (auto m = e->find("mounts"); m != e->end() && m->is_array()) {
      for (size_t i = 0; i < m->size(); ++i) {
        if (NonEmpty((*m)[i], "type")) need("0.4.0", StrCat(at, ".mounts[", i, "].type"));
      }
    }
    if (auto n = e->find("deviceNodes"); n != e->end() && n->is_array()) {
      for (size_t i = 0; i < n->size(); ++i) {
        if (NonEmpty((*n)[i], "hostPath")) {
          need("0.5.0", StrCat(at, ".deviceNodes[", i, "].hostPath"));
        }
      }
    }
    if (NonEmpty(*e, "additionalGids")) need("0.7.0", StrCat(at, ".additionalGids"));
    if (auto r = e->find("intelRdt"); r != e->end() && !r->is_null()) {
      need("0.7.0", StrCat(at, ".intelRdt"));
      if (NonEmpty(*r, "schemata")) need("1.1.0", StrCat(at, ".intelRdt.schemata"));
      if (r->is_object() && r->contains("enableMonitoring") &&
          (*r)["enableMonitoring"] == Json(true)) {
        need("1.1.0", StrCat(at, ".intelRdt.enableMonitoring"));
      }
    }
    if (NonEmpty(*e, "netDevices")) need("1.1.0", StrCat(at, ".netDevices"));
  }
  return out;
}

absl::Status ValidateVendorName(std::string_view vendor) {
  if (vendor.empty()) return absl::InvalidArgumentError("invalid vendor: empty name");
  if (vendor.size() > 253) {
    return absl::InvalidArgumentError(
        StrCat("invalid vendor ", Quoted(vendor), ": longer than 253 characters"));
  }
  if (!IsLetter(vendor.front())) {
    return absl::InvalidArgumentError(
        StrCat("invalid vendor ", Quoted(vendor), ": should start with a letter"));
  }
  for (char c : vendor) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      return absl::InvalidArgumentError(
          StrCat("invalid character ", Quoted(std::string(1, c)), " in vendor ", Quoted(vendor)));
    }
  }
  if (!IsAlnum(vendor.back())) {
    return absl::InvalidArgumentError(
        StrCat("invalid vendor ", Quoted(vendor), ": should end with a letter or digit"));
  }
  return absl::OkStatus();
}

absl::Status ValidateClassName(std::string_view cls, std::string_view version) {
  if (cls.empty()) return absl::InvalidArgumentError("invalid class: empty name");
  if (cls.size() > 63) {
    return absl::InvalidArgumentError(
        StrCat("invalid class ", Quoted(cls), ": longer than 63 characters"));
  }
  if (!IsLetter(cls.front())) {
    return absl::InvalidArgumentError(
        StrCat("invalid class ", Quoted(cls), ": should start with a letter"));
  }
  const bool dots = VersionAtLeast(version, "0.6.0");
  for (char c : cls) {
    if (c == '.' && !dots) {
      return absl::InvalidArgumentError(StrCat("invalid class ", Quoted(cls), ": dots need cdiVersion 0.6.0, have ", version));
    }
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      return absl::InvalidArgumentError(
          StrCat("invalid character ", Quoted(std::string(1, c)), " in class ", Quoted(cls)));
    }
  }
  if (!IsAlnum(cls.back())) {
    return absl::InvalidArgumentError(
        StrCat("invalid class ", Quoted(cls), ": should end with a letter or digit"));
  }
  return absl::OkStatus();
}

absl::Status ValidateKind(std::string_view kind, std::string_view version) {
  auto slash = kind.find('/');
  if (slash == std::string_view::npos || kind.find('/', slash + 1) != std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat("invalid kind ", Quoted(kind), ": want exactly one '/' as in vendor/class"));
  }
  SP_RETURN_IF_ERROR(ValidateVendorName(kind.substr(0, slash)));
  return ValidateClassName(kind.substr(slash + 1), version);
}

absl::Status ValidateDeviceName(std::string_view name, std::string_view version) {
  if (name.empty()) return absl::InvalidArgumentError("invalid device name: empty name");
  if (IsDigit(name.front()) && !VersionAtLeast(version, "0.5.0")) {
    return absl::InvalidArgumentError(StrCat("invalid device name ", Quoted(name),
                                             ": starting with a digit needs cdiVersion 0.5.0"));
  }
  if (!IsAlnum(name.front())) {
    return absl::InvalidArgumentError(
        StrCat("invalid device name ", Quoted(name), ": should start with a letter or digit"));
  }
  for (char c : name) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      return absl::InvalidArgumentError(StrCat("invalid character ", Quoted(std::string(1, c)),
                                               " in device name ", Quoted(name)));
    }
  }
  if (!IsAlnum(name.back())) {
    return absl::InvalidArgumentError(
        StrCat("invalid device name ", Quoted(name), ": should end with a letter or digit"));
  }
  return absl::OkStatus();
}

absl::Status ValidateEnvName(std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("empty environment variable name");
  if (name.find('=') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat("environment variable name ", Quoted(name), " contains '='"));
  }
  return ValidateText(StrCat("environment variable name ", Quoted(name)), name);
}

absl::StatusOr<Spec> BuildSpec(const ClaimSpec& c, const BuildOptions& options) {
  auto field = [](const absl::Status& s, std::string_view f) { return base::Annotate(s, f); };
  // The claim UID names the device and the file: device-name rules (any version) + a length
  // that keeps "<vendor>-<class>_<uid>.yaml" below NAME_MAX.
  SP_RETURN_IF_ERROR(field(ValidateDeviceName(c.claim_uid), "claimUID"));
  if (c.claim_uid.size() > 200) {
    return absl::InvalidArgumentError("claimUID: longer than 200 characters");
  }
  Json edits = Json::object();
  Json env = Json::array({StrCat(kClaimUIDEnv, "=", c.claim_uid)});
  std::set<std::string, std::less<>> names = {kClaimUIDEnv};
  for (size_t i = 0; i < c.env.size(); ++i) {
    const auto& [k, v] = c.env[i];
    SP_RETURN_IF_ERROR(field(ValidateEnvName(k), StrCat("env[", i, "].name")));
    if (!names.insert(k).second) {
      return absl::InvalidArgumentError(
          StrCat("env[", i, "].name: duplicate environment variable ", Quoted(k)));
    }
    SP_RETURN_IF_ERROR(ValidateText(StrCat("env[", i, "].value"), v));
    env.push_back(StrCat(k, "=", v));
  }
  edits["env"] = std::move(env);
  if (!c.mounts.empty()) {
    Json mounts = Json::array();
    for (size_t i = 0; i < c.mounts.size(); ++i) {
      const Mount& m = c.mounts[i];
      const std::string at = StrCat("mounts[", i, "]");
      SP_RETURN_IF_ERROR(ValidateAbsPath(StrCat(at, ".hostPath"), m.host_path));
      SP_RETURN_IF_ERROR(ValidateAbsPath(StrCat(at, ".containerPath"), m.container_path));
      Json mj = {{"hostPath", m.host_path}, {"containerPath", m.container_path}};
      if (!m.options.empty()) {
        for (size_t k = 0; k < m.options.size(); ++k) {
          const std::string of = StrCat(at, ".options[", k, "]");
          if (m.options[k].empty()) return absl::InvalidArgumentError(StrCat(of, ": empty option"));
          SP_RETURN_IF_ERROR(ValidateText(of, m.options[k]));
        }
        mj["options"] = m.options;
      }
      if (!m.type.empty()) {
        SP_RETURN_IF_ERROR(ValidateText(StrCat(at, ".type"), m.type));
        mj["type"] = m.type;
      }
      mounts.push_back(std::move(mj));
    }
    edits["mounts"] = std::move(mounts);
  }
  if (!c.net_devices.empty()) {
    Json nds = Json::array();
    for (size_t i = 0; i < c.net_devices.size(); ++i) {
      const NetDevice& n = c.net_devices[i];
      const std::string at = StrCat("netDevices[", i, "]");
      SP_RETURN_IF_ERROR(ValidateIfName(StrCat(at, ".hostInterfaceName"), n.host_interface_name));
      Json nj = {{"hostInterfaceName", n.host_interface_name}};
      if (!n.name.empty()) {
        SP_RETURN_IF_ERROR(ValidateIfName(StrCat(at, ".name"), n.name));
        nj["name"] = n.name;
      }
      nds.push_back(std::move(nj));
    }
    edits["netDevices"] = std::move(nds);
  }
  Json device = {{"name", c.claim_uid}};
  if (!c.device_annotations.empty()) {
    for (const auto& [k, v] : c.device_annotations) {
      const std::string at = StrCat("annotations[", Quoted(k), "]");
      if (k.empty()) return absl::InvalidArgumentError("annotations: empty key");
      SP_RETURN_IF_ERROR(ValidateText(at, k));
      SP_RETURN_IF_ERROR(ValidateText(at, v));
    }
    device["annotations"] = c.device_annotations;
  }
  device["containerEdits"] = std::move(edits);

  Spec spec;
  spec.claim_uid = c.claim_uid;
  spec.device_id = StrCat(kKind, "=", c.claim_uid);
  spec.json = {{"cdiVersion", ""}, {"kind", kKind}, {"devices", Json::array({device})}};
  const MinVersion min = MinimumVersion(spec.json);
  if (!c.version_pin.empty()) {
    auto pin = ParseVersion(c.version_pin);
    if (!pin.ok()) return field(pin.status(), StrCat("annotation ", kVersionAnnotation));
    if (CompareVersions(*pin, min.version) < 0) {
      return absl::InvalidArgumentError(
          StrCat("annotation ", kVersionAnnotation, ": cdiVersion ", *pin,
                 " cannot express this spec: it needs ", min.version, " (", min.reason, ")"));
    }
    spec.version = *pin;
  } else {
    auto max_or = ParseVersion(options.max_version);
    if (!max_or.ok()) return field(max_or.status(), "max_version");
    const std::string& max = *max_or;
    if (CompareVersions(min.version, max) > 0) {
      return absl::FailedPreconditionError(StrCat(
          "spec needs cdiVersion ", min.version, " (", min.reason, "), above the default maximum ",
          max, " that older runtimes (podman 4.3) accept; pin it with the ", kVersionAnnotation,
          " claim annotation"));
    }
    spec.version = min.version;
  }
  // Defensive: the constant kind and the device name must be valid in the chosen version.
  SP_RETURN_IF_ERROR(ValidateKind(kKind, spec.version));
  SP_RETURN_IF_ERROR(field(ValidateDeviceName(c.claim_uid, spec.version), "claimUID"));
  spec.json["cdiVersion"] = spec.version;
  return spec;
}

namespace {

void AppendQuoted(std::string_view s, std::string* out) {
  out->push_back('"');
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    size_t n = DecodeUtf8(s, i, &cp);
    if (n == 0) {
      cp = 0xFFFD;
      n = 1;
    }
    if (cp == '"') {
      out->append("\\\"");
    } else if (cp == '\\') {
      out->append("\\\\");
    } else if (cp >= 0x20 && cp < 0x7F) {
      out->push_back(static_cast<char>(cp));
    } else if (cp <= 0xFFFF) {
      std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
      out->append(buf);
    } else {
      std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
      out->append(buf);
    }
    i += n;
  }
  out->push_back('"');
}

bool IsBlock(const Json& j) { return (j.is_object() || j.is_array()) && !j.empty(); }

void AppendScalar(const Json& j, std::string* out) {
  if (j.is_string()) {
    AppendQuoted(j.get_ref<const std::string&>(), out);
  } else if (j.is_object()) {
    out->append("{}");
  } else if (j.is_array()) {
    out->append("[]");
  } else {
    out->append(j.dump(-1, ' ', true, Json::error_handler_t::replace));
  }
}

void Emit(const Json& j, size_t indent, std::string* out) {
  const std::string pad(indent, ' ');
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) {
      out->append(pad);
      AppendQuoted(k, out);
      out->push_back(':');
      if (IsBlock(v)) {
        out->push_back('\n');
        Emit(v, indent + 2, out);
      } else {
        out->push_back(' ');
        AppendScalar(v, out);
        out->push_back('\n');
      }
    }
  } else if (j.is_array() && !j.empty()) {
    for (const auto& v : j) {
      out->append(pad);
      out->append("- ");
      if (IsBlock(v)) {
        std::string child;
        Emit(v, indent + 2, &child);
        out->append(child.substr(indent + 2));  // first line continues after "- "
      } else {
        AppendScalar(v, out);
        out->push_back('\n');
      }
    }
  } else {
    out->append(pad);
    AppendScalar(j, out);
    out->push_back('\n');
  }
}

}  // namespace

std::string ToYaml(const Json& j) {
  std::string out;
  Emit(j, 0, &out);
  return out;
}

}  // namespace spiderpool::dra::cdi
