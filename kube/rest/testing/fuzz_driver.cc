// A tiny deterministic fuzzing driver so libFuzzer targets (LLVMFuzzerTestOneInput) run in
// `bazel test` with GCC: it feeds every file of the seed corpus directories given as
// arguments, then many mutations of them (bit flips, interesting bytes, insertions, deletions,
// duplications, splices, structural tokens). A crash, sanitizer report or trap fails the test.
//
//   cc_test(srcs = ["x_fuzz.cc"], deps = ["//kube/rest/testing:fuzz_driver"],
//           args = ["kube/rest/testdata/x_corpus"], data = glob([...]))
//
// Environment: FUZZ_ITERATIONS (default 20000 mutated inputs), FUZZ_SEED (default 1).

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/sigpipe.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string>* corpus_dirs = nullptr;

std::vector<std::string> LoadCorpus() {
  std::vector<std::string> seeds;
  for (const std::string& dir : *corpus_dirs) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) {
      ADD_FAILURE() << "cannot open corpus directory " << dir;
      continue;
    }
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      names.push_back(name);
    }
    closedir(d);
    std::sort(names.begin(), names.end());  // deterministic order
    for (const std::string& name : names) {
      std::ifstream in(dir + "/" + name, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      seeds.push_back(ss.str());
    }
  }
  return seeds;
}

// The input being run, for the crash report.
const std::string* current_input = nullptr;

