# Guest test with two whole SCMesh nodes (runs inside the BLE VM as /guest-test.sh).
# Use: SWIFT_PACKAGE=<repo> SWIFT_PRODUCT=scmesh GUEST_TEST=scripts/ble-vm/guest-scmesh.sh scripts/ble-vm/run.sh
# Node A on hci0, node B on hci1, BLE the only transport: they discover each other's
# advertisement, open an LE channel, run the Noise XX handshake, and exchange messages
# both ways, one of them several times the channel MTU. Exit 0 = pass.
set -u
A=/tmp/node-a; B=/tmp/node-b
ONLY_BLE="--set transports.loopback.enabled=false --set transports.tcp.enabled=false --set transports.mdns.enabled=false"
# Where the guest's time goes (printed in scripts/test.sh's log): the uptime at each part.
stamp() { echo "--- uptime $(cut -d' ' -f1 /proc/uptime) s: $*"; }
stamp "start"; scmesh --version >/dev/null; stamp "one scmesh process (scmesh --version) done"
IDA=$(scmesh identity --create --data-dir $A) || { echo "scmesh identity failed"; exit 1; }
IDB=$(scmesh identity --create --data-dir $B) || exit 1
stamp "identities of A and B"; echo "node A $IDA on hci0, node B $IDB on hci1"
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
stamp "A and B are peers"; scmesh peers --data-dir $A
scmesh send --data-dir $A "$IDB" "hello B, this is A over BLE" || fail "send A->B"
scmesh send --data-dir $B "$IDA" "hello A, this is B over BLE" || fail "send B->A"
head -c 2500 /dev/zero | tr '\0' 'm' > /tmp/big
scmesh send --data-dir $A "$IDB" - < /tmp/big || fail "send 2500 bytes A->B"
scmesh send --data-dir $B "$IDA" - < /tmp/big || fail "send 2500 bytes B->A"
# `scmesh send` returns once the message is queued; wait (at most 30 s) until both
# 2500-byte messages are in the inboxes.
i=0
# (Every scmesh command is a process start of a debug binary under emulation, seconds
# each: the inboxes are read once per poll and the checks read those copies.)
until scmesh inbox --data-dir $B --json > /tmp/inbox-b.json 2>/dev/null && grep -q '"bytes":2500' /tmp/inbox-b.json &&
      scmesh inbox --data-dir $A --json > /tmp/inbox-a.json 2>/dev/null && grep -q '"bytes":2500' /tmp/inbox-a.json; do
  i=$((i + 1)); [ $i -gt 60 ] && fail "the messages did not arrive within 30 s"; sleep 0.5
done
stamp "both 2500-byte messages arrived"; cut -c1-300 /tmp/inbox-b.json; cut -c1-300 /tmp/inbox-a.json
grep -q '"text":"hello B, this is A over BLE"' /tmp/inbox-b.json || fail "B did not get A's text"
grep -q '"text":"hello A, this is B over BLE"' /tmp/inbox-a.json || fail "A did not get B's text"
grep -q '"transport":"ble"' /tmp/inbox-b.json || fail "B's messages did not come over BLE"
scmesh status --data-dir $A --json | grep -o '"handshake_failures[a-z_]*":[^,]*\|"links_opened":[0-9]*' | head -4
echo "--- node A log (BLE, links, handshakes):"; grep -iE "ble|handshake|link" /tmp/node-a.log | cut -c1-200 | head -12
# A power profile paces the radio: pinned to minimal, A's BLE transport takes the new
# scan duty cycle and advertising interval at once (its log says so, at most 30 s).
scmesh power --data-dir $A --profile minimal > /tmp/power-a.txt || fail "scmesh power --profile minimal"
i=0
until grep -q "BLE: pacing scan 4000/30 ms, advertising every 2000 ms at -8 dBm" /tmp/node-a.log; do
  i=$((i + 1)); [ $i -gt 60 ] && fail "node A did not apply the minimal profile's BLE pacing within 30 s"; sleep 0.5
done
grep -q "refused the scan interval\|could not advertise with the new pacing" /tmp/node-a.log && fail "the kernel refused the paced values"
stamp "A paced its radio for the minimal profile"; grep "BLE: pacing" /tmp/node-a.log | cut -c1-200
kill -TERM $PA $PB; wait $PA; RA=$?; wait $PB; RB=$?
[ $RA = 0 ] && [ $RB = 0 ] || fail "nodes did not shut down cleanly ($RA, $RB)"
echo "GUEST-SCMESH-PASS: two scmesh nodes exchanged messages over BLE (Noise XX links, 2500-byte messages over a 672-byte MTU)"

