#!/usr/bin/env bash
# Sets up and runs every test: installs what is missing, starts the daemons the
# tests need, builds, runs `swift test`, and stops the daemons again.
# This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

# step NAME COMMAND...: runs COMMAND and notes how long it took; the times are printed
# at the end, passed or failed, so a slow CI run says where its minutes went.
step_times=()
step() {
  local name=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  step_times+=("$(printf '%5d s  %s%s' $((SECONDS - start)) "$name" "$([ "$status" -eq 0 ] || echo " (failed: exit $status)")")")
  return "$status"
}

step "setup.sh --test" scripts/setup.sh --test

# Cleanup steps run in reverse order on exit, whatever happens.
cleanup_steps=()
cleanup() {
  local i
  for ((i = ${#cleanup_steps[@]} - 1; i >= 0; i--)); do
    eval "${cleanup_steps[$i]}" || true
  done
  if [ ${#step_times[@]} -gt 0 ]; then
    echo "test.sh: time per step ($SECONDS s in all):"
    printf 'test.sh: %s\n' "${step_times[@]}"
  fi
}
trap cleanup EXIT

# --- Test daemons: start each here and register how to stop it. --------------
# A system D-Bus and a loopback-only avahi-daemon for Tests/TransportMDNSTests.
step "avahi start" scripts/avahi/start.sh
cleanup_steps+=("scripts/avahi/stop.sh")
# ---------------------------------------------------------------------------

# A tripwire for a deadlock: raw blocking socket calls in tests stay off Swift's
# cooperative pool (the script says how and why).
python3 scripts/lint/blocking-calls-in-tests.py
# Every relative link (and #anchor) in every Markdown file resolves.
python3 scripts/lint/markdown-links.py
# The formatter's settings (.swift-format) hold for every Swift file; `swift format
# --in-place --recursive --parallel Sources Tests Benchmarks Plugins Fuzz` applies them.
step "swift format lint" swift format lint --strict --recursive --parallel Sources Tests Benchmarks Plugins Fuzz

# SwiftPM plans a build again whenever what it builds changes (`swift build`, then
# `swift test`, which adds the tests), and passes a package's enabled traits as -D flags
# in the order of a Set: random per process. This package has two (-DBLE -DMDNS, or
# -DMDNS -DBLE), Hummingbird two, so a new plan compiles MeshCore, Hummingbird and all
# above them again. A fixed hash seed fixes the order, and the one build below builds
# the tests too, so `swift test` finds everything built.
export SWIFT_DETERMINISTIC_HASHING=1

# The package first, with its tests: the scmesh guest binary below is this build's.
step "swift build --build-tests" swift build --build-tests

# The fuzzers' build (sanitizers and coverage instrumentation: a build of its own, in
# .build-fuzz) starts now in the background at the lowest CPU priority, so it takes the
# core that the steps below leave idle (the BLE VM steps keep one core busy for 4-5
# minutes: the emulated guest has one CPU) instead of 3-4 minutes of its own at the end.
# Its output is printed by the fuzz step, which waits for it.
fuzz_build_pid=
if [ $# -eq 0 ]; then
  fuzz_build_log=$(mktemp /tmp/scmesh-fuzz-build-XXXXXX)
  cleanup_steps+=("rm -f '$fuzz_build_log'")
  # In a session of its own, so a failed run stops it with its compilers. Where the
  # kernel groups processes by session for CPU shares (sched_autogroup), a new session
  # is a group of its own with an equal share whatever its nice value: so the group's
  # own nice value is set to 19 as well.
  FUZZ_CONFIG="${FUZZ_CONFIG:-debug}" setsid bash -c \
    'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 scripts/fuzz.sh --build' >"$fuzz_build_log" 2>&1 &
  fuzz_build_pid=$!
  cleanup_steps+=("kill -- -$fuzz_build_pid 2>/dev/null; kill -CONT -- -$fuzz_build_pid 2>/dev/null; wait $fuzz_build_pid 2>/dev/null")
fi
# with_fuzz_build_paused COMMAND...: runs COMMAND with that build stopped (SIGSTOP to its
# session's process group, SIGCONT after): headless Chromium's page load runs on virtual
# time and with a build beside it can take minutes.
with_fuzz_build_paused() {
  local status=0
  kill -STOP -- -"$fuzz_build_pid" 2>/dev/null || true
  "$@" || status=$?
  kill -CONT -- -"$fuzz_build_pid" 2>/dev/null || true
  return "$status"
}
# fuzz_smoke: waits for that build (its output first), then runs every target briefly.
fuzz_smoke() {
  local status=0
  wait "$fuzz_build_pid" || status=$?
  cat "$fuzz_build_log"
  if [ "$status" -ne 0 ]; then
    echo "test.sh: the fuzzers' build failed (exit $status)"
    return "$status"
  fi
  FUZZ_CONFIG="${FUZZ_CONFIG:-debug}" FUZZ_PREBUILT=1 scripts/fuzz.sh --all --seconds "${FUZZ_SECONDS:-5}"
}

# Whole-repository checks that are not Swift tests of this package; they run first so
# that `swift test`'s summary is the last thing printed. Skipped when arguments narrow
# the run (e.g. `scripts/test.sh --filter MeshCoreTests`).
if [ $# -eq 0 ]; then
  # Adding a transport: the scaffolding plugin end to end, and the out-of-tree example.
  step "test-plugin.sh" scripts/test-plugin.sh
  step "test-example.sh" scripts/test-example.sh
  # The README's tour, as pasted, against real nodes (the binary `swift build` made).
  step "test-readme-tour.sh" env SCMESH="$PWD/.build/debug/scmesh" scripts/test-readme-tour.sh
  # BLE on a real kernel Bluetooth stack in a qemu VM: BLETransport + conformance suite,
  # then two whole scmesh nodes (Noise XX, messages both ways, larger than the MTU).
  # Debug builds (the benchmarks use release), and `swift build` above already built the
  # guest program (ble-vm-test is a target of this package): only the VM's own work is
  # left (SWIFT_PREBUILT: no build of one product, which would compile much again).
  step "BLE VM: transport" env SWIFT_PACKAGE="$PWD" SWIFT_SCRATCH="$PWD/.build" SWIFT_CONFIG=debug SWIFT_PREBUILT=1 scripts/ble-vm/run.sh
  # The scmesh guest binary is the one `swift build` just made in the package's own
  # .build (debug, the Swift runtime's libraries copied into the guest), not a whole
  # release build (10-20 minutes on 2 cores). It is slower in the emulated guest, so the
  # guest gets more time: about 330 s on a quiet machine, 600 s with both cores busy
  # (the guest's own waits are bounded well inside that).
  step "BLE VM: two scmesh nodes" env SWIFT_PACKAGE="$PWD" SWIFT_PRODUCT=scmesh SWIFT_SCRATCH="$PWD/.build" SWIFT_CONFIG=debug SWIFT_PREBUILT=1 \
    QEMU_TIMEOUT=900 GUEST_TEST=scripts/ble-vm/guest-scmesh.sh scripts/ble-vm/run.sh
  # The HTTP API against two real node processes: the dashboard in headless Chromium
  # (DOM asserts, screenshot in .build/artefacts/dashboard.png), the messenger driven by
  # Playwright, and a schemathesis OpenAPI conformance run. Installs chromium,
  # playwright and schemathesis when missing.
  # SCMESH: the binary `swift build` made, so the script builds nothing (a build of one
  # product would compile much of the package again, and `swift test` then back).
  step "test-dashboard.sh" with_fuzz_build_paused env SCMESH="$PWD/.build/debug/scmesh" scripts/test-dashboard.sh
  # Coverage-guided fuzzing: every libFuzzer target briefly (a crash, leak or timeout
  # fails the run; scripts/fuzz.sh TARGET --seconds N for a long run). A debug build of
  # the fuzzers (built in the background since `swift build`): about 3 minutes instead
  # of 6-7 for a smoke run of a few seconds each.
  step "fuzz.sh (waits for its build)" fuzz_smoke
fi

# The flood and memory-bound tests (issue 16) push hundreds of connections and hundreds
# of MiB through the node; they run on their own after the rest, so the rest's hang
# guards never measure a machine they saturate.
HEAVY="MemoryBoundTests|TCPHostilePeerTests"
# At most 12 tests at once: with every test started together, two cores' worth of
# cooperative threads starve the process and router tests past their hang guards; 12
# at once finishes as soon and without those timeouts.
WIDTH=(--experimental-maximum-parallelization-width 12)

# A hang guard. A test run whose every cooperative-pool thread is blocked (a test
# blocking one while it waits for a server in the same process, on a 2-core machine)
# never ends by itself: CI would wait out its 90 minutes and print nothing useful. Past
# its limit the run is stopped, and the tests that had started but not finished are
# named. The limits are many times a normal run.
guarded_swift_test() {
  local limit=$1
  shift
  local log status=0
  log=$(mktemp)
  timeout --kill-after=30 "$limit" swift test "$@" 2>&1 | tee "$log" || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "test.sh: swift test $* did not finish within $limit s (a test hangs, or starves the others);"
    echo "test.sh: started and not finished:"
    awk '
      { line = $0; sub(/^[^A-Za-z]*Test /, "", line) }
      / started\.$/ { sub(/ started\.$/, "", line); open[line] = 1; next }
      / (passed|failed|skipped)( |\.|$)/ { sub(/ (with [0-9]+ test cases? )?(passed|failed|skipped).*$/, "", line); delete open[line] }
      END { for (name in open) print "  " name }
    ' "$log"
  fi
  rm -f "$log"
  return "$status"
}

if [ $# -eq 0 ]; then
  step "swift test (build and run)" guarded_swift_test 1200 --skip "$HEAVY" "${WIDTH[@]}"
  step "swift test: heavy suites" guarded_swift_test 600 --skip-build --filter "$HEAVY"
else
  step "swift test $*" guarded_swift_test 3600 "$@" "${WIDTH[@]}"
fi
