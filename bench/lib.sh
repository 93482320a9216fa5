# shellcheck shell=sh
# Shared by the bench scripts, which source it (`. "$(dirname "$0")/lib.sh"`): running the
# measured commands as another user.

# as_user UID: the command prefix that runs a command as UID, with UID's own primary group (the
# same number when UID has no passwd entry) and no supplementary groups.
as_user() {
  echo "setpriv --reuid=$1 --regid=$(id -g "$1" 2>/dev/null || echo "$1") --clear-groups"
}

# stage_ward DIR: copies $WARD into DIR, where the other user can execute it (the build tree may
# not be reachable for them), and points WARD at the copy.
stage_ward() {
  cp "$WARD" "$1/ward"
  chmod 755 "$1/ward"
  WARD=$1/ward
}

# state_dir UID: the audit trail's directory (XDG_STATE_HOME) for runs of UID. It lasts from one
# bench to the next, as a user's ~/.local/state does, and no bench deletes it. A bench that kept
# its trail in its temporary directory deleted thousands of sessions at its end, and for the
# next minutes ext4 made every file created near them slower: its inode allocator skips inodes
# freed in the last 60-360 seconds and reads the inode table for each one it skips (0.3-1 ms per
# new file on the development machine, against ~0.05-0.1 otherwise). ward creates three per run (the
# session's directory, its log and its head), bwrap none, so the next bench measured the last
# one's cleanup: 6-12% of ward's start-up. The trail grows by ~22 KB per run; remove
# /var/tmp/ward-bench-state when you are done benchmarking.
state_dir() {
  base=/var/tmp/ward-bench-state
  [ -d "$base" ] || mkdir -m 711 "$base"
  if [ -L "$base" ] || [ "$(stat -c %u "$base")" != "$(id -u)" ]; then
    echo "$base is not a directory of this user's own" >&2
    return 1
  fi
  if [ ! -d "$base/$1" ]; then
    mkdir -m 700 "$base/$1"
    chown "$1" "$base/$1"
  fi
  echo "$base/$1"
}

# use_state_dir: exports XDG_STATE_HOME as the state_dir of the user the runs are made as
# (RUN_AS, else this one); the runs inherit it, through as_user's prefix too.
use_state_dir() {
  XDG_STATE_HOME=$(state_dir "$(id -u "${RUN_AS:-$(id -u)}")") || exit 1
  export XDG_STATE_HOME
}
