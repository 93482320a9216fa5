#include "supervisor/container_ports.h"

#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "common/linux.h"

namespace ward::supervisor {
namespace {

// A thread of the supervisor's that lives in the sandbox's network namespace and makes sockets
// there, one at a time for the loop's thread, which stays where it is. It joins the namespace
// while the supervisor still has its capabilities (before the command starts) and then drops
// every one for good: a socket needs none, and nothing else is done there.
class SocketsInside {
 public:
  static Result<std::shared_ptr<SocketsInside>> Start(UniqueFd netns) {
    auto self = std::make_shared<SocketsInside>();
    self->thread_ = std::thread([self = self.get(), netns = std::move(netns)] {
      const bool joined = setns(netns.get(), CLONE_NEWNET) == 0;
      const int err = errno;
      sys::DropThreadCapabilities();
      self->Serve(joined ? 0 : err);
    });
    std::unique_lock lock(self->mu_);
    self->cv_.wait(lock, [&] { return self->ready_; });
    if (self->join_error_ != 0) {
      return ErrnoError("entering the container's network namespace", self->join_error_);
    }
    return self;
  }

  ~SocketsInside() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  Result<UniqueFd> Make(int family) {
    std::unique_lock lock(mu_);
    family_ = family;
    answer_.reset();
    cv_.notify_all();
    cv_.wait(lock, [&] { return answer_.has_value() || stop_; });
    if (!answer_) return Error(Code::kFailedPrecondition, "stopped");
    Result<UniqueFd> out = std::move(*answer_);
    answer_.reset();
    return out;
  }

 private:
  void Serve(int join_error) {
    std::unique_lock lock(mu_);
    join_error_ = join_error;
    ready_ = true;
    cv_.notify_all();
    if (join_error != 0) return;
    while (true) {
      cv_.wait(lock, [&] { return family_ != 0 || stop_; });
      if (stop_) return;
      UniqueFd fd(socket(family_, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
      if (fd) {
        answer_.emplace(std::move(fd));
      } else {
        answer_.emplace(ErrnoError("a socket in the container's network namespace", errno));
      }
      family_ = 0;
      cv_.notify_all();
    }
  }

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false, stop_ = false;
  int join_error_ = 0;
  int family_ = 0;  // asked for; 0 when nothing is
  std::optional<Result<UniqueFd>> answer_;
};

}  // namespace

Result<std::unique_ptr<net::PortForwarder>> ServeContainerPorts(
    asio::io_context& ctx, const std::vector<std::pair<uint16_t, int>>& listeners,
    const std::vector<uint16_t>& ward_own, UniqueFd sandbox_netns, EventSink* events) {
  std::vector<std::pair<uint16_t, UniqueFd>> taken;
  for (const auto& [port, fd] : listeners) taken.emplace_back(port, UniqueFd(fd));
  if (taken.empty()) return std::unique_ptr<net::PortForwarder>();
  for (const auto& [port, fd] : taken) {
    if (std::find(ward_own.begin(), ward_own.end(), port) != ward_own.end()) {
      return InvalidArgument("port " + std::to_string(port) + " is ward's own inside");
    }
  }
  if (!sandbox_netns) return Error(Code::kInternal, "exposed ports without the container's network");
  WARD_ASSIGN_OR_RETURN(std::shared_ptr<SocketsInside> inside,
                        SocketsInside::Start(std::move(sandbox_netns)));
  net::PortForwardOptions options;
  options.socket_inside = [inside](int family) { return inside->Make(family); };
  auto forwarder = std::make_unique<net::PortForwarder>(ctx, events, std::move(options));
  for (auto& [port, fd] : taken) WARD_TRY(forwarder->Serve(port, std::move(fd)));
  return forwarder;
}

}  // namespace ward::supervisor
