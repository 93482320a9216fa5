#include "api/exec.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "api/jsonrpc.h"
#include "audit/record.h"
#include "audit/session_log.h"
#include "api/spawn_ward.h"
#include "common/linux.h"

extern char** environ;

namespace ward::api {

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int Idx(Stream s) { return s == Stream::kStdout ? 0 : 1; }

// How much more of stream `i` the exec keeps (max_output_bytes).
uint64_t OutputRoom(const Exec::Info& info, int i) {
  return info.max_output_bytes > info.size[i] ? info.max_output_bytes - info.size[i] : 0;
}

// The --json-status object: the first line of what `ward run` wrote, when it is one.
std::optional<nlohmann::json> StatusObject(const std::string& status_buf) {
  size_t nl = status_buf.find('\n');
  std::string line = status_buf.substr(0, nl);
  if (line.empty()) return std::nullopt;
  try {
    if (line.size() < 65536 && audit::JsonDepthWithin(line, kMaxJsonDepth)) {
      auto j = nlohmann::json::parse(line);
      if (j.is_object()) return j;
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<std::string> ReadSmallFile(const std::string& path, size_t max) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  while (out.size() <= max) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  if (out.size() > max) return std::nullopt;
  return out;
}

nlohmann::json OutcomeReason(const nlohmann::json& st) {
  nlohmann::json r = nlohmann::json::object();
  for (const char* k : {"stage", "errno", "message"}) {
    if (st.contains(k) && !st[k].is_null()) r[k] = st[k];
  }
  return r;
}

}  // namespace

const char* StreamName(Stream s) { return s == Stream::kStdout ? "stdout" : "stderr"; }

std::optional<Stream> ParseStream(std::string_view name) {
  if (name == "stdout") return Stream::kStdout;
  if (name == "stderr") return Stream::kStderr;
  return std::nullopt;
}

const char* ExecStateName(ExecState s) {
  switch (s) {
    case ExecState::kRunning:
      return "running";
    case ExecState::kExited:
      return "exited";
    case ExecState::kDenied:
      return "denied";
    case ExecState::kTimedOut:
      return "timed_out";
    case ExecState::kInterrupted:
      return "interrupted";
  }
  return "interrupted";
}

Outcome ClassifyExit(const ExitFacts& f) {
  Outcome o;
  if (f.interrupted) {
    o.state = ExecState::kInterrupted;
    o.reason = {{"message", *f.interrupted}};
    return o;
  }
  bool have = f.status && f.status->is_object() && f.status->contains("status") &&
              (*f.status)["status"].is_string();
  std::string kind = have ? (*f.status)["status"].get<std::string>() : "";
  if (have && f.status->contains("quarantined") && (*f.status)["quarantined"].is_array()) {
    o.quarantined = (*f.status)["quarantined"];
  }
  if (have && f.status->contains("denials") && (*f.status)["denials"].is_array()) {
    o.denials = (*f.status)["denials"];
  }
  auto int_field = [&](const char* k) -> std::optional<int> {
    if (!have || !f.status->contains(k) || !(*f.status)[k].is_number_integer()) return std::nullopt;
    return (*f.status)[k].get<int>();
  };
  if (f.timed_out) {
    o.state = ExecState::kTimedOut;
    if (kind == "signaled") {
      o.signal = int_field("signal");
      o.exit_code = int_field("exit_code");
    } else if (!have && WIFSIGNALED(f.wait_status)) {
      o.signal = WTERMSIG(f.wait_status);
      o.exit_code = 128 + *o.signal;
    } else if (kind == "exited") {
      o.exit_code = int_field("exit_code");
    }
    o.reason = {{"message", "the exec ran out of time"}};
    return o;
  }
  if (kind == "exited") {
    o.state = ExecState::kExited;
    o.exit_code = int_field("exit_code");
    if (!o.exit_code) {
      // A status without a code is no status: never guess a 0.
      o.state = ExecState::kInterrupted;
      o.reason = {{"message", "ward run reported no exit code"}};
    }
    return o;
  }
  if (kind == "signaled") {
    o.state = ExecState::kExited;
    o.signal = int_field("signal");
    o.exit_code = int_field("exit_code");
    if (o.signal && !o.exit_code) o.exit_code = 128 + *o.signal;
    return o;
  }
  if (kind == "exec_failed") {
    o.state = ExecState::kExited;
    o.exit_code = int_field("exit_code").value_or(127);
    o.reason = OutcomeReason(*f.status);
    return o;
  }
  // audit_failed: the exec's audit trail could not be written, and `ward run` stopped it.
  if (kind == "setup_failed" || kind == "refused" || kind == "audit_failed") {
    o.state = ExecState::kDenied;
    o.exit_code = int_field("exit_code").value_or(125);
    o.reason = OutcomeReason(*f.status);
    o.reason["kind"] = kind;
    return o;
  }
  if (f.kill_requested && WIFSIGNALED(f.wait_status) && WTERMSIG(f.wait_status) == SIGKILL) {
    // The daemon killed `ward run`; the pid namespace took the command with it.
    o.state = ExecState::kExited;
    o.signal = SIGKILL;
    o.exit_code = 128 + SIGKILL;
    o.reason = {{"message", "killed on request"}};
    return o;
  }
  o.state = ExecState::kInterrupted;
  std::string how;
  if (kind == "spawn_failed") {
    how = "the ward binary could not be started";
  } else if (WIFSIGNALED(f.wait_status)) {
    how = "ward run was killed by signal " + std::to_string(WTERMSIG(f.wait_status)) +
          " before reporting a status";
  } else if (WIFEXITED(f.wait_status)) {
    how = "ward run exited with " + std::to_string(WEXITSTATUS(f.wait_status)) +
          " without reporting a status";
  } else {
    how = "ward run ended without reporting a status";
  }
  o.reason = {{"message", how}};
  return o;
}

std::string NewId(std::string_view prefix) {
  unsigned char b[8];
  if (getrandom(b, sizeof b, 0) != sizeof b) {
    uint64_t t = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    std::memcpy(b, &t, sizeof b);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  id += '-';
  for (unsigned char c : b) {
    id += kHex[c >> 4];
    id += kHex[c & 15];
  }
  return id;
}

bool ValidId(std::string_view id, std::string_view prefix) {
  if (id.size() != prefix.size() + 17 || id.substr(0, prefix.size()) != prefix ||
      id[prefix.size()] != '-') {
    return false;
  }
  for (char c : id.substr(prefix.size() + 1)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void RemoveTree(const std::string& path) {
  int dfd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    unlink(path.c_str());
    return;
  }
  DIR* d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return;
  }
  std::vector<std::pair<std::string, bool>> names;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n, e->d_type == DT_DIR);
  }
  for (const auto& [n, is_dir] : names) {
    if (is_dir) {
      RemoveTree(path + "/" + n);
    } else {
      unlinkat(dirfd(d), n.c_str(), 0);
    }
  }
  closedir(d);
  rmdir(path.c_str());
}

// ---- Exec ----

Exec::Exec(ExecManager* mgr, asio::io_context& io, std::string dir)
    : mgr_(mgr),
      io_(io),
      dir_(std::move(dir)),
      timeout_timer_(io),
      kill_timer_(io),
      drain_timer_(io) {}

Exec::~Exec() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string Exec::StreamPath(Stream s) const { return dir_ + "/" + StreamName(s); }

Expected<std::string> Exec::Read(Stream stream, uint64_t offset, size_t max) const {
  uint64_t size = info_.size[Idx(stream)];
  if (offset >= size || max == 0) return std::string();
  size_t n = static_cast<size_t>(std::min<uint64_t>(max, size - offset));
  int fd = open(StreamPath(stream).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return FromErrno("output of " + info_.id, errno);
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  out.resize(got);
  return out;
}

Expected<Done> Exec::WriteStdin(std::string data, bool eof) {
  if (!running()) return InvalidError("exec " + info_.id + " has ended");
  if (!stdin_) {
    if (data.empty() && eof) return Done{};
    return InvalidError("the stdin of exec " + info_.id + " is closed");
  }
  if (stdin_eof_) return InvalidError("the stdin of exec " + info_.id + " is already closed");
  if (stdin_buf_.size() + data.size() > kMaxPendingStdin) {
    return MakeError(ErrorKind::kResourceExhausted, "too much stdin pending for exec " + info_.id +
                                                        " (the command is not reading)");
  }
  stdin_buf_ += data;
  if (eof) stdin_eof_ = true;
  PumpStdin();
  return Done{};
}

void Exec::CloseStdin() {
  if (stdin_) {
    asio::error_code ec;
    stdin_->close(ec);
    stdin_.reset();
  }
  stdin_buf_.clear();
}

void Exec::PumpStdin() {
  if (!stdin_ || stdin_writing_) return;
  while (!stdin_buf_.empty()) {
    ssize_t w = write(stdin_->native_handle(), stdin_buf_.data(), stdin_buf_.size());
    if (w > 0) {
      stdin_buf_.erase(0, static_cast<size_t>(w));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      stdin_writing_ = true;
      auto self = shared_from_this();
      stdin_->async_wait(asio::posix::descriptor_base::wait_write,
                         [self](const asio::error_code& ec) {
                           self->stdin_writing_ = false;
                           if (ec) return;
                           self->PumpStdin();
                         });
      return;
    }
    // EPIPE: the command closed its stdin; what is left can never be delivered.
    CloseStdin();
    return;
  }
  if (stdin_eof_) CloseStdin();
}

Expected<Done> Exec::Signal(int sig) {
  if (!running() || exited_) return InvalidError("exec " + info_.id + " has ended");
  if (live_) {
    if (sig == SIGKILL) facts_.kill_requested = true;
    if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT && sig != SIGUSR1 &&
        sig != SIGUSR2 && sig != SIGKILL) {
      return InvalidError("signal " + std::to_string(sig) + " cannot be sent to an exec");
    }
    live_->Signal(live_id_, sig);
    return Done{};
  }
  switch (sig) {
    case SIGINT:
    case SIGTERM:
    case SIGHUP:
    case SIGQUIT:
    case SIGUSR1:
    case SIGUSR2:
      break;
    case SIGKILL:
      facts_.kill_requested = true;
      break;
    default:
      return InvalidError("signal " + std::to_string(sig) + " cannot be sent to an exec");
  }
  // KILL goes to the whole process group: `ward run` and anything it left behind.
  if (sig == SIGKILL) kill(-pid_, SIGKILL);
  if (kill(pid_, sig) != 0) return FromErrno("signalling exec " + info_.id, errno);
  return Done{};
}

uint64_t Exec::Subscribe(OutputFn on_output, ExitFn on_exit) {
  uint64_t token = next_sub_++;
  if (!running()) {
    if (on_exit) asio::post(io_, std::move(on_exit));
    return token;
  }
  subs_[token] = Sub{std::move(on_output), std::move(on_exit)};
  return token;
}

void Exec::Unsubscribe(uint64_t token) { subs_.erase(token); }

nlohmann::json Exec::ToJson(bool inline_output, size_t max_inline) const {
  const Outcome& o = info_.outcome;
  nlohmann::json j = {
      {"exec_id", info_.id},
      {"sandbox_id", info_.sandbox_id},
      {"status", ExecStateName(o.state)},
      {"exit_code", o.exit_code ? nlohmann::json(*o.exit_code) : nlohmann::json(nullptr)},
      {"signal", o.signal ? nlohmann::json(*o.signal) : nlohmann::json(nullptr)},
      {"reason", o.reason.is_null() ? nlohmann::json(nullptr) : o.reason},
      {"quarantined", o.quarantined},
      {"denials", o.denials},
      {"argv", info_.argv},
      {"cwd", info_.cwd},
      {"started_ms", info_.started_ms},
      {"ended_ms", info_.ended_ms ? nlohmann::json(info_.ended_ms) : nlohmann::json(nullptr)},
      {"truncated", info_.dropped[0] > 0 || info_.dropped[1] > 0},
      {"offsets", {{"stdout", info_.size[0]}, {"stderr", info_.size[1]}}},
      {"dropped", {{"stdout", info_.dropped[0]}, {"stderr", info_.dropped[1]}}},
      {"fresh", info_.fresh},
      {"session", info_.live_session.empty() ? nlohmann::json(nullptr)
                                             : nlohmann::json(info_.live_session)},
      {"approval_session", info_.approval_session.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(info_.approval_session)},
  };
  int64_t end = info_.ended_ms ? info_.ended_ms : NowMs();
  j["duration_ms"] = std::max<int64_t>(0, end - info_.started_ms);
  if (inline_output) {
    bool cut = false;
    for (Stream s : {Stream::kStdout, Stream::kStderr}) {
      auto data = Read(s, 0, max_inline);
      std::string text = data.ok() ? *data : std::string();
      if (info_.size[Idx(s)] > text.size()) cut = true;
      j[StreamName(s)] = ToValidUtf8(text);
    }
    if (cut) j["truncated"] = true;
  }
  return j;
}

bool Exec::OutputFile(Stream s) {
  // Created on the first byte: most tool calls print little, and every inode costs.
  int i = Idx(s);
  if (!files_[i]) {
    int fd =
        open(StreamPath(s).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) files_[i].reset(fd);
  }
  return static_cast<bool>(files_[i]);
}

void Exec::WriteMeta() {
  nlohmann::json j = ToJson(false);
  j["timeout_ms"] = info_.timeout_ms;
  j["max_output_bytes"] = info_.max_output_bytes;
  std::string text = SerializeLine(j);
  // Rewritten in place (no temporary file and rename per update): a shorter record is padded
  // with spaces, which JSON ignores; a record torn by a crash fails to parse and is dropped.
  if (text.size() < meta_size_) text.append(meta_size_ - text.size(), ' ');
  int fd = open((dir_ + "/meta.json").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  if (pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size())) {
    meta_size_ = text.size();
  }
  close(fd);
}

void Exec::StartIo() {
  ReadOutput(Stream::kStdout);
  ReadOutput(Stream::kStderr);
  ReadStatus();
  auto self = shared_from_this();
  pidfd_->async_wait(asio::posix::descriptor_base::wait_read, [self](const asio::error_code& ec) {
    if (ec) return;
    self->OnProcessExit();
  });
  ArmTimeout();
  PumpStdin();
}

void Exec::ReadOutput(Stream s) {
  int i = Idx(s);
  auto self = shared_from_this();
  out_[i]->async_wait(asio::posix::descriptor_base::wait_read,
                      [self, s, i](const asio::error_code& ec) {
                        if (ec || !self->out_[i]) return;
                        self->TakeOutput(s);
                      });
}

void Exec::TakeOutput(Stream s) {
  int i = Idx(s);
  char buf[65536];
  ssize_t n = read(out_[i]->native_handle(), buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    ReadOutput(s);
    return;
  }
  if (n <= 0) {
    eof_[i] = true;
    asio::error_code ignored;
    out_[i]->close(ignored);
    out_[i].reset();
    MaybeFinish();
    return;
  }
  uint64_t offset = info_.size[i];
  size_t keep = KeepOutput(s, buf, static_cast<size_t>(n));
  if (keep > 0) PassOutput(s, offset, std::string_view(buf, keep));
  ReadOutput(s);
}

size_t Exec::KeepOutput(Stream s, const char* buf, size_t n) {
  int i = Idx(s);
  size_t keep = static_cast<size_t>(std::min<uint64_t>(OutputRoom(info_, i), n));
  if (keep > 0 && OutputFile(s)) {
    size_t off = 0;
    while (off < keep) {
      ssize_t w = write(files_[i].get(), buf + off, keep - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    keep = off;  // a full disk keeps less; the rest counts as dropped
    info_.size[i] += keep;
  }
  info_.dropped[i] += n - keep;
  return keep;
}

void Exec::PassOutput(Stream s, uint64_t offset, std::string_view data) {
  auto subs = subs_;
  for (auto& [token, sub] : subs) {
    if (sub.on_output && subs_.count(token)) sub.on_output(s, offset, data);
  }
}

void Exec::ReadStatus() {
  auto self = shared_from_this();
  status_->async_wait(asio::posix::descriptor_base::wait_read, [self](const asio::error_code& ec) {
    if (ec || !self->status_) return;
    char buf[4096];
    ssize_t n = read(self->status_->native_handle(), buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      self->ReadStatus();
      return;
    }
    if (n <= 0) {
      self->status_eof_ = true;
      asio::error_code ignored;
      self->status_->close(ignored);
      self->status_.reset();
      self->MaybeFinish();
      return;
    }
    if (self->status_buf_.size() < 65536) self->status_buf_.append(buf, static_cast<size_t>(n));
    self->ReadStatus();
  });
}

void Exec::ArmTimeout() {
  if (info_.timeout_ms == 0) return;
  timeout_timer_.expires_after(std::chrono::milliseconds(info_.timeout_ms));
  auto self = shared_from_this();
  timeout_timer_.async_wait([self](const asio::error_code& ec) {
    if (ec || self->exited_ || !self->running()) return;
    self->facts_.timed_out = true;
    // TERM is forwarded into the sandbox; KILL after the grace ends `ward run` and the sandbox
    // (in a live sandbox: the exec's process group).
    if (self->live_) {
      self->live_->Signal(self->live_id_, SIGTERM);
    } else {
      kill(self->pid_, SIGTERM);
    }
    self->kill_timer_.expires_after(self->mgr_->config().kill_grace);
    self->kill_timer_.async_wait([self](const asio::error_code& ec2) {
      if (ec2 || self->exited_) return;
      self->KillNow();
    });
  });
}

void Exec::KillNow() {
  if (live_ && !exited_) live_->Signal(live_id_, SIGKILL);
  if (pid_ > 0 && !exited_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
  }
}

void Exec::OnProcessExit() {
  int st = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) {
    // Spurious readiness: wait again.
    auto self = shared_from_this();
    pidfd_->async_wait(asio::posix::descriptor_base::wait_read, [self](const asio::error_code& ec) {
      if (!ec) self->OnProcessExit();
    });
    return;
  }
  wait_status_ = st;
  // The pid namespace is gone with `ward run`, so the pipes close promptly; a straggler that
  // holds them (it cannot be in the sandbox) does not keep the exec open for long.
  Ended(std::chrono::milliseconds(500));
}

void Exec::Ended(std::chrono::milliseconds drain) {
  exited_ = true;
  timeout_timer_.cancel();
  kill_timer_.cancel();
  CloseStdin();
  auto self = shared_from_this();
  drain_timer_.expires_after(drain);
  drain_timer_.async_wait([self](const asio::error_code& ec) {
    if (ec) return;
    self->Finish();
  });
  MaybeFinish();
}

Expected<Done> Exec::StartLive(StartRequest& req, uint64_t live_id) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return FromErrno("pipe", errno);
  UniqueFd in_r(in[0]), in_w(in[1]);
  if (pipe2(out, O_CLOEXEC) != 0) return FromErrno("pipe", errno);
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return FromErrno("pipe", errno);
  UniqueFd err_r(err[0]), err_w(err[1]);
  live_ = req.live;
  live_id_ = live_id;
  info_.fresh = false;
  info_.live_session = req.live_session;
  const int stdio[3] = {in_r.get(), out_w.get(), err_w.get()};
  std::weak_ptr<Exec> weak = shared_from_this();
  WARD_API_TRY(live_->Exec(
      live_id, req.live_request, stdio,
      [weak](const enforce::ExecMsg& m, const nlohmann::json& checked) {
        if (auto self = weak.lock()) self->OnLiveMessage(m, checked);
      },
      [weak](const std::string& why) {
        auto self = weak.lock();
        if (!self || self->exited_) return;
        self->facts_.interrupted = "the sandbox ended: " + why;
        self->OnLiveEnd(std::nullopt);
      }));
  for (int fd : {in_w.get(), out_r.get(), err_r.get()}) SetNonBlocking(fd);
  out_[0].emplace(io_, out_r.release());
  out_[1].emplace(io_, err_r.release());
  stdin_.emplace(io_, in_w.release());
  return Done{};
}

// The exec server's word on a live exec, as the JSON status `ward run` would have written.
void Exec::OnLiveMessage(const enforce::ExecMsg& m, const nlohmann::json& checked) {
  if (exited_) return;
  // What the supervisor found after the exec: its check's quarantine and its denials.
  auto list = [&checked](const char* key) {
    return checked.is_object() && checked.contains(key) && checked[key].is_array()
               ? checked[key]
               : nlohmann::json::array();
  };
  const nlohmann::json quarantined = list("quarantined"), denials = list("denials");
  if (m.type == enforce::ExecMsgType::kExited) {
    const int st = m.value;
    if (WIFSIGNALED(st)) {
      return OnLiveEnd(nlohmann::json{{"status", "signaled"},
                                      {"signal", WTERMSIG(st)},
                                      {"exit_code", 128 + WTERMSIG(st)},
                                      {"quarantined", quarantined},
                                      {"denials", denials}});
    }
    return OnLiveEnd(nlohmann::json{
        {"status", "exited"}, {"exit_code", WEXITSTATUS(st)}, {"quarantined", quarantined},
        {"denials", denials}});
  }
  if (m.type != enforce::ExecMsgType::kFailed) return;
  const bool exec = std::strcmp(m.error.stage, "exec") == 0;
  std::string message = exec ? "cannot run '" + std::string(m.error.detail) + "'"
                             : std::string(m.error.stage) +
                                   (m.error.detail[0] ? std::string(": ") + m.error.detail : "");
  if (m.error.err) message += std::string(": ") + std::strerror(m.error.err);
  OnLiveEnd(nlohmann::json{{"status", exec ? "exec_failed" : "setup_failed"},
                           {"exit_code", m.value},
                           {"stage", m.error.stage},
                           {"errno", m.error.err},
                           {"message", message},
                           {"quarantined", quarantined},
                           {"denials", denials}});
}

void Exec::OnLiveEnd(std::optional<nlohmann::json> status) {
  status_eof_ = true;
  if (status) status_buf_ = status->dump();
  // What the command wrote is in its pipes already; a process it left running in the sandbox
  // may hold them open for as long as it runs, so the exec ends soon without their end.
  Ended(std::chrono::milliseconds(100));
}

void Exec::MaybeFinish() {
  if (exited_ && eof_[0] && eof_[1] && status_eof_) Finish();
}

void Exec::Finish() {
  if (!running()) return;
  drain_timer_.cancel();
  for (int i = 0; i < 2; ++i) {
    if (out_[i]) DrainOutput(i);
    files_[i].reset();
  }
  if (status_) DrainStatus();
  if (pidfd_) {
    asio::error_code ignored;
    pidfd_->close(ignored);
    pidfd_.reset();
  }
  facts_.wait_status = wait_status_;
  if (auto status = StatusObject(status_buf_)) facts_.status = std::move(status);
  info_.outcome = ClassifyExit(facts_);
  info_.ended_ms = NowMs();
  WriteMeta();
  auto subs = std::move(subs_);
  subs_.clear();
  for (auto& [token, sub] : subs) {
    if (sub.on_exit) sub.on_exit();
  }
  mgr_->OnFinished(this);
}

void Exec::DrainOutput(int i) {
  // Take what is already buffered, then stop.
  const Stream s = i == 0 ? Stream::kStdout : Stream::kStderr;
  char buf[65536];
  ssize_t n;
  while ((n = read(out_[i]->native_handle(), buf, sizeof buf)) > 0) {
    KeepOutput(s, buf, static_cast<size_t>(n));
  }
  asio::error_code ignored;
  out_[i]->close(ignored);
  out_[i].reset();
}

void Exec::DrainStatus() {
  char buf[4096];
  ssize_t n;
  while ((n = read(status_->native_handle(), buf, sizeof buf)) > 0 &&
         status_buf_.size() < 65536) {
    status_buf_.append(buf, static_cast<size_t>(n));
  }
  asio::error_code ignored;
  status_->close(ignored);
  status_.reset();
}

// ---- ExecManager ----

ExecManager::ExecManager(asio::io_context& io, ExecManagerConfig config)
    : io_(io), config_(std::move(config)) {}

ExecManager::~ExecManager() {
  // Nobody is left to tell: drop the subscribers (they may point at objects already gone).
  for (auto& [id, e] : execs_) e->subs_.clear();
  KillAll("the daemon stopped");
}

std::string ExecManager::ExecDir(const std::string& id) const {
  return config_.state_dir + "/execs/" + id;
}

Status ExecManager::Init() {
  if (config_.state_dir.empty()) return InvalidArgument("no state directory for execs");
  for (const std::string& d : {config_.state_dir, config_.state_dir + "/execs"}) {
    if (mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return Errno("creating " + d);
    struct stat st;
    if (lstat(d.c_str(), &st) != 0) return Errno("stat " + d);
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
      return ward::Error(Code::kPermissionDenied, d + " is not a directory owned by this user");
    }
  }
  return Ok();
}

std::vector<std::shared_ptr<Exec>> ExecManager::Recover() {
  std::vector<std::shared_ptr<Exec>> out;
  std::string base = config_.state_dir + "/execs";
  DIR* d = opendir(base.c_str());
  if (!d) return out;
  std::vector<std::string> ids;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (ValidId(n, "ex")) ids.push_back(n);
  }
  closedir(d);
  struct Loaded {
    int64_t started;
    std::shared_ptr<Exec> exec;
  };
  std::vector<Loaded> loaded;
  for (const auto& id : ids) {
    std::string dir = ExecDir(id);
    auto text = ReadSmallFile(dir + "/meta.json", 1 << 20);
    nlohmann::json j;
    try {
      if (text) j = nlohmann::json::parse(*text);
    } catch (const std::exception&) {
      j = nullptr;
    }
    if (!j.is_object() || !j.contains("sandbox_id") || !j["sandbox_id"].is_string() ||
        !j.contains("status") || !j["status"].is_string()) {
      RemoveTree(dir);
      continue;
    }
    auto e = std::shared_ptr<Exec>(new Exec(this, io_, dir));
    e->meta_size_ = text->size();
    Exec::Info& info = e->info_;
    info.id = id;
    try {
      info.sandbox_id = j["sandbox_id"].get<std::string>();
      if (j.contains("argv") && j["argv"].is_array()) {
        info.argv = j["argv"].get<std::vector<std::string>>();
      }
      if (j.contains("cwd") && j["cwd"].is_string()) info.cwd = j["cwd"].get<std::string>();
      if (j.contains("approval_session") && j["approval_session"].is_string() &&
          audit::IsNewSessionIdFormat(j["approval_session"].get<std::string>())) {
        info.approval_session = j["approval_session"].get<std::string>();
      }
      if (j.contains("fresh") && j["fresh"].is_boolean()) info.fresh = j["fresh"].get<bool>();
      if (j.contains("session") && j["session"].is_string() &&
          audit::IsNewSessionIdFormat(j["session"].get<std::string>())) {
        info.live_session = j["session"].get<std::string>();
      }
      info.started_ms = j.value("started_ms", int64_t{0});
      info.ended_ms = j["ended_ms"].is_number_integer() ? j["ended_ms"].get<int64_t>() : 0;
      info.timeout_ms = j.value("timeout_ms", uint64_t{0});
      info.max_output_bytes = j.value("max_output_bytes", kDefaultMaxOutputBytes);
      for (Stream s : {Stream::kStdout, Stream::kStderr}) {
        info.size[Idx(s)] = j["offsets"].value(StreamName(s), uint64_t{0});
        info.dropped[Idx(s)] = j["dropped"].value(StreamName(s), uint64_t{0});
      }
      std::string status = j["status"].get<std::string>();
      Outcome& o = info.outcome;
      if (status == "running") {
        o.state = ExecState::kInterrupted;
        o.reason = {{"message", "the daemon that ran it stopped"}};
        info.ended_ms = NowMs();
      } else {
        o.state = status == "exited"      ? ExecState::kExited
                  : status == "denied"    ? ExecState::kDenied
                  : status == "timed_out" ? ExecState::kTimedOut
                                          : ExecState::kInterrupted;
        if (j["exit_code"].is_number_integer()) o.exit_code = j["exit_code"].get<int>();
        if (j["signal"].is_number_integer()) o.signal = j["signal"].get<int>();
        if (j["reason"].is_object()) o.reason = j["reason"];
      }
      // The output files are the truth for what was kept (a crash may have cut the meta).
      for (Stream s : {Stream::kStdout, Stream::kStderr}) {
        struct stat st;
        bool ok = lstat(e->StreamPath(s).c_str(), &st) == 0 && S_ISREG(st.st_mode);
        info.size[Idx(s)] = ok ? static_cast<uint64_t>(st.st_size) : 0;
      }
    } catch (const std::exception&) {
      RemoveTree(dir);
      continue;
    }
    e->WriteMeta();
    loaded.push_back({info.started_ms, e});
  }
  std::sort(loaded.begin(), loaded.end(),
            [](const Loaded& a, const Loaded& b) { return a.started < b.started; });
  for (auto& l : loaded) {
    execs_[l.exec->id()] = l.exec;
    order_.push_back(l.exec->id());
    out.push_back(l.exec);
  }
  return out;
}

