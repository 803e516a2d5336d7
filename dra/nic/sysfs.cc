#include "dra/nic/sysfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <limits>
#include <system_error>
#include <vector>


namespace spiderpool::dra::nic {
namespace {

namespace fs = std::filesystem;

// sysfs attributes are at most a page; anything bigger is not a sysfs value.
constexpr size_t kMaxAttrBytes = 4096;

// The whole content of a regular file of at most kMaxAttrBytes, nullopt otherwise (missing,
// unreadable, a FIFO or device in a fake tree, too long).
std::optional<std::string> ReadAttr(const fs::path& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return std::nullopt;
  }
  std::string out;
  char buf[1024];
  while (out.size() <= kMaxAttrBytes) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (out.size() > kMaxAttrBytes) return std::nullopt;
  return out;
}

std::optional<int> ReadInt(const fs::path& path) {
  auto text = ReadAttr(path);
  if (!text) return std::nullopt;
  return ParseSysfsInt(*text);
}

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

bool AllHex(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), IsHex); }

// "pci0000:00" (a PCI host bridge directory under /sys/devices).
bool IsPciRoot(std::string_view c) {
  if (c.size() < 4 || c.substr(0, 3) != "pci") return false;
  c.remove_prefix(3);
  size_t colon = c.find(':');
  if (colon == std::string_view::npos) return false;
  return AllHex(c.substr(0, colon)) && AllHex(c.substr(colon + 1));
}

// The PCI address of the resolved device directory `dev` (canonical, below `root`), "" if it
// is not below a PCI host bridge. `pci_dir` gets the directory of that PCI function.
std::string PciAddressOf(const fs::path& root, const fs::path& dev, fs::path* pci_dir) {
  fs::path rel = dev.lexically_relative(root);
  if (rel.empty() || *rel.begin() != "devices") return "";
  bool under_bridge = false;
  std::string address;
  fs::path walked = root;
  for (const fs::path& part : rel) {
    walked /= part;
    const std::string c = part.string();
    if (c == "..") return "";  // not below root after all
    if (!under_bridge) {
      under_bridge = IsPciRoot(c);
      continue;
    }
    if (auto a = ParsePciAddress(c)) {
      address = *a;
      *pci_dir = walked;
    }
  }
  return address;
}

}  // namespace

std::optional<int> ParseSysfsInt(std::string_view text) {
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  std::string_view digits = text[0] == '-' ? text.substr(1) : text;
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return std::nullopt;
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<std::string> ParsePciAddress(std::string_view text) {
  // dddd[dddd]:bb:dd.f
  size_t c1 = text.find(':');
  if (c1 == std::string_view::npos || c1 < 4 || c1 > 8) return std::nullopt;
  std::string_view domain = text.substr(0, c1);
  std::string_view rest = text.substr(c1 + 1);
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return std::nullopt;
  std::string_view bus = rest.substr(0, 2), dev = rest.substr(3, 2), fn = rest.substr(6, 1);
  if (!AllHex(domain) || !AllHex(bus) || !AllHex(dev) || fn[0] < '0' || fn[0] > '7') {
    return std::nullopt;
  }
  int dev_num = 0;
  std::from_chars(dev.data(), dev.data() + dev.size(), dev_num, 16);
  if (dev_num > 0x1f) return std::nullopt;
  std::string out(text);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool IsValidIfName(std::string_view name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == ':' || c == '\0' || std::isspace(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

std::optional<SysfsFacts> ReadSysfsFacts(std::string_view root_text, std::string_view ifname) {
  if (!IsValidIfName(ifname)) return std::nullopt;
  std::error_code ec;
  fs::path root = fs::canonical(fs::path(root_text), ec);
  if (ec) return std::nullopt;
  fs::path netdev = root / "class" / "net" / fs::path(ifname);
  if (!fs::exists(netdev, ec) || ec) return std::nullopt;

  SysfsFacts facts;
  if (auto idx = ReadInt(netdev / "ifindex"); idx && *idx > 0) facts.ifindex = *idx;

  fs::path dev = fs::canonical(netdev / "device", ec);
  if (ec) return facts;  // virtual device: no `device` link
  fs::path pci_dir;
  facts.pci_address = PciAddressOf(root, dev, &pci_dir);

  std::optional<int> numa = ReadInt(dev / "numa_node");
  if (!numa && !pci_dir.empty()) numa = ReadInt(pci_dir / "numa_node");
  if (numa && *numa >= 0) facts.numa_node = *numa;

  if (auto n = ReadInt(dev / "sriov_totalvfs"); n && *n > 0) facts.sriov_total_vfs = *n;
  if (auto n = ReadInt(dev / "sriov_numvfs"); n && *n > 0) facts.sriov_num_vfs = *n;
  facts.sriov_vf = fs::exists(fs::symlink_status(dev / "physfn", ec));

  std::vector<std::string> rdma;
  for (fs::directory_iterator it(dev / "infiniband", ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.empty()) rdma.push_back(std::move(name));
  }
  if (!rdma.empty()) facts.rdma_device = *std::min_element(rdma.begin(), rdma.end());
  return facts;
}

void ApplySysfsFacts(const SysfsFacts& facts, Nic* nic) {
  nic->pci_address = facts.pci_address;
  nic->numa_node = facts.numa_node;
  nic->sriov_total_vfs = facts.sriov_total_vfs;
  nic->sriov_num_vfs = facts.sriov_num_vfs;
  nic->sriov_vf = facts.sriov_vf;
  nic->rdma_device = facts.rdma_device;
  nic->rdma = !facts.rdma_device.empty();
}

}  // namespace spiderpool::dra::nic
