#include "dra/checkpoint/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "api/codec.h"
#include "base/log.h"
#include "base/status.h"
#include "base/strings.h"

namespace spiderpool::dra::checkpoint {
namespace {

using base::Json;
using base::StrCat;

constexpr std::string_view kStarted = "PrepareStarted";
constexpr std::string_view kCompleted = "PrepareCompleted";
constexpr std::string_view kChecksumPrefix = "crc32:";

// ---- the JSON shape of "data" (decoded with api/codec: every error with its path) ---------

struct DeviceJson {
  std::vector<std::string> request_names;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  std::vector<std::string> cdi_device_ids;
  template <typename V>
  void Visit(V& v) {
    v.Field("requestNames", request_names);
    v.Field("poolName", pool, {.required = true});
    v.Field("deviceName", device, {.required = true});
    v.Field("shareID", share_id);
    v.Field("cdiDeviceIDs", cdi_device_ids);
  }
};

struct StatusKeyJson {
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  template <typename V>
  void Visit(V& v) {
    v.Field("driver", driver, {.required = true});
    v.Field("pool", pool, {.required = true});
    v.Field("device", device, {.required = true});
    v.Field("shareID", share_id);
  }
};

struct ClaimJson {
  std::string state;
  std::string namespace_;
  std::string name;
  std::vector<DeviceJson> devices;
  std::string cdi_spec_path;
  std::vector<StatusKeyJson> status_devices;
  template <typename V>
  void Visit(V& v) {
    v.Field("state", state,
            {.required = true, .enum_values = {kStarted, kCompleted}});
    v.Field("namespace", namespace_, {.required = true});
    v.Field("name", name, {.required = true});
    v.Field("devices", devices);
    v.Field("cdiSpecPath", cdi_spec_path);
    v.Field("statusDevices", status_devices);
  }
};

struct DataJson {
  std::string boot_id;
  std::map<std::string, ClaimJson> claims;
  template <typename V>
  void Visit(V& v) {
    v.Field("nodeBootID", boot_id, {.required = true});
    v.Field("preparedClaims", claims);
  }
};

DataJson ToJson(const Data& d) {
  DataJson out;
  out.boot_id = d.boot_id;
  for (const auto& [uid, c] : d.claims) {
    ClaimJson& j = out.claims[uid];
    j.state = std::string(ClaimStateName(c.state));
    j.namespace_ = c.namespace_;
    j.name = c.name;
    for (const Device& dev : c.devices) {
      j.devices.push_back({dev.request_names, dev.pool, dev.device, dev.share_id,
                           dev.cdi_device_ids});
    }
    j.cdi_spec_path = c.cdi_spec_path;
    for (const StatusKey& k : c.status_devices) {
      j.status_devices.push_back({k.driver, k.pool, k.device, k.share_id});
    }
  }
  return out;
}

Data FromJson(DataJson j) {
  Data out;
  out.boot_id = std::move(j.boot_id);
  for (auto& [uid, c] : j.claims) {
    PreparedClaim& p = out.claims[uid];
    p.state = c.state == kCompleted ? ClaimState::kPrepareCompleted : ClaimState::kPrepareStarted;
    p.namespace_ = std::move(c.namespace_);
    p.name = std::move(c.name);
    for (DeviceJson& d : c.devices) {
      p.devices.push_back({std::move(d.request_names), std::move(d.pool), std::move(d.device),
                           std::move(d.share_id), std::move(d.cdi_device_ids)});
    }
    p.cdi_spec_path = std::move(c.cdi_spec_path);
    for (StatusKeyJson& k : c.status_devices) {
      p.status_devices.push_back(
          {std::move(k.driver), std::move(k.pool), std::move(k.device), std::move(k.share_id)});
    }
  }
  return out;
}

std::string ChecksumOf(std::string_view data_json) {
  char hex[9];
  std::snprintf(hex, sizeof(hex), "%08x", Crc32(data_json));
  return StrCat(kChecksumPrefix, hex);
}

absl::Status Errno(std::string_view what, std::string_view path, int err) {
  return absl::InternalError(StrCat(what, " ", path, ": ", strerror(err)));
}

// Reads a whole file. NotFound when it does not exist.
absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return absl::NotFoundError(StrCat(path, " does not exist"));
    return Errno("open", path, err);
  }
  std::string out;
  std::array<char, 65536> buf;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Errno("read", path, err);
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::string_view ClaimStateName(ClaimState s) {
  return s == ClaimState::kPrepareCompleted ? kCompleted : kStarted;
}

size_t Data::CountIn(ClaimState s) const {
  size_t n = 0;
  for (const auto& [uid, c] : claims) n += c.state == s ? 1 : 0;
  return n;
}

uint32_t Crc32(std::string_view bytes) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) crc = kTable[(crc ^ b) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

std::string Encode(const Data& data) {
  Json d = api::Encode(ToJson(data));
  std::string data_json = base::DumpJson(d);
  Json file = Json::object();
  file["version"] = kVersion;
  file["checksum"] = ChecksumOf(data_json);
  file["data"] = std::move(d);
  return base::DumpJson(file) + "\n";
}

absl::StatusOr<Data> Decode(std::string_view content) {
  auto parsed = base::ParseJson(content);
  if (!parsed.ok()) {
    return absl::DataLossError(StrCat("not JSON: ", base::FromAbsl(parsed.status().message())));
  }
  const Json& file = *parsed;
  if (!file.is_object()) return absl::DataLossError("not a JSON object");
  auto version = file.find("version");
  if (version == file.end() || !version->is_number_integer()) {
    return absl::DataLossError("version: missing or not an integer");
  }
  if (version->get<int64_t>() != kVersion) {
    return absl::DataLossError(StrCat("unsupported version ", version->get<int64_t>(),
                                      " (this build reads version ", kVersion, ")"));
  }
  auto checksum = file.find("checksum");
  if (checksum == file.end() || !checksum->is_string()) {
    return absl::DataLossError("checksum: missing or not a string");
  }
  auto data = file.find("data");
  if (data == file.end() || !data->is_object()) {
    return absl::DataLossError("data: missing or not an object");
  }
  std::string want = ChecksumOf(base::DumpJson(*data));
  if (checksum->get<std::string>() != want) {
    return absl::DataLossError(StrCat("checksum mismatch: file says ",
                                      checksum->get<std::string>(), ", content has ", want));
  }
  api::DecodeErrors errs;
  DataJson dj = api::DecodeInto<DataJson>(*data, &errs, "data");
  if (!errs.ok()) {
    const absl::Status st = errs.ToStatus();
    return absl::DataLossError(st.message());
  }
  return FromJson(std::move(dj));
}

absl::StatusOr<std::string> ReadBootID(const std::string& path) {
  auto content = ReadFile(path);
  if (!content.ok()) return base::Annotate(content.status(), "reading the boot ID");
  std::string id = *content;
  size_t nl = id.find('\n');
  if (nl != std::string::npos) id.resize(nl);
  while (!id.empty() && (id.back() == ' ' || id.back() == '\r' || id.back() == '\t')) id.pop_back();
  if (id.empty()) return absl::InternalError(StrCat("reading the boot ID: ", path, " is empty"));
  return id;
}

Checkpoint::Checkpoint(Options options)
    : options_(std::move(options)), path_(StrCat(options_.dir, "/", options_.file_name)) {}

absl::StatusOr<std::string> Checkpoint::BootID() {
  if (options_.boot_id.empty()) {
    SP_ASSIGN_OR_RETURN(options_.boot_id, ReadBootID(options_.boot_id_path));
  }
  return options_.boot_id;
}

absl::StatusOr<Data> Checkpoint::Load() {
  SP_ASSIGN_OR_RETURN(std::string boot_id, BootID());
  Data empty;
  empty.boot_id = boot_id;
  auto content = ReadFile(path_);
  if (absl::IsNotFound(content.status())) return empty;
  if (!content.ok()) return base::Annotate(content.status(), "reading the DRA checkpoint");
  auto data = Decode(*content);
  if (!data.ok()) {
    const std::string aside =
        StrCat(path_, ".corrupt-", absl::ToUnixNanos(absl::Now()));
    absl::Status moved = options_.fs->Rename(path_, aside);
    if (moved.ok()) (void)options_.fs->FsyncDir(DirOf(path_));
    std::string what = moved.ok() ? StrCat("moved it to ", aside, "; the next load starts empty")
                                  : StrCat("could not move it aside (",
                                           base::FromAbsl(moved.message()), ")");
    return absl::DataLossError(StrCat("DRA checkpoint ", path_, " is corrupted (",
                                      base::FromAbsl(data.status().message()), "): not trusted, ",
                                      what));
  }
  if (data->boot_id != boot_id) {
    SP_LOG(Info)
        .Msg("DRA checkpoint is from another boot: discarding it")
        .KV("path", path_)
        .KV("checkpointBootID", data->boot_id)
        .KV("bootID", boot_id)
        .KV("claims", data->claims.size());
    return empty;
  }
  return data;
}

absl::Status Checkpoint::Save(const Data& data) {
  SP_ASSIGN_OR_RETURN(std::string boot_id, BootID());
  Data copy = data;
  copy.boot_id = boot_id;
  const std::string content = Encode(copy);
  cdi::FileSystem* fs = options_.fs;
  const std::string& dir = options_.dir;
  const std::string context = StrCat("writing the DRA checkpoint ", path_);
  SP_RETURN_IF_ERROR(base::Annotate(fs->MkdirAll(dir), context));
  std::string tmp;
  auto created = fs->CreateTemp(dir, StrCat(".", options_.file_name, ".tmp-"), &tmp);
  if (!created.ok()) return base::Annotate(created.status(), context);
  const int fd = *created;
  auto fail = [&](const absl::Status& s, bool open) {
    if (open) (void)fs->Close(fd);
    (void)fs->Unlink(tmp);
    return base::Annotate(s, context);
  };
  for (std::string_view rest = content; !rest.empty();) {
    auto n = fs->Write(fd, rest);
    if (!n.ok()) return fail(n.status(), true);
    if (*n == 0) return fail(absl::InternalError("write returned 0"), true);
    rest.remove_prefix(std::min(*n, rest.size()));
  }
  if (auto s = fs->Fsync(fd); !s.ok()) return fail(s, true);
  if (auto s = fs->Close(fd); !s.ok()) return fail(s, false);
  if (auto s = fs->Rename(tmp, path_); !s.ok()) return fail(s, false);
  return base::Annotate(fs->FsyncDir(dir), context);
}

}  // namespace spiderpool::dra::checkpoint
