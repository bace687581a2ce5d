# Guest test (runs inside the BLE VM as /guest-test.sh; exit 0 = pass).
# 1. Two BLETransports, hci0 (accepts) and hci1 (dials): each must see the other's
#    advertisement, then they open an LE credit-based channel and exchange frames both ways,
#    including a message several times the channel MTU.
# 2. Benchmark, same boot: the plain C LE CoC echo (cocecho) and BLETransport, round trip
#    and echoed bulk throughput.
set -u
echo "=== transport test: hci0 accepts, hci1 dials"
ble-vm-test accept --adapter hci0 > /tmp/accept.log 2>&1 & A=$!
ble-vm-test dial --adapter hci1; D=$?
wait $A; AR=$?
cat /tmp/accept.log
if [ $D != 0 ] || [ $AR != 0 ]; then echo "transport test FAILED (dial=$D accept=$AR)"; exit 1; fi
echo "GUEST-TRANSPORT-PASS"

echo "=== benchmark: plain C LE CoC echo (cocecho), hci1 -> hci0, PSM 0x0085"
cocecho server 0 0x0085 > /tmp/cocecho-server.log 2>&1 & C=$!
sleep 0.2
cocecho bench 1 0 0x0085 200 300000 || echo "cocecho bench failed"
kill $C 2>/dev/null
echo "=== benchmark: BLETransport, hci1 -> hci0, PSM 0x0086"
ble-vm-test accept --adapter hci0 --psm 0x86 > /tmp/bench-accept.log 2>&1 & A=$!
ble-vm-test bench --adapter hci1 --psm 0x87 --rtt 200 --bulk 300000 || echo "BLETransport bench failed"
wait $A
exit 0
