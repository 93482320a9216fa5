#include "api/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <optional>

#include "common/unix_socket.h"

namespace ward::api {

class Server::Connection : public Peer, public std::enable_shared_from_this<Connection> {
 public:
  Connection(Server* server, asio::local::stream_protocol::socket socket)
      : server_(server), socket_(std::move(socket)), framer_(server->config_.max_line_bytes) {}

  void Start() { ReadMore(); }

  void Send(const nlohmann::json& message) override {
    if (closed_) return;
    std::string line = SerializeLine(message);
    queued_ += line.size();
    if (queued_ > server_->config_.max_queued_bytes) {
      std::fprintf(stderr, "ward serve: dropping a client that does not read its replies\n");
      Close();
      return;
    }
    out_.push_back(std::move(line));
    if (!writing_) WriteNext();
  }

  bool alive() const override { return !closed_; }

  void Close() {
    if (closed_) return;
    closed_ = true;
    asio::error_code ec;
    socket_.shutdown(asio::socket_base::shutdown_both, ec);
    socket_.close(ec);
    out_.clear();
    auto self = shared_from_this();
    asio::post(socket_.get_executor(), [self] { self->server_->Closed(self.get()); });
  }

  // Sends an error and closes once it is written.
  void Refuse(const Error& e) {
    Send(MakeErrorResponse(nullptr, e));
    close_after_write_ = true;
  }

 private:
  void ReadMore() {
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(buf_), [self](const asio::error_code& ec, size_t n) {
      if (self->closed_) return;
      if (ec) {
        self->Close();
        return;
      }
      self->framer_.Feed(std::string_view(self->buf_.data(), n));
      while (auto item = self->framer_.Next()) {
        if (self->closed_) return;
        if (item->oversized) {
          Error e = InvalidError("message longer than " +
                                 std::to_string(self->server_->config_.max_line_bytes) +
                                 " bytes; it was discarded");
          e.code = kInvalidRequestCode;
          self->Send(MakeErrorResponse(nullptr, e));
          continue;
        }
        if (item->line.find_first_not_of(" \t") == std::string::npos) continue;
        ParseFailure failure;
        auto m = ParseMessage(item->line, &failure);
        if (!m.ok()) {
          self->Send(MakeErrorResponse(failure.id, m.error()));
          continue;
        }
        self->server_->service_.Handle(*m, self);
      }
      self->ReadMore();
    });
  }

  void WriteNext() {
    if (out_.empty() || closed_) {
      writing_ = false;
      if (close_after_write_ && !closed_) Close();
      return;
    }
    writing_ = true;
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_.front()),
                      [self](const asio::error_code& ec, size_t n) {
                        if (self->closed_) return;
                        if (ec) {
                          self->Close();
                          return;
                        }
                        self->queued_ -= std::min(self->queued_, n);
                        self->out_.pop_front();
                        self->WriteNext();
                      });
  }

  Server* server_;
  asio::local::stream_protocol::socket socket_;
  LineFramer framer_;
  std::array<char, 65536> buf_;
  std::deque<std::string> out_;
  size_t queued_ = 0;
  bool writing_ = false;
  bool closed_ = false;
  bool close_after_write_ = false;
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
