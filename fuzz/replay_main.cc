// main() for a fuzz target outside --config=fuzz (fuzz.bzl): runs LLVMFuzzerTestOneInput once
// on every file given, and on every file of every directory given (sorted), like libFuzzer's
// own replay mode. Arguments starting with '-' (libFuzzer flags) are ignored.
//
//   bazel run --symlink_prefix=/ //fuzz:watch -- /path/to/crash-1234
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional, as in libFuzzer: called once before the first input.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    std::error_code ec;
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec)) {
        if (e.is_regular_file()) in_dir.push_back(e.path());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(p);
    }
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 1;
    }
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), data.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::fprintf(stderr, "replay: %zu input(s), no crash\n", files.size());
  return 0;
}
