#include "dra/cdi/writer.h"

#include <filesystem>
#include <map>

#include "base/testing/temp_dir.h"
#include "base/yaml.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spiderpool::dra::cdi {
namespace {

using ::spiderpool::base::testing::ReadFile;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

// The real file system, failing the n-th call of one operation (and writing at most
// `short_write` bytes per write call to exercise the partial-write loop).
class FaultyFs : public FileSystem {
 public:
  std::string fail_op;
  int fail_at = 0;  // 1-based call number of fail_op that fails
  size_t short_write = 0;
  std::map<std::string, int> calls;

  absl::Status Hit(const std::string& op) {
    if (op == fail_op && ++calls[op] == fail_at) return absl::InternalError("injected " + op);
    if (op != fail_op) ++calls[op];
    return absl::OkStatus();
  }
  absl::Status MkdirAll(const std::string& d) override {
    if (auto s = Hit("mkdir"); !s.ok()) return s;
    return PosixFileSystem()->MkdirAll(d);
  }
  absl::StatusOr<int> CreateTemp(const std::string& d, const std::string& p,
                                 std::string* path) override {
    if (auto s = Hit("create"); !s.ok()) return s;
    return PosixFileSystem()->CreateTemp(d, p, path);
  }
  absl::StatusOr<size_t> Write(int fd, std::string_view data) override {
    if (auto s = Hit("write"); !s.ok()) return s;
    if (short_write > 0 && data.size() > short_write) data = data.substr(0, short_write);
    return PosixFileSystem()->Write(fd, data);
  }
  absl::Status Fsync(int fd) override {
    if (auto s = Hit("fsync"); !s.ok()) return s;
    return PosixFileSystem()->Fsync(fd);
  }
  absl::Status Close(int fd) override {
    // A failed close still closes the descriptor (as close(2) does).
    absl::Status real = PosixFileSystem()->Close(fd);
    if (auto s = Hit("close"); !s.ok()) return s;
    return real;
  }
  absl::Status Rename(const std::string& a, const std::string& b) override {
    if (auto s = Hit("rename"); !s.ok()) return s;
    return PosixFileSystem()->Rename(a, b);
  }
  absl::Status FsyncDir(const std::string& d) override {
    if (auto s = Hit("fsyncdir"); !s.ok()) return s;
    return PosixFileSystem()->FsyncDir(d);
  }
  absl::Status Unlink(const std::string& p) override {
    if (auto s = Hit("unlink"); !s.ok()) return s;
    return PosixFileSystem()->Unlink(p);
  }
};

class WriterTest : public ::testing::Test {
 protected:
  Spec Make(const std::string& uid, const std::string& value) {
    auto s = BuildSpec({.claim_uid = uid, .env = {{"SPIDER_IP", value}}});
    EXPECT_TRUE(s.ok()) << s.status();
    return *s;
  }

