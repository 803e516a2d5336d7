#include "base/http_listen.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/strings.h"

namespace spiderpool::base {

ListenBacklog::ListenBacklog(httplib::Server& server, httplib::SocketOptions options)
    : fd_(std::make_shared<int>(-1)) {
  server.set_socket_options([fd = fd_, options = std::move(options)](socket_t sock) {
    if (options) options(sock);
    *fd = sock;  // the last socket created is the one bound (earlier addresses failed)
  });
}

absl::Status ListenBacklog::Raise() const {
  if (*fd_ < 0) return absl::FailedPreconditionError("the server created no listening socket");
  if (::listen(*fd_, SOMAXCONN) != 0) {
    return absl::UnavailableError(
        StrCat("raising the listen backlog: listen: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace spiderpool::base
