#!/bin/sh
# Installs the agents of versions.txt from the npm registry into CACHE/NAME-VERSION (each its
# own npm prefix), skipping those already there. The agent tests' setup fixture: if the
# registry cannot be reached, this fails once with that cause and the agent tests do not run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=$1
mkdir -p "$cache"
chmod 755 "$cache"
registry=$(npm config get registry 2>/dev/null || echo "the npm registry")
missing=""
while read -r name package version command; do
  case "$name" in ''|'#'*) continue ;; esac
  [ -x "$cache/$name-$version/node_modules/.bin/$command" ] || missing="$missing $name:$package:$version"
done < "$here/versions.txt"
if [ -z "$missing" ]; then
  echo "agents: all pinned agents are in $cache"
  exit 0
fi
if ! err=$(npm ping --registry "$registry" 2>&1); then
  echo "agents: cannot reach the npm registry ($registry) to install the pinned agents into $cache:" >&2
  echo "$err" | tail -3 >&2
  echo "agents: the agent tests need it once; the fix is network access to the registry (or npm config set registry)" >&2
  exit 1
fi
for entry in $missing; do
  name=${entry%%:*}; rest=${entry#*:}; package=${rest%:*}; version=${rest##*:}
  dest="$cache/$name-$version"
  tmp="$dest.new.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  start=$(date +%s)
  npm install --prefix "$tmp" --no-audit --no-fund --no-update-notifier --loglevel=error \
    "$package@$version" >&2
  rm -rf "$dest"
  mv "$tmp" "$dest"
  chmod -R a+rX "$dest"
  echo "agents: installed $package@$version in $(( $(date +%s) - start )) s, $(du -sm "$dest" | cut -f1) MB on disk"
done
