#include "supervisor/approvals/socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <asio/post.hpp>
#include <asio/write.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "audit/session_log.h"
#include "common/linux.h"
#include "common/unique_fd.h"
#include "common/unix_socket.h"
#include "net/line_socket.h"
#include "supervisor/runtime_dir.h"

namespace ward::supervisor {
namespace {

constexpr std::string_view kPrefix = "approvals-";
constexpr std::string_view kSuffix = ".sock";
constexpr size_t kMaxReason = 512;
constexpr size_t kMaxReplyBytes = 16 << 20;

std::string Serialize(const nlohmann::json& j) {
  // Subjects come from the sandbox and need not be UTF-8: never throw on them.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json ErrorReply(const Status& st) {
  return {{"ok", false},
          {"error",
           {{
                "code",
                std::string(CodeName(st.code())),
            },
            {"message", st.ToString()}}}};
}

Result<uint64_t> IdField(const nlohmann::json& m, const char* key) {
  auto it = m.find(key);
  if (it == m.end()) return InvalidArgument(std::string("missing \"") + key + "\"");
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) {
    return static_cast<uint64_t>(it->get<int64_t>());
  }
  return InvalidArgument(std::string("\"") + key + "\" must be a non-negative integer");
}

Result<std::string> OptionalString(const nlohmann::json& m, const char* key, size_t max) {
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return std::string();
  if (!it->is_string()) return InvalidArgument(std::string("\"") + key + "\" must be a string");
  const std::string& s = it->get_ref<const std::string&>();
  if (s.size() > max) return InvalidArgument(std::string("\"") + key + "\" is too long");
  return s;
}

nlohmann::json Hello(ApprovalBroker& broker, std::string_view session) {
  size_t live = 0;
  for (const Grant& g : broker.Grants()) live += g.state == Grant::State::kLive;
  return nlohmann::json{{"ok", true},
                        {"protocol", 1},
                        {"session", std::string(session)},
                        {"pid", static_cast<int64_t>(getpid())},
                        {"pending", broker.Pending().size()},
                        {"live_grants", live},
                        {"timeout_ms", broker.options().policy.timeout_ms}};
}

// An approval's "prefix": true for the parent (directory or domain), a path or host pattern to
// widen to, false or absent for the exact subject.
Status ParsePrefix(const nlohmann::json& m, ChannelAnswer* a) {
  auto p = m.find("prefix");
  if (p == m.end() || p->is_null()) return Ok();
  if (p->is_boolean()) {
    if (p->get<bool>()) a->prefix = std::string();
  } else if (p->is_string() && !p->get_ref<const std::string&>().empty()) {
    if (p->get_ref<const std::string&>().size() > 4096) {
      return InvalidArgument("\"prefix\" is too long");
    }
    a->prefix = p->get<std::string>();
  } else {
    return InvalidArgument("\"prefix\" must be true, false or a path / host pattern");
  }
  return Ok();
}

// "approve" or "deny" of a pending request: its id, a reason, and for an approval its scope and
// prefix.
Result<nlohmann::json> AnswerRequest(ApprovalBroker& broker, const nlohmann::json& m,
                                     const std::string& op) {
  WARD_ASSIGN_OR_RETURN(uint64_t id, IdField(m, "id"));
  ChannelAnswer a;
  a.allow = op == "approve";
  WARD_ASSIGN_OR_RETURN(a.reason, OptionalString(m, "reason", kMaxReason));
  if (a.allow) {
    WARD_ASSIGN_OR_RETURN(std::string scope, OptionalString(m, "scope", 64));
    WARD_ASSIGN_OR_RETURN(a.scope, ParseScope(scope.empty() ? "once" : scope));
    WARD_TRY(ParsePrefix(m, &a));
  }
  WARD_ASSIGN_OR_RETURN(ApprovalDecision d, broker.Answer(id, a, "socket"));
  nlohmann::json out = {{"ok", true}, {"decision", d.allow ? "allow" : "deny"}};
  if (d.grant) out["grant"] = GrantToJson(*d.grant);
  return out;
}

Result<nlohmann::json> Dispatch(ApprovalBroker& broker, const nlohmann::json& m,
                                std::string_view session) {
  if (!m.is_object()) return InvalidArgument("a request is one JSON object");
  auto op_it = m.find("op");
  if (op_it == m.end() || !op_it->is_string()) return InvalidArgument("missing \"op\"");
  const std::string& op = op_it->get_ref<const std::string&>();
  if (op == "hello") return Hello(broker, session);
  if (op == "list") {
    nlohmann::json reqs = nlohmann::json::array();
    for (const ApprovalRequest& r : broker.Pending()) reqs.push_back(RequestToJson(r));
    return nlohmann::json{{"ok", true}, {"requests", std::move(reqs)}};
  }
  if (op == "grants") {
    nlohmann::json out = nlohmann::json::array();
    for (const Grant& g : broker.Grants()) out.push_back(GrantToJson(g));
    return nlohmann::json{{"ok", true}, {"grants", std::move(out)}};
  }
  if (op == "approve" || op == "deny") return AnswerRequest(broker, m, op);
  if (op == "revoke") {
    WARD_ASSIGN_OR_RETURN(uint64_t id, IdField(m, "grant"));
    WARD_TRY(broker.Revoke(id, "socket"));
    return nlohmann::json{{"ok", true}};
  }
  return InvalidArgument("unknown op \"" + op.substr(0, 64) +
                         "\" (hello, list, approve, deny, grants, revoke)");
}

Result<std::string> SessionFromName(std::string_view name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return InvalidArgument("not an approval socket");
  }
  std::string session(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()));
  if (!audit::IsValidSessionId(session)) return InvalidArgument("bad session id");
  return session;
}

}  // namespace

