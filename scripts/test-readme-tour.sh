#!/usr/bin/env bash
# Runs the README's tour as a reader would paste it: every ```sh block that follows a
# `<!-- tour -->` line, in order, in one bash, from the repository's root, against real
# node processes, with a fresh HOME and nothing of the caller's SCMESH_* environment.
# It then checks what the tour promises (bob's inbox holds both messages, both were
# delivered, the dashboard link was printed).
#
#   scripts/test-readme-tour.sh            uses .build/debug/scmesh (build it first)
#   SCMESH=/path/to/scmesh scripts/test-readme-tour.sh
#
# It never builds: the blocks find `scmesh` on PATH, the directory of $SCMESH. Every
# wait in the tour is bounded by the tour itself; the whole run is bounded by
# TOUR_TIMEOUT seconds (default 300). The nodes it started are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SCMESH="${SCMESH:-$PWD/.build/debug/scmesh}"
TOUR_TIMEOUT="${TOUR_TIMEOUT:-300}"
fail() {
  echo "test-readme-tour: $*" >&2
  exit 1
}
[ -x "$SCMESH" ] || fail "no scmesh binary at $SCMESH; build it first (swift build --product scmesh) or set SCMESH"

# The tour's relay listens on a fixed port: a node already there would make the tour
# link to a stranger.
if (exec 3<>/dev/tcp/127.0.0.1/7522) 2>/dev/null; then
  fail "something already listens on 127.0.0.1:7522, the tour relay's port; stop it and run again"
fi

# The tour makes its own directory (/tmp/scmesh-tour.*) and removes it at its end; one
# that a failed tour left is removed here (only those that appeared during this run).
tour_dirs_before=$(ls -d /tmp/scmesh-tour.* 2>/dev/null || true)
work=$(mktemp -d /tmp/scmesh-tour-test.XXXXXX)
script="$work/tour.sh"
log="$work/tour.log"
tour_pid=
cleanup() {
  if [ -n "$tour_pid" ]; then
    # The tour ran in a session of its own: stop whatever of it is left, nodes included.
    kill -TERM -- "-$tour_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- "-$tour_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$tour_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  local dir
  for dir in /tmp/scmesh-tour.*; do
    [ -d "$dir" ] || continue
    grep -qxF -- "$dir" <<<"$tour_dirs_before" || rm -rf -- "$dir"
  done
}
trap cleanup EXIT

# The blocks: a fenced ```sh block whose opening line follows `<!-- tour -->` (blank
# lines between are allowed). Each is echoed before it runs, so a failure shows where.
awk -v out="$script" '
  BEGIN { print "set -eu" > out }
  /^<!-- tour -->[[:space:]]*$/ { armed = 1; next }
  armed && /^[[:space:]]*$/ { next }
  armed && /^```sh[[:space:]]*$/ { inside = 1; armed = 0; blocks++; print "echo \"--- tour block " blocks "\"" > out; next }
  { armed = 0 }
  inside && /^```[[:space:]]*$/ { inside = 0; next }
  inside { print > out }
  END { if (blocks == 0) exit 3; print "echo \"--- tour: " blocks " blocks ran\"" > out }
' README.md || fail "README.md has no block marked <!-- tour --> (a \`\`\`sh block right after the marker)"
blocks=$(grep -c '^echo "--- tour block' "$script")

home="$work/home"
mkdir -p "$home"
status=0
env -i PATH="$(dirname "$SCMESH"):/usr/local/bin:/usr/bin:/bin" HOME="$home" TERM=dumb LANG=C.UTF-8 \
  setsid timeout --kill-after=10 "$TOUR_TIMEOUT" bash "$script" >"$log" 2>&1 &
tour_pid=$!
wait "$tour_pid" || status=$?
cat "$log"
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  fail "the tour did not finish within $TOUR_TIMEOUT s"
fi
[ "$status" -eq 0 ] || fail "the tour failed (exit $status); its output is above"

# What the tour promises.
expect() {
  grep -qE -- "$1" "$log" || fail "the tour's output has no line matching '$1' ($2)"
}
expect '^--- tour: [0-9]+ blocks ran$' "every block ran"
expect '^http +http://127\.0\.0\.1:[0-9]+/' "alice's status shows where her HTTP API listens"
expect '^bob \([0-9a-f]{8}…\) +~relay \([0-9a-f]{8}…\) +2 ' "alice's route table names bob, two hops away through the relay (by the name it claimed)"
expect 'delivered message [0-9a-f]+.* to bob' "the first message was delivered over the relay"
expect 'hello bob, via the relay' "bob's inbox shows the first message"
expect 'sent while bob was away' "bob's inbox shows the message stored while he was away"
[ "$(grep -cE 'delivered message [0-9a-f]+.* to bob' "$log")" -ge 2 ] ||
  fail "the message sent while bob was away was not delivered after he came back"
expect 'http://127\.0\.0\.1:[0-9]+/#login=' "the dashboard's login link"
echo "test-readme-tour: the README's tour ran as pasted ($blocks blocks) and did what it says"
