#include "enforce/exec_wire.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/unix_socket.h"
#include "enforce/wire.h"

namespace ward::enforce {
namespace {

constexpr uint32_t kMagic = 0x31584557;  // "WEX1"

}  // namespace

std::string EncodeExecRequest(const ExecRequest& req) {
  wire::Writer w;
  w.Raw(kMagic);
  w.Strs(req.argv);
  w.Strs(req.env);
  w.Str(req.cwd);
  // Only when asked, so a request without a terminal reads as before (a supervisor of an older
  // ward still running a container takes it).
  if (req.tty) w.Bool(true);
  return w.Take();
}

Status DecodeExecRequest(std::string_view bytes, ExecRequest* req) {
  wire::Reader r(bytes);
  uint32_t magic = 0;
  if (r.Raw("magic", &magic) && magic != kMagic) r.Fail("magic", "not an exec request");
  const bool read =
      r.Strs("argv", &req->argv) && r.Strs("env", &req->env) && r.Str("cwd", &req->cwd) &&
      (r.AtEnd() || r.Bool("tty", &req->tty));
  if (read && !r.AtEnd()) r.Fail("end", "trailing bytes");
  if (r.error().empty() && req->argv.empty()) r.Fail("argv", "empty");
  if (!r.error().empty()) return InvalidArgument("exec request: " + r.error());
  return Ok();
}

int SendExecMsg(int sock, const ExecMsg& msg, const int* fds, size_t nfds) {
  const ssize_t n = SendWithFds(sock, &msg, sizeof msg, fds, nfds);
  if (n == static_cast<ssize_t>(sizeof msg)) return 0;
  return n < 0 ? static_cast<int>(n) : -EIO;
}

int RecvExecMsg(int sock, ExecMsg* msg, UniqueFd fds[4], int flags) {
  int got[4] = {-1, -1, -1, -1}, nfds = 0;
  bool truncated = false;
  const ssize_t n = RecvWithFds(sock, msg, sizeof *msg, got, 4, &nfds, &truncated, flags);
  for (int i = 0; i < 4; ++i) fds[i].reset(i < nfds ? got[i] : -1);
  msg->error.stage[sizeof msg->error.stage - 1] = '\0';
  msg->error.detail[sizeof msg->error.detail - 1] = '\0';
  if (n < 0) return static_cast<int>(n);
  if (n == 0) return 0;
  if (n != static_cast<ssize_t>(sizeof *msg) || truncated) return -EPROTO;
  return 1;
}

bool ForEachExecMsg(int sock, const std::function<bool(const ExecMsg&, UniqueFd fds[4])>& fn) {
  while (true) {
    ExecMsg m;
    UniqueFd fds[4];
    const int r = RecvExecMsg(sock, &m, fds, MSG_DONTWAIT);
    if (r == -EAGAIN || r == -EINTR) return true;
    if (r == -EPROTO) continue;
    if (r != 1) return false;
    if (!fn(m, fds)) return true;
  }
}

Result<UniqueFd> ExecRequestMemfd(const std::string& encoded) {
  UniqueFd fd(memfd_create("ward-exec", MFD_CLOEXEC));
  if (!fd) return Errno("memfd_create");
  size_t off = 0;
  while (off < encoded.size()) {
    const ssize_t n = write(fd.get(), encoded.data() + off, encoded.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("writing the exec request");
    off += static_cast<size_t>(n);
  }
  return fd;
}

Status ReadExecRequest(int memfd, uint32_t length, ExecRequest* req) {
  if (memfd < 0 || length == 0 || length > kMaxExecRequestBytes) {
    return InvalidArgument("exec request: no request, or larger than " +
                           std::to_string(kMaxExecRequestBytes) + " bytes");
  }
  std::string blob(length, '\0');
  if (pread(memfd, blob.data(), blob.size(), 0) != static_cast<ssize_t>(blob.size())) {
    return InvalidArgument("exec request: shorter than announced");
  }
  return DecodeExecRequest(blob, req);
}

}  // namespace ward::enforce