# --- GATT (same boot): node D on hci1 speaks GATT only (data_path gatt: no L2CAP
# listener); node C on hci0 (auto) finds its channel refused and falls back to GATT, and
# D dials C's GATT server. Handshake and messages both ways, one larger than the ATT MTU.
C=/tmp/node-c; D=/tmp/node-d
IDC=$(scmesh identity --create --data-dir $C) || exit 1
IDD=$(scmesh identity --create --data-dir $D) || exit 1
echo "=== GATT: node C $IDC on hci0 (auto), node D $IDD on hci1 (data_path gatt)"
scmesh run --data-dir $C $ONLY_BLE --set transports.ble.adapter=hci0 > /tmp/node-c.log 2>&1 & PA=$!
scmesh run --data-dir $D $ONLY_BLE --set transports.ble.adapter=hci1 --set transports.ble.data_path=gatt > /tmp/node-d.log 2>&1 & PB=$!
cp /tmp/node-c.log /tmp/node-a.log 2>/dev/null
gfail() { cp /tmp/node-c.log /tmp/node-a.log; cp /tmp/node-d.log /tmp/node-b.log; fail "GATT: $*"; }
i=0
until scmesh peers --data-dir $C --json 2>/dev/null | grep -q "$IDD" &&
      scmesh peers --data-dir $D --json 2>/dev/null | grep -q "$IDC"; do
  i=$((i + 1)); [ $i -gt 90 ] && gfail "C and D did not become peers within 45 s"; sleep 0.5
done
stamp "C and D are peers"; scmesh peers --data-dir $D
# Log lines so far: the links' start (where both nodes' dials meet and the core closes
# the duplicate) is behind; no link may go down after it.
LC=$(wc -l < /tmp/node-c.log); LD=$(wc -l < /tmp/node-d.log)
scmesh peers --data-dir $D --json | grep -q '/gatt"' || gfail "D's link is not a GATT link"
scmesh send --data-dir $C "$IDD" "hello D, this is C over GATT" || gfail "send C->D"
scmesh send --data-dir $D "$IDC" "hello C, this is D over GATT" || gfail "send D->C"
head -c 3000 /dev/zero | tr '\0' 'g' > /tmp/big3000
scmesh send --data-dir $C "$IDD" - < /tmp/big3000 || gfail "send 3000 bytes C->D"
scmesh send --data-dir $D "$IDC" - < /tmp/big3000 || gfail "send 3000 bytes D->C"
i=0
until scmesh inbox --data-dir $D --json > /tmp/inbox-d.json 2>/dev/null && grep -q '"bytes":3000' /tmp/inbox-d.json &&
      scmesh inbox --data-dir $C --json > /tmp/inbox-c.json 2>/dev/null && grep -q '"bytes":3000' /tmp/inbox-c.json; do
  # A hang guard, not a speed check: over GATT in the emulated guest the 3000-byte
  # messages take tens of seconds.
  i=$((i + 1)); [ $i -gt 180 ] && gfail "the GATT messages did not arrive within 90 s"; sleep 0.5
done
grep -q '"text":"hello D, this is C over GATT"' /tmp/inbox-d.json || gfail "D did not get C's text"
grep -q '"text":"hello C, this is D over GATT"' /tmp/inbox-c.json || gfail "C did not get D's text"
# Both nodes dial, so one ATT bearer carries a link each way and the core closes one as
# a duplicate; that close must leave the bearer, and the link kept, up.
downs=$( { tail -n +$((LC + 1)) /tmp/node-c.log; tail -n +$((LD + 1)) /tmp/node-d.log; } | grep "over ble down" | cut -c1-200)
[ -z "$downs" ] || gfail "a GATT link went down: $downs"
stamp "GATT messages arrived"; echo "GUEST-GATT-NODES-PASS: handshake and messages both ways over GATT (3000-byte messages over a 514-byte link MTU)"
echo "--- node C's BLE lines:"; grep -E "BLE|link link" /tmp/node-c.log | cut -c1-220 | head -12
echo "--- node D's BLE lines:"; grep -E "BLE|link link" /tmp/node-d.log | cut -c1-220 | head -12
kill -TERM $PA $PB; wait $PA; wait $PB

