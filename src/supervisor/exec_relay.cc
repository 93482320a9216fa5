#include "supervisor/exec_relay.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/descriptors.h"


namespace ward::supervisor {

using enforce::ExecMsg;
using enforce::ExecMsgType;

ExecRelay::ExecRelay(asio::io_context& io, UniqueFd client, UniqueFd server, EventSink* events,
                     std::function<void(const std::string&)> on_end)
    : client_(io, client.release()),
      server_(io, server.release()),
      events_(events),
      on_end_(std::move(on_end)) {}

ExecRelay::~ExecRelay() = default;

void ExecRelay::Start() {
  Wait(&client_, true);
  Wait(&server_, false);
}

void ExecRelay::Wait(asio::posix::stream_descriptor* d, bool client) {
  d->async_wait(asio::posix::descriptor_base::wait_read, [this, d, client](const asio::error_code& ec) {
    if (ec || ended_) return;
    const bool open = client ? OnClientMessage() : OnServerMessage();
    if (open) Wait(d, client);
  });
}

// The requests from `ward serve`. False when the channel closed: the sandbox is to end.
bool ExecRelay::OnClientMessage() {
  const bool open = enforce::ForEachExecMsg(
      client_.native_handle(), [this](const ExecMsg& m, UniqueFd fds[4]) {
        if (m.type == ExecMsgType::kStart) {
          StartExec(m, fds);
        } else if (m.type == ExecMsgType::kSignal && running_.count(m.id) && m.value > 0 &&
                   m.value < NSIG) {
          Emit("exec.signal", {{"exec", m.id}, {"signal", m.value}});
          enforce::SendExecMsg(server_.native_handle(), m);
        }
        return true;
      });
  if (!open) End("the sandbox was closed");
  return open;
}

void ExecRelay::StartExec(const ExecMsg& m, UniqueFd fds[4]) {
  enforce::ExecRequest req;
  if (Status read = enforce::ReadExecRequest(fds[0].get(), m.length, &req); !read.ok()) {
    return Refuse(m.id, read.message());
  }
  if (running_.count(m.id)) return Refuse(m.id, "an exec with this id is running");
  nlohmann::json data = {{"exec", m.id}, {"argv", req.argv}, {"cwd", req.cwd}};
  Emit("exec.start", std::move(data));
  if (denials_) denials_->OpenWindow(m.id);
  const int attached[4] = {fds[0].get(), fds[1].get(), fds[2].get(), fds[3].get()};
  if (int rc = enforce::SendExecMsg(server_.native_handle(), m, attached, 4); rc != 0) {
    if (denials_) (void)denials_->CloseWindow(m.id, 0);
    return Refuse(m.id, std::string("the exec server did not take it: ") + std::strerror(-rc));
  }
  running_[m.id] = {std::move(req.argv), std::chrono::steady_clock::now(), req.tty};
}

void ExecRelay::Refuse(uint64_t id, const std::string& why) {
  ExecMsg out;
  out.type = ExecMsgType::kFailed;
  out.id = id;
  out.value = 125;
  out.error.Set("request", EINVAL, why.c_str());
  Emit("exec.refused", {{"exec", id}, {"reason", why}});
  enforce::SendExecMsg(client_.native_handle(), out);
}

// The exec server's answers, recorded and passed on. False when the server is gone.
bool ExecRelay::OnServerMessage() {
  const bool open = enforce::ForEachExecMsg(
      server_.native_handle(), [this](const ExecMsg& m, UniqueFd* fds) {
        if (!running_.count(m.id)) return true;
        if (m.type == ExecMsgType::kFailed || m.type == ExecMsgType::kExited) {
          PassEnd(m, RecordEnd(m));
        } else if (m.type == ExecMsgType::kStarted) {
          // A descriptor from inside goes on only as the terminal a tty exec asked for, once,
          // and only a pty's master (ExecRequest::tty); the client checks it again.
          Running& r = running_.at(m.id);
          const int attached = r.awaits_terminal && IsPtyMaster(fds[0].get()) ? fds[0].get() : -1;
          r.awaits_terminal = false;
          enforce::SendExecMsg(client_.native_handle(), m, attached >= 0 ? &attached : nullptr,
                               attached >= 0 ? 1 : 0);
        }
        return true;
      });
  if (!open) End("the sandbox's exec server ended");
  return open;
}

// The exec's end record, with the denials observed while it ran; returns those denials.
nlohmann::json ExecRelay::RecordEnd(const ExecMsg& m) {
  auto it = running_.find(m.id);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - it->second.started)
          .count();
  nlohmann::json data = {{"exec", m.id}, {"argv", it->second.argv}, {"duration_ms", ms}};
  if (m.type == ExecMsgType::kFailed) {
    data["exit_code"] = m.value;
    data["failed"] = {{"stage", m.error.stage}, {"errno", m.error.err}, {"detail", m.error.detail}};
  } else if (WIFSIGNALED(m.value)) {
    data["signal"] = WTERMSIG(m.value);
    data["exit_code"] = 128 + WTERMSIG(m.value);
  } else {
    data["exit_code"] = WEXITSTATUS(m.value);
  }
  running_.erase(it);
  nlohmann::json denials = ExecDenials(m.id);
  data["denials"] = denials;
  Emit("exec.end", std::move(data));
  return denials;
}

nlohmann::json ExecRelay::ExecDenials(uint64_t id) {
  if (!denials_) return nlohmann::json::array();
  return DenialsToJson(denials_->CloseWindow(id, kMaxExecDenials));
}

void ExecRelay::PassEnd(ExecMsg m, nlohmann::json denials) {
  UniqueFd memfd;
  nlohmann::json end = check_ ? check_() : nlohmann::json::object();
  if (!end.is_object()) end = nlohmann::json::object();
  end["denials"] = std::move(denials);
  const std::string found = end.dump();
  if (Result<UniqueFd> fd = enforce::ExecRequestMemfd(found); fd.ok()) {
    memfd = std::move(fd).value();
    m.length = static_cast<uint32_t>(found.size());
  }
  const int fd = memfd.get();
  enforce::SendExecMsg(client_.native_handle(), m, memfd ? &fd : nullptr, memfd ? 1 : 0);
}

void ExecRelay::FailRunning(const std::string& why) {
  for (auto& [id, r] : running_) {
    Emit("exec.end",
         {{"exec", id}, {"argv", r.argv}, {"interrupted", why}, {"denials", ExecDenials(id)}});
  }
  running_.clear();
}

void ExecRelay::End(const std::string& why) {
  if (ended_) return;
  ended_ = true;
  if (on_end_) on_end_(why);
}

void ExecRelay::Emit(std::string_view type, nlohmann::json data) {
  if (events_) events_->Emit(type, std::move(data));
}

}  // namespace ward::supervisor
