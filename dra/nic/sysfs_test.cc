// sysfs facts read from a fake tree under $TEST_TMPDIR that mimics the kernel's layout
// (class/net/<if> -> ../../devices/..., relative `device` links, PCI host bridges).

#include "dra/nic/sysfs.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "dra/nic/nic.h"

namespace spiderpool::dra::nic {
namespace {

namespace fs = std::filesystem;

class FakeSysfs {
 public:
  explicit FakeSysfs(const std::string& name) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = fs::path(tmp != nullptr ? tmp : "/tmp") / ("sysfs-" + name);
    fs::remove_all(root_);
    fs::create_directories(root_ / "class" / "net");
  }
  ~FakeSysfs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string root() const { return root_.string(); }

  // A netdev whose device directory is devices/<dev_path>; returns that directory.
  fs::path AddNetdev(const std::string& ifname, int ifindex, const std::string& dev_path) {
    fs::path dev = root_ / "devices" / dev_path;
    fs::path netdir = dev / "net" / ifname;
    fs::create_directories(netdir);
    Write(netdir / "ifindex", std::to_string(ifindex) + "\n");
    // As the kernel does: net/<if>/device -> ../../../<device dir name>.
    fs::create_symlink(fs::path("../../..") / fs::path(dev_path).filename(), netdir / "device");
    fs::create_symlink(fs::path("../../devices") / dev_path / "net" / ifname,
                       root_ / "class" / "net" / ifname);
    return dev;
  }
  // A virtual netdev (devices/virtual/net/<if>, no `device` link).
  void AddVirtual(const std::string& ifname, int ifindex) {
    fs::path netdir = root_ / "devices" / "virtual" / "net" / ifname;
    fs::create_directories(netdir);
    Write(netdir / "ifindex", std::to_string(ifindex) + "\n");
    fs::create_symlink(fs::path("../../devices/virtual/net") / ifname,
                       root_ / "class" / "net" / ifname);
  }
  static void Write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }

 private:
  fs::path root_;
};

TEST(SysfsFacts, PhysicalFunctionWithSriovAndRdma) {
  FakeSysfs sys("pf");
  fs::path dev = sys.AddNetdev("ens1f0", 7, "pci0000:3a/0000:3a:00.0/0000:3b:00.0");
  FakeSysfs::Write(dev / "numa_node", "1\n");
  FakeSysfs::Write(dev / "sriov_totalvfs", "8\n");
  FakeSysfs::Write(dev / "sriov_numvfs", "4\n");
  fs::create_directories(dev / "infiniband" / "mlx5_1");
  fs::create_directories(dev / "infiniband" / "mlx5_0");

  auto facts = ReadSysfsFacts(sys.root(), "ens1f0");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(*facts, (SysfsFacts{.ifindex = 7,
                                .pci_address = "0000:3b:00.0",
                                .numa_node = 1,
                                .sriov_total_vfs = 8,
                                .sriov_num_vfs = 4,
                                .sriov_vf = false,
                                .rdma_device = "mlx5_0"}));

  Nic nic{.name = "ens1f0", .ifindex = 7};
  ApplySysfsFacts(*facts, &nic);
  EXPECT_EQ(nic.pci_address, "0000:3b:00.0");
  EXPECT_EQ(nic.numa_node, 1);
  EXPECT_EQ(nic.sriov_total_vfs, 8);
  EXPECT_EQ(nic.sriov_num_vfs, 4);
  EXPECT_FALSE(nic.sriov_vf);
  EXPECT_TRUE(nic.rdma);
  EXPECT_EQ(nic.rdma_device, "mlx5_0");
}

TEST(SysfsFacts, VirtualFunctionHasPhysfn) {
  FakeSysfs sys("vf");
  fs::path pf = sys.AddNetdev("ens1f0", 7, "pci0000:3a/0000:3a:00.0/0000:3b:00.0");
  fs::path vf = sys.AddNetdev("ens1f0v0", 9, "pci0000:3a/0000:3a:00.0/0000:3b:00.2");
  fs::create_symlink("../0000:3b:00.0", vf / "physfn");
  FakeSysfs::Write(vf / "numa_node", "0\n");

  auto facts = ReadSysfsFacts(sys.root(), "ens1f0v0");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->pci_address, "0000:3b:00.2");
  EXPECT_TRUE(facts->sriov_vf);
  EXPECT_EQ(facts->numa_node, 0);
  EXPECT_EQ(facts->sriov_total_vfs, 0);
  EXPECT_EQ(facts->rdma_device, "");
  EXPECT_FALSE(ReadSysfsFacts(sys.root(), "ens1f0")->sriov_vf);
}

TEST(SysfsFacts, VirtioTakesThePciFunctionAboveIt) {
  // eth0 -> devices/pci0000:00/0000:00:03.0/virtio2/net/eth0; numa_node only on the PCI dir.
  FakeSysfs sys("virtio");
  fs::path dev = sys.AddNetdev("eth0", 4, "pci0000:00/0000:00:03.0/virtio2");
  FakeSysfs::Write(dev.parent_path() / "numa_node", "3\n");
  auto facts = ReadSysfsFacts(sys.root(), "eth0");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->pci_address, "0000:00:03.0");
  EXPECT_EQ(facts->numa_node, 3);
}

TEST(SysfsFacts, UpperCaseAndWideDomainAddresses) {
  FakeSysfs sys("case");
  sys.AddNetdev("a", 2, "pci0000:AF/0000:AF:1F.7");
  sys.AddNetdev("b", 3, "pci10000:00/10000:00:02.0");  // Intel VMD: 5-digit domain
  EXPECT_EQ(ReadSysfsFacts(sys.root(), "a")->pci_address, "0000:af:1f.7");
  EXPECT_EQ(ReadSysfsFacts(sys.root(), "b")->pci_address, "10000:00:02.0");
}

