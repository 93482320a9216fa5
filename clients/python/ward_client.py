"""A client for `ward serve` (JSON-RPC 2.0 over a unix socket), standard library only.

    from ward_client import WardClient, WardError

    with WardClient() as ward:                      # $XDG_RUNTIME_DIR/ward/ward.sock
        sb = ward.create_sandbox("/path/to/project", ttl_s=600)
        r = ward.run(sb, ["make", "test"], timeout_ms=600_000)
        print(r["status"], r["exit_code"], r["stdout"])
        ward.destroy(sb)

Errors from the daemon raise WardError with `.kind` (not_found, policy_denied,
approval_required, timeout, interrupted, resource_exhausted, invalid_request, unsupported).
A sandbox created with ask=True asks before its commands open files (or reach hosts) its
policy does not allow: approvals() lists the questions, approve() / deny() answer them,
grants() and revoke() manage what was granted; wait() raises kind "approval_required" when
its timeout ran out while the command waits for an answer.
Notifications sent while a call is pending (exec.output, exec.exit) go to `on_notification`.
"""

import base64
import json
import os
import socket
import stat

__all__ = ["WardClient", "WardError", "default_socket_path"]

PROTOCOL = 1


def default_socket_path():
    """Where `ward serve` listens by default: ward.sock in ward's runtime directory.

    $XDG_RUNTIME_DIR/ward when XDG_RUNTIME_DIR is absolute, else /run/user/<uid>/ward when
    /run/user/<uid> is a directory of ours that no one else may write, else
    $XDG_STATE_HOME/ward/run (~/.local/state/ward/run). Never /tmp.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "ward", "ward.sock")
    run_user = "/run/user/%d" % os.geteuid()
    try:
        st = os.lstat(run_user)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022:
            return os.path.join(run_user, "ward", "ward.sock")
    except OSError:
        pass
    state = os.environ.get("XDG_STATE_HOME", "")
    if not state.startswith("/"):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "ward", "run", "ward.sock")


class WardError(Exception):
    """An error answer of the daemon (or of the connection: kind "transport")."""

    def __init__(self, kind, message, code=0, data=None):
        super().__init__("%s: %s" % (kind, message))
        self.kind = kind
        self.message = message
        self.code = code
        self.data = data or {}


class WardClient:
    def __init__(self, socket_path=None, timeout=None, on_notification=None):
        """Connects at once. `timeout` (seconds) bounds each call; None waits forever."""
        self.socket_path = socket_path or default_socket_path()
        self.timeout = timeout
        self.on_notification = on_notification
        self._next_id = 0
        self._buf = b""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(self.socket_path)
        except OSError as e:
            self._sock.close()
            raise WardError("transport", "cannot connect to %s: %s" % (self.socket_path, e))

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the protocol ----

    def call(self, method, params=None, timeout=None):
        """Sends one request and returns its result, or raises WardError."""
        self._next_id += 1
        rid = self._next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        try:
            self._sock.sendall(json.dumps(msg).encode("utf-8") + b"\n")
        except OSError as e:
            # A daemon that refused the connection (another uid) sent its reason first.
            self._sock.settimeout(1)
            try:
                reply = self._read_message()
            except WardError:
                raise WardError("transport", "cannot send to the daemon: %s" % e)
            if "error" in reply:
                raise self._error(reply["error"])
            raise WardError("transport", "cannot send to the daemon: %s" % e)
        self._sock.settimeout(timeout if timeout is not None else self.timeout)
        while True:
            reply = self._read_message()
            if "method" in reply:
                if self.on_notification:
                    self.on_notification(reply["method"], reply.get("params", {}))
                continue
            if reply.get("id") != rid:
                if reply.get("id") is None and "error" in reply:
                    raise self._error(reply["error"])
                continue
            if "error" in reply:
                raise self._error(reply["error"])
            return reply.get("result")

    def _read_message(self):
        while b"\n" not in self._buf:
            try:
                chunk = self._sock.recv(65536)
            except socket.timeout:
                raise WardError("timeout", "no answer from the daemon in time")
            if not chunk:
                raise WardError("interrupted", "the daemon closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line.decode("utf-8"))

    @staticmethod
    def _error(err):
        data = err.get("data") or {}
        return WardError(data.get("kind", "invalid_request"), err.get("message", ""),
                         err.get("code", 0), data)

    # ---- conveniences ----

    def version(self):
        return self.call("ward.version")

    def create_sandbox(self, workspace, **spec):
        """Returns the sandbox id. spec: profile, write, read, deny, allow_net, deny_net,
        credentials, env, limits, ask, ttl_s, idle_s, labels."""
        spec["workspace"] = os.path.abspath(workspace)
        return self.call("sandbox.create", spec)["sandbox_id"]

    def destroy(self, sandbox_id):
        return self.call("sandbox.destroy", {"sandbox_id": sandbox_id})

    def reset(self, sandbox_id):
        """sandbox.reset: everything running in the sandbox ends; its next exec starts afresh."""
        return self.call("sandbox.reset", {"sandbox_id": sandbox_id})

    def run(self, sandbox_id, argv=None, shell=None, **options):
        """exec.run: give argv (a list) or shell (a string). options: cwd, env, stdin,
        stdin_open, timeout_ms, yield_ms, max_output_bytes, policy, fresh, notify. The sandbox
        stays up between calls (processes, /tmp, HOME); fresh=True, or a policy, runs the
        command in a sandbox of its own."""
        params = dict(options, sandbox_id=sandbox_id)
        if shell is not None:
            params["shell"] = shell
        else:
            params["argv"] = list(argv)
        return self.call("exec.run", params)

    def wait(self, exec_id, timeout_ms=None):
        params = {"exec_id": exec_id}
        if timeout_ms is not None:
            params["timeout_ms"] = timeout_ms
        return self.call("exec.wait", params)

    def read_output(self, exec_id, stream="stdout", offset=0, length=None):
        """Exact bytes of the kept output from `offset`, and the next offset."""
        params = {"exec_id": exec_id, "stream": stream, "offset": offset, "encoding": "base64"}
        if length is not None:
            params["length"] = length
        r = self.call("exec.read", params)
        return base64.b64decode(r["data"]), r["next_offset"], r["complete"]

    def write_stdin(self, exec_id, data, eof=False):
        if isinstance(data, str):
            data = data.encode("utf-8")
        return self.call("exec.write_stdin", {"exec_id": exec_id, "encoding": "base64",
                                              "data": base64.b64encode(data).decode(), "eof": eof})

    def signal(self, exec_id, signal="TERM"):
        return self.call("exec.signal", {"exec_id": exec_id, "signal": signal})

    def read_file(self, sandbox_id, path, offset=0, length=None):
        params = {"sandbox_id": sandbox_id, "path": path, "offset": offset, "encoding": "base64"}
        if length is not None:
            params["length"] = length
        return base64.b64decode(self.call("fs.read", params)["data"])

    def write_file(self, sandbox_id, path, data, mode=None, atomic=True):
        if isinstance(data, str):
            data = data.encode("utf-8")
        params = {"sandbox_id": sandbox_id, "path": path, "encoding": "base64",
                  "data": base64.b64encode(data).decode(), "atomic": atomic}
        if mode is not None:
            params["mode"] = mode
        return self.call("fs.write", params)

    def list_files(self, sandbox_id, path=".", depth=1):
        return self.call("fs.list", {"sandbox_id": sandbox_id, "path": path,
                                     "depth": depth})["entries"]

    # ---- approvals (sandboxes created with ask=True) ----

    def approvals(self, sandbox_id=None, exec_id=None):
        """Requests waiting for an answer, each with its exec_id and sandbox_id (id, kind,
        subject, access or port, pid, exe, when)."""
        return self.call("approvals.list", _filter(sandbox_id, exec_id))["requests"]

    def approve(self, exec_id, request_id, scope=None, prefix=None, under=None, reason=None):
        """Approves one request; scope is "once" (default), "session" or a duration ("10m");
        prefix=True widens to the parent directory / domain, under="/data" to a chosen one.
        Returns {decision, grant, ...}."""
        params = {"exec_id": exec_id, "id": request_id}
        for key, value in (("scope", scope), ("prefix", prefix), ("under", under),
                           ("reason", reason)):
            if value is not None:
                params[key] = value
        return self.call("approvals.approve", params)

    def deny(self, exec_id, request_id, reason=None):
        params = {"exec_id": exec_id, "id": request_id}
        if reason is not None:
            params["reason"] = reason
        return self.call("approvals.deny", params)

    def grants(self, sandbox_id=None, exec_id=None):
        return self.call("approvals.grants", _filter(sandbox_id, exec_id))["grants"]

    def revoke(self, exec_id, grant_id):
        return self.call("approvals.revoke", {"exec_id": exec_id, "grant": grant_id})

    def audit(self, sandbox_id=None, exec_id=None, records=False, type=None):
        params = {"records": records}
        if sandbox_id:
            params["sandbox_id"] = sandbox_id
        if exec_id:
            params["exec_id"] = exec_id
        if type:
            params["type"] = type
        return self.call("audit.query", params)["sessions"]


def _filter(sandbox_id, exec_id):
    params = {}
    if sandbox_id:
        params["sandbox_id"] = sandbox_id
    if exec_id:
        params["exec_id"] = exec_id
    return params