  base::testing::TempDir root_{"cdi"};
  const std::string dir_ = root_.Join("cdi");  // created by Write
};

TEST_F(WriterTest, FileNameIsExactlyThePattern) {
  EXPECT_EQ(SpecFileName("abc-123"), "k8s.netresources.spidernet.io-claim_abc-123.yaml");
  EXPECT_EQ(SpecWriter("/var/run/cdi").PathFor("u1"),
            "/var/run/cdi/k8s.netresources.spidernet.io-claim_u1.yaml");
  EXPECT_EQ(SpecWriter().dir(), "/var/run/cdi");
}

TEST_F(WriterTest, WriteReplaceRemove) {
  SpecWriter w(dir_);
  Spec a = Make("claim1", "10.0.0.1/24");
  ASSERT_TRUE(w.Write(a).ok());
  EXPECT_EQ(List(dir_), std::vector<std::string>{"k8s.netresources.spidernet.io-claim_claim1.yaml"});
  auto got = base::ParseYaml(ReadFile(w.PathFor("claim1")));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, a.json);
  EXPECT_EQ(fs::status(w.PathFor("claim1")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  Spec b = Make("claim1", "10.0.0.2/24");
  ASSERT_TRUE(w.Write(b).ok());
  EXPECT_EQ(*base::ParseYaml(ReadFile(w.PathFor("claim1"))), b.json);
  EXPECT_EQ(List(dir_).size(), 1u);
  ASSERT_TRUE(w.Remove("claim1").ok());
  EXPECT_TRUE(List(dir_).empty());
  EXPECT_TRUE(w.Remove("claim1").ok());  // idempotent
  EXPECT_TRUE(SpecWriter(root_.Join("never-created")).Remove("claim1").ok());
  EXPECT_FALSE(w.Remove("../x").ok());
  Spec bad = a;
  bad.claim_uid = "../../etc/x";
  EXPECT_FALSE(w.Write(bad).ok());
}

// Every step failing at its first call: the target keeps its old complete content (or stays
// absent), no temp file remains, and the error says which file.
TEST_F(WriterTest, InjectedFailuresNeverLeaveAPartialFile) {
  for (const char* op : {"mkdir", "create", "write", "fsync", "close", "rename"}) {
    for (bool existing : {false, true}) {
      SCOPED_TRACE(std::string(op) + (existing ? " over an existing file" : " new file"));
      fs::remove_all(dir_);
      Spec old_spec = Make("c1", "10.0.0.1/24");
      if (existing) {
        ASSERT_TRUE(SpecWriter(dir_).Write(old_spec).ok());
      }
      FaultyFs ffs;
      ffs.fail_op = op;
      ffs.fail_at = 1;
      ffs.short_write = 7;
      SpecWriter w(dir_, &ffs);
      Spec next = Make("c1", std::string(5000, 'x'));
      absl::Status s = w.Write(next);
      ASSERT_FALSE(s.ok());
      EXPECT_THAT(std::string(s.message()), HasSubstr("injected " + std::string(op)));
      if (std::string(op) != "mkdir") {
        EXPECT_THAT(std::string(s.message()), HasSubstr(w.PathFor("c1")));
      }
      if (existing) {
        EXPECT_EQ(List(dir_), std::vector<std::string>{SpecFileName("c1")});
        EXPECT_EQ(*base::ParseYaml(ReadFile(w.PathFor("c1"))), old_spec.json);
      } else if (fs::exists(dir_)) {
        EXPECT_TRUE(List(dir_).empty());
      }
    }
  }
}

TEST_F(WriterTest, FailureOnALaterPartialWrite) {
  FaultyFs ffs;
  ffs.fail_op = "write";
  ffs.fail_at = 5;
  ffs.short_write = 16;
  SpecWriter w(dir_, &ffs);
  ASSERT_FALSE(w.Write(Make("c2", "10.0.0.9/24")).ok());
  EXPECT_TRUE(List(dir_).empty());
  EXPECT_EQ(ffs.calls["write"], 5);
  // Short writes alone still produce the whole file.
  FaultyFs slow;
  slow.short_write = 3;
  SpecWriter w2(dir_, &slow);
  Spec s = Make("c2", "10.0.0.9/24");
  ASSERT_TRUE(w2.Write(s).ok());
  EXPECT_GT(slow.calls["write"], 10);
  EXPECT_EQ(*base::ParseYaml(ReadFile(w2.PathFor("c2"))), s.json);
  EXPECT_EQ(slow.calls["fsync"], 1);
  EXPECT_EQ(slow.calls["fsyncdir"], 1);
}

TEST_F(WriterTest, DirFsyncFailureAfterRenameReportsButFileIsComplete) {
  FaultyFs ffs;
  ffs.fail_op = "fsyncdir";
  ffs.fail_at = 1;
  SpecWriter w(dir_, &ffs);
  Spec s = Make("c3", "10.0.0.3/24");
  EXPECT_FALSE(w.Write(s).ok());
  EXPECT_EQ(*base::ParseYaml(ReadFile(w.PathFor("c3"))), s.json);
  EXPECT_EQ(List(dir_).size(), 1u);
}

TEST_F(WriterTest, RemoveFailureIsReported) {
  SpecWriter(dir_).Write(Make("c4", "x")).IgnoreError();
  FaultyFs ffs;
  ffs.fail_op = "unlink";
  ffs.fail_at = 1;
  absl::Status s = SpecWriter(dir_, &ffs).Remove("c4");
  EXPECT_THAT(std::string(s.message()), HasSubstr("removing CDI spec"));
  EXPECT_EQ(List(dir_).size(), 1u);
}

}  // namespace
}  // namespace spiderpool::dra::cdi
