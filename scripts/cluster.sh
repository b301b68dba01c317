#!/usr/bin/env bash
# `npm run cluster`: the local fleet (see docs/operations.md, "Local fleet"). Ensures the servers it
# needs the way the test command does (nats-server and Kubo built with Go, Redis and HAProxy from
# Debian, the native addon when cargo is there), builds, then runs the fleet in the foreground.
#
#   npm run cluster -- [--dir DIR] [--fresh] [--port PORT]
#
# The fleet runs in a session of its own, so the terminal's Ctrl-C reaches only this script, which
# hands it on once: the fleet then stops its processes in order instead of all of them at once.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/tools.sh
source scripts/tools.sh
ensure_nats >/dev/null
ensure_redis >/dev/null
ensure_kubo >/dev/null
ensure_haproxy >/dev/null
if command -v cargo >/dev/null 2>&1; then
  bash scripts/build-native.sh release >&2
else
  echo "cluster: cargo not found: the native hashing backend is not built; the fleet hashes with wasm" >&2
fi
npm run -s build

setsid node dist/test/harness/cluster-main.js "$@" &
pid=$!
signalled=""
forward() {
  # npm passes the terminal's SIGINT on as well: signals within two seconds of the first count once.
  if [ -z "$signalled" ] || [ $((SECONDS - signalled)) -ge 2 ]; then
    signalled=$SECONDS
    kill -TERM "$pid" 2>/dev/null || true
  fi
}
trap forward INT TERM HUP
set +e
while kill -0 "$pid" 2>/dev/null; do
  wait "$pid"
done
wait "$pid"
exit $?
