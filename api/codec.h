#pragma once
// Reflection-lite JSON codec for API types. Each struct lists its fields once:
//
//   struct Route {
//     std::string dst;
//     std::string gw;
//     template <typename V> void Visit(V& v) {
//       v.Field("dst", dst, {.required = true, .format = Format::kCIDR});
//       v.Field("gw", gw, {.required = true, .format = Format::kIP});
//     }
//   };
//
// and that one list drives decoding (collecting EVERY error with its field path, e.g.
// `spec.ips[2]: "10.0.0.300" is not an IP`), encoding, and field listing (used to check the
// C++ types against the CRD schemas). A struct may keep fields it does not model with
// `v.Unknown(extra_)`; they are re-emitted on encode so a read-modify-write loses nothing.
//
// Encoding rules (mirroring Go's `omitempty` convention of Kubernetes types):
//   - required fields are always written;
//   - std::optional<X> is written iff it has a value (even a zero value);
//   - other fields are omitted when zero: "", 0, false, empty vector/map, empty struct.
// Decoding never throws and never stops at the first error.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/json.h"

namespace spiderpool::api {

using base::Json;

// A string format checked while decoding.
enum class Format {
  kNone,
  kIP,         // "10.0.0.1", "fd00::1"
  kCIDR,       // "10.0.0.0/24" (host bits allowed here; canonical form is a webhook rule)
  kIPRange,    // "10.0.0.1" or "10.0.0.1-10.0.0.9"
  kIPOrCIDR,   // either of the first two
};

struct FieldOpts {
  // Required fields are always written, and must be present (strings: non-empty, unless
  // allow_empty) when decoding.
  bool required = false;
  bool allow_empty = false;
  Format format = Format::kNone;
  // Allowed values for strings (or integers, written as decimal text). Empty = any.
  std::vector<std::string_view> enum_values = {};
  // Inclusive integer bounds.
  std::optional<int64_t> minimum = {};
  std::optional<int64_t> maximum = {};
};

struct FieldError {
  std::string field;    // "spec.ips[2]"
  std::string message;  // "\"10.0.0.300\" is not an IP"
  std::string ToString() const { return field.empty() ? message : field + ": " + message; }
};

// All errors of one decode, in document order. ToStatus() joins them into one
// InvalidArgument status (each "path: message" separated by "; ").
struct DecodeErrors {
  std::vector<FieldError> errors;
  bool ok() const { return errors.empty(); }
  void Add(std::string field, std::string message) {
    errors.push_back({std::move(field), std::move(message)});
  }
  absl::Status ToStatus(std::string_view what = "") const;
};

// Kubernetes "metav1.Time" (RFC 3339, seconds) and "metav1.MicroTime" (microseconds).
struct Time {
  absl::Time value = absl::UnixEpoch();
  friend bool operator==(const Time&, const Time&) = default;
};
struct MicroTime {
  absl::Time value = absl::UnixEpoch();
  friend bool operator==(const MicroTime&, const MicroTime&) = default;
};
std::string FormatTime(absl::Time t);       // 2024-01-02T03:04:05Z
std::string FormatMicroTime(absl::Time t);  // 2024-01-02T03:04:05.000000Z
absl::StatusOr<absl::Time> ParseTime(std::string_view text);

namespace codec_internal {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsMap : std::false_type {};
template <typename T>
struct IsMap<std::map<std::string, T>> : std::true_type {};

class Decoder;
class Encoder;
class Lister;

template <typename T>
constexpr bool kIsStruct = requires(T& t, Decoder& d) { t.Visit(d); };

std::string JoinPath(std::string_view parent, std::string_view name);
std::string IndexPath(std::string_view parent, size_t i);
std::string KeyPath(std::string_view parent, std::string_view key);
std::string Describe(const Json& j);  // for "got ..." in messages

bool CheckFormat(const std::string& value, Format f, std::string* message);

// ---- decoding -----------------------------------------------------------------------------
void DecodeScalar(const Json& j, std::string& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);
void DecodeScalar(const Json& j, bool& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);
void DecodeScalar(const Json& j, int64_t& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);
void DecodeScalar(const Json& j, int32_t& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);
void DecodeScalar(const Json& j, double& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);
void DecodeScalar(const Json& j, Json& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);
void DecodeScalar(const Json& j, Time& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);
void DecodeScalar(const Json& j, MicroTime& out, const FieldOpts& o, const std::string& path,
                  DecodeErrors* errs);

template <typename T>
void DecodeValue(const Json& j, T& out, const FieldOpts& o, const std::string& path,
                 DecodeErrors* errs);

class Decoder {
 public:
  Decoder(const Json& obj, std::string path, DecodeErrors* errs)
      : obj_(obj), path_(std::move(path)), errs_(errs) {}

  template <typename T>
  void Field(std::string_view name, T& out, const FieldOpts& o = {}) {
    consumed_.push_back(name);
    auto it = obj_.find(name);
    std::string path = JoinPath(path_, name);
    if (it == obj_.end() || (it->is_null() && !IsOptional<T>::value)) {
      if (o.required) errs_->Add(path, "Required value");
      return;
    }
    DecodeValue(*it, out, o, path, errs_);
  }
  void Unknown(Json& store) { unknown_ = &store; }
  void Finish();  // stores unconsumed keys into the Unknown() slot, if any

