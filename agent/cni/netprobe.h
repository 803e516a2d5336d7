#pragma once
// IP-conflict and gateway detection, and address announcement, on a pod NIC (upstream
// Spiderpool's IPAM-side detection, reference §2.9). IPv4 uses ARP, IPv6 uses NDP; both over
// AF_PACKET datagram sockets bound to the NIC, so the pod's addresses need not be configured yet
// (the IPAM plugin runs before the main plugin assigns them). No netlink: the link is brought up
// with SIOCSIFFLAGS, IPv6 DAD state is read from /proc/thread-self/net/if_inet6.
//
// Every operation runs on a short-lived thread that enters the network namespace at
// `Link::netns_path` (setns) and leaves with it; the calling thread's namespace never changes.
// The coordinator plugin reuses Announce() after it rewrites the MAC.
//
// The packet parsers (ParseArp, ParseNdp) take untrusted bytes and are fuzzed
// (netprobe_fuzz_test).

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/ip.h"

namespace spiderpool::agent::cni::netprobe {

using Mac = std::array<uint8_t, 6>;
std::string MacToString(const Mac& mac);  // "aa:bb:cc:dd:ee:ff"

struct Link {
  std::string netns_path;  // e.g. /var/run/netns/pod1; "" = the caller's namespace
  std::string ifname;      // e.g. eth0
};

struct Timing {
  int tries = 3;                                  // probes per address
  std::chrono::milliseconds per_try{100};         // wait for an answer after each probe
  std::chrono::milliseconds dad_wait{10'000};     // IPv6: link-local leaving tentative state
};

struct Conflict {
  base::IPAddress ip;  // the probed address
  Mac mac;             // who answered for it
};

// Brings the link up, then probes every address in order (IPv4: RFC 5227 ARP probe, sender IP
// 0.0.0.0; IPv6: DAD neighbour solicitation from ::, after the link-local address left DAD).
// The first address another host answers for is returned; nullopt when none was answered.
// Errors: the namespace or the link cannot be used, a socket operation failed.
absl::StatusOr<std::optional<Conflict>> ProbeConflict(const Link& link,
                                                      const std::vector<base::IPAddress>& ips,
                                                      const Timing& timing);

// Brings the link up and asks for `gateway` from `source` (ARP request / neighbour solicitation
// with source link-layer option). Returns the gateway's MAC, nullopt when it never answered.
absl::StatusOr<std::optional<Mac>> ProbeGateway(const Link& link, const base::IPAddress& source,
                                                const base::IPAddress& gateway,
                                                const Timing& timing);

// Brings the link up and announces each address with the link's current MAC: a gratuitous ARP
// request (IPv4) / an unsolicited neighbour advertisement to ff02::1 with the override flag
// (IPv6).
absl::Status Announce(const Link& link, const std::vector<base::IPAddress>& ips);

// The side effects above behind an interface, so the plugin flow can be tested with a fake.
class Prober {
 public:
  virtual ~Prober() = default;
  virtual absl::StatusOr<std::optional<Conflict>> ProbeConflict(
      const Link& link, const std::vector<base::IPAddress>& ips, const Timing& timing) = 0;
  virtual absl::StatusOr<std::optional<Mac>> ProbeGateway(const Link& link,
                                                          const base::IPAddress& source,
                                                          const base::IPAddress& gateway,
                                                          const Timing& timing) = 0;
  virtual absl::Status Announce(const Link& link, const std::vector<base::IPAddress>& ips) = 0;
};
// The real one (the functions above). A process-wide instance; never destroyed.
Prober& SystemProber();

// ---- wire formats (pure; exposed for the fuzz test and for captures in tests) ---------------

inline constexpr uint16_t kArpRequest = 1;
inline constexpr uint16_t kArpReply = 2;

// An Ethernet/IPv4 ARP packet (the payload after the Ethernet header).
struct ArpPacket {
  uint16_t op = 0;
  Mac sender_mac{};
  uint32_t sender_ip = 0;  // host order
  Mac target_mac{};
  uint32_t target_ip = 0;  // host order
};
std::optional<ArpPacket> ParseArp(std::string_view bytes);
std::string BuildArp(const ArpPacket& p);

inline constexpr uint8_t kNeighborSolicitation = 135;
inline constexpr uint8_t kNeighborAdvertisement = 136;

// An IPv6 packet carrying an ICMPv6 neighbour solicitation or advertisement (no extension
// headers, hop limit 255, code 0, checksum valid: RFC 4861 §7.1.1/§7.1.2 validity checks).
struct NdpPacket {
  uint8_t type = 0;  // 135 | 136
  absl::uint128 source = 0;
  absl::uint128 destination = 0;
  absl::uint128 target = 0;
  bool router = false, solicited = false, override_flag = false;  // NA flags
  std::optional<Mac> link_layer;  // source (NS) / target (NA) link-layer address option
};
std::optional<NdpPacket> ParseNdp(std::string_view bytes);
std::string BuildNdp(const NdpPacket& p);  // fills the checksum

}  // namespace spiderpool::agent::cni::netprobe