# --- GATT then L2CAP (same boot): nodes F (hci0) and G (hci1) both data_path
# gatt_first: their links open over GATT and move to L2CAP 15 s later. Numbered messages
# go both ways before, across and after the move; each must arrive exactly once. The
# first two pairs are queued before the nodes know each other, so they go out over GATT
# as soon as the link is up, however long the guest takes to list the peers. Both nodes
# dial, so closing the duplicate link must not close the shared ATT bearer: no link may
# go down.
F=/tmp/node-f; G=/tmp/node-g
IDF=$(scmesh identity --create --data-dir $F) || exit 1
IDG=$(scmesh identity --create --data-dir $G) || exit 1
MOVE="--set transports.ble.data_path=gatt_first --set transports.ble.move_to_l2cap_after_seconds=15"
echo "=== GATT then L2CAP: node F $IDF on hci0, node G $IDG on hci1 (gatt_first)"
scmesh run --data-dir $F $ONLY_BLE --set transports.ble.adapter=hci0 $MOVE > /tmp/node-f.log 2>&1 & PA=$!
scmesh run --data-dir $G $ONLY_BLE --set transports.ble.adapter=hci1 $MOVE > /tmp/node-g.log 2>&1 & PB=$!
mfail() {
  echo "--- move lines:"; grep -hE "L2CAP|GATT link|link link" /tmp/node-f.log /tmp/node-g.log | cut -c1-220 | tail -20
  cp /tmp/node-f.log /tmp/node-a.log; cp /tmp/node-g.log /tmp/node-b.log; fail "GATT then L2CAP: $*"
}
i=0
until scmesh status --data-dir $F >/dev/null 2>&1 && scmesh status --data-dir $G >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 90 ] && mfail "F and G did not answer within 45 s"; sleep 0.5
done
grep -q "link link" /tmp/node-f.log /tmp/node-g.log && echo "(a link was up before the first messages were queued)"
for n in 1 2; do
  scmesh send --data-dir $F "$IDG" "move F->G $n" >/dev/null || mfail "send F->G $n"
  scmesh send --data-dir $G "$IDF" "move G->F $n" >/dev/null || mfail "send G->F $n"
done
stamp "two pairs queued"
i=0
until scmesh peers --data-dir $F --json 2>/dev/null | grep -q "$IDG" &&
      scmesh peers --data-dir $G --json 2>/dev/null | grep -q "$IDF"; do
  i=$((i + 1)); [ $i -gt 90 ] && mfail "F and G did not become peers within 45 s"; sleep 0.5
done
stamp "F and G are peers"; LF=$(wc -l < /tmp/node-f.log); LG=$(wc -l < /tmp/node-g.log)
# Pairs go on until five after both ends logged the move; a hang guard of 150 s (each
# pair is two process starts of a debug binary in the emulated guest, seconds each)
# fails with the nodes' logs well inside the VM's time.
n=2; moved_at=0; start=$(cut -d. -f1 /proc/uptime)
while [ $n -lt 80 ] && [ $(($(cut -d. -f1 /proc/uptime) - start)) -lt 150 ]; do
  n=$((n + 1))
  timeout 60 scmesh send --data-dir $F "$IDG" "move F->G $n" >/dev/null || mfail "send F->G $n (or no answer in 60 s)"
  timeout 60 scmesh send --data-dir $G "$IDF" "move G->F $n" >/dev/null || mfail "send G->F $n (or no answer in 60 s)"
  if [ $moved_at = 0 ] && grep -q "moved to L2CAP both ways" /tmp/node-f.log && grep -q "moved to L2CAP both ways" /tmp/node-g.log; then
    moved_at=$n
  fi
  [ $moved_at -gt 0 ] && [ $n -ge $((moved_at + 5)) ] && break
  sleep 0.2
done
[ $moved_at -gt 0 ] || mfail "the links did not move to L2CAP while messages were sent ($n pairs in $(($(cut -d. -f1 /proc/uptime) - start)) s)"
stamp "sends done"; echo "sent $n messages each way; both ends had moved to L2CAP by message $moved_at"
i=0
until scmesh inbox --data-dir $G --json > /tmp/inbox-g.json 2>/dev/null &&
      [ "$(grep -o '"text":"move F->G [0-9]*"' /tmp/inbox-g.json | sort -u | wc -l)" = $n ] &&
      scmesh inbox --data-dir $F --json > /tmp/inbox-f.json 2>/dev/null &&
      [ "$(grep -o '"text":"move G->F [0-9]*"' /tmp/inbox-f.json | sort -u | wc -l)" = $n ]; do
  i=$((i + 1)); [ $i -gt 90 ] && mfail "not all $n messages arrived within 45 s"; sleep 0.5
done
dups=$( { grep -o '"text":"move F->G [0-9]*"' /tmp/inbox-g.json; grep -o '"text":"move G->F [0-9]*"' /tmp/inbox-f.json; } | sort | uniq -d | wc -l)
[ "$dups" = 0 ] || mfail "$dups messages arrived more than once"
grep -E "moving to L2CAP|moved to L2CAP" /tmp/node-f.log /tmp/node-g.log | cut -c1-220
downs=$( { tail -n +$((LF + 1)) /tmp/node-f.log; tail -n +$((LG + 1)) /tmp/node-g.log; } | grep "over ble down" | cut -c1-200)
[ -z "$downs" ] || mfail "a link went down while the messages streamed: $downs"
stamp "all moved messages arrived"; echo "GUEST-GATT-MOVE-PASS: links opened over GATT moved to L2CAP; $n messages each way (before, across and after the move) each arrived exactly once"
kill -TERM $PA $PB; wait $PA; wait $PB
# A fresh node E on hci0 with no peer around (nothing on hci1 advertises now), so no
# dial of its own shares the bearer with gatttool.
E=/tmp/node-e
scmesh run --data-dir $E $ONLY_BLE --set transports.ble.adapter=hci0 > /tmp/node-c.log 2>&1 & PA=$!
i=0; until scmesh status --data-dir $E --json 2>/dev/null | grep -q '"running"'; do
  i=$((i + 1)); [ $i -gt 40 ] && gfail "node E did not start"; sleep 0.5; done