 private:
  const Json& obj_;
  std::string path_;
  DecodeErrors* errs_;
  std::vector<std::string_view> consumed_;
  Json* unknown_ = nullptr;
};

template <typename T>
void DecodeValue(const Json& j, T& out, const FieldOpts& o, const std::string& path,
                 DecodeErrors* errs) {
  if constexpr (IsOptional<T>::value) {
    if (j.is_null()) {
      out.reset();
      return;
    }
    out.emplace();
    DecodeValue(j, *out, o, path, errs);
  } else if constexpr (IsVector<T>::value) {
    out.clear();
    if (j.is_null()) return;
    if (!j.is_array()) {
      errs->Add(path, "expected array, got " + Describe(j));
      return;
    }
    out.resize(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      DecodeValue(j[i], out[i], o, IndexPath(path, i), errs);
    }
  } else if constexpr (IsMap<T>::value) {
    out.clear();
    if (j.is_null()) return;
    if (!j.is_object()) {
      errs->Add(path, "expected object, got " + Describe(j));
      return;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      DecodeValue(it.value(), out[it.key()], o, KeyPath(path, it.key()), errs);
    }
  } else if constexpr (kIsStruct<T>) {
    out = T{};
    if (!j.is_object()) {
      errs->Add(path, "expected object, got " + Describe(j));
      return;
    }
    Decoder d(j, path, errs);
    out.Visit(d);
    d.Finish();
  } else {
    DecodeScalar(j, out, o, path, errs);
  }
}

// ---- encoding -----------------------------------------------------------------------------
Json EncodeScalar(const std::string& v);
Json EncodeScalar(bool v);
Json EncodeScalar(int64_t v);
Json EncodeScalar(int32_t v);
Json EncodeScalar(double v);
Json EncodeScalar(const Json& v);
Json EncodeScalar(const Time& v);
Json EncodeScalar(const MicroTime& v);

template <typename T>
Json EncodeValue(const T& v);

// Zero values in encoded form: null, false, 0, "", [] and {} (Go's omitempty, plus empty
// structs, which Go would write but Kubernetes' own types mostly mark omitempty by pointer).
bool IsZeroJson(const Json& j);

class Encoder {
 public:
  explicit Encoder(Json* out) : out_(out) {}
  template <typename T>
  void Field(std::string_view name, T& v, const FieldOpts& o = {}) {
    if constexpr (IsOptional<T>::value) {
      if (!v.has_value()) return;
      (*out_)[std::string(name)] = EncodeValue(*v);
    } else {
      Json e = EncodeValue(v);
      if (!o.required && IsZeroJson(e)) return;
      (*out_)[std::string(name)] = std::move(e);
    }
  }
  void Unknown(Json& store) { unknown_ = &store; }
  void Finish();

 private:
  Json* out_;
  const Json* unknown_ = nullptr;
};

template <typename T>
Json EncodeValue(const T& v) {
  if constexpr (IsVector<T>::value) {
    Json arr = Json::array();
    for (const auto& e : v) arr.push_back(EncodeValue(e));
    return arr;
  } else if constexpr (IsMap<T>::value) {
    Json obj = Json::object();
    for (const auto& [k, e] : v) obj[k] = EncodeValue(e);
    return obj;
  } else if constexpr (IsOptional<T>::value) {
    return v.has_value() ? EncodeValue(*v) : Json(nullptr);
  } else if constexpr (kIsStruct<T>) {
    Json obj = Json::object();
    Encoder e(&obj);
    const_cast<T&>(v).Visit(e);  // the encoder only reads
    e.Finish();
    return obj;
  } else {
    return EncodeScalar(v);
  }
}

// ---- field listing ------------------------------------------------------------------------
// A tree of JSON field names, e.g. {"spec": {"ips": {}, "routes": {"dst": {}, "gw": {}}}}.
struct FieldTree {
  std::map<std::string, FieldTree> children;
  bool preserves_unknown = false;  // the struct keeps fields it does not model
};

class Lister {
 public:
  explicit Lister(FieldTree* out) : out_(out) {}
  template <typename T>
  void Field(std::string_view name, T&, const FieldOpts& = {}) {
    FieldTree& child = out_->children[std::string(name)];
    ListInto<T>(&child);
  }
  void Unknown(Json&) { out_->preserves_unknown = true; }
  template <typename T>
  static void ListInto(FieldTree* tree) {
    if constexpr (IsOptional<T>::value || IsVector<T>::value) {
      ListInto<typename T::value_type>(tree);
    } else if constexpr (IsMap<T>::value) {
      ListInto<typename T::mapped_type>(tree);
    } else if constexpr (kIsStruct<T>) {
      T t{};
      Lister l(tree);
      t.Visit(l);
    }
  }

 private:
  FieldTree* out_;
};

}  // namespace codec_internal

using codec_internal::FieldTree;

// Decodes `j` into a T, collecting every error. `path` prefixes error paths.
template <typename T>
T DecodeInto(const Json& j, DecodeErrors* errs, const std::string& path = "") {
  T out{};
  codec_internal::DecodeValue(j, out, FieldOpts{}, path, errs);
  return out;
}

// Decodes or returns InvalidArgument listing every field error.
template <typename T>
absl::StatusOr<T> Decode(const Json& j) {
  DecodeErrors errs;
  T out = DecodeInto<T>(j, &errs);
  if (!errs.ok()) return errs.ToStatus();
  return out;
}

// Parses JSON text and decodes it.
template <typename T>
absl::StatusOr<T> DecodeJson(std::string_view text) {
  auto j = base::ParseJson(text);
  if (!j.ok()) return j.status();
  return Decode<T>(*j);
}

template <typename T>
Json Encode(const T& v) {
  return codec_internal::EncodeValue(v);
}

template <typename T>
FieldTree ListFields() {
  FieldTree tree;
  codec_internal::Lister::ListInto<T>(&tree);
  return tree;
}

}  // namespace spiderpool::api
