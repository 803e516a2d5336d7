#pragma once
// The listen backlog of a cpp-httplib server.
//
// Debian's cpp-httplib is compiled with CPPHTTPLIB_LISTEN_BACKLOG = 5 (a define of the library,
// not of its users). A burst of new connections beyond that overflows the accept queue: TCP
// drops the SYNs and the clients retry after 1 s (the kernel's TcpExtListenOverflows counts
// them); a non-blocking unix-socket connect fails with EAGAIN. Go servers (kube-apiserver, the
// kubelet, upstream Spiderpool's) listen with the kernel's somaxconn. Every server we run calls
// this between creating the server and binding it:
//
//   base::ListenBacklog backlog(server);     // before bind_to_port / bind_to_any_port
//   ... bind ...
//   SP_RETURN_IF_ERROR(backlog.Raise());     // after: the backlog is SOMAXCONN
#include <httplib.h>

#include <memory>

#include "absl/status/status.h"

namespace spiderpool::base {

class ListenBacklog {
 public:
  // Remembers the listening socket httplib creates; `options` are the socket options to set on
  // it (httplib's default: SO_REUSEPORT). Replaces the server's set_socket_options. `server`
  // must outlive this object's Raise().
  explicit ListenBacklog(httplib::Server& server,
                         httplib::SocketOptions options = httplib::default_socket_options);
  ListenBacklog(const ListenBacklog&) = delete;
  ListenBacklog& operator=(const ListenBacklog&) = delete;

  // After a successful bind: listen() again on the socket with SOMAXCONN (Linux raises the
  // backlog of a listening socket; the kernel caps it at net.core.somaxconn).
  absl::Status Raise() const;

 private:
  std::shared_ptr<int> fd_;
};

}  // namespace spiderpool::base
