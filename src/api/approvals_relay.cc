#include "api/approvals_relay.h"

#include <sys/stat.h>
#include <sys/un.h>

#include <asio/buffer.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/read_until.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <cerrno>
#include <memory>
#include <utility>

#include "audit/session_log.h"
#include "supervisor/approvals/socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::api {
namespace {

constexpr size_t kMaxReplyBytes = 16 << 20;  // a session with thousands of grants still fits

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

// One exchange. Owned by the handlers in flight; every path ends in Finish, once.
class SocketCall : public std::enable_shared_from_this<SocketCall> {
 public:
  SocketCall(asio::io_context& io, std::string path, std::string line, ApprovalReplyFn done)
      : io_(io),
        socket_(io),
        timer_(io),
        path_(std::move(path)),
        out_(std::move(line)),
        done_(std::move(done)) {}

  void Start(std::chrono::milliseconds timeout) {
    // Cheap local checks first (a few syscalls on the loop).
    Status dir = supervisor::CheckPrivateDir(DirOf(path_));
    if (!dir.ok()) {
      if (dir.code() == Code::kNotFound) {
        return Finish(NotFoundError("no approval socket " + path_ +
                                    " (the run's approvals have "
                                    "not started, or the run has ended)"));
      }
      return Finish(FromStatus(dir));
    }
    struct stat st;
    if (::lstat(path_.c_str(), &st) != 0) {
      if (errno == ENOENT) {
        return Finish(NotFoundError("no approval socket " + path_ +
                                    " (the run's approvals have "
                                    "not started, or the run has ended)"));
      }
      return Finish(FromStatus(ErrnoError(path_, errno)));
    }
    if (!S_ISSOCK(st.st_mode)) return Finish(DeniedError(path_ + " is not a socket"));
    if (path_.size() >= sizeof(sockaddr_un::sun_path)) {
      return Finish(InvalidError("socket path too long: " + path_));
    }
    auto self = shared_from_this();
    timer_.expires_after(timeout);
    timer_.async_wait([self](const asio::error_code& ec) {
      if (ec) return;
      self->Finish(MakeError(ErrorKind::kTimeout, "no reply from " + self->path_ +
                                                      " in time (its supervisor is stuck?)"));
    });
    socket_.async_connect(asio::local::stream_protocol::endpoint(path_),
                          [self](const asio::error_code& ec) { self->OnConnect(ec); });
  }

 private:
  void OnConnect(const asio::error_code& ec) {
    if (finished_) return;
    if (ec) {
      if (ec.value() == ENOENT) {
        return Finish(NotFoundError("no approval socket " + path_ + " (the run has ended)"));
      }
      if (ec.value() == ECONNREFUSED) {
        return Finish(MakeError(ErrorKind::kInterrupted,
                                path_ + " refuses connections (the run has ended?)"));
      }
      return Finish(
          MakeError(ErrorKind::kInterrupted, "connecting to " + path_ + ": " + ec.message()));
    }
    Status peer = supervisor::CheckApprovalServerPeer(socket_.native_handle(), path_);
    if (!peer.ok()) return Finish(FromStatus(peer));
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_),
                      [self](const asio::error_code& wec, size_t) { self->OnWritten(wec); });
  }

  void OnWritten(const asio::error_code& ec) {
    if (finished_) return;
    // A server that refuses us answers and closes, possibly before the request is written:
    // read its answer anyway, and report the write error only when there is none.
    if (ec) write_error_ = "writing to " + path_ + ": " + ec.message();
    auto self = shared_from_this();
    asio::async_read_until(socket_, asio::dynamic_buffer(in_, kMaxReplyBytes), '\n',
                           [self](const asio::error_code& rec, size_t n) { self->OnRead(rec, n); });
  }

  void OnRead(const asio::error_code& ec, size_t n) {
    if (finished_) return;
    if (ec) {
      if (ec == asio::error::not_found) {
        return Finish(MakeError(ErrorKind::kResourceExhausted,
                                "the reply of " + path_ + " is longer than 16 MiB"));
      }
      if (!write_error_.empty()) return Finish(MakeError(ErrorKind::kInterrupted, write_error_));
      return Finish(MakeError(ErrorKind::kInterrupted,
                              path_ + " closed the connection without a reply (the run ended?)"));
    }
    std::string line = in_.substr(0, n > 0 ? n - 1 : 0);
    nlohmann::json reply = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (reply.is_discarded() || !reply.is_object()) {
      return Finish(MakeError(ErrorKind::kInterrupted, "malformed reply from " + path_));
    }
    Status verdict = supervisor::ApprovalReplyStatus(reply);
    if (!verdict.ok()) return Finish(FromStatus(verdict));
    Finish(std::move(reply));
  }

  void Finish(Expected<nlohmann::json> result) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    asio::error_code ignored;
    socket_.close(ignored);
    // Never inline: a caller may still be setting up when an early check fails.
    asio::post(io_,
               [done = std::move(done_), r = std::move(result)]() mutable { done(std::move(r)); });
  }

  asio::io_context& io_;
  asio::local::stream_protocol::socket socket_;
  asio::steady_timer timer_;
  std::string path_;
  std::string out_;
  std::string in_;
  std::string write_error_;
  ApprovalReplyFn done_;
  bool finished_ = false;
};

}  // namespace

std::string ApprovalSocketPathFor(const std::string& session) {
  if (!audit::IsNewSessionIdFormat(session)) return "";
  std::string dir = supervisor::WardRuntimeDir();
  if (dir.empty()) return "";
  return supervisor::ApprovalSocketPath(dir, session);
}

void CallApprovalSocketAsync(asio::io_context& io, const std::string& path,
                             const nlohmann::json& request, std::chrono::milliseconds timeout,
                             ApprovalReplyFn done) {
  std::string line = request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  auto call = std::make_shared<SocketCall>(io, path, std::move(line), std::move(done));
  call->Start(timeout);
}

void CountPendingApprovals(asio::io_context& io, const std::string& session,
                           std::chrono::milliseconds timeout,
                           std::function<void(std::optional<uint64_t>)> done) {
  std::string path = ApprovalSocketPathFor(session);
  if (path.empty()) {
    asio::post(io, [done = std::move(done)] { done(std::nullopt); });
    return;
  }
  CallApprovalSocketAsync(io, path, {{"op", "hello"}}, timeout,
                          [done = std::move(done)](Expected<nlohmann::json> r) {
                            if (!r.ok()) {
                              if (r.error().kind == ErrorKind::kNotFound) return done(0);
                              return done(std::nullopt);
                            }
                            auto it = r->find("pending");
                            if (it == r->end() || !it->is_number_unsigned()) {
                              return done(std::nullopt);
                            }
                            done(it->get<uint64_t>());
                          });
}

void CallApprovalSockets(asio::io_context& io, const std::vector<std::string>& paths,
                         const nlohmann::json& request, std::chrono::milliseconds timeout,
                         std::function<void(ApprovalResults)> done) {
  struct Gather {
    ApprovalResults results;
    size_t left = 0;
    std::function<void(ApprovalResults)> done;
  };
  auto g = std::make_shared<Gather>();
  g->results.resize(paths.size());
  g->left = paths.size();
  g->done = std::move(done);
  if (paths.empty()) {
    asio::post(io, [g] { g->done(std::move(g->results)); });
    return;
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    CallApprovalSocketAsync(io, paths[i], request, timeout, [g, i](Expected<nlohmann::json> r) {
      g->results[i] = std::move(r);
      if (--g->left == 0) g->done(std::move(g->results));
    });
  }
}

}  // namespace ward::api
