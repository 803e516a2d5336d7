#include "dra/checkpoint/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/testing/temp_dir.h"
#include "dra/checkpoint/faulty_fs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::checkpoint {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

Data Sample() {
  Data d;
  PreparedClaim done;
  done.state = ClaimState::kPrepareCompleted;
  done.namespace_ = "ns1";
  done.name = "claim-a";
  done.devices = {{.request_names = {"nic"},
                   .pool = "node-1",
                   .device = "eth1",
                   .share_id = "0000-share",
                   .cdi_device_ids = {"k8s.netresources.spidernet.io/claim=uid-a"}}};
  done.cdi_spec_path = "/var/run/cdi/k8s.netresources.spidernet.io-claim_uid-a.yaml";
  done.status_devices = {{.driver = "netresources.spidernet.io",
                          .pool = "node-1",
                          .device = "eth1",
                          .share_id = "0000-share"}};
  d.claims["uid-a"] = done;
  PreparedClaim started;
  started.namespace_ = "ns1";
  started.name = "claim-b";
  d.claims["uid-b"] = started;
  return d;
}

class CheckpointTest : public ::testing::Test {
 protected:
  Options Opts(std::string boot = "boot-1") {
    return {.dir = dir_, .boot_id = std::move(boot), .fs = &faulty_};
  }

  base::testing::TempDir tmp_{"ckpt"};
  const std::string dir_ = tmp_.path();
  testing::FaultyFs faulty_;
};

TEST_F(CheckpointTest, MissingFileIsEmptyForThisBoot) {
  Checkpoint cp(Opts());
  auto d = cp.Load();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->claims.empty());
  EXPECT_EQ(d->boot_id, "boot-1");
  EXPECT_EQ(cp.path(), dir_ + "/checkpoint.json");
}

TEST_F(CheckpointTest, SaveThenLoadRoundTrips) {
  Checkpoint cp(Opts());
  Data d = Sample();
  ASSERT_TRUE(cp.Save(d).ok());
  auto loaded = cp.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  d.boot_id = "boot-1";
  EXPECT_EQ(*loaded, d);
  EXPECT_EQ(loaded->CountIn(ClaimState::kPrepareCompleted), 1u);
  EXPECT_EQ(loaded->CountIn(ClaimState::kPrepareStarted), 1u);
  // The documented envelope; nothing but the file itself in the directory.
  std::string text = ReadAll(cp.path());
  EXPECT_THAT(text, StartsWith("{\"checksum\":\"crc32:"));
  EXPECT_THAT(text, HasSubstr("\"version\":1"));
  EXPECT_THAT(text, HasSubstr("\"state\":\"PrepareStarted\""));
  EXPECT_THAT(text, HasSubstr("\"nodeBootID\":\"boot-1\""));
  EXPECT_EQ(List(dir_), std::vector<std::string>{"checkpoint.json"});
  // Deterministic bytes for the same data.
  EXPECT_EQ(Encode(*loaded), text);
}

TEST_F(CheckpointTest, AnotherBootDiscardsTheContent) {
  ASSERT_TRUE(Checkpoint(Opts("boot-1")).Save(Sample()).ok());
  Checkpoint after_reboot(Opts("boot-2"));
  auto d = after_reboot.Load();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->claims.empty());
  EXPECT_EQ(d->boot_id, "boot-2");
  ASSERT_TRUE(after_reboot.Save(*d).ok());
  // The old boot's data is gone for good.
  auto old = Checkpoint(Opts("boot-1")).Load();
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->claims.empty());
}

TEST_F(CheckpointTest, CorruptionIsReportedAndTheFileMovedAside) {
  Checkpoint cp(Opts());
  ASSERT_TRUE(cp.Save(Sample()).ok());
  std::string text = ReadAll(cp.path());
  // Change one character inside the data: still valid JSON, wrong checksum.
  size_t pos = text.find("claim-a");
  ASSERT_NE(pos, std::string::npos);
  text[pos + 6] = 'z';
  WriteAll(cp.path(), text);
  auto d = cp.Load();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(d.status().message(), HasSubstr("DRA checkpoint " + cp.path() + " is corrupted"));
  EXPECT_THAT(d.status().message(), HasSubstr("checksum mismatch"));
  EXPECT_THAT(d.status().message(), HasSubstr("moved it to " + cp.path() + ".corrupt-"));
  auto files = List(dir_);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_THAT(files[0], StartsWith("checkpoint.json.corrupt-"));
  EXPECT_EQ(ReadAll(dir_ + "/" + files[0]), text);  // kept for inspection, byte for byte
  // The next load starts empty.
  auto again = cp.Load();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->claims.empty());
}

