// Fuzz target: the agent's IPAM endpoint (agent/ipam/server.h) as a CNI plugin, or anything
// else that can open its unix socket, talks to it.
//
// Input: the first byte picks what the rest is:
//   0 mod 4: raw bytes written to the real IpamServer's socket (one started per process, on a
//            temporary path, with a backend that answers every call): the HTTP request line,
//            headers, bodies, chunked GET bodies, keep-alive sequences. The client half-closes
//            and reads until the server closes; the server must answer or close, never crash,
//            and answer "HTTP/1.1 ...".
//   1, 2, 3:  a body decoded as IpamAddArgs, IpamDelArgs or GetCoordinatorArgs (ipamapi's
//            FromJson, what the server calls), whose encoding must decode to the same value.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "agent/ipam/server.h"
#include "agent/ipamapi/ipamapi.h"

namespace {

using namespace spiderpool::agent;

class Backend : public ipam::IpamBackend, public ipam::CoordinatorBackend {
 public:
  bool Ready() const override { return true; }
  absl::StatusOr<ipamapi::IpamAddResponse> Allocate(const ipamapi::IpamAddArgs& args,
                                                    absl::Time) override {
    if (args.pod_name.size() % 5 == 1) return absl::ResourceExhaustedError("pool full");
    ipamapi::IpamAddResponse resp;
    resp.ips.push_back({.version = 4, .address = "10.0.0.2/24", .ip_pool = "p",
                        .gateway = "10.0.0.1", .nic = args.if_name});
    return resp;
  }
  absl::Status Release(const ipamapi::IpamDelArgs& args, absl::Time) override {
    if (args.pod_name.size() % 5 == 2) return absl::NotFoundError("no such pod");
    return absl::OkStatus();
  }
  absl::StatusOr<ipamapi::CoordinatorConfig> GetCoordinatorConfig(
      const ipamapi::GetCoordinatorArgs& args) override {
    if (args.pod_name.empty()) return absl::InvalidArgumentError("podName: required");
    ipamapi::CoordinatorConfig c;
    c.mode = "auto";
    return c;
  }
};

const std::string& SocketPath() {
  static const std::string* path = [] {
    char dir[] = "/tmp/ipam-http-fuzz-XXXXXX";
    if (::mkdtemp(dir) == nullptr) std::abort();
    auto* p = new std::string(std::string(dir) + "/agent.sock");
    static Backend backend;
    ipam::ServerOptions o;
    o.socket_path = *p;
    o.threads = 2;
    o.request_timeout = absl::Seconds(2);
    static auto server = ipam::IpamServer::Start(o, &backend, &backend);
    if (!server.ok()) std::abort();
    return p;
  }();
  return *path;
}

void RawExchange(std::string_view request) {
  const std::string& path = SocketPath();
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) std::abort();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  timeval tv{.tv_sec = 10, .tv_usec = 0};  // the server must answer well within this
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  size_t off = 0;
  while (off < request.size()) {
    const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early on a bad request
    off += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string reply;
  char buf[4096];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EAGAIN) __builtin_trap();  // the server hung on this request
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!reply.empty() && reply.rfind("HTTP/1.1 ", 0) != 0) __builtin_trap();
}

template <typename Args>
void DecodeBody(std::string_view body) {
  absl::StatusOr<Args> args = ipamapi::FromJson<Args>(body);
  if (!args.ok()) {
    if (args.status().message().empty()) __builtin_trap();  // errors name the field
    return;
  }
  absl::StatusOr<Args> again = ipamapi::FromJson<Args>(ipamapi::ToJson(*args));
  if (!again.ok() || !(*again == *args)) __builtin_trap();  // the encoding loses something
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: RawExchange(rest); break;
    case 1: DecodeBody<ipamapi::IpamAddArgs>(rest); break;
    case 2: DecodeBody<ipamapi::IpamDelArgs>(rest); break;
    default: DecodeBody<ipamapi::GetCoordinatorArgs>(rest); break;
  }
  return 0;
}