TEST(SysfsFacts, VirtualDeviceHasOnlyItsIfindex) {
  FakeSysfs sys("virtual");
  sys.AddVirtual("veth0", 12);
  auto facts = ReadSysfsFacts(sys.root(), "veth0");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(*facts, SysfsFacts{.ifindex = 12});
}

TEST(SysfsFacts, NotUnderAPciBridgeMeansNoAddress) {
  FakeSysfs sys("nopci");
  // A platform device whose directory happens to look like a PCI address.
  fs::path dev = sys.AddNetdev("usb0", 5, "platform/0000:00:01.0");
  FakeSysfs::Write(dev / "numa_node", "0\n");
  auto facts = ReadSysfsFacts(sys.root(), "usb0");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->pci_address, "");
  EXPECT_EQ(facts->numa_node, 0);

  // A `device` link escaping the root.
  FakeSysfs outside("outside");
  fs::path other = outside.AddNetdev("x", 1, "pci0000:00/0000:00:05.0");
  fs::path netdir = fs::path(sys.root()) / "devices" / "virtual" / "net" / "esc0";
  fs::create_directories(netdir);
  fs::create_symlink(other, netdir / "device");
  fs::create_symlink("../../devices/virtual/net/esc0",
                     fs::path(sys.root()) / "class" / "net" / "esc0");
  EXPECT_EQ(ReadSysfsFacts(sys.root(), "esc0")->pci_address, "");
}

TEST(SysfsFacts, GarbageFilesKeepDefaults) {
  FakeSysfs sys("garbage");
  fs::path dev = sys.AddNetdev("eth9", 3, "pci0000:00/0000:00:09.0");
  FakeSysfs::Write(dev / "numa_node", "one\n");
  FakeSysfs::Write(dev / "sriov_totalvfs", "-3\n");
  FakeSysfs::Write(dev / "sriov_numvfs", std::string(10000, '7'));
  FakeSysfs::Write(fs::path(sys.root()) / "class/net/eth9/ifindex", "99999999999999999999\n");
  auto facts = ReadSysfsFacts(sys.root(), "eth9");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(*facts, SysfsFacts{.pci_address = "0000:00:09.0"});

  // A directory where a value file should be, and a FIFO (would block a plain read).
  fs::remove(dev / "numa_node");
  fs::create_directories(dev / "numa_node");
  ASSERT_EQ(mkfifo((dev / "sriov_numvfs.fifo").c_str(), 0600), 0);
  fs::remove(dev / "sriov_numvfs");
  fs::rename(dev / "sriov_numvfs.fifo", dev / "sriov_numvfs");
  facts = ReadSysfsFacts(sys.root(), "eth9");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->numa_node, -1);
  EXPECT_EQ(facts->sriov_num_vfs, 0);
}

TEST(SysfsFacts, MissingOrInvalidNames) {
  FakeSysfs sys("missing");
  sys.AddVirtual("eth0", 2);
  EXPECT_FALSE(ReadSysfsFacts(sys.root(), "eth1").has_value());
  EXPECT_FALSE(ReadSysfsFacts(sys.root() + "/nonexistent", "eth0").has_value());
  for (const char* bad : {"", ".", "..", "../net/eth0", "a/b", "eth0:1", "a b",
                          "sixteen-chars-xx"}) {
    EXPECT_FALSE(ReadSysfsFacts(sys.root(), bad).has_value()) << bad;
    EXPECT_FALSE(IsValidIfName(bad)) << bad;
  }
  EXPECT_TRUE(IsValidIfName("fifteen-chars-x"));
}

TEST(SysfsFacts, RealSysfsLoopbackIsVirtual) {
  if (!fs::exists("/sys/class/net/lo")) GTEST_SKIP() << "no /sys/class/net/lo here";
  auto facts = ReadSysfsFacts("/sys", "lo");
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->ifindex, 1);
  EXPECT_EQ(facts->pci_address, "");
}

TEST(SysfsParse, Int) {
  EXPECT_EQ(ParseSysfsInt("0\n"), 0);
  EXPECT_EQ(ParseSysfsInt("-1\n"), -1);
  EXPECT_EQ(ParseSysfsInt("  42 \n"), 42);
  EXPECT_EQ(ParseSysfsInt("2147483647"), 2147483647);
  EXPECT_EQ(ParseSysfsInt("-2147483648"), -2147483647 - 1);
  for (const char* bad : {"", "\n", "-", "+1", "1.5", "0x10", "1 2", "2147483648", "abc",
                          "--1", "1-", "\xff"}) {
    EXPECT_FALSE(ParseSysfsInt(bad).has_value()) << bad;
  }
}

TEST(SysfsParse, PciAddress) {
  EXPECT_EQ(ParsePciAddress("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(ParsePciAddress("0000:3B:1F.7"), "0000:3b:1f.7");
  EXPECT_EQ(ParsePciAddress("10000:e1:00.1"), "10000:e1:00.1");
  for (const char* bad : {"", "0000:3b:00", "000:3b:00.0", "000000000:3b:00.0", "0000:3b:20.0",
                          "0000:3b:00.8", "0000:3g:00.0", "0000-3b-00.0", "0000:3b:00.0\n",
                          "0000:3b:00.00", "virtio0", "pci0000:00", "usb1"}) {
    EXPECT_FALSE(ParsePciAddress(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace spiderpool::dra::nic
