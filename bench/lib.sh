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