void WriteAll(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(2, data, n);
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

// On a crash: print the input (escaped) so it can be added to the corpus and reproduced.
void OnCrash(int sig) {
  static const char kHead[] = "\n*** fuzz driver: crash on input (C-escaped): \"";
  WriteAll(kHead, sizeof(kHead) - 1);
  if (current_input != nullptr) {
    for (unsigned char c : *current_input) {
      char buf[5];
      if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
        buf[0] = static_cast<char>(c);
        WriteAll(buf, 1);
      } else {
        static const char kHex[] = "0123456789abcdef";
        buf[0] = '\\';
        buf[1] = 'x';
        buf[2] = kHex[c >> 4];
        buf[3] = kHex[c & 15];
        WriteAll(buf, 4);
      }
    }
  }
  WriteAll("\"\n", 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

void InstallCrashHandler() {
  static char alt_stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof(alt_stack);
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_handler = OnCrash;
  sa.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) sigaction(sig, &sa, nullptr);
}

void RunOne(const std::string& input) {
  current_input = &input;
  try {
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  } catch (const std::exception& e) {
    // Our code must not throw: report the input like a crash.
    std::string what = std::string("exception: ") + e.what();
    WriteAll(what.data(), what.size());
    OnCrash(SIGABRT);
  }
  current_input = nullptr;
}

class Mutator {
 public:
  Mutator(uint64_t seed, const std::vector<std::string>& corpus) : rng_(seed), corpus_(corpus) {}

  std::string Mutate(std::string s) {
    int ops = 1 + static_cast<int>(Uniform(8));
    for (int i = 0; i < ops; ++i) MutateOnce(&s);
    if (s.size() > 1 << 16) s.resize(1 << 16);
    return s;
  }

 private:
  size_t Uniform(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  void MutateOnce(std::string* s) {
    static const char* kTokens[] = {
        "{", "}", "[", "]", "\"", "\\", ":", ",", "\n", "- ", ": ", "---", "~", "null", "true",
        "false", "0", "-1", "1e999", "\"\\u0000\"", "&a ", "*a", "!!binary ", "? ", "|", ">",
        "'", "#", "\t", "\xff", "\xc3\x28", "{\"type\":\"ERROR\",\"object\":{\"code\":410}}\n",
        "{\"type\":\"ADDED\",\"object\":{}}", "name: ", "cluster: ", "user: ", "server: ",
        "https://", "[::1]:", "-data: ", "=", "====", "-----BEGIN CERTIFICATE-----\n",
        "-----END CERTIFICATE-----\n", "\"metadata\":", "\"resourceVersion\":\"9\"",
        "\"kind\":\"Status\"", "\"details\":{\"causes\":[{}]}", "\"retryAfterSeconds\":",
    };
    size_t n = s->size();
    switch (Uniform(9)) {
      case 0:  // flip a bit
        if (n) (*s)[Uniform(n)] ^= static_cast<char>(1u << Uniform(8));
        break;
      case 1: {  // interesting byte
        static const char kBytes[] = {0, '\xff', '{', '}', '"', '\\', ':', '\n', '-', ' ', '[', ']'};
        if (n) (*s)[Uniform(n)] = kBytes[Uniform(sizeof(kBytes))];
        break;
      }
      case 2: {  // insert random bytes
        std::string ins(1 + Uniform(8), '\0');
        for (char& c : ins) c = static_cast<char>(Uniform(256));
        s->insert(Uniform(n + 1), ins);
        break;
      }
      case 3:  // delete a range
        if (n) {
          size_t at = Uniform(n);
          s->erase(at, 1 + Uniform(std::min<size_t>(n - at, 64)));
        }
        break;
      case 4:  // duplicate a range
        if (n) {
          size_t at = Uniform(n);
          size_t len = 1 + Uniform(std::min<size_t>(n - at, 256));
          s->insert(Uniform(n + 1), s->substr(at, len));
        }
        break;
      case 5:  // splice with another seed
        if (!corpus_.empty()) {
          const std::string& other = corpus_[Uniform(corpus_.size())];
          size_t cut = Uniform(n + 1);
          size_t from = Uniform(other.size() + 1);
          *s = s->substr(0, cut) + other.substr(from);
        }
        break;
      case 6:  // truncate
        if (n) s->resize(Uniform(n));
        break;
      case 7:  // repeat a structural prefix (deep nesting)
        s->insert(Uniform(n + 1), std::string(1 + Uniform(300), "[{"[Uniform(2)]));
        break;
      default:  // token
        s->insert(Uniform(n + 1), kTokens[Uniform(sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
    }
  }

  std::mt19937_64 rng_;
  const std::vector<std::string>& corpus_;
};

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoull(v, nullptr, 10);
}

TEST(FuzzDriver, SeedsAndMutations) {
  InstallCrashHandler();
  std::vector<std::string> corpus = LoadCorpus();
  ASSERT_FALSE(corpus.empty()) << "empty seed corpus";
  for (const std::string& seed : corpus) RunOne(seed);
  RunOne("");
  uint64_t iterations = EnvOr("FUZZ_ITERATIONS", 20000);
  Mutator mutator(EnvOr("FUZZ_SEED", 1), corpus);
  for (uint64_t i = 0; i < iterations; ++i) {
    std::string input = mutator.Mutate(corpus[i % corpus.size()]);
    RunOne(input);
  }
}

}  // namespace

// Memory guard, like libFuzzer's -rss_limit_mb: a runaway input fails this test instead of
// exhausting the (shared) machine.
extern "C" const char* __asan_default_options() {
  return "hard_rss_limit_mb=3072:malloc_limit_mb=2048";
}

// ASan and TSan reserve terabytes of address space for their shadow memory: under them the
// allocator limits above are the guard, not RLIMIT_AS. (GCC defines __SANITIZE_*__, clang
// answers __has_feature.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SP_SHADOW_MEMORY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SP_SHADOW_MEMORY 1
#endif
#endif

int main(int argc, char** argv) {
  spiderpool::base::IgnoreSigpipe();
#ifndef SP_SHADOW_MEMORY
  struct rlimit limit;
  limit.rlim_cur = limit.rlim_max = rlim_t{3} << 30;  // 3 GiB of address space
  setrlimit(RLIMIT_AS, &limit);
#endif
  ::testing::InitGoogleTest(&argc, argv);
  corpus_dirs = new std::vector<std::string>(argv + 1, argv + argc);
  return RUN_ALL_TESTS();
}
