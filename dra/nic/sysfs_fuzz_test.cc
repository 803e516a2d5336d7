// Fuzz-style test of the sysfs readers (deterministic random inputs in a gtest, as in
// api/decode_fuzz_test.cc): the text parsers get mutated valid values and random bytes; the
// tree reader gets fake sysfs trees with garbage attribute files, odd directory names,
// dangling, looping and escaping symlinks. Nothing may crash or hang (run it under
// --config=asan too), and every result must satisfy the documented invariants.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dra/nic/sysfs.h"

namespace spiderpool::dra::nic {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSeed = 0x5f5f5f5f0a11ULL;

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  size_t Pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  std::string Text() {
    static const std::vector<std::string> kSeeds = {
        "0\n", "-1\n", "8\n", "2147483647\n", "-2147483648", "0000:3b:00.0", "0000:3B:1f.7",
        "10000:00:02.0", "pci0000:00", "virtio0", "mlx5_0", "eth0", " 12 ", "", "\n"};
    std::string s = kSeeds[Pick(kSeeds.size())];
    int edits = static_cast<int>(Pick(4));
    for (int i = 0; i < edits; ++i) {
      switch (Pick(4)) {
        case 0:
          if (!s.empty()) s[Pick(s.size())] = Char();
          break;
        case 1: s.insert(s.begin() + static_cast<long>(Pick(s.size() + 1)), Char()); break;
        case 2:
          if (!s.empty()) s.erase(Pick(s.size()), 1);
          break;
        default: s = s.substr(0, Pick(s.size() + 1)); break;
      }
    }
    if (Pick(20) == 0) s.append(Pick(6000), Char());
    return s;
  }

  char Char() {
    static constexpr char kChars[] = "0123456789abcdefABCDEFxg:.-+ \n\t/\\\0\xff";
    static const std::string kAlphabet(kChars, sizeof(kChars) - 1);
    return Pick(3) == 0 ? static_cast<char>(Pick(256)) : kAlphabet[Pick(kAlphabet.size())];
  }

  // A path component: usually a plausible sysfs name, sometimes garbage without '/' or NUL.
  std::string Name() {
    std::string s = Text();
    std::string out;
    for (char c : s) {
      if (c != '/' && c != '\0') out.push_back(c);
    }
    if (out.empty() || out == "." || out == "..") out = "x";
    return out.substr(0, 200);
  }

 private:
  std::mt19937_64 rng_;
};

TEST(SysfsFuzz, Parsers) {
  Gen g(kSeed);
  for (int i = 0; i < 200000; ++i) {
    std::string s = g.Text();
    if (auto v = ParseSysfsInt(s)) {
      EXPECT_EQ(ParseSysfsInt(std::to_string(*v)), *v) << s;
    }
    if (auto a = ParsePciAddress(s)) {
      EXPECT_EQ(a->size(), s.size());
      EXPECT_EQ(ParsePciAddress(*a), *a);
      for (char c : *a) EXPECT_FALSE(c >= 'A' && c <= 'Z') << *a;
    }
    if (IsValidIfName(s)) {
      EXPECT_LE(s.size(), 15u);
      EXPECT_EQ(s.find('/'), std::string::npos);
    }
  }
}

TEST(SysfsFuzz, Trees) {
  Gen g(kSeed + 1);
  const char* tmp = std::getenv("TEST_TMPDIR");
  fs::path base = fs::path(tmp != nullptr ? tmp : "/tmp") / "sysfs-fuzz";
  for (int i = 0; i < 400; ++i) {
    fs::remove_all(base);
    fs::path root = base / "sys";
    fs::create_directories(root / "class" / "net");
    // devices/<bridge>/<dev>[/<sub>]
    fs::path dev = root / "devices" / (g.Pick(3) == 0 ? g.Name() : "pci0000:00") /
                   (g.Pick(3) == 0 ? g.Name() : "0000:00:03.0");
    if (g.Pick(2) == 0) dev /= g.Name();
    std::error_code ec;
    fs::create_directories(dev / "net" / "eth0", ec);
    if (ec) continue;
    for (const char* attr : {"numa_node", "sriov_totalvfs", "sriov_numvfs"}) {
      if (g.Pick(3) == 0) continue;
      if (g.Pick(10) == 0) {
        fs::create_directories(dev / attr, ec);
      } else {
        std::ofstream(dev / attr, std::ios::binary) << g.Text();
      }
    }
    std::ofstream(dev / "net" / "eth0" / "ifindex", std::ios::binary) << g.Text();
    if (g.Pick(2) == 0) fs::create_directories(dev / "infiniband" / g.Name(), ec);
    if (g.Pick(4) == 0) fs::create_symlink(g.Pick(2) ? "../x" : g.Name(), dev / "physfn", ec);
    // The `device` link: right, dangling, looping, escaping or absolute.
    fs::path device_link = dev / "net" / "eth0" / "device";
    switch (g.Pick(6)) {
      case 0: fs::create_symlink("device", device_link, ec); break;
      case 1: fs::create_symlink(g.Name(), device_link, ec); break;
      case 2: fs::create_symlink("../../../../../../../../..", device_link, ec); break;
      case 3: fs::create_symlink(dev, device_link, ec); break;
      default: fs::create_symlink(fs::path("../../..") / dev.filename(), device_link, ec); break;
    }
    fs::create_directory_symlink(fs::relative(dev / "net" / "eth0", root / "class" / "net"),
                                 root / "class" / "net" / "eth0", ec);

    auto facts = ReadSysfsFacts(root.string(), "eth0");
    if (!facts) continue;
    EXPECT_GE(facts->ifindex, 0);
    EXPECT_GE(facts->numa_node, -1);
    EXPECT_GE(facts->sriov_total_vfs, 0);
    EXPECT_GE(facts->sriov_num_vfs, 0);
    if (!facts->pci_address.empty()) {
      EXPECT_EQ(ParsePciAddress(facts->pci_address), facts->pci_address);
    }
  }
  fs::remove_all(base);
}

}  // namespace
}  // namespace spiderpool::dra::nic
