#!/usr/bin/env bash
# End-to-end test of the new-transport command plugin (Plugins/NewTransport), in a
# temporary copy of the package so the work tree is never touched:
#   1. refusals: a bad name, an existing transport, a file in the way -> non-zero exit,
#      one line, nothing written;
#   2. `new-transport Demo` creates the module, the test, the config example and the
#      Package.swift entries;
#   3. `swift build --target TransportDemo` succeeds with no warning in generated code;
#   4. the generated conformance test runs and FAILS with the message pointing at the TODO;
#   5. with its TODOs filled in (a process-local medium, below), it PASSES the conformance
#      suite: the skeleton's shape (listen, dial, track/forget, the link) is sound.
# Where the system allows it (root: a mount namespace and an overlay mount), the "copy" is an
# overlay mount over the package root in a private mount namespace: the same paths as
# the package's own build, so its .build is reused and only the generated targets are
# compiled (about 30 s). Everything written lands in a temporary upper directory; the
# work tree and its .build stay as they were, even when the script is killed. Elsewhere
# (or with SCMESH_PLUGIN_COPY=1) it is a real copy, where MeshCore, MeshTesting and
# their dependencies are compiled again (about 2 minutes on 2 cores).
#
# Usage: scripts/test-plugin.sh [PACKAGE_ROOT]   (default: this repository)
# SCMESH_KEEP_TMP=1 keeps the temporary copy (or overlay upper directory) for a look.
set -euo pipefail

root="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
start=$SECONDS
failures=0
pass() { echo "test-plugin: ok - $*"; }
fail() { echo "test-plugin: FAILED - $*" >&2; failures=$((failures + 1)); }
die() { echo "test-plugin: FAILED - $*" >&2; exit 1; }

# The package must declare the plugin and the two marker lines it edits at.
grep -q 'verb: "new-transport"' "$root/Package.swift" ||
  die "Package.swift declares no plugin with verb \"new-transport\" (Plugins/NewTransport/NewTransport.swift shows the declaration)"
for marker in '// scmesh:new-transport-products' '// scmesh:new-transport-targets'; do
  grep -q "^[[:space:]]*$marker\$" "$root/Package.swift" || die "Package.swift has no '$marker' line (Plugins/NewTransport/NewTransport.swift says where it goes)"
done

if [[ "${SCMESH_PLUGIN_IN_OVERLAY:-}" == 1 ]]; then
  # Re-run of this script inside the private mount namespace: $root is the overlay.
  cd "$root"
else
  tmp="$(mktemp -d /tmp/scmesh-plugin-XXXXXX)"
  if [[ "${SCMESH_KEEP_TMP:-}" == 1 ]]; then
    echo "test-plugin: keeping $tmp"
  else
    trap 'rm -rf "$tmp"' EXIT
  fi
  if [[ "${SCMESH_PLUGIN_COPY:-}" != 1 ]] && unshare --mount --propagation private true 2>/dev/null; then
    # Exit status 97: no overlay mount here (not root); anything else is the checks' own.
    mkdir -p "$tmp/upper" "$tmp/work"
    rc=0
    unshare --mount --propagation private bash -c '
      mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$1" 2>/dev/null || exit 97
      SCMESH_PLUGIN_IN_OVERLAY=1 exec bash "$3" "$1"' _ "$root" "$tmp" "$root/scripts/test-plugin.sh" || rc=$?
    [[ $rc -eq 97 ]] || exit $rc
    rm -rf "$tmp/upper" "$tmp/work"
  fi
  echo "test-plugin: no overlay mount here; working in a copy (its build takes about 2 minutes)"
  copy="$tmp/SCMesh"
  mkdir -p "$copy"
  (cd "$root" && tar --exclude='.build*' --exclude='.git' --exclude='.swiftpm' --exclude='.vm' -cf - .) |
    (cd "$copy" && tar -xf -)
  cd "$copy"
fi

plugin() { swift package --allow-writing-to-package-directory new-transport "$@"; }
fingerprint() { find Sources Tests Config Package.swift -type f -print0 | sort -z | xargs -0 md5sum | md5sum; }

# expect_refusal NAME PATTERN: non-zero exit, exactly one error line matching PATTERN, no change.
expect_refusal() {
  local name="$1" pattern="$2" before after out rc=0
  before="$(fingerprint)"
  out="$(plugin "$name" 2>&1)" || rc=$?
  after="$(fingerprint)"
  if [[ $rc -eq 0 ]]; then
    fail "new-transport '$name' exited 0, expected a refusal"
  elif [[ "$(grep -c '^error:' <<<"$out")" -ne 1 ]] || ! grep -q "^error: .*$pattern" <<<"$out"; then
    fail "new-transport '$name': expected one 'error: ...$pattern...' line, got: $out"
  elif [[ "$before" != "$after" ]]; then
    fail "new-transport '$name' refused but changed files"
  else
    pass "refuses '$name': $(grep '^error:' <<<"$out")"
  fi
}

