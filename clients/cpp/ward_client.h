// A small C++ client for `ward serve` (JSON-RPC 2.0, one message per line, on a unix socket).
// Header-only; needs nlohmann/json and POSIX. Errors are values: every call returns a Reply
// that holds either the result or the daemon's error (with its kind: not_found,
// policy_denied, approval_required, timeout, interrupted, resource_exhausted, invalid_request,
// unsupported). Notifications the daemon sends while a call is pending (exec.output,
// exec.exit) go to the handler set with OnNotification.
//
//   ward::client::Client c;                       // ward.sock in ward's runtime directory
//   if (!c.Connect()) { ... c.last_error() ... }
//   auto sb = c.Call("sandbox.create", {{"workspace", "/path/to/project"}});
//   auto r = c.Call("exec.run", {{"sandbox_id", sb.result["sandbox_id"]},
//                                {"argv", {"make", "test"}}});
//   if (r.ok()) std::cout << r.result["stdout"].get<std::string>();
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ward::client {

struct Error {
  int code = 0;
  std::string kind;  // from error.data.kind; "transport" for socket problems
  std::string message;
  nlohmann::json data;
};

struct Reply {
  nlohmann::json result;
  std::optional<Error> error;
  bool ok() const { return !error.has_value(); }
};

class Client {
 public:
  using NotificationHandler =
      std::function<void(const std::string& method, const nlohmann::json& params)>;

  // ward.sock in ward's runtime directory, chosen as `ward serve` chooses it (docs/agents.md):
  // $XDG_RUNTIME_DIR/ward when XDG_RUNTIME_DIR is absolute, else /run/user/<uid>/ward when
  // /run/user/<uid> is a directory of ours that no one else may write, else
  // $XDG_STATE_HOME/ward/run (~/.local/state/ward/run). Never /tmp.
  static std::string DefaultSocketPath() {
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    if (xdg && xdg[0] == '/') return std::string(xdg) + "/ward/ward.sock";
    std::string run_user = "/run/user/" + std::to_string(geteuid());
    struct stat st;
    if (lstat(run_user.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
        (st.st_mode & 022) == 0) {
      return run_user + "/ward/ward.sock";
    }
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state && state[0] == '/') return std::string(state) + "/ward/run/ward.sock";
    const char* home = std::getenv("HOME");
    if (home && home[0] == '/') return std::string(home) + "/.local/state/ward/run/ward.sock";
    return "";  // Connect() says so
  }

  explicit Client(std::string socket_path = DefaultSocketPath()) : path_(std::move(socket_path)) {}
  ~Client() { Close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool Connect() {
    Close();
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    if (path_.empty()) return Fail("no socket path (set XDG_RUNTIME_DIR, or HOME)");
    if (path_.size() >= sizeof addr.sun_path) return Fail("socket path too long");
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Fail(std::string("socket: ") + std::strerror(errno));
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      std::string m = "connect " + path_ + ": " + std::strerror(errno);
      Close();
      return Fail(m);
    }
    return true;
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    buf_.clear();
  }
  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const Error& last_error() const { return last_error_; }
  void OnNotification(NotificationHandler h) { on_note_ = std::move(h); }

  // Sends one request and waits for its response (timeout_ms < 0: forever).
  Reply Call(const std::string& method, const nlohmann::json& params = nlohmann::json::object(),
             int timeout_ms = -1) {
    Reply r;
    if (fd_ < 0 && !Connect()) {
      r.error = last_error_;
      return r;
    }
    int64_t id = ++next_id_;
    nlohmann::json req = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
    if (!SendRaw(req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) {
      // The daemon may have refused the connection (another uid) and closed it: its reason
      // is waiting to be read.
      Error send_error = last_error_;
      auto m = ReadMessage(1000);
      r.error = (m && m->contains("error")) ? ToError((*m)["error"]) : send_error;
      return r;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      int left = -1;
      if (timeout_ms >= 0) {
        left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
        if (left < 0) left = 0;
      }
      auto msg = ReadMessage(left);
      if (!msg) {
        r.error = last_error_;
        return r;
      }
      if (msg->contains("method")) {
        if (on_note_ && (*msg)["method"].is_string()) {
          on_note_((*msg)["method"].get<std::string>(), msg->value("params", nlohmann::json()));
        }
        continue;
      }
      if (!msg->contains("id") || (*msg)["id"] != id) {
        // An error about a line we could not frame has a null id: it is ours.
        if (msg->contains("error") && (*msg)["id"].is_null()) {
          r.error = ToError((*msg)["error"]);
          return r;
        }
        continue;
      }
      if (msg->contains("error")) {
        r.error = ToError((*msg)["error"]);
      } else {
        r.result = msg->value("result", nlohmann::json());
      }
      return r;
    }
  }

  // Low level: write bytes as they are (tests send malformed lines this way).
  bool SendRaw(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t w = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        Fail(std::string("send: ") + std::strerror(errno));
        return false;
      }
      off += static_cast<size_t>(w);
    }
    return true;
  }

  // Low level: the next message (timeout_ms < 0: wait forever); nullopt on timeout, EOF or
  // an unparsable line (see last_error()).
  std::optional<nlohmann::json> ReadMessage(int timeout_ms = -1) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        try {
          return nlohmann::json::parse(line);
        } catch (const std::exception&) {
          Fail("unparsable line from the daemon");
          return std::nullopt;
        }
      }
      int left = -1;
      if (timeout_ms >= 0) {
        left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
        if (left < 0) left = 0;
      }
      pollfd p = {fd_, POLLIN, 0};
      int n = poll(&p, 1, left);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) {
        Fail("timed out", "timeout");
        return std::nullopt;
      }
      char chunk[65536];
      ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        Fail("the daemon closed the connection", "interrupted");
        return std::nullopt;
      }
      buf_.append(chunk, static_cast<size_t>(got));
    }
  }

  // Conveniences for the common calls.
  Reply CreateSandbox(const std::string& workspace,
                      nlohmann::json spec = nlohmann::json::object()) {
    spec["workspace"] = workspace;
    return Call("sandbox.create", spec);
  }
  Reply Run(const std::string& sandbox_id, const std::vector<std::string>& argv,
            nlohmann::json options = nlohmann::json::object()) {
    options["sandbox_id"] = sandbox_id;
    options["argv"] = argv;
    return Call("exec.run", options);
  }
  Reply Destroy(const std::string& sandbox_id) {
    return Call("sandbox.destroy", {{"sandbox_id", sandbox_id}});
  }

  // Approvals, for sandboxes created with "ask": true. `filter` may hold sandbox_id and/or
  // exec_id. Requests and grants carry the exec_id and sandbox_id they belong to.
  Reply ListApprovals(nlohmann::json filter = nlohmann::json::object()) {
    return Call("approvals.list", filter);  // {requests: [...], errors: [...]}
  }
  // options: scope ("once", "session", "10m"), prefix (true) or under (a path / host pattern),
  // reason.
  Reply Approve(const std::string& exec_id, uint64_t request_id,
                nlohmann::json options = nlohmann::json::object()) {
    options["exec_id"] = exec_id;
    options["id"] = request_id;
    return Call("approvals.approve", options);  // {decision, grant, ...}
  }
  Reply Deny(const std::string& exec_id, uint64_t request_id, const std::string& reason = "") {
    nlohmann::json params = {{"exec_id", exec_id}, {"id", request_id}};
    if (!reason.empty()) params["reason"] = reason;
    return Call("approvals.deny", params);
  }
  Reply ListGrants(nlohmann::json filter = nlohmann::json::object()) {
    return Call("approvals.grants", filter);  // {grants: [...], errors: [...]}
  }
  Reply RevokeGrant(const std::string& exec_id, uint64_t grant_id) {
    return Call("approvals.revoke", {{"exec_id", exec_id}, {"grant", grant_id}});
  }

 private:
  static Error ToError(const nlohmann::json& e) {
    Error err;
    if (!e.is_object()) {
      err.kind = "invalid_request";
      err.message = "malformed error";
      return err;
    }
    err.code = e.value("code", 0);
    err.message = e.value("message", std::string());
    err.data = e.value("data", nlohmann::json::object());
    if (err.data.is_object() && err.data.contains("kind") && err.data["kind"].is_string()) {
      err.kind = err.data["kind"].get<std::string>();
    }
    return err;
  }
  bool Fail(std::string message, std::string kind = "transport") {
    last_error_ = Error{0, std::move(kind), std::move(message), nlohmann::json::object()};
    return false;
  }

  std::string path_;
  int fd_ = -1;
  std::string buf_;
  int64_t next_id_ = 0;
  Error last_error_;
  NotificationHandler on_note_;
};

}  // namespace ward::client
