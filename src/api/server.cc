#include "api/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <optional>

#include "common/unix_socket.h"
#include "net/line_socket.h"

namespace ward::api {

class Server::Connection : public Peer, public net::LineSocket {
 public:
  Connection(Server* server, asio::local::stream_protocol::socket socket)
      : LineSocket(std::move(socket), SocketOptions(server->config_)),
        server_(server),
        framer_(server->config_.max_line_bytes) {}

  void Send(const nlohmann::json& message) override { SendLine(SerializeLine(message)); }

  bool alive() const override { return !closed(); }

  // Sends an error and closes once it is written.
  void Refuse(const Error& e) {
    Send(MakeErrorResponse(nullptr, e));
    CloseAfterWrite();
  }

 private:
  static Options SocketOptions(const ServerConfig& config) {
    return Options{.read_buffer_bytes = 65536, .max_queued_bytes = config.max_queued_bytes};
  }

  void OnData(std::string_view data) override {
    framer_.Feed(data);
    while (auto item = framer_.Next()) {
      if (closed()) return;
      HandleLine(*item);
    }
  }

  void HandleLine(const LineFramer::Item& item) {
    if (item.oversized) {
      Error e = InvalidError("message longer than " + std::to_string(server_->config_.max_line_bytes) +
                             " bytes; it was discarded");
      e.code = kInvalidRequestCode;
      Send(MakeErrorResponse(nullptr, e));
      return;
    }
    if (item.line.find_first_not_of(" \t") == std::string::npos) return;
    ParseFailure failure;
    auto m = ParseMessage(item.line, &failure);
    if (!m.ok()) {
      Send(MakeErrorResponse(failure.id, m.error()));
      return;
    }
    server_->service_.Handle(*m, std::static_pointer_cast<Connection>(shared_from_this()));
  }

  void OnOverflow() override {
    std::fprintf(stderr, "ward serve: dropping a client that does not read its replies\n");
  }

  void OnClosed() override { server_->Closed(this); }

  Server* server_;
  LineFramer framer_;
};

Server::Server(asio::io_context& io, Service& service, ServerConfig config)
    : io_(io),
      service_(service),
      config_(std::move(config)),
      gate_(config_.socket_path, config_.events) {}

Server::~Server() { Stop(); }

Expected<Done> Server::Start() {
  const std::string& path = config_.socket_path;
  Result<UnixListener> l = ListenPrivateUnix(path, asio::socket_base::max_listen_connections);
  if (!l.ok()) {
    if (l.status().code() == Code::kFailedPrecondition) {
      return MakeError(ErrorKind::kResourceExhausted, "another ward serve is listening on " + path);
    }
    if (l.status().code() == Code::kInvalidArgument) return InvalidError(l.status().message());
    return FromStatus(l.status());
  }
  acceptor_.emplace(io_);
  asio::error_code ec;
  acceptor_->assign(asio::local::stream_protocol(), l->fd.get(), ec);
  if (ec) {
    acceptor_.reset();
    return FromErrno("listening on " + path, ec.value());
  }
  l->fd.release();
  socket_ino_ = l->ino;
  Accept();
  return Done{};
}

void Server::Accept() {
  acceptor_->async_accept(
      [this](const asio::error_code& ec, asio::local::stream_protocol::socket socket) {
        if (stopped_) return;
        if (ec) {
          if (ec == asio::error::operation_aborted) return;
          // EMFILE and friends: keep serving the clients we have; try again shortly.
          auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(100));
          t->async_wait([this, t](const asio::error_code&) {
            if (!stopped_) Accept();
          });
          return;
        }
        PeerVerdict peer = gate_.Admit(socket.native_handle());
        auto conn = std::make_shared<Connection>(this, std::move(socket));
        conns_.insert(conn);
        if (!peer.admitted) {
          std::fprintf(stderr, "ward serve: refused a client of uid %lld (pid %d): %s\n",
                       static_cast<long long>(peer.uid), static_cast<int>(peer.pid),
                       peer.reason.c_str());
          conn->Refuse(DeniedError("refused: " + peer.reason));
        } else if (conns_.size() > config_.max_connections) {
          conn->Refuse(MakeError(ErrorKind::kResourceExhausted, "too many connections"));
        } else {
          conn->Start();
        }
        Accept();
      });
}

void Server::Closed(Connection* c) {
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (it->get() == c) {
      conns_.erase(it);
      return;
    }
  }
}

void Server::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (acceptor_) {
    asio::error_code ec;
    acceptor_->close(ec);
    acceptor_.reset();
    // Only our own socket: another daemon may have taken the path since.
    struct stat st;
    if (lstat(config_.socket_path.c_str(), &st) == 0 && st.st_ino == socket_ino_) {
      unlink(config_.socket_path.c_str());
    }
  }
  auto conns = conns_;
  for (auto& c : conns) c->Close();
  conns_.clear();
}

}  // namespace ward::api
