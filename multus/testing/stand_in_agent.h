#pragma once
// Test-only: a stand-in spiderpool-agent on a unix socket for multus/node_test, answering the
// four calls our `spiderpool` IPAM plugin and `coordinator` plugin make (the wire contract is
// agent/ipamapi/ipamapi.h; multus may not depend on agent/, so the bodies are written here):
//   GET    /v1/ipam/healthy         200
//   POST   /v1/ipam/ip              200 IpamAddResponse {"ips":[{version,address,nic,gateway}]}
//                                   with every address set by SetAddress (the plugin keeps the
//                                   one whose nic is its CNI_IFNAME)
//   DELETE /v1/ipam/ip              200
//   GET    /v1/coordinator/config   200 CoordinatorConfig: mode auto, tunePodRoutes true,
//                                   hostRuleTable 500, no CIDRs
// Every request is recorded.

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}  // namespace httplib

namespace spiderpool::multus::testing {

class StandInAgent {
 public:
  struct Request {
    std::string method;
    std::string path;
    std::string body;
  };

  // Listens on `socket_path` (≤107 bytes; a stale file is removed) until destroyed.
  explicit StandInAgent(std::string socket_path);
  ~StandInAgent();
  StandInAgent(const StandInAgent&) = delete;
  StandInAgent& operator=(const StandInAgent&) = delete;

  bool listening() const { return listening_; }
  // POST /v1/ipam/ip hands `cidr` (e.g. "192.0.2.10/24") to `nic`, with `gateway` ("" = none).
  void SetAddress(const std::string& nic, const std::string& cidr, const std::string& gateway);
  std::vector<Request> requests();
  // How many requests had this method and path.
  int Count(const std::string& method, const std::string& path);

 private:
  struct Address {
    std::string nic, cidr, gateway;
  };
  void Record(const std::string& method, const std::string& path, const std::string& body);
  std::string AddResponse();

  std::string socket_path_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  bool listening_ = false;
  std::mutex mu_;
  std::vector<Address> addresses_;
  std::vector<Request> requests_;
};

}  // namespace spiderpool::multus::testing
