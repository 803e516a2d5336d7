#pragma once
// CDI (Container Device Interface) specs for prepared ResourceClaims.
//
//   ClaimSpec c{.claim_uid = uid, .env = {{"SPIDER_IP", "10.6.0.10/24"}}};
//   auto spec = BuildSpec(c);             // validated, lowest cdiVersion that expresses it
//   spec->device_id                       // "k8s.netresources.spidernet.io/claim=<uid>"
//   SpecWriter(kDefaultSpecDir).Write(*spec);   // see writer.h
//
// Every claim gets its own spec file with one device named by the claim UID, so device names are
// never reused (runtimes cache specs). Version rules follow the CDI spec: a file must declare at
// least the version its content needs, and runtimes reject versions newer than their library
// (podman 4.3 accepts 0.3.0–0.5.0), so the default is the minimum, capped at 0.5.0.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/json.h"

namespace spiderpool::dra::cdi {

inline constexpr char kVendor[] = "k8s.netresources.spidernet.io";
inline constexpr char kClass[] = "claim";
inline constexpr char kKind[] = "k8s.netresources.spidernet.io/claim";
// Claim annotation whose value pins the cdiVersion (overrides the automatic choice).
inline constexpr char kVersionAnnotation[] = "dra.spidernet.io/cdi-version";
inline constexpr char kClaimUIDEnv[] = "DRA_CLAIM_UID";
inline constexpr char kDefaultSpecDir[] = "/var/run/cdi";
// Highest version chosen without a pin: podman 4.3 rejects 0.6.0+.
inline constexpr char kDefaultMaxVersion[] = "0.5.0";

// The CDI version ladder, oldest first ("0.3.0" is the oldest the current library accepts).
const std::vector<std::string>& KnownVersions();
// Orders two known versions (-1, 0, 1); unknown versions sort before all known ones.
int CompareVersions(std::string_view a, std::string_view b);
// "0.5.0" (or "v0.5.0") -> "0.5.0"; error for anything not in KnownVersions().
absl::StatusOr<std::string> ParseVersion(std::string_view v);

// The lowest cdiVersion able to express a spec document (any CDI spec JSON, not only ours),
// with the feature that forces it ("" for the base version 0.3.0).
struct MinVersion {
  std::string version;
  std::string reason;
};
MinVersion MinimumVersion(const base::Json& spec);

// Name rules. `version` is the cdiVersion the name must be valid in ("" = the newest).
// Errors say which rule failed and quote the name.
absl::Status ValidateVendorName(std::string_view vendor);
absl::Status ValidateClassName(std::string_view cls, std::string_view version = "");
absl::Status ValidateKind(std::string_view kind, std::string_view version = "");
absl::Status ValidateDeviceName(std::string_view name, std::string_view version = "");
absl::Status ValidateEnvName(std::string_view name);

struct Mount {
  std::string host_path;       // absolute
  std::string container_path;  // absolute
  std::vector<std::string> options;  // e.g. {"ro", "nosuid", "nodev", "bind"}
  std::string type;            // optional; non-empty needs cdiVersion 0.4.0
};

// CDI netDevices entry (cdiVersion 1.1.0; needs an OCI runtime with linux.netDevices).
struct NetDevice {
  std::string host_interface_name;
  std::string name;  // name inside the container ("" = keep)
};

struct ClaimSpec {
  std::string claim_uid;  // becomes the device name and the file's transient ID
  // Extra environment (network facts); DRA_CLAIM_UID=<uid> is always added first.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<Mount> mounts;  // e.g. the RDMA userspace library
  std::vector<NetDevice> net_devices;
  std::map<std::string, std::string> device_annotations;  // needs cdiVersion 0.6.0
  // Value of the kVersionAnnotation claim annotation ("" = choose automatically).
  std::string version_pin;
};

struct BuildOptions {
  // Automatic choice never goes above this; a spec needing more must be pinned.
  std::string max_version = kDefaultMaxVersion;
};

struct Spec {
  std::string claim_uid;
  std::string version;    // the cdiVersion written
  std::string device_id;  // fully qualified "vendor/class=name", for cdi_device_ids
  base::Json json;        // the whole document
};

// Validates `c` (errors name the field: "env[1].name", "mounts[0].containerPath", ...) and
// builds the spec document with the chosen cdiVersion.
absl::StatusOr<Spec> BuildSpec(const ClaimSpec& c, const BuildOptions& options = {});

// Block-style YAML of a JSON value. Every string is double-quoted with YAML escapes (non-ASCII
// escaped too), so any YAML 1.2 reader gets the same value back. Strings must be valid UTF-8
// (BuildSpec guarantees that).
std::string ToYaml(const base::Json& j);

}  // namespace spiderpool::dra::cdi
