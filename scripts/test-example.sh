#!/usr/bin/env bash
# Builds and tests the out-of-tree transport example, Examples/PipeTransport: its own
# package, depending on SCMesh by path. It passes the conformance suite, a test runs two
# nodes with the transport registered, and here two pipe-node processes link up.
# It builds SCMesh and its dependencies again in Examples/PipeTransport/.build (about
# 2-3 minutes on 2 cores from clean; seconds when up to date).
# Needs what the main package needs (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/../Examples/PipeTransport"

swift build --build-tests
swift test --skip-build

# Two pipe-node processes on sockets in a fresh directory: B dials A, both report the link.
tmp="$(mktemp -d /tmp/scmesh-pipe-node-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
bin="$(swift build --show-bin-path)/pipe-node"
for side in a b; do
  sed "s#/tmp/scmesh-pipe-#$tmp/#g" "Config/pipe-$side.yaml" >"$tmp/$side.yaml"
  "$bin" "$tmp/$side.yaml" "$tmp/$side" 2>"$tmp/$side.log" &
  pids+=($!)
done
for _ in $(seq 100); do
  if grep -q "link .* up to .* over pipe" "$tmp/a.log" && grep -q "link .* up to .* over pipe" "$tmp/b.log"; then
    echo "test-example: ok - two pipe-node processes linked over $tmp/a.sock"
    exit 0
  fi
  sleep 0.1
done
echo "test-example: FAILED - the two pipe-node processes did not link within 10 s" >&2
cat "$tmp/a.log" "$tmp/b.log" >&2
exit 1
