#include "ipam/annotations.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <utility>

#include "api/names.h"
#include "api/spider.h"
#include "base/ip.h"
#include "base/json.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::ipam {
namespace {

using base::Json;
using base::StrCat;

std::string_view Msg(const absl::Status& s) { return base::FromAbsl(s.message()); }

// ---- A small decoder with Go encoding/json semantics: unknown keys ignored, keys matched
// exactly or else case-insensitively, null leaves the zero value, type mismatches reported
// as "json: cannot unmarshal <kind> into Go struct field <Struct>.<field> of type <type>".

std::string JsonKind(const Json& j) {
  switch (j.type()) {
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "bool";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::null:
      return "null";
    default:
      return "number";
  }
}

absl::Status FieldTypeError(const Json& j, std::string_view strct, std::string_view field,
                            std::string_view type) {
  return absl::InvalidArgumentError(StrCat("json: cannot unmarshal ", JsonKind(j),
                                           " into Go struct field ", strct, ".", field,
                                           " of type ", type));
}

absl::Status ValueTypeError(const Json& j, std::string_view type) {
  return absl::InvalidArgumentError(
      StrCat("json: cannot unmarshal ", JsonKind(j), " into Go value of type ", type));
}

bool EqualFold(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The member for Go field tag `key`: the exact key if present, else a case-insensitive one.
const Json* Member(const Json& obj, std::string_view key) {
  auto it = obj.find(std::string(key));
  if (it != obj.end()) return &*it;
  for (auto i = obj.begin(); i != obj.end(); ++i) {
    if (EqualFold(i.key(), key)) return &*i;
  }
  return nullptr;
}

absl::Status DecodeString(const Json* j, std::string_view strct, std::string_view field,
                          std::string* out) {
  if (j == nullptr || j->is_null()) return absl::OkStatus();
  if (!j->is_string()) return FieldTypeError(*j, strct, field, "string");
  *out = j->get<std::string>();
  return absl::OkStatus();
}

absl::Status DecodeBool(const Json* j, std::string_view strct, std::string_view field,
                        bool* out) {
  if (j == nullptr || j->is_null()) return absl::OkStatus();
  if (!j->is_boolean()) return FieldTypeError(*j, strct, field, "bool");
  *out = j->get<bool>();
  return absl::OkStatus();
}

absl::Status DecodeStrings(const Json* j, std::string_view strct, std::string_view field,
                           std::vector<std::string>* out) {
  if (j == nullptr || j->is_null()) return absl::OkStatus();
  if (!j->is_array()) return FieldTypeError(*j, strct, field, "[]string");
  out->clear();
  for (const Json& e : *j) {
    if (e.is_null()) {
      out->emplace_back();
    } else if (e.is_string()) {
      out->push_back(e.get<std::string>());
    } else {
      return FieldTypeError(e, strct, field, "string");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> ParseText(std::string_view value) {
  auto j = base::ParseJson(value);
  if (!j.ok()) return absl::InvalidArgumentError(std::string(Msg(j.status())));
  return j;
}

absl::StatusOr<AnnoPodIPPool> DecodePodIPPool(std::string_view value) {
  SP_ASSIGN_OR_RETURN(Json j, ParseText(value));
  AnnoPodIPPool out;
  if (j.is_null()) return out;
  if (!j.is_object()) return ValueTypeError(j, "types.AnnoPodIPPoolValue");
  SP_RETURN_IF_ERROR(DecodeStrings(Member(j, "ipv4"), "AnnoPodIPPoolValue", "ipv4", &out.ipv4));
  SP_RETURN_IF_ERROR(DecodeStrings(Member(j, "ipv6"), "AnnoPodIPPoolValue", "ipv6", &out.ipv6));
  return out;
}

absl::StatusOr<std::vector<AnnoIPPoolItem>> DecodePodIPPools(std::string_view value) {
  SP_ASSIGN_OR_RETURN(Json j, ParseText(value));
  std::vector<AnnoIPPoolItem> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return ValueTypeError(j, "types.AnnoPodIPPoolsValue");
  for (const Json& e : j) {
    AnnoIPPoolItem item;
    if (!e.is_null()) {
      if (!e.is_object()) return ValueTypeError(e, "types.AnnoIPPoolItem");
      SP_RETURN_IF_ERROR(DecodeString(Member(e, "interface"), "AnnoIPPoolItem", "interface",
                                      &item.interface_));
      SP_RETURN_IF_ERROR(DecodeStrings(Member(e, "ipv4"), "AnnoIPPoolItem", "ipv4", &item.ipv4));
      SP_RETURN_IF_ERROR(DecodeStrings(Member(e, "ipv6"), "AnnoIPPoolItem", "ipv6", &item.ipv6));
      SP_RETURN_IF_ERROR(DecodeBool(Member(e, "cleangateway"), "AnnoIPPoolItem",
                                    "cleangateway", &item.clean_gateway));
    }
    out.push_back(std::move(item));
  }
  return out;
}

absl::StatusOr<AnnoSubnetItem> DecodeSubnetItem(const Json& e) {
  AnnoSubnetItem item;
  if (e.is_null()) return item;
  if (!e.is_object()) return ValueTypeError(e, "types.AnnoSubnetItem");
  SP_RETURN_IF_ERROR(
      DecodeString(Member(e, "interface"), "AnnoSubnetItem", "interface", &item.interface_));
  SP_RETURN_IF_ERROR(DecodeStrings(Member(e, "ipv4"), "AnnoSubnetItem", "ipv4", &item.ipv4));
  SP_RETURN_IF_ERROR(DecodeStrings(Member(e, "ipv6"), "AnnoSubnetItem", "ipv6", &item.ipv6));
  return item;
}

absl::Status WrongInput(std::string_view annotation, std::string_view detail) {
  return absl::InvalidArgumentError(StrCat(
      "wrong input, invalid format of Pod annotation '", annotation, "': ", detail));
}

// Go strconv.Atoi: optional sign, decimal digits, int64 range.
absl::StatusOr<int64_t> Atoi(std::string_view s) {
  std::string_view digits = s;
  bool neg = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    neg = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) {
    return absl::InvalidArgumentError(
        StrCat("strconv.Atoi: parsing \"", s, "\": invalid syntax"));
  }
  uint64_t v = 0;
  const uint64_t limit = neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return absl::InvalidArgumentError(
          StrCat("strconv.Atoi: parsing \"", s, "\": invalid syntax"));
    }
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10) {
      return absl::InvalidArgumentError(
          StrCat("strconv.Atoi: parsing \"", s, "\": value out of range"));
    }
    v = v * 10 + d;
  }
  if (neg) return v == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min()
                                             : -static_cast<int64_t>(v);
  return static_cast<int64_t>(v);
}

// Go strconv.ParseBool.
std::optional<bool> ParseGoBool(std::string_view s) {
  static const std::set<std::string_view> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string_view> kFalse = {"0", "f", "F", "FALSE", "false", "False"};
  if (kTrue.count(s)) return true;
  if (kFalse.count(s)) return false;
  return std::nullopt;
}

std::string_view TrimSpace(std::string_view s) {
  auto sp = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (!s.empty() && sp(s.front())) s.remove_prefix(1);
  while (!s.empty() && sp(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

// Go net.ParseMAC: 6, 8 or 20 octets, "xx:xx", "xx-xx" or "xxxx.xxxx" groups.
bool IsMAC(std::string_view s) {
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  if (s.size() < 14) return false;
  if (s[2] == ':' || s[2] == '-') {
    if ((s.size() + 1) % 3 != 0) return false;
    size_t n = (s.size() + 1) / 3;
    if (n != 6 && n != 8 && n != 20) return false;
    for (size_t i = 0; i < n; ++i) {
      size_t x = i * 3;
      if (!hex(s[x]) || !hex(s[x + 1])) return false;
      if (i + 1 < n && s[x + 2] != s[2]) return false;
    }
    return true;
  }
  if (s[4] == '.') {
    if ((s.size() + 1) % 5 != 0) return false;
    size_t n = 2 * (s.size() + 1) / 5;
    if (n != 6 && n != 8 && n != 20) return false;
    for (size_t i = 0; i < n / 2; ++i) {
      size_t x = i * 5;
      for (size_t k = 0; k < 4; ++k) {
        if (!hex(s[x + k])) return false;
      }
      if (i + 1 < n / 2 && s[x + 4] != '.') return false;
    }
    return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<AnnoPodIPPool> ParsePodIPPoolAnnotation(std::string_view value) {
  auto v = DecodePodIPPool(value);
  if (!v.ok()) return WrongInput(api::kAnnoPodIPPool, Msg(v.status()));
  return v;
}

absl::StatusOr<std::vector<AnnoIPPoolItem>> ParsePodIPPoolsAnnotation(std::string_view value) {
  auto v = DecodePodIPPools(value);
  if (!v.ok()) return WrongInput(api::kAnnoPodIPPools, Msg(v.status()));
  return v;
}

absl::Status ValidateAndMutateMultiNIC(std::vector<AnnoIPPoolItem>& items,
                                       std::string_view current_nic) {
  if (items.empty()) return absl::InvalidArgumentError("value requires at least one item");
  const bool has_nic = !items[0].interface_.empty();
  std::set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].interface_.empty() != has_nic) {
      return absl::InvalidArgumentError("NIC should be either all specified or all unspecified");
    }
    if (items[i].interface_.empty()) items[i].interface_ = std::to_string(i);
    if (!seen.insert(items[i].interface_).second) {
      return absl::InvalidArgumentError(StrCat("duplicate interface ", items[i].interface_));
    }
  }
  if (has_nic && !seen.count(std::string(current_nic))) {
    return absl::InvalidArgumentError(StrCat("interface ", current_nic, " must be specified"));
  }
  return absl::OkStatus();
}

bool IsMultipleNicWithNoName(const Annotations& pod_annotations) {
  auto it = pod_annotations.find(std::string(api::kAnnoPodIPPools));
  if (it == pod_annotations.end()) return false;
  auto items = DecodePodIPPools(it->second);
  if (!items.ok() || items->empty()) return false;
  return std::all_of(items->begin(), items->end(),
                     [](const AnnoIPPoolItem& i) { return i.interface_.empty(); });
}

absl::StatusOr<std::vector<api::Route>> ParsePodRoutesAnnotation(
    const Annotations& pod_annotations) {
  std::vector<api::Route> out;
  auto it = pod_annotations.find(std::string(api::kAnnoPodRoutes));
  if (it == pod_annotations.end()) return out;
  auto j = ParseText(it->second);
  if (!j.ok()) return WrongInput(api::kAnnoPodRoutes, Msg(j.status()));
  if (j->is_null()) return out;
  if (!j->is_array()) {
    return WrongInput(api::kAnnoPodRoutes, Msg(ValueTypeError(*j, "types.AnnoPodRoutesValue")));
  }
  for (const Json& e : *j) {
    api::Route r;
    if (!e.is_null()) {
      if (!e.is_object()) {
        return WrongInput(api::kAnnoPodRoutes, Msg(ValueTypeError(e, "types.AnnoRouteItem")));
      }
      absl::Status s = DecodeString(Member(e, "dst"), "AnnoRouteItem", "dst", &r.dst);
      if (s.ok()) s = DecodeString(Member(e, "gw"), "AnnoRouteItem", "gw", &r.gw);
      if (!s.ok()) return WrongInput(api::kAnnoPodRoutes, Msg(s));
    }
    // Upstream IsRouteWithoutIPVersion: an IPv4 CIDR with an IPv4 gw, or both IPv6.
    auto dst = base::IPPrefix::Parse(r.dst);
    auto gw = base::IPAddress::Parse(r.gw);
    if (!dst.ok() || !gw.ok() || dst->family() != gw->family()) {
      return WrongInput(api::kAnnoPodRoutes,
                        StrCat("invalid route format 'dst: ", r.dst, ", gw: ", r.gw, "'"));
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<NamespaceDefaultPools> ParseNamespaceDefaultPools(
    const Annotations& namespace_annotations) {
  NamespaceDefaultPools out;
  for (auto [key, dst] : {std::pair{api::kAnnoNSDefaultIPv4Pool, &out.ipv4},
                          std::pair{api::kAnnoNSDefaultIPv6Pool, &out.ipv6}}) {
    auto it = namespace_annotations.find(std::string(key));
    if (it == namespace_annotations.end()) continue;
    auto j = ParseText(it->second);
    absl::Status s = j.status();
    if (s.ok() && !j->is_null()) {
      if (!j->is_array()) {
        s = ValueTypeError(*j, "types.AnnoNSDefautlV4PoolValue");
      } else {
        for (const Json& e : *j) {
          if (e.is_null()) {
            dst->emplace_back();
          } else if (e.is_string()) {
            dst->push_back(e.get<std::string>());
          } else {
            s = ValueTypeError(e, "string");
            break;
          }
        }
      }
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          StrCat("invalid format of Namespace annotation '", key, "': ", Msg(s)));
    }
  }
  return out;
}

absl::StatusOr<std::pair<bool, int64_t>> ParsePoolIPNumber(std::string_view value) {
  const size_t plus = static_cast<size_t>(std::count(value.begin(), value.end(), '+'));
  if (plus > 1) return absl::InvalidArgumentError(StrCat("invalid input '", value, "'"));
  std::string_view num = value;
  bool flexible = false;
  if (size_t pos = value.find('+'); pos != std::string_view::npos) {
    flexible = true;
    num = value.substr(pos + 1);
  }
  auto n = Atoi(num);
  if (!n.ok()) {
    return absl::InvalidArgumentError(StrCat("invalid input '", value, "': ", Msg(n.status())));
  }
  return std::pair{flexible, *n};
}

absl::StatusOr<std::optional<SubnetAnnotation>> ParseSubnetAnnotation(
    const Annotations& pod_annotations, int64_t cluster_default_flexible_ip_number) {
  SubnetAnnotation out;
  std::string raw;
  if (auto it = pod_annotations.find(std::string(api::kAnnoSubnets));
      it != pod_annotations.end()) {
    raw = it->second;
    absl::Status s;
    auto j = ParseText(raw);
    s = j.status();
    if (s.ok() && !j->is_null()) {
      if (!j->is_array()) {
        s = ValueTypeError(*j, "[]types.AnnoSubnetItem");
      } else {
        for (const Json& e : *j) {
          auto item = DecodeSubnetItem(e);
          if (!item.ok()) {
            s = item.status();
            break;
          }
          out.multiple.push_back(*std::move(item));
        }
      }
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(StrCat("failed to parse anntation '", api::kAnnoSubnets,
                                               "' value '", raw, "', error: ", Msg(s)));
    }
  } else if (auto it1 = pod_annotations.find(std::string(api::kAnnoSubnet));
             it1 != pod_annotations.end()) {
    raw = it1->second;
    auto j = ParseText(raw);
    absl::Status s = j.status();
    if (s.ok()) {
      auto item = DecodeSubnetItem(*j);
      s = item.status();
      if (s.ok()) out.single = *std::move(item);
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(StrCat("failed to parse anntation '", api::kAnnoSubnet,
                                               "' value '", raw, "', error: ", Msg(s)));
    }
  } else {
    return std::optional<SubnetAnnotation>();
  }

  if (auto it = pod_annotations.find(std::string(api::kAnnoIPPoolIPNumber));
      it != pod_annotations.end()) {
    SP_ASSIGN_OR_RETURN(auto num, ParsePoolIPNumber(it->second));
    if (num.second < 0) {
      return absl::InvalidArgumentError(StrCat("subnet '", api::kAnnoIPPoolIPNumber,
                                               "' value must equal or greater than 0"));
    }
    if (num.first) {
      out.flexible_ip_number = num.second;
    } else {
      out.assign_ip_number = num.second;
    }
  } else {
    out.flexible_ip_number = cluster_default_flexible_ip_number;
  }

  if (auto it = pod_annotations.find(std::string(api::kAnnoIPPoolReclaim));
      it != pod_annotations.end()) {
    std::optional<bool> b = ParseGoBool(it->second);
    if (!b) {
      return absl::InvalidArgumentError(
          StrCat("failed to parse spider subnet '", api::kAnnoIPPoolReclaim,
                 "', error: strconv.ParseBool: parsing \"", it->second, "\": invalid syntax"));
    }
    out.reclaim_ip_pool = *b;
  }

  // Upstream mutateAndValidateSubnetAnno ("%v" of the config is shown as the raw value).
  if (!out.multiple.empty()) {
    std::vector<std::string> v4, v6, ifs;
    for (AnnoSubnetItem& item : out.multiple) {
      ifs.push_back(item.interface_);
      if (!item.ipv4.empty()) {
        item.ipv4.resize(1);
        if (item.ipv4[0].empty()) {
          return absl::InvalidArgumentError(
              "it's invalid to set an empty IPv4 subnet with mutilple interfaces");
        }
        v4.push_back(item.ipv4[0]);
      }
      if (!item.ipv6.empty()) {
        item.ipv6.resize(1);
        if (item.ipv6[0].empty()) {
          return absl::InvalidArgumentError(
              "it's invalid to set an empty IPv6 subnet with mutilple interfaces");
        }
        v6.push_back(item.ipv6[0]);
      }
      if (item.ipv4.empty() && item.ipv6.empty()) {
        return absl::InvalidArgumentError(StrCat(
            "it's invalid to set dual empty subnet with multiple interfaces: ", raw));
      }
    }
    auto dup = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return std::adjacent_find(v.begin(), v.end()) != v.end();
    };
    if (dup(v4) || dup(v6)) {
      return absl::InvalidArgumentError(
          StrCat("it's invalid to use the same subnet for multiple interfaces: ", raw));
    }
    if (dup(ifs)) {
      return absl::InvalidArgumentError(
          StrCat("it's invalid to use the same Interface name for multiple interfaces: ", raw));
    }
  } else if (out.single.has_value()) {
    AnnoSubnetItem& item = *out.single;
    if (!item.ipv4.empty()) {
      item.ipv4.resize(1);
      if (item.ipv4[0].empty()) {
        return absl::InvalidArgumentError(
            StrCat("it's invalid to set an empty IPv4 subnet with single interface: ", raw));
      }
    }
    if (!item.ipv6.empty()) {
      item.ipv6.resize(1);
      if (item.ipv6[0].empty()) {
        return absl::InvalidArgumentError(
            StrCat("it's invalid to set an empty IPv6 subnet with single interface: ", raw));
      }
    }
    if (item.ipv4.empty() && item.ipv6.empty()) {
      return absl::InvalidArgumentError(
          StrCat("it's invalid to set dual empty subnet with single interface: ", raw));
    }
    if (item.interface_.empty()) item.interface_ = std::string(kDefaultInterface);
  } else {
    return absl::InvalidArgumentError(StrCat("no subnets specified: ", raw));
  }
  return std::optional<SubnetAnnotation>(std::move(out));
}

// ---- Multus ---------------------------------------------------------------------------------

absl::StatusOr<NetworkObjectName> ParseNetworkObjectName(std::string_view text) {
  NetworkObjectName out;
  std::vector<std::string_view> slash = Split(text, '/');
  std::string_view name;
  if (slash.size() == 2) {
    out.namespace_ = std::string(TrimSpace(slash[0]));
    name = slash[1];
  } else if (slash.size() == 1) {
    name = slash[0];
  } else {
    return absl::InvalidArgumentError(
        "parsePodNetworkObjectName: Invalid network object (failed at '/')");
  }
  std::vector<std::string_view> at = Split(name, '@');
  out.name = std::string(TrimSpace(at[0]));
  if (at.size() == 2) {
    out.interface_ = std::string(TrimSpace(at[1]));
  } else if (at.size() != 1) {
    return absl::InvalidArgumentError(
        "parsePodNetworkObjectName: Invalid network object (failed at '@')");
  }
  for (const std::string* item : {&out.namespace_, &out.name, &out.interface_}) {
    // Multus' regex is the DNS-1123 label pattern without its length limit.
    if (!item->empty() && !api::MatchesDns1123Label(*item)) {
      return absl::InvalidArgumentError(StrCat(
          "parsePodNetworkObjectName: Failed to parse: one or more items did not match "
          "comma-delimited format (must consist of lower case alphanumeric characters). Must "
          "start and end with an alphanumeric character), mismatch @ '",
          *item, "'"));
    }
  }
  return out;
}

absl::StatusOr<std::vector<NetworkSelection>> ParseNetworksAnnotation(
    std::string_view value, std::string_view default_namespace) {
  std::vector<NetworkSelection> out;
  if (value.empty()) {
    return absl::InvalidArgumentError(
        StrCat("parsePodNetworkAnnotation: ", value, ", ", default_namespace));
  }
  if (value.substr(0, 3) == "[{\"") {
    auto j = ParseText(value);
    absl::Status s = j.status();
    if (s.ok() && !j->is_array()) s = ValueTypeError(*j, "[]*v1.NetworkSelectionElement");
    if (s.ok()) {
      for (const Json& e : *j) {
        NetworkSelection n;
        if (!e.is_null()) {
          if (!e.is_object()) {
            s = ValueTypeError(e, "v1.NetworkSelectionElement");
            break;
          }
          s = DecodeString(Member(e, "name"), "NetworkSelectionElement", "name", &n.name);
          if (s.ok()) {
            s = DecodeString(Member(e, "namespace"), "NetworkSelectionElement", "namespace",
                             &n.namespace_);
          }
          if (s.ok()) {
            s = DecodeString(Member(e, "interface"), "NetworkSelectionElement", "interface",
                             &n.interface_);
          }
          std::string mac;
          if (s.ok()) s = DecodeString(Member(e, "mac"), "NetworkSelectionElement", "mac", &mac);
          if (s.ok() && !mac.empty() && !IsMAC(mac)) {
            return absl::InvalidArgumentError(StrCat(
                "parsePodNetworkAnnotation: failed to mac: address ", mac, ": invalid MAC address"));
          }
          std::vector<std::string> ips;
          if (s.ok()) s = DecodeStrings(Member(e, "ips"), "NetworkSelectionElement", "ips", &ips);
          if (s.ok()) {
            for (const std::string& ip : ips) {
              if (ip.find('/') != std::string::npos) {
                if (!base::IPPrefix::Parse(ip).ok()) {
                  return absl::InvalidArgumentError(StrCat("failed to parse CIDR \"", ip,
                                                           "\": invalid CIDR address: ", ip));
                }
              } else if (!base::IPAddress::Parse(ip).ok()) {
                return absl::InvalidArgumentError(
                    StrCat("failed to parse IP address \"", ip, "\""));
              }
            }
          }
          if (!s.ok()) break;
        }
        out.push_back(std::move(n));
      }
    }
    if (!s.ok()) {
      return absl::InvalidArgumentError(StrCat(
          "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection "
          "Annotation JSON format: ",
          Msg(s)));
    }
  } else {
    for (std::string_view item : Split(value, ',')) {
      auto name = ParseNetworkObjectName(TrimSpace(item));
      if (!name.ok()) {
        return absl::InvalidArgumentError(StrCat("parsePodNetworkAnnotation: ", Msg(name.status())));
      }
      out.push_back({.name = name->name, .namespace_ = name->namespace_,
                     .interface_ = name->interface_});
    }
  }
  for (NetworkSelection& n : out) {
    if (n.namespace_.empty()) n.namespace_ = std::string(default_namespace);
  }
  return out;
}

absl::StatusOr<std::string> NetworkForNIC(const Annotations& pod_annotations,
                                          std::string_view pod_namespace, std::string_view nic,
                                          const std::optional<std::string>& cluster_network,
                                          std::string_view agent_namespace) {
  if (nic == kDefaultInterface || nic == "0") {
    std::string obj;
    if (auto it = pod_annotations.find(std::string(api::kMultusDefaultNetwork));
        it != pod_annotations.end()) {
      obj = it->second;
    }
    if (obj.empty()) {
      if (!cluster_network.has_value()) {
        return absl::FailedPreconditionError("cluster-network multus isn't set");
      }
      obj = *cluster_network;
    }
    auto name = ParseNetworkObjectName(obj);
    if (!name.ok()) {
      return absl::InvalidArgumentError(StrCat("failed to parse Annotation '",
                                               api::kMultusDefaultNetwork, "' value '", obj,
                                               "', error: ", Msg(name.status())));
    }
    std::string ns = name->namespace_.empty() ? std::string(agent_namespace) : name->namespace_;
    return StrCat(ns, "/", name->name);
  }
  std::string value;
  if (auto it = pod_annotations.find(std::string(api::kMultusNetworks));
      it != pod_annotations.end()) {
    value = it->second;
  }
  auto nets = ParseNetworksAnnotation(value, pod_namespace);
  if (!nets.ok()) {
    return absl::InvalidArgumentError(
        StrCat("failed to parse pod network annotation: ", Msg(nets.status())));
  }
  for (size_t i = 0; i < nets->size(); ++i) {
    NetworkSelection& n = (*nets)[i];
    if (n.interface_.empty()) n.interface_ = StrCat("net", i + 1);
    if (nic == n.interface_ || nic == std::to_string(i + 1)) {
      return StrCat(n.namespace_, "/", n.name);
    }
  }
  return absl::NotFoundError(StrCat("unknown: no matched multus object for NIC '", nic,
                                    "'. The multus network-attachments: ", value));
}

}  // namespace spiderpool::ipam