Expected<std::shared_ptr<Exec>> ExecManager::Start(StartRequest req) {
  if (running_ >= config_.max_running) {
    return MakeError(ErrorKind::kResourceExhausted,
                     "too many running execs (" + std::to_string(config_.max_running) + ")");
  }
  if (req.command.argv.empty()) return InvalidError("empty command");
  if (!req.approval_session.empty() && !audit::IsNewSessionIdFormat(req.approval_session)) {
    return InvalidError("approval session \"" + req.approval_session + "\" is not a session id");
  }
  if (!req.review.session.empty() && !audit::IsNewSessionIdFormat(req.review.session)) {
    return InvalidError("review session \"" + req.review.session + "\" is not a session id");
  }
  std::string id = NewId("ex");
  std::string dir = ExecDir(id);
  if (mkdir(dir.c_str(), 0700) != 0) return FromErrno("creating " + dir, errno);
  auto e = std::shared_ptr<Exec>(new Exec(this, io_, dir));
  Exec::Info& info = e->info_;
  info.id = id;
  info.sandbox_id = req.sandbox_id;
  info.argv = req.command.argv;
  info.cwd = req.command.cwd;
  info.timeout_ms = req.timeout_ms;
  info.max_output_bytes = std::min(req.max_output_bytes, kMaxMaxOutputBytes);
  info.outcome.state = ExecState::kRunning;
  info.approval_session = req.approval_session;

  if (req.live) {
    info.started_ms = NowMs();
    e->started_ = Clock::now();
    if (auto started = e->StartLive(req, next_live_id_++); !started.ok()) {
      e->exited_ = true;
      RemoveTree(dir);
      return started.error();
    }
    ++running_;
    execs_[id] = e;
    order_.push_back(id);
    e->WriteMeta();
    e->ReadOutput(Stream::kStdout);
    e->ReadOutput(Stream::kStderr);
    e->ArmTimeout();
    e->PumpStdin();
    return e;
  }
  std::vector<std::string> labels;
  if (config_.labels) {
    labels.push_back("sandbox=" + req.sandbox_id);
    labels.push_back("exec=" + id);
  }
  RunInvocation inv =
      BuildRunInvocation(req.flags, req.workspace, labels, 3, req.command, req.approval_session,
                         req.review);

  int in[2], out[2], err[2], st[2];
  if (pipe2(in, O_CLOEXEC) != 0) return FromErrno("pipe", errno);
  if (pipe2(out, O_CLOEXEC) != 0) {
    int e2 = errno;
    close(in[0]), close(in[1]);
    return FromErrno("pipe", e2);
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    int e2 = errno;
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    return FromErrno("pipe", e2);
  }
  if (pipe2(st, O_CLOEXEC) != 0) {
    int e2 = errno;
    close(in[0]), close(in[1]), close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    return FromErrno("pipe", e2);
  }
  int child_fds[4] = {Raise(in[0]), Raise(out[1]), Raise(err[1]), Raise(st[1])};

  // Everything the child needs is built before the clone: after it only syscalls.
  std::vector<std::string> args;
  args.push_back("ward");
  for (auto& a : inv.args) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  SpawnArgs sa;
  sa.path = config_.ward_binary.c_str();
  sa.argv = argv.data();
  sa.envp = environ;
  for (int i = 0; i < 4; ++i) sa.fds[i] = child_fds[i];
  sa.fds[4] = -1;
  sa.parent = getpid();
  int pidfd = -1;
  pid_t pid = StartSpawnChild(&sa, &pidfd);
  for (int fd : child_fds) close(fd);
  if (pid < 0 || pidfd < 0) {
    int e2 = errno;
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    e->exited_ = true;
    close(in[1]), close(out[0]), close(err[0]), close(st[0]);
    RemoveTree(dir);
    return FromErrno("clone", e2);
  }
  e->pid_ = pid;
  for (int fd : {in[1], out[0], err[0], st[0]}) SetNonBlocking(fd);
  e->pidfd_.emplace(io_, pidfd);
  e->out_[0].emplace(io_, out[0]);
  e->out_[1].emplace(io_, err[0]);
  e->status_.emplace(io_, st[0]);
  e->stdin_.emplace(io_, in[1]);
  e->stdin_buf_ = std::move(req.stdin_data);
  e->stdin_eof_ = !req.stdin_open;
  e->started_ = Clock::now();
  info.started_ms = NowMs();
  ++running_;
  execs_[id] = e;
  order_.push_back(id);
  e->WriteMeta();
  e->StartIo();
  return e;
}

