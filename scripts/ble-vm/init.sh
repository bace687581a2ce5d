#!/bin/sh
# Guest /init for the BLE VM (busybox). Loads Bluetooth, starts two virtual controllers
# (hci0, hci1) with BlueZ's btvirt, powers them on as LE-only controllers through mgmt
# (no bluetoothd), starts a pairing agent, runs /guest-test.sh and powers off.
# Markers on the console: GUEST-INIT-START, GUEST-TEST-START, GUEST-RESULT PASS|FAIL.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
up() { cut -d' ' -f1 /proc/uptime; }
echo "GUEST-INIT-START uptime=$(up)"
M=/lib/modules/$(uname -r)/kernel
for m in $(cat /modlist); do insmod $M/$m.ko || echo "insmod $m failed"; done
[ -c /dev/vhci ] || echo "no /dev/vhci"
btvirt -l2 > /tmp/btvirt.log 2>&1 & BTV=$!
i=0; while [ ! -e /sys/class/bluetooth/hci1 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
btmon -w /tmp/btmon.snoop > /dev/null 2>&1 & BTMON=$!
sleep 0.3
for h in 0 1; do
  btmgmt -i hci$h le on >/dev/null; btmgmt -i hci$h bredr off >/dev/null
  btmgmt -i hci$h connectable on >/dev/null
  btmgmt -i hci$h io-cap 3 >/dev/null; btmgmt -i hci$h bondable on >/dev/null; btmgmt -i hci$h sc on >/dev/null
  btmgmt -i hci$h power on >/dev/null
done
cocecho agent & AGENT=$!
echo "GUEST-TEST-START uptime=$(up)"
if sh /guest-test.sh; then R=PASS; else R=FAIL; fi
if [ $R = FAIL ]; then
  echo "--- btvirt log"; tail -20 /tmp/btvirt.log
  echo "--- btmon tail"; btmon -r /tmp/btmon.snoop 2>&1 | tail -80
  echo "--- dmesg tail"; dmesg | tail -20
fi
kill $AGENT $BTMON $BTV 2>/dev/null
echo "GUEST-RESULT $R uptime=$(up)"
sync; poweroff -f