std::string ApprovalSocketPath(const std::string& dir, std::string_view session) {
  return dir + "/" + std::string(kPrefix) + std::string(session) + std::string(kSuffix);
}

nlohmann::json HandleApprovalMessage(ApprovalBroker& broker, const nlohmann::json& message,
                                     std::string_view session) {
  try {
    Result<nlohmann::json> r = Dispatch(broker, message, session);
    if (!r.ok()) return ErrorReply(r.status());
    return std::move(r).value();
  } catch (const std::exception& e) {
    return ErrorReply(Error(Code::kInvalidArgument, std::string("bad request: ") + e.what()));
  }
}

// ---------------------------------------------------------------------------------------------

class ApprovalServer::Connection : public net::LineSocket {
 public:
  Connection(ApprovalServer* server, asio::local::stream_protocol::socket socket)
      : LineSocket(std::move(socket), Options{.read_buffer_bytes = 16384,
                                              .max_queued_bytes = server->options_.max_queued_bytes,
                                              .stop_reading_when_closing = true}),
        server_(server) {}

  void Send(const nlohmann::json& reply) { SendLine(Serialize(reply)); }

  // Sends one error and closes.
  void Refuse(const Status& st) {
    Send(ErrorReply(st));
    CloseAfterWrite();
  }

  void Detach() { server_ = nullptr; }

 private:
  bool Attached() const override { return server_ != nullptr; }

  void OnClosed() override {
    if (server_) server_->Closed(this);
  }

  void OnData(std::string_view data) override {
    partial_.append(data);
    size_t start = 0;
    while (!closing()) {
      size_t nl = partial_.find('\n', start);
      if (nl == std::string::npos) break;
      std::string_view line(partial_.data() + start, nl - start);
      start = nl + 1;
      HandleLine(line);
    }
    partial_.erase(0, start);
    if (partial_.size() > server_->options_.max_line_bytes) {
      Refuse(InvalidArgument("request line longer than " +
                             std::to_string(server_->options_.max_line_bytes) + " bytes"));
    }
  }

  void HandleLine(std::string_view line) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
    nlohmann::json m = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (m.is_discarded()) {
      Send(ErrorReply(InvalidArgument("malformed JSON")));
      return;
    }
    Send(HandleApprovalMessage(*server_->broker_, m, server_->options_.session));
  }

  ApprovalServer* server_;
  std::string partial_;
};

ApprovalServer::ApprovalServer(asio::io_context& io, std::shared_ptr<ApprovalBroker> broker,
                               ApprovalServerOptions options)
    : io_(io),
      broker_(std::move(broker)),
      options_(std::move(options)),
      gate_(options_.path, options_.events) {}

ApprovalServer::~ApprovalServer() { Stop(); }

Result<std::unique_ptr<ApprovalServer>> ApprovalServer::Start(
    asio::io_context& io, std::shared_ptr<ApprovalBroker> broker, ApprovalServerOptions options) {
  if (!broker) return InvalidArgument("no broker");
  Result<UnixListener> l = ListenPrivateUnix(options.path, 16);
  if (!l.ok()) {
    if (l.status().code() == Code::kFailedPrecondition) {
      return Error(Code::kFailedPrecondition, "another session is listening on " + options.path);
    }
    return l.status();
  }
  UniqueFd fd = std::move(l->fd);
  std::unique_ptr<ApprovalServer> server(
      new ApprovalServer(io, std::move(broker), std::move(options)));
  server->socket_ino_ = l->ino;
  server->listener_ = std::make_unique<asio::posix::stream_descriptor>(io, fd.release());
  server->Accept();
  return server;
}

void ApprovalServer::Accept() {
  if (stopped_ || !listener_) return;
  listener_->async_wait(
      asio::posix::stream_descriptor::wait_read, [this](const asio::error_code& ec) {
        if (ec || stopped_) return;
        while (true) {
          int fd =
              ::accept4(listener_->native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            break;  // EAGAIN, or EMFILE: try again when readable
          }
          OnAccept(fd);
        }
        Accept();
      });
}