expect_refusal "demo" "not a valid transport name"
expect_refusal "Lo-Ra" "not a valid transport name"
expect_refusal "TCP" "exists"
expect_refusal "Loopback" "exists"
mkdir -p Config/examples && echo "# in the way" >Config/examples/collide.yaml
expect_refusal "Collide" "never overwrites"
rm Config/examples/collide.yaml

out="$(plugin Demo 2>&1)" || die "new-transport Demo failed: $out"
for file in Sources/TransportDemo/DemoTransport.swift Sources/TransportDemo/DemoLink.swift \
  Sources/TransportDemo/DemoTransport+Configuration.swift \
  Tests/TransportDemoTests/DemoConformanceTests.swift Config/examples/demo.yaml; do
  [[ -s "$file" ]] || fail "new-transport Demo did not create $file"
done
grep -q 'TransportConformance.run(.demo())' Tests/TransportDemoTests/DemoConformanceTests.swift ||
  fail "the generated test does not call the conformance suite in one line"
grep -q '^  demo:$' Config/examples/demo.yaml || fail "Config/examples/demo.yaml has no transports.demo section"
# Each entry sits directly above its marker.
grep -B1 'scmesh:new-transport-products' Package.swift |
  grep -q '\.library(name: "TransportDemo", targets: \["TransportDemo"\]),' ||
  fail "Package.swift: no TransportDemo product above the products marker"
grep -B1 'scmesh:new-transport-targets' Package.swift |
  grep -q '\.testTarget(name: "TransportDemoTests", dependencies: \["TransportDemo", "MeshCore", "MeshTesting"\]),' ||
  fail "Package.swift: no TransportDemoTests test target above the targets marker"
grep -q 'name: "TransportDemo",' Package.swift || fail "Package.swift: no TransportDemo target"
[[ $failures -eq 0 ]] && pass "new-transport Demo created the module, test, config example and Package.swift entries"
expect_refusal "Demo" "exists"

if build="$(swift build --target TransportDemo 2>&1)"; then
  if grep -E 'TransportDemo/.*(warning|error):' <<<"$build"; then
    fail "the generated module compiles with warnings"
  else
    pass "swift build --target TransportDemo (no warnings)"
  fi
else
  echo "$build" | tail -30 >&2
  fail "swift build --target TransportDemo failed"
fi

# Run the generated test with only the targets it needs: the generated manifest plus
# a filter appended at its end (the entries the plugin wrote stay as they are).
cat >>Package.swift <<'SWIFT'

// scripts/test-plugin.sh: keep only the generated module, its test and what they need.
let keptTargets: Set<String> = ["MeshCore", "TransportLoopback", "MeshTesting", "TransportDemo", "TransportDemoTests"]
package.targets.removeAll { !keptTargets.contains($0.name) }
package.products.removeAll { !keptTargets.contains($0.name) }
SWIFT
rc=0
test_out="$(swift test --filter TransportDemoTests 2>&1)" || rc=$?
todo='TODO: implement dial in Sources/TransportDemo/DemoTransport.swift'
if grep -E 'TransportDemoTests/.*(warning|error):' <<<"$test_out"; then
  fail "the generated test compiles with warnings or errors"
elif [[ $rc -eq 0 ]]; then
  fail "the generated conformance test passed before any I/O was written"
elif ! grep -q "Test conformance() recorded an issue" <<<"$test_out" || ! grep -qF "$todo" <<<"$test_out"; then
  echo "$test_out" | tail -30 >&2
  fail "the generated conformance test did not fail with '$todo'"
elif ! grep -q "configurationDefaultsAreValidAndRangesAreChecked() passed" <<<"$test_out"; then
  fail "the generated configuration test did not pass"
else
  pass "the generated conformance test fails with '$todo'"
fi

# Fill the TODOs with a process-local medium (listeners by address; a connection is a
# bounded channel each way) and expect the conformance suite to pass. Each replacement
# must match exactly once, so a template change that breaks this shape fails here.
cat >Sources/TransportDemo/DemoMedium.swift <<'SWIFT'
import MeshCore
import Synchronization

/// A process-local medium: listeners by address; a connection is a bounded channel each way.
final class DemoMedium: Sendable {
    static let shared = DemoMedium()
    private let listeners = Mutex<[String: AsyncStream<DemoConnection>.Continuation]>([:])

    func listen(_ address: String) -> AsyncStream<DemoConnection> {
        let (stream, continuation) = AsyncStream.makeStream(of: DemoConnection.self)
        listeners.withLock { $0[address] = continuation }
        return stream
    }

