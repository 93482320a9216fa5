#include "api/live_sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "api/spawn_ward.h"

extern char** environ;

namespace ward::api {
namespace {

constexpr size_t kKeepBytes = 64 * 1024;  // of `ward run`'s stderr and status

// Reads what `fd` holds now into `*buf` (its last kKeepBytes). False at EOF.
bool ReadAvailable(int fd, std::string* buf) {
  char chunk[4096];
  while (true) {
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN;
    if (n == 0) return false;
    buf->append(chunk, static_cast<size_t>(n));
    if (buf->size() > kKeepBytes) buf->erase(0, buf->size() - kKeepBytes);
  }
}

// What `ward run` said it did, for the reason a live sandbox ended.
std::string Said(const std::string& status, const std::string& stderr_text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(status);
    if (j.is_object() && j.contains("message") && j["message"].is_string() &&
        !j["message"].get<std::string>().empty()) {
      return j["message"].get<std::string>();
    }
  } catch (const std::exception&) {
  }
  std::string last = stderr_text;
  while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
  const size_t nl = last.rfind('\n');
  return nl == std::string::npos ? last : last.substr(nl + 1);
}

// What the supervisor sent with an exec's end (the check after it), from `memfd`; null if none.
nlohmann::json Checked(const enforce::ExecMsg& m, int memfd) {
  if (memfd < 0 || m.length == 0 || m.length > (1u << 20)) return nullptr;
  std::string text(m.length, '\0');
  if (pread(memfd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return nullptr;
  }
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

LiveSandbox::LiveSandbox(asio::io_context& io) : io_(io) {}

LiveSandbox::~LiveSandbox() {
  if (!ended_) Close("the daemon let go of the sandbox");
}

Expected<std::shared_ptr<LiveSandbox>> LiveSandbox::Start(asio::io_context& io,
                                                          const std::string& ward_binary,
                                                          std::vector<std::string> run_args) {
  std::shared_ptr<LiveSandbox> sb(new LiveSandbox(io));
  int channel[2], status[2], err[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) != 0) {
    return FromErrno("socketpair", errno);
  }
  UniqueFd ours(channel[0]), theirs(channel[1]);
  if (pipe2(status, O_CLOEXEC) != 0) return FromErrno("pipe", errno);
  UniqueFd status_read(status[0]), status_write(status[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return FromErrno("pipe", errno);
  UniqueFd err_read(err[0]), err_write(err[1]);
  UniqueFd null(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null) return FromErrno("opening /dev/null", errno);
  UniqueFd child[5] = {UniqueFd(Raise(dup(null.get()))), UniqueFd(Raise(dup(null.get()))),
                       UniqueFd(Raise(err_write.release())), UniqueFd(Raise(status_write.release())),
                       UniqueFd(Raise(theirs.release()))};
  run_args.push_back("--json-status=3");
  run_args.push_back("--exec-channel=4");
  std::vector<std::string> args = {"ward"};
  for (auto& a : run_args) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  SpawnArgs sa;
  sa.path = ward_binary.c_str();
  sa.argv = argv.data();
  sa.envp = environ;
  for (int i = 0; i < 5; ++i) sa.fds[i] = child[i].get();
  sa.parent = getpid();
  int pidfd = -1;
  const pid_t pid = StartSpawnChild(&sa, &pidfd);
  if (pid < 0 || pidfd < 0) {
    const int e = errno;
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    return FromErrno("starting the live sandbox", e);
  }
  sb->pid_ = pid;
  sb->pidfd_.emplace(io, pidfd);
  SetNonBlocking(ours.get());
  sb->channel_.emplace(io, ours.release());
  SetNonBlocking(status_read.get());
  SetNonBlocking(err_read.get());
  sb->status_.emplace(io, status_read.release());
  sb->stderr_.emplace(io, err_read.release());
  sb->Drain(&*sb->status_, &sb->status_text_);
  sb->Drain(&*sb->stderr_, &sb->stderr_text_);
  sb->WaitChannel();
  sb->WaitExit();
  return sb;
}

Expected<Done> LiveSandbox::Exec(uint64_t id, const enforce::ExecRequest& req, const int stdio[3],
                                 OnMessage on_message, OnGone on_gone) {
  if (ended_) return MakeError(ErrorKind::kInterrupted, "the sandbox ended: " + end_reason_);
  const std::string encoded = enforce::EncodeExecRequest(req);
  if (encoded.size() > enforce::kMaxExecRequestBytes) {
    return InvalidError("the command and its environment are larger than " +
                        std::to_string(enforce::kMaxExecRequestBytes) + " bytes");
  }
  Result<UniqueFd> memfd = enforce::ExecRequestMemfd(encoded);
  if (!memfd.ok()) return FromErrno("exec request", memfd.status().err());
  enforce::ExecMsg m;
  m.type = enforce::ExecMsgType::kStart;
  m.id = id;
  m.length = static_cast<uint32_t>(encoded.size());
  const int fds[4] = {memfd->get(), stdio[0], stdio[1], stdio[2]};
  if (int rc = enforce::SendExecMsg(channel_->native_handle(), m, fds, 4); rc != 0) {
    return FromErrno("sending the exec to its sandbox", -rc);
  }
  execs_[id] = {std::move(on_message), std::move(on_gone)};
  return Done{};
}

void LiveSandbox::Signal(uint64_t id, int sig) {
  if (ended_ || !execs_.count(id)) return;
  enforce::ExecMsg m;
  m.type = enforce::ExecMsgType::kSignal;
  m.id = id;
  m.value = sig;
  enforce::SendExecMsg(channel_->native_handle(), m);
}

void LiveSandbox::Drain(asio::posix::stream_descriptor* d, std::string* into) {
  auto self = shared_from_this();
  d->async_wait(asio::posix::descriptor_base::wait_read,
                [self, d, into](const asio::error_code& ec) {
                  if (ec || self->ended_) return;
                  if (ReadAvailable(d->native_handle(), into)) self->Drain(d, into);
                });
}

void LiveSandbox::WaitChannel() {
  auto self = shared_from_this();
  channel_->async_wait(asio::posix::descriptor_base::wait_read,
                       [self](const asio::error_code& ec) {
                         if (ec || self->ended_) return;
                         self->OnChannel();
                       });
}

void LiveSandbox::OnChannel() {
  const bool open = enforce::ForEachExecMsg(
      channel_->native_handle(), [this](const enforce::ExecMsg& m, UniqueFd fds[4]) {
        auto it = execs_.find(m.id);
        if (it == execs_.end()) return true;
        OnMessage on_message = it->second.on_message;
        if (m.type == enforce::ExecMsgType::kFailed || m.type == enforce::ExecMsgType::kExited) {
          execs_.erase(it);
        }
        if (on_message) on_message(m, Checked(m, fds[0].get()));
        return !ended_;
      });
  // Closed: `ward run` is ending, and its exit says why (WaitExit).
  if (open && !ended_) WaitChannel();
}

void LiveSandbox::WaitExit() {
  auto self = shared_from_this();
  pidfd_->async_wait(asio::posix::descriptor_base::wait_read, [self](const asio::error_code& ec) {
    if (ec || self->ended_) return;
    int st = 0;
    while (waitpid(self->pid_, &st, 0) < 0 && errno == EINTR) {
    }
    ReadAvailable(self->status_->native_handle(), &self->status_text_);
    ReadAvailable(self->stderr_->native_handle(), &self->stderr_text_);
    std::string why = Said(self->status_text_, self->stderr_text_);
    self->End(why.empty() ? "the sandbox's supervisor exited" : why);
  });
}

void LiveSandbox::Close(const std::string& why) {
  if (ended_) return;
  // Closing the channel ends the sandbox (its supervisor kills everything inside); a
  // supervisor that does not go in time is killed, and the sandbox with it.
  asio::error_code ignored;
  channel_->close(ignored);
  struct pollfd p = {pidfd_->native_handle(), POLLIN, 0};
  if (poll(&p, 1, 5000) <= 0) kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  End(why);
}

void LiveSandbox::End(const std::string& why) {
  if (ended_) return;
  ended_ = true;
  end_reason_ = why;
  asio::error_code ignored;
  if (channel_) channel_->close(ignored);
  if (pidfd_) pidfd_->close(ignored);
  if (status_) status_->close(ignored);
  if (stderr_) stderr_->close(ignored);
  auto execs = std::move(execs_);
  execs_.clear();
  for (auto& [id, p] : execs) {
    if (p.on_gone) p.on_gone(why);
  }
}

}  // namespace ward::api