std::shared_ptr<Exec> ExecManager::Find(const std::string& id) const {
  auto it = execs_.find(id);
  return it == execs_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Exec>> ExecManager::List(const std::string& sandbox_id) const {
  std::vector<std::shared_ptr<Exec>> out;
  for (const auto& id : order_) {
    auto it = execs_.find(id);
    if (it == execs_.end()) continue;
    if (!sandbox_id.empty() && it->second->info().sandbox_id != sandbox_id) continue;
    out.push_back(it->second);
  }
  return out;
}

void ExecManager::Remove(const std::string& id, const std::string& why) {
  auto it = execs_.find(id);
  if (it == execs_.end()) return;
  auto e = it->second;
  if (e->running()) {
    e->facts_.interrupted = why;
    e->remove_when_done_ = true;
    e->KillNow();
    return;
  }
  RemoveTree(e->dir_);
  execs_.erase(it);
  order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
}

void ExecManager::KillAll(const std::string& why) {
  std::vector<std::shared_ptr<Exec>> live;
  for (auto& [id, e] : execs_) {
    if (e->running()) live.push_back(e);
  }
  for (auto& e : live) {
    if (!e->running()) continue;
    e->facts_.interrupted = why;
    if (e->live_) e->exited_ = true;
    if (e->pid_ > 0 && !e->exited_) {
      e->KillNow();
      int st = 0;
      while (waitpid(e->pid_, &st, 0) < 0 && errno == EINTR) {
      }
      e->exited_ = true;
      e->wait_status_ = st;
    }
    e->timeout_timer_.cancel();
    e->kill_timer_.cancel();
    e->CloseStdin();
    e->Finish();
  }
}

void ExecManager::OnFinished(Exec* e) {
  if (running_ > 0) --running_;
  std::string id = e->id();
  std::string sandbox = e->info().sandbox_id;
  if (e->remove_when_done_) {
    // The caller's handler holds a reference, so erasing here does not destroy `e`.
    RemoveTree(e->dir_);
    execs_.erase(id);
    order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
    return;
  }
  Prune(sandbox);
}

void ExecManager::Prune(const std::string& sandbox_id) {
  std::vector<std::string> finished;
  for (const auto& id : order_) {
    auto it = execs_.find(id);
    if (it != execs_.end() && it->second->info().sandbox_id == sandbox_id &&
        !it->second->running()) {
      finished.push_back(id);
    }
  }
  if (finished.size() <= config_.keep_finished_per_sandbox) return;
  size_t drop = finished.size() - config_.keep_finished_per_sandbox;
  for (size_t i = 0; i < drop; ++i) Remove(finished[i], "");
}

}  // namespace ward::api
