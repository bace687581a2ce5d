#!/usr/bin/env bash
# Sets up and runs every test: installs what is missing, starts the daemons the
# tests need, builds, runs `swift test`, and stops the daemons again.
# This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --test

# Cleanup steps run in reverse order on exit, whatever happens.
cleanup_steps=()
cleanup() {
  local i
  for ((i = ${#cleanup_steps[@]} - 1; i >= 0; i--)); do
    eval "${cleanup_steps[$i]}" || true
  done
}
trap cleanup EXIT

# --- Test daemons: start each here and register how to stop it. --------------
# A system D-Bus and a loopback-only avahi-daemon for Tests/TransportMDNSTests.
scripts/avahi/start.sh
cleanup_steps+=("scripts/avahi/stop.sh")
# ---------------------------------------------------------------------------

swift build
swift test "$@"
