# Guest test with two whole SCMesh nodes (runs inside the BLE VM as /guest-test.sh).
# Use: SWIFT_PACKAGE=<repo> SWIFT_PRODUCT=scmesh GUEST_TEST=scripts/ble-vm/guest-scmesh.sh scripts/ble-vm/run.sh
# Node A on hci0, node B on hci1, BLE the only transport: they discover each other's
# advertisement, open an LE channel, run the Noise XX handshake, and exchange messages
# both ways, one of them several times the channel MTU. Exit 0 = pass.
set -u
A=/tmp/node-a; B=/tmp/node-b
ONLY_BLE="--set transports.loopback.enabled=false --set transports.tcp.enabled=false --set transports.mdns.enabled=false"
IDA=$(scmesh identity --data-dir $A) || { echo "scmesh identity failed"; exit 1; }
IDB=$(scmesh identity --data-dir $B) || exit 1
echo "node A $IDA on hci0, node B $IDB on hci1"
scmesh run --data-dir $A $ONLY_BLE --set transports.ble.adapter=hci0 > /tmp/node-a.log 2>&1 & PA=$!
scmesh run --data-dir $B $ONLY_BLE --set transports.ble.adapter=hci1 > /tmp/node-b.log 2>&1 & PB=$!
fail() {
  echo "FAILED: $*"
  echo "--- node A log"; tail -30 /tmp/node-a.log
  echo "--- node B log"; tail -30 /tmp/node-b.log
  scmesh status --data-dir $A 2>&1 | head -20
  kill $PA $PB 2>/dev/null; exit 1
}
# Wait (at most 30 s) until each node has the other as a peer over BLE.
i=0
until scmesh peers --data-dir $A --json 2>/dev/null | grep -q "$IDB" &&
      scmesh peers --data-dir $B --json 2>/dev/null | grep -q "$IDA"; do
  i=$((i + 1)); [ $i -gt 60 ] && fail "the nodes did not become peers within 30 s"; sleep 0.5
done
echo "peers after ~$((i / 2)) s:"; scmesh peers --data-dir $A
scmesh send --data-dir $A "$IDB" "hello B, this is A over BLE" || fail "send A->B"
scmesh send --data-dir $B "$IDA" "hello A, this is B over BLE" || fail "send B->A"
head -c 2500 /dev/zero | tr '\0' 'm' > /tmp/big
scmesh send --data-dir $A "$IDB" - < /tmp/big || fail "send 2500 bytes A->B"
scmesh send --data-dir $B "$IDA" - < /tmp/big || fail "send 2500 bytes B->A"
# `scmesh send` returns once the message is queued; wait (at most 30 s) until both
# 2500-byte messages are in the inboxes.
i=0
until scmesh inbox --data-dir $B --json 2>/dev/null | grep -q '"bytes":2500' &&
      scmesh inbox --data-dir $A --json 2>/dev/null | grep -q '"bytes":2500'; do
  i=$((i + 1)); [ $i -gt 60 ] && fail "the messages did not arrive within 30 s"; sleep 0.5
done
scmesh inbox --data-dir $B | cut -c1-110; scmesh inbox --data-dir $A | cut -c1-110
scmesh inbox --data-dir $B --json | grep -q '"text":"hello B, this is A over BLE"' || fail "B did not get A's text"
scmesh inbox --data-dir $A --json | grep -q '"text":"hello A, this is B over BLE"' || fail "A did not get B's text"
scmesh inbox --data-dir $B --json | grep -q '"bytes":2500' || fail "B did not get the 2500-byte message"
scmesh inbox --data-dir $A --json | grep -q '"bytes":2500' || fail "A did not get the 2500-byte message"
scmesh inbox --data-dir $B --json | grep -q '"transport":"ble"' || fail "B's messages did not come over BLE"
scmesh status --data-dir $A --json | grep -o '"handshake_failures[a-z_]*":[^,]*\|"links_opened":[0-9]*' | head -4
echo "--- node A log (BLE, links, handshakes):"; grep -iE "ble|handshake|link" /tmp/node-a.log | cut -c1-200 | head -12
kill -TERM $PA $PB; wait $PA; RA=$?; wait $PB; RB=$?
[ $RA = 0 ] && [ $RB = 0 ] || fail "nodes did not shut down cleanly ($RA, $RB)"
echo "GUEST-SCMESH-PASS: two scmesh nodes exchanged messages over BLE (Noise XX links, 2500-byte messages over a 672-byte MTU)"