# --- gatttool (BlueZ's own client, on hci1) against node C's GATT server.
ADDR=$(btmgmt -i hci0 info | sed -n 's/.*addr \([0-9A-F:]\{17\}\).*/\1/p' | head -1)
stamp "node E running"; echo "=== gatttool -i hci1 -b $ADDR"
gatttool -i hci1 -b "$ADDR" --primary --uuid=6e400001-b5a3-f393-e0a9-e50e24dcca9e > /tmp/gt-primary.log 2>&1
cat /tmp/gt-primary.log
grep -qE "Starting handle: (0x)?0001 Ending handle: (0x)?0008" /tmp/gt-primary.log || gfail "gatttool did not find the service at 0x0001-0x0008"
gatttool -i hci1 -b "$ADDR" --char-read --uuid=6e400004-b5a3-f393-e0a9-e50e24dcca9e > /tmp/gt-identity.log 2>&1
cat /tmp/gt-identity.log
# Identity (docs/PROTOCOL.md §C.1): 01, PSM low byte 81, 8-byte ephemeral ID, PSM 81 00.
grep -qE "handle[:=] 0x0008[[:space:]]+value: 01 81( [0-9a-f]{2}){8} 81 00 *$" /tmp/gt-identity.log || gfail "identity value does not match the documented layout"
gatttool -i hci1 -b "$ADDR" --characteristics > /tmp/gt-chars.log 2>&1; cat /tmp/gt-chars.log
grep -qE "char properties ?[:=] 0x0c, char value handle ?[:=] 0x0003, uuid ?[:=] 6e400002" /tmp/gt-chars.log || gfail "TX declaration"
grep -qE "char properties ?[:=] 0x10, char value handle ?[:=] 0x0005, uuid ?[:=] 6e400003" /tmp/gt-chars.log || gfail "RX declaration"
# One connection: enable RX notifications, then write handshake message 1 (a 32-byte
# ephemeral key) to TX in two packets of the 20-byte link MTU (ATT MTU 23):
# 80 00 20 + 17 bytes, 40 + 15 bytes. Node C answers with message 2 (195 bytes) as RX
# notifications: 80 00 c3 + 17 bytes, nine 00 + 19 bytes, 40 + 7 bytes.
KEY1=$(head -c 17 /dev/urandom | od -An -tx1 | tr -d ' \n'); KEY2=$(head -c 15 /dev/urandom | od -An -tx1 | tr -d ' \n')
( echo connect; sleep 3; echo "char-write-req 0x0006 0100"; sleep 1; echo "char-write-req 0x0003 800020$KEY1"; sleep 1
  echo "char-write-req 0x0003 40$KEY2"; sleep 4; echo disconnect; sleep 1; echo exit ) |
  timeout 20 gatttool -i hci1 -b "$ADDR" -I 2>&1 | tr '\r' '\n' | sed 's/\x1b\[[0-9;]*[a-zA-Z]//g' > /tmp/gt-session.log
grep -E "Connection successful|written successfully|Notification" /tmp/gt-session.log | head -20
[ "$(grep -c "Characteristic value was written successfully" /tmp/gt-session.log)" = 3 ] || gfail "gatttool's CCCD and TX writes were not all acknowledged"
grep "Notification handle = 0x0005" /tmp/gt-session.log | sed 's/.*value: //' > /tmp/gt-notes
head -1 /tmp/gt-notes | grep -q "^80 00 c3" || gfail "the first RX notification is not the first fragment of a 195-byte message 2"
[ "$(grep -c '^00 ' /tmp/gt-notes)" = 9 ] || gfail "expected 9 middle fragments"
tail -1 /tmp/gt-notes | grep -qE "^40( [0-9a-f]{2}){7} *$" || gfail "the last RX notification is not the 7-byte last fragment"
stamp "gatttool done"; echo "GUEST-GATTTOOL-PASS: gatttool found the service, read the identity, subscribed to RX, wrote TX and got message 2 in $(wc -l < /tmp/gt-notes) notifications"
kill -TERM $PA; wait $PA