TEST_F(CheckpointTest, EveryKindOfBadFileIsRejected) {
  Checkpoint cp(Opts());
  const std::string data = R"({"nodeBootID":"boot-1","preparedClaims":{"u":{"name":"n","namespace":"ns","state":"Bogus"}}})";
  char sum[16];
  std::snprintf(sum, sizeof(sum), "%08x", Crc32(data));
  struct Case {
    std::string content;
    std::string message;
  } cases[] = {
      {"", "not JSON"},
      {"{\"version\":1,", "not JSON"},
      {"[]", "not a JSON object"},
      {R"({"checksum":"crc32:00000000","data":{}})", "version: missing"},
      {R"({"version":2,"checksum":"crc32:00000000","data":{}})", "unsupported version 2"},
      {R"({"version":1,"data":{}})", "checksum: missing"},
      {R"({"version":1,"checksum":"crc32:00000000"})", "data: missing"},
      // A correct checksum over malformed data: the decoder names the field.
      {std::string(R"({"version":1,"checksum":"crc32:)") + sum + R"(","data":)" + data + "}",
       "data.preparedClaims[u].state"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.content);
    WriteAll(cp.path(), c.content);
    auto d = cp.Load();
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(d.status().message(), HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(cp.path()));
  }
}

TEST_F(CheckpointTest, FailedSavesKeepThePreviousFileAndLeaveNoTemp) {
  Checkpoint cp(Opts());
  Data first = Sample();
  ASSERT_TRUE(cp.Save(first).ok());
  const std::string before = ReadAll(cp.path());
  Data second = first;
  second.claims.erase("uid-b");
  faulty_.short_write = 7;  // exercise the partial-write loop too
  for (const char* op : {"mkdir", "create", "write", "fsync", "close", "rename"}) {
    SCOPED_TRACE(op);
    faulty_.Arm(op, 1);
    absl::Status s = cp.Save(second);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("writing the DRA checkpoint " + cp.path()));
    EXPECT_THAT(s.message(), HasSubstr("injected"));
    EXPECT_EQ(ReadAll(cp.path()), before);
    EXPECT_EQ(List(dir_), std::vector<std::string>{"checkpoint.json"});
  }
  // A failed directory fsync comes after the rename: the new content is in place.
  faulty_.Arm("fsyncdir", 1);
  EXPECT_FALSE(cp.Save(second).ok());
  faulty_.Disarm();
  auto loaded = cp.Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->claims.size(), 1u);
  EXPECT_EQ(List(dir_), std::vector<std::string>{"checkpoint.json"});
}

TEST_F(CheckpointTest, BootIDIsReadFromTheKernelFile) {
  const std::string path = dir_ + "/boot_id";
  WriteAll(path, "3f6c2a9e-0000-4000-8000-000000000001\n");
  auto id = ReadBootID(path);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "3f6c2a9e-0000-4000-8000-000000000001");
  Checkpoint cp({.dir = dir_, .boot_id_path = path});
  EXPECT_EQ(*cp.BootID(), *id);
  WriteAll(path, "\n");
  EXPECT_FALSE(ReadBootID(path).ok());
  auto missing = ReadBootID(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("reading the boot ID"));
  Checkpoint no_boot({.dir = dir_, .boot_id_path = dir_ + "/nope"});
  EXPECT_FALSE(no_boot.Load().ok());
  EXPECT_FALSE(no_boot.Save(Data{}).ok());
  // The real one, where it exists (Linux).
  if (fs::exists(kBootIDPath)) {
    auto real = ReadBootID();
    ASSERT_TRUE(real.ok()) << real.status();
    EXPECT_EQ(real->size(), 36u);
  }
}

TEST(Crc32, KnownVectors) {
  EXPECT_EQ(Crc32(""), 0u);
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32("The quick brown fox jumps over the lazy dog"), 0x414FA339u);
}

}  // namespace
}  // namespace spiderpool::dra::checkpoint
