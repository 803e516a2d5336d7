// Fuzz target for the kubeconfig decoder (untrusted input: users hand us kubeconfigs).
// libFuzzer-compatible; in `bazel test` it runs under testing/fuzz_driver.cc with the seed
// corpus in testdata/kubeconfig_corpus.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kube/rest/config.h"
#include "kube/rest/rest_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spiderpool::kube;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  KubeconfigOptions options;
  options.base_dir = "/nonexistent";
  // Referenced files: a fixed PEM-looking text for one name, NotFound for the others. Never
  // touch the real filesystem.
  options.read_file = [](const std::string& path) -> absl::StatusOr<std::string> {
    if (path == "/nonexistent/ca.crt") {
      return std::string("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    }
    return absl::NotFoundError(path);
  };
  absl::StatusOr<Config> config = ParseKubeconfig(input, options);
  if (config.ok()) {
    // The decoded values are untrusted too: the client parses the URL and the PEM blocks.
    config->bearer_token_file.clear();
    (void)RestClient::Create(*config);
  }
  (void)ParseServerUrl(input);
  (void)Base64Decode(input);
  return 0;
}