    func close(_ address: String) {
        listeners.withLock { $0.removeValue(forKey: address) }?.finish()
    }

    func connect(_ address: String) throws -> DemoConnection {
        let forward = BoundedChannel<[UInt8]>(capacity: 16)
        let backward = BoundedChannel<[UInt8]>(capacity: 16)
        guard let listener = listeners.withLock({ $0[address] }),
            case .enqueued = listener.yield(DemoConnection(inbound: forward, outbound: backward))
        else { throw MeshError(.dialFailed, "nothing listens at demo://\(address)") }
        return DemoConnection(inbound: backward, outbound: forward)
    }
}

/// One end of a connection.
struct DemoConnection: Sendable {
    let inbound: BoundedChannel<[UInt8]>
    let outbound: BoundedChannel<[UInt8]>

    func close() {
        inbound.finish()
        outbound.finish()
    }
}
SWIFT
replace_once() { # replace_once FILE OLD NEW
  OLD="$2" NEW="$3" perl -0777 -i -pe '$n += s/\Q$ENV{OLD}\E/$ENV{NEW}/g; END { exit($n == 1 ? 0 : 1) }' "$1" ||
    fail "filling the TODOs: '$(head -1 <<<"$2")' is not in $1 exactly once"
}
transport=Sources/TransportDemo/DemoTransport.swift
link=Sources/TransportDemo/DemoLink.swift
replace_once $transport '            // TODO: accept in a child task until cancelled; wrap each connection in a
            // DemoLink, `track` it (close it when that fails) and report it:
            //   group.addTask { for await connection in ... { context.report(.inboundLink(link)) } }
' '            group.addTask {
                for await connection in connections {
                    let link = DemoLink(remoteAddress: "inbound", mtu: self.configuration.mtu, connection: connection) {
                        [weak self] in self?.forget($0)
                    }
                    if self.track(link) { context.report(.inboundLink(link)) } else { await link.close() }
                }
            }
'
# The listener opens before `.listening` is reported (the template's first TODO): the
# conformance harness dials side B as soon as it is reported.
replace_once $transport '        // TODO: open the medium at `configuration.listen` (nothing when it is empty: a
        // dial-only node). When the medium is missing here:' \
  '        let connections = DemoMedium.shared.listen(configuration.listen)
        // (A process-local medium is never missing.)'
replace_once $transport '            // TODO: close the listener, so the accept loop ends.' \
  '            DemoMedium.shared.close(configuration.listen)'
replace_once $transport '        throw MeshError(.dialFailed, "TODO: implement dial in Sources/TransportDemo/DemoTransport.swift")' \
  '        let connection = try DemoMedium.shared.connect(hint.address)
        let link = DemoLink(remoteAddress: hint.address, mtu: configuration.mtu, connection: connection) { [weak self] in self?.forget($0) }
        guard track(link) else {
            await link.close()
            throw MeshError(.notRunning, "demo transport stopped")
        }
        return link'
replace_once $link '    // TODO: the connection handle (file descriptor, channel, ...).' '    private let connection: DemoConnection'
replace_once $link 'init(remoteAddress: String, mtu: Int, onClose: @escaping @Sendable (LinkID) -> Void) {' \
  'init(remoteAddress: String, mtu: Int, connection: DemoConnection, onClose: @escaping @Sendable (LinkID) -> Void) {
        self.connection = connection'
replace_once $link '        throw MeshError(.linkClosed, "TODO: implement send in Sources/TransportDemo/DemoLink.swift")' \
  '        guard await connection.outbound.send(frame) else {
            throw MeshError(.linkClosed, "demo link to \(remoteAddress) is closed")
        }'
replace_once $link '        throw MeshError(.linkClosed, "TODO: implement receive in Sources/TransportDemo/DemoLink.swift")' \
  '        return await connection.inbound.receive()'
replace_once $link '        // TODO: shut the connection down, so a pending receive() here and the remote'"'"'s
        // receive() return nil, then release the handle.' '        connection.close()'
rc=0
filled_out="$(swift test --filter TransportDemoTests 2>&1)" || rc=$?
if [[ $rc -ne 0 ]] || grep -E 'TransportDemo(Tests)?/.*(warning|error):' <<<"$filled_out"; then
  echo "$filled_out" | grep -vE '^(\[|Building|Compiling)' | tail -30 >&2
  fail "with its TODOs filled in (a process-local medium), the generated transport does not pass the conformance suite"
else
  pass "with its TODOs filled in (a process-local medium), the generated transport passes the conformance suite"
fi

elapsed=$((SECONDS - start))
if [[ $failures -ne 0 ]]; then
  echo "test-plugin: $failures check(s) failed (${elapsed}s)" >&2
  exit 1
fi
echo "test-plugin: all checks passed (${elapsed}s)"
