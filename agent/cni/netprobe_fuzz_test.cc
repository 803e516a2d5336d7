// The ARP / NDP parsers take bytes from the wire (any host on the pod's L2 segment). Round trips
// of built packets, the validity checks (RFC 4861 §7.1), and deterministic random mutations
// (byte flips, truncation, extension, splicing): nothing may crash or read out of bounds
// (tools/test.sh runs this under --config=sanitizers), and every packet that parses re-parses
// the same after a rebuild.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agent/cni/netprobe.h"

namespace spiderpool::agent::cni::netprobe {
namespace {

constexpr Mac kA = {0x02, 0, 0, 0, 0, 0x0a};
constexpr Mac kB = {0x02, 0, 0, 0, 0, 0x0b};
const absl::uint128 kFd00A = absl::MakeUint128(0xfd00000000000000ULL, 0xa);
const absl::uint128 kFd00One = absl::MakeUint128(0xfd00000000000000ULL, 1);
const absl::uint128 kSolicited = absl::MakeUint128(0xff02000000000000ULL, 0x00000001ff00000aULL);

std::vector<std::string> Seeds() {
  return {
      BuildArp({.op = kArpRequest, .sender_mac = kA, .sender_ip = 0, .target_ip = 0x0a06000a}),
      BuildArp({.op = kArpReply, .sender_mac = kB, .sender_ip = 0x0a06000a, .target_mac = kA}),
      BuildNdp({.type = kNeighborSolicitation, .source = 0, .destination = kSolicited,
                .target = kFd00A}),
      BuildNdp({.type = kNeighborSolicitation, .source = kFd00A, .destination = kSolicited,
                .target = kFd00One, .link_layer = kA}),
      BuildNdp({.type = kNeighborAdvertisement, .source = kFd00One, .destination = kFd00A,
                .target = kFd00One, .router = true, .solicited = true, .override_flag = true,
                .link_layer = kB}),
  };
}

TEST(NetprobeWire, ArpRoundTrip) {
  ArpPacket p{.op = kArpReply, .sender_mac = kB, .sender_ip = 0x0a06000a, .target_mac = kA,
              .target_ip = 0x0a060001};
  std::string b = BuildArp(p);
  ASSERT_EQ(b.size(), 28u);
  auto q = ParseArp(b + std::string(18, '\0'));  // Ethernet padding to 60 bytes
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->op, kArpReply);
  EXPECT_EQ(q->sender_mac, kB);
  EXPECT_EQ(q->sender_ip, 0x0a06000au);
  EXPECT_EQ(q->target_mac, kA);
  EXPECT_EQ(q->target_ip, 0x0a060001u);
  EXPECT_FALSE(ParseArp(b.substr(0, 27)));
  std::string ipv6_ptype = b;
  ipv6_ptype[2] = static_cast<char>(0x86);
  EXPECT_FALSE(ParseArp(ipv6_ptype));
  EXPECT_EQ(MacToString(kB), "02:00:00:00:00:0b");
}

TEST(NetprobeWire, NdpRoundTripAndValidity) {
  NdpPacket na{.type = kNeighborAdvertisement, .source = kFd00One, .destination = kFd00A,
               .target = kFd00One, .solicited = true, .link_layer = kB};
  std::string b = BuildNdp(na);
  ASSERT_EQ(b.size(), 40u + 32u);
  auto q = ParseNdp(b + std::string(6, '\0'));  // trailing padding is ignored
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->type, kNeighborAdvertisement);
  EXPECT_EQ(q->source, kFd00One);
  EXPECT_EQ(q->destination, kFd00A);
  EXPECT_EQ(q->target, kFd00One);
  EXPECT_TRUE(q->solicited);
  EXPECT_FALSE(q->router);
  EXPECT_FALSE(q->override_flag);
  EXPECT_EQ(q->link_layer, kB);

  std::string bad = b;
  bad[7] = 64;  // hop limit must be 255
  EXPECT_FALSE(ParseNdp(bad));
  bad = b;
  bad[40 + 10] ^= 1;  // checksum
  EXPECT_FALSE(ParseNdp(bad));
  bad = b;
  bad[40 + 24 + 1] = 0;  // option length 0
  EXPECT_FALSE(ParseNdp(bad));
  EXPECT_FALSE(ParseNdp(b.substr(0, b.size() - 1)));  // payload length beyond the data
  bad = b;
  bad[6] = 17;  // not ICMPv6
  EXPECT_FALSE(ParseNdp(bad));

  // The DAD solicitation from :: carries no link-layer option.
  auto ns = ParseNdp(BuildNdp({.type = kNeighborSolicitation, .source = 0,
                               .destination = kSolicited, .target = kFd00A}));
  ASSERT_TRUE(ns.has_value());
  EXPECT_EQ(ns->type, kNeighborSolicitation);
  EXPECT_FALSE(ns->link_layer.has_value());
}

TEST(NetprobeWire, MutationsNeverCrash) {
  std::vector<std::string> seeds = Seeds();
  std::mt19937_64 rng(0x6e657470ULL);
  auto pick = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  int parsed = 0;
  for (int i = 0; i < 40000; ++i) {
    std::string t = seeds[pick(seeds.size())];
    switch (pick(5)) {
      case 0:
        for (int k = 0, n = 1 + static_cast<int>(pick(4)); k < n; ++k) {
          t[pick(t.size())] ^= static_cast<char>(1u << pick(8));
        }
        break;
      case 1:
        t.resize(pick(t.size() + 1));
        break;
      case 2:
        for (size_t k = 0, n = 1 + pick(40); k < n; ++k) t.push_back(static_cast<char>(rng()));
        break;
      case 3: {
        const std::string& o = seeds[pick(seeds.size())];
        t = t.substr(0, pick(t.size() + 1)) + o.substr(pick(o.size() + 1));
        break;
      }
      default:
        // Keep the packet valid-looking: mutate an option/payload byte, then fix the payload
        // length so the checksum and option walks see the mutation.
        if (t.size() > 40) {
          t[40 + pick(t.size() - 40)] = static_cast<char>(rng());
          t.push_back(static_cast<char>(pick(3)));
        }
        break;
    }
    if (auto a = ParseArp(t)) {
      ++parsed;
      EXPECT_EQ(ParseArp(BuildArp(*a))->sender_ip, a->sender_ip);
    }
    if (auto n = ParseNdp(t)) {
      ++parsed;
      auto again = ParseNdp(BuildNdp(*n));
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(again->target, n->target);
      EXPECT_EQ(again->link_layer, n->link_layer);
    }
  }
  EXPECT_GT(parsed, 1000);  // the mutations also reach the accepting paths
}

}  // namespace
}  // namespace spiderpool::agent::cni::netprobe