void ApprovalServer::OnAccept(int fd) {
  asio::local::stream_protocol::socket sock(io_);
  asio::error_code ec;
  sock.assign(asio::local::stream_protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return;
  }
  auto conn = std::make_shared<Connection>(this, std::move(sock));
  conns_.insert(conn);
  if (PeerVerdict peer = gate_.Admit(fd); !peer.admitted) {
    ++refused_;
    conn->Refuse(Error(Code::kPermissionDenied, "refused: " + peer.reason));
  } else if (conns_.size() > options_.max_connections) {
    ++refused_;
    conn->Refuse(Error(Code::kResourceExhausted, "too many connections"));
  } else {
    conn->Start();
  }
}

void ApprovalServer::Closed(Connection* c) {
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (it->get() == c) {
      conns_.erase(it);
      return;
    }
  }
}

void ApprovalServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (listener_) {
    asio::error_code ec;
    listener_->close(ec);
    listener_.reset();
    // Only our own socket: a later session may have taken the path since.
    struct stat st;
    if (::lstat(options_.path.c_str(), &st) == 0 && st.st_ino == socket_ino_) {
      ::unlink(options_.path.c_str());
    }
  }
  auto conns = conns_;
  conns_.clear();
  for (auto& c : conns) {
    c->Detach();
    c->Close();
  }
}

// ---------------------------------------------------------------------------------------------

Result<std::vector<ApprovalSession>> FindApprovalSessions(const std::string& dir) {
  std::vector<ApprovalSession> out;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) return out;  // no session ever ran
  WARD_TRY(CheckPrivateDir(dir));
  DIR* d = ::opendir(dir.c_str());
  if (!d) return Errno("reading " + dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  for (const std::string& name : names) {
    Result<std::string> session = SessionFromName(name);
    if (!session.ok()) continue;
    std::string path = dir + "/" + name;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (!ConnectUnix(path).ok()) continue;  // a session that died without removing it
    out.push_back({*session, path});
  }
  std::sort(out.begin(), out.end(), [](const ApprovalSession& a, const ApprovalSession& b) {
    return a.session < b.session;
  });
  return out;
}

Status CheckApprovalServerPeer(int fd, const std::string& path) {
  PeerVerdict server = CheckSocketPeer(fd);
  if (!server.admitted) {
    return Error(Code::kPermissionDenied,
                 "not talking to " + path + ": its server is not ours (" + server.reason + ")");
  }
  return Ok();
}

Status ApprovalReplyStatus(const nlohmann::json& reply) {
  if (!reply.is_object()) return InvalidArgument("malformed reply: not an object");
  auto ok = reply.find("ok");
  if (ok != reply.end() && ok->is_boolean() && ok->get<bool>()) return Ok();
  std::string message = "the session refused the request";
  Code code = Code::kFailedPrecondition;
  auto err = reply.find("error");
  if (err != reply.end() && err->is_object()) {
    if (auto m = err->find("message"); m != err->end() && m->is_string()) {
      message = m->get<std::string>();
    }
    if (auto c = err->find("code"); c != err->end() && c->is_string()) {
      const std::string& name = c->get_ref<const std::string&>();
      for (Code k : {Code::kInvalidArgument, Code::kNotFound, Code::kPermissionDenied,
                     Code::kFailedPrecondition, Code::kResourceExhausted, Code::kTimeout,
                     Code::kUnavailable, Code::kInternal}) {
        if (CodeName(k) == name) code = k;
      }
    }
  }
  return Error(code, message);
}

Result<nlohmann::json> CallApprovalSocket(const std::string& path, const nlohmann::json& request,
                                          std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  WARD_ASSIGN_OR_RETURN(UniqueFd fd, ConnectUnix(path));
  WARD_TRY(CheckApprovalServerPeer(fd.get(), path));
  std::string line = Serialize(request);
  size_t off = 0;
  Status write_error = Ok();
  while (off < line.size()) {
    ssize_t n = ::send(fd.get(), line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      // A server that refuses us (a peer it does not serve, too many clients) answers and
      // closes, possibly before the request is written: its answer is still there to read.
      write_error = Errno("writing to " + path);
      break;
    }
    off += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[16384];
  while (reply.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Error(Code::kTimeout, "no reply from " + path);
    struct pollfd p = {fd.get(), POLLIN, 0};
    int pr = ::poll(&p, 1, static_cast<int>(left.count()));
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return Errno("poll");
    if (pr == 0) continue;
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return write_error.ok() ? Errno("reading from " + path) : write_error;
    if (n == 0) {
      if (!write_error.ok()) return write_error;
      return Error(Code::kUnavailable, path + " closed the connection without a reply");
    }
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > kMaxReplyBytes) return InvalidArgument("reply too long from " + path);
  }
  reply.resize(reply.find('\n'));
  nlohmann::json j = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("malformed reply from " + path);
  return j;
}

}  // namespace ward::supervisor
