#include "multus/testing/stand_in_agent.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include "base/json.h"
#include "httplib.h"

namespace spiderpool::multus::testing {

StandInAgent::StandInAgent(std::string socket_path)
    : socket_path_(std::move(socket_path)), server_(std::make_unique<httplib::Server>()) {
  server_->set_address_family(AF_UNIX);
  server_->Get("/v1/ipam/healthy", [this](const httplib::Request& req, httplib::Response& res) {
    Record(req.method, req.path, req.body);
    res.status = 200;
  });
  server_->Post("/v1/ipam/ip", [this](const httplib::Request& req, httplib::Response& res) {
    Record(req.method, req.path, req.body);
    res.status = 200;
    res.set_content(AddResponse(), "application/json");
  });
  server_->Delete("/v1/ipam/ip", [this](const httplib::Request& req, httplib::Response& res) {
    Record(req.method, req.path, req.body);
    res.status = 200;
  });
  server_->Get("/v1/coordinator/config",
               [this](const httplib::Request& req, httplib::Response& res) {
                 Record(req.method, req.path, req.body);
                 res.status = 200;
                 res.set_content(base::DumpJson(base::Json{{"mode", "auto"},
                                                           {"overlayPodCIDR", base::Json::array()},
                                                           {"serviceCIDR", base::Json::array()},
                                                           {"hijackCIDR", base::Json::array()},
                                                           {"tunePodRoutes", true},
                                                           {"hostRuleTable", 500}}),
                                 "application/json");
               });
  ::unlink(socket_path_.c_str());
  if (!server_->bind_to_port(socket_path_.c_str(), 80)) return;
  listening_ = true;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

StandInAgent::~StandInAgent() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
  ::unlink(socket_path_.c_str());
}

void StandInAgent::SetAddress(const std::string& nic, const std::string& cidr,
                              const std::string& gateway) {
  std::lock_guard<std::mutex> l(mu_);
  addresses_.push_back({nic, cidr, gateway});
}

std::vector<StandInAgent::Request> StandInAgent::requests() {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

int StandInAgent::Count(const std::string& method, const std::string& path) {
  std::lock_guard<std::mutex> l(mu_);
  int n = 0;
  for (const Request& r : requests_) n += r.method == method && r.path == path;
  return n;
}

void StandInAgent::Record(const std::string& method, const std::string& path,
                          const std::string& body) {
  std::lock_guard<std::mutex> l(mu_);
  requests_.push_back({method, path, body});
}

std::string StandInAgent::AddResponse() {
  std::lock_guard<std::mutex> l(mu_);
  base::Json ips = base::Json::array();
  for (const Address& a : addresses_) {
    base::Json ip = {{"version", a.cidr.find(':') == std::string::npos ? 4 : 6},
                     {"address", a.cidr},
                     {"nic", a.nic}};
    if (!a.gateway.empty()) ip["gateway"] = a.gateway;
    ips.push_back(std::move(ip));
  }
  return base::DumpJson(base::Json{{"ips", std::move(ips)}});
}

}  // namespace spiderpool::multus::testing
