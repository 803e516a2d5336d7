#pragma once
// The prepared-claims checkpoint of the DRA kubelet plugin: one JSON file in the plugin's data
// directory (`<plugin_dir>/checkpoint.json`, a hostPath shared by every plugin instance) that
// says, per claim UID, how far NodePrepareResources got and what NodeUnprepareResources must
// undo once the claim may be gone from the API server.
//
//   Checkpoint cp({.dir = plugin_dir});
//   auto data = cp.Load();           // empty Data for a missing file / another boot
//   data->claims[uid] = {.state = ClaimState::kPrepareStarted, ...};
//   SP_RETURN_IF_ERROR(cp.Save(*data));   // atomic: temp file + fsync + rename + fsync(dir)
//
// File format (version 1):
//   {"version": 1, "checksum": "crc32:<8 hex>", "data": {"nodeBootID": "...",
//    "preparedClaims": {"<uid>": {"state": "PrepareStarted"|"PrepareCompleted", ...}}}}
// The checksum covers the compact JSON of "data" (keys sorted). A file that does not parse,
// fails its checksum, has an unknown version or a malformed "data" is never trusted: Load
// moves it aside to `checkpoint.json.corrupt-<unix-nanos>` and returns DataLoss naming both
// paths; the next Load starts empty. A different boot ID (devices and /var/run/cdi do not
// survive a reboot) discards the content: Load returns empty Data for the current boot.
//
// Not thread-safe and no locking of its own: the kubelet plugin serializes every
// prepare/unprepare call across plugin instances (flock), and the driver reads the file at
// the start of each call, so an instance never works from a stale copy.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/json.h"
#include "dra/cdi/writer.h"

namespace spiderpool::dra::checkpoint {

inline constexpr int kVersion = 1;
inline constexpr char kFileName[] = "checkpoint.json";
inline constexpr char kBootIDPath[] = "/proc/sys/kernel/random/boot_id";

enum class ClaimState {
  kPrepareStarted,    // persisted before any side effect
  kPrepareCompleted,  // CDI spec written, claim status entries written
};
std::string_view ClaimStateName(ClaimState s);  // "PrepareStarted" | "PrepareCompleted"

// One device as answered to the kubelet (the DRA service `Device`).
struct Device {
  std::vector<std::string> request_names;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  std::vector<std::string> cdi_device_ids;
  friend bool operator==(const Device&, const Device&) = default;
};

// The key of a claim status.devices[] entry this driver wrote.
struct StatusKey {
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  friend bool operator==(const StatusKey&, const StatusKey&) = default;
};

struct PreparedClaim {
  ClaimState state = ClaimState::kPrepareStarted;
  std::string namespace_;
  std::string name;
  std::vector<Device> devices;
  std::string cdi_spec_path;  // the spec file written (or about to be)
  std::vector<StatusKey> status_devices;  // status.devices entries written (or about to be)
  friend bool operator==(const PreparedClaim&, const PreparedClaim&) = default;
};

struct Data {
  std::string boot_id;
  std::map<std::string, PreparedClaim> claims;  // by claim UID
  friend bool operator==(const Data&, const Data&) = default;
  size_t CountIn(ClaimState s) const;
};

// The whole file for `data` (what Save writes).
std::string Encode(const Data& data);
// Parses and verifies a file's content. InvalidArgument / DataLoss with the reason
// ("not JSON", "checksum mismatch", "unsupported version 7", "data.preparedClaims[u].state:
// ..."). Never throws, whatever the input.
absl::StatusOr<Data> Decode(std::string_view content);
// CRC-32 (IEEE 802.3) of `bytes`, as used for the checksum.
uint32_t Crc32(std::string_view bytes);

// The current boot ID: the first line of `path`, trimmed. Error if unreadable or empty.
absl::StatusOr<std::string> ReadBootID(const std::string& path = kBootIDPath);

struct Options {
  std::string dir;  // the plugin data directory
  std::string file_name = kFileName;
  // The current boot ID; "" = read boot_id_path when first needed.
  std::string boot_id;
  std::string boot_id_path = kBootIDPath;
  cdi::FileSystem* fs = cdi::PosixFileSystem();  // syscalls of Save (fault injection)
};

class Checkpoint {
 public:
  explicit Checkpoint(Options options);

  const std::string& path() const { return path_; }
  // The boot ID Load/Save use (reads it on first use).
  absl::StatusOr<std::string> BootID();

  // The stored data for this boot. Missing file -> empty Data (boot_id set). Another boot ->
  // empty Data (the file is left until the next Save replaces it). Corrupted -> the file is
  // moved aside and DataLoss is returned (call again to start empty).
  absl::StatusOr<Data> Load();
  // Writes `data` atomically (boot_id is set to the current boot). On error the previous file
  // is intact and no temp file is left.
  absl::Status Save(const Data& data);

 private:
  Options options_;
  std::string path_;
};

}  // namespace spiderpool::dra::checkpoint
