# Shared by the engine scenarios (sourced): what an image needs for egress, and the check of a
# container's trail after it. The caller defines fail() and $ward.

# Copies curl, what it loads and the CA bundle into the image's root ROOT.
copy_curl() {
  cp /usr/bin/curl "$1/bin/curl"
  for lib in $(ldd /usr/bin/curl | awk '$2 == "=>" {print $3}') \
             $(readelf -l /usr/bin/curl | sed -n 's/.*interpreter: \(.*\)]/\1/p'); do
    cp --parents -L "$lib" "$1/"
  done
  mkdir -p "$1/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/"
}

# The registry's host (a real host the tests may reach), from npm's configuration.
registry_host() {
  npm config get registry 2>/dev/null | sed -E 's#^[a-z]+://([^/:]+).*#\1#'
}

# The one session in the audit directory DIR verifies and records the refusal of example.org.
check_egress_trail() {
  session=$(ls "$1/sessions")
  "$ward" audit --state-dir "$1" verify "$session" >/dev/null || fail "the trail does not verify"
  "$ward" audit --state-dir "$1" show "$session" | grep -q 'net.deny.*example.org' ||
    fail "the refused host is not in the trail: $("$ward" audit --state-dir "$1" show "$session")"
}

# The pids.max file of the cgroup at PATH (below the hierarchies' root), v1 or v2.
pids_max_of() {
  if [ -e "/sys/fs/cgroup/pids$1/pids.max" ]; then
    echo "/sys/fs/cgroup/pids$1/pids.max"
  else
    echo "/sys/fs/cgroup$1/pids.max"
  fi
}
