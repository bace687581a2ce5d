#!/bin/bash
# scripts/ble-vm/run.sh -- run SCMesh's BLE transport on a real Linux Bluetooth stack.
#
# The host kernels here have no Bluetooth (socket(AF_BLUETOOTH) -> EAFNOSUPPORT), so this
# boots Debian bookworm's stock 6.1 kernel under qemu (TCG: software emulation) with a busybox
# initramfs, creates two virtual LE controllers (hci0, hci1) with BlueZ's btvirt (they share
# one in-process radio) and runs a guest test script on them. Nothing is installed on the
# host: qemu, the kernel and the BlueZ tools are `apt-get download`ed and unpacked under
# $BLE_VM_DIR (default <repo>/.vm/ble-vm, git-ignored) once, and reused.
#
# Default guest test (scripts/ble-vm/guest-test.sh): two BLETransport instances, one per
# controller, see each other's advertisement, open an LE credit-based channel and exchange
# frames both ways, then benchmark it next to a plain C LE CoC echo (cocecho.c) in the same boot.
#
# Swapping the guest workload (e.g. two full `scmesh` nodes):
#   SWIFT_PACKAGE=<dir with Package.swift>   package to build   (default the repository)
#   SWIFT_PRODUCT=<executable product>       binary put in the guest's /usr/bin (default ble-vm-test)
#   GUEST_TEST=<sh script>                   run in the guest as /guest-test.sh; exit 0 = pass
#   SWIFT_SCRATCH=<dir>                      build directory (default $BLE_VM_DIR/build-<product>)
#   SWIFT_PREBUILT=1                         do not build: $SWIFT_SCRATCH/$SWIFT_CONFIG/$SWIFT_PRODUCT
#                                            is current (scripts/test.sh, right after its swift build)
#   SWIFT_CONFIG=release|debug               build configuration (default release, static
#                                            Swift stdlib, as the benchmarks need; debug links
#                                            the stdlib dynamically and copies its libraries
#                                            into the guest, so the test script can use the
#                                            repository's own .build as `swift build` left it)
#   EXTRA_BINS="<host paths>"                more binaries for the guest's /usr/bin
#   BENCH_ROUNDS=N                           also benchmark (guest sees scmesh.bench=N)
#   BENCH_SET=links|nodes                    which benchmark (default links: the raw link loops;
#                                            nodes: two routers with a node's stack, scmesh.benchset=)
# Needs on the host: apt-get with Debian bookworm sources ('apt-get update' done), dpkg-deb,
# gcc (static glibc), swift, libbluetooth-dev (for the Swift build).
# Exit status 0 and last line PASS when the guest test passed; 1 and FAIL otherwise.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
VM=${BLE_VM_DIR:-$REPO/.vm/ble-vm}
SWIFT_PACKAGE=${SWIFT_PACKAGE:-$REPO}
SWIFT_PRODUCT=${SWIFT_PRODUCT-ble-vm-test}
SWIFT_SCRATCH=${SWIFT_SCRATCH:-$VM/build-$SWIFT_PRODUCT}
SWIFT_CONFIG=${SWIFT_CONFIG:-release}
case "$SWIFT_CONFIG" in release|debug) ;; *) echo "[ble-vm] SWIFT_CONFIG must be release or debug, not '$SWIFT_CONFIG'" >&2; echo FAIL; exit 1;; esac
GUEST_TEST=${GUEST_TEST:-$HERE/guest-test.sh}
EXTRA_BINS=${EXTRA_BINS:-}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-300}
# Absolute paths: the script works in $VM from here on.
SWIFT_PACKAGE=$(cd "$SWIFT_PACKAGE" 2>/dev/null && pwd) || { echo "[ble-vm] no package directory" >&2; echo FAIL; exit 1; }
GUEST_TEST=$(cd "$(dirname "$GUEST_TEST")" 2>/dev/null && pwd)/$(basename "$GUEST_TEST")
BENCH_ROUNDS=${BENCH_ROUNDS:-0}
BENCH_SET=${BENCH_SET:-links}
mkdir -p "$VM" && cd "$VM" || exit 1
log() { echo "[ble-vm] $*" >&2; }
fail() { log "$*"; echo FAIL; exit 1; }
T_START=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# --- 1. kernel, qemu and BlueZ tools: download + unpack once ---------------------------------
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$KPKG" ]; then
  # apt lists missing (fresh machine): fall back to what is cached, else update once.
  KPKG=$(ls debs/linux-image-*.deb 2>/dev/null | sed -n 's|debs/\(linux-image-[^_]*\)_.*|\1|p' | head -1)
  if [ -z "$KPKG" ]; then
    apt-get update >/dev/null 2>&1
    KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  fi
fi
[ -n "$KPKG" ] || fail "cannot resolve linux-image-amd64 (run apt-get update)"
KV=${KPKG#linux-image-}
PKGS="$KPKG busybox-static bluez bluez-test-tools libbluetooth-dev qemu-system-x86 qemu-system-common
 qemu-system-data seabios ipxe-qemu libaio1 libbrlapi0.8 libcacard0 libcapstone4 libdaxctl1 libepoxy0
 libfdt1 libfuse3-3 libibverbs1 libndctl6 libpmem1 librdmacm1 libslirp0 libsndio7.0 libspice-server1
 liburing2 libusb-1.0-0 libusbredirparser1 libvdeplug2 libnl-3-200 libnl-route-3-200 libopus0
 liborc-0.4-0 libexecs0 libgstreamer-plugins-base1.0-0 libglib2.0-0 libdbus-1-3 libreadline8 libdw1
 libasound2 libudev1 libelf1"
mkdir -p debs host kernel
if [ ! -f debs/.done-$KV ]; then
  log "downloading debs ($KPKG, qemu-system-x86, bluez, bluez-test-tools, ...) ~90 MB, once"
  (cd debs && apt-get download $PKGS >/dev/null 2>dl.err) || fail "apt-get download failed: $(tail -3 debs/dl.err)"
  touch debs/.done-$KV
fi
if [ ! -f host/.done-$KV ]; then
  for f in debs/*.deb; do case $f in *linux-image*) ;; *) dpkg-deb -x "$f" host ;; esac; done
  touch host/.done-$KV
fi
# Module order matters: drbg (stdrng) before ecdh_generic, or SMP cannot create its ECDH
# context; btvirt needs AF_ALG (af_alg, algif_skcipher, algif_hash, ecb, cmac).
MODS="lib/crc16 net/rfkill/rfkill crypto/sha3_generic crypto/jitterentropy_rng crypto/sha512_generic
 crypto/ctr crypto/drbg crypto/ecc crypto/ecdh_generic crypto/ecb crypto/cmac crypto/af_alg
 crypto/algif_hash crypto/algif_skcipher net/bluetooth/bluetooth drivers/bluetooth/hci_vhci"
if [ ! -f kernel/.done-$KV ]; then
  rm -rf kernel; mkdir -p kernel
  dpkg-deb --fsys-tarfile debs/${KPKG}_*.deb | tar -x -C kernel --wildcards './boot/*' \
    $(for m in $MODS; do echo ./lib/modules/$KV/kernel/$m.ko; done) || fail "kernel extraction failed"
  touch kernel/.done-$KV
fi
for o in CONFIG_BT CONFIG_BT_LE CONFIG_BT_HCIVHCI; do
  grep -qE "^$o=[ym]" kernel/boot/config-$KV || fail "kernel $KV lacks $o"
done
QEMU=$VM/host/usr/bin/qemu-system-x86_64
QEMU_LIBS=$VM/host/usr/lib/x86_64-linux-gnu:$VM/host/lib/x86_64-linux-gnu
LD_LIBRARY_PATH=$QEMU_LIBS $QEMU --version >/dev/null || fail "unpacked qemu does not run"

# --- 2. guest programs: the C baseline and the Swift test binary (static Swift stdlib) -------
mkdir -p bin
if [ ! -x bin/cocecho ] || [ "$HERE/cocecho.c" -nt bin/cocecho ]; then
  gcc -O2 -Wall -static -I host/usr/include -o bin/cocecho "$HERE/cocecho.c" -lpthread || fail "gcc cocecho failed"
fi
SWIFT_BIN=
if [ -n "$SWIFT_PRODUCT" ]; then
  # Release: the Swift stdlib linked in statically (what the benchmarks measured). Debug:
  # linked dynamically, as a plain `swift build` links it, so the build directory can be
  # the package's own (objects built for a static stdlib cannot be linked dynamically
  # afterwards); the Swift runtime's shared libraries go into the guest with the others.
  STATIC=(--static-swift-stdlib)
  [ "$SWIFT_CONFIG" = debug ] && STATIC=()
  if [ "${SWIFT_PREBUILT:-0}" = 1 ]; then
    # The caller has just built the package (scripts/test.sh's `swift build`): a build of
    # one product in the same directory would compile much of it again (SwiftPM plans a
    # single product differently from the whole package, and the next whole build would
    # compile it back).
    SWIFT_BIN=$SWIFT_SCRATCH/$SWIFT_CONFIG/$SWIFT_PRODUCT
    [ -x "$SWIFT_BIN" ] || fail "SWIFT_PREBUILT=1 but no binary at $SWIFT_BIN (run swift build first)"
    log "using the prebuilt $SWIFT_BIN"
  else
    log "swift build -c $SWIFT_CONFIG ${STATIC[*]} ($SWIFT_PRODUCT in $SWIFT_PACKAGE)"
    T_BUILD=$(date +%s.%N)
    # SwiftPM caches the build plan of a path dependency: a source file added to it would
    # not be compiled. Dropping the plan makes it look again (objects stay). The
    # repository's own package is the root, not a dependency: its plan is kept.
    [ "$SWIFT_PACKAGE" = "$REPO" ] || rm -f "$SWIFT_SCRATCH/$SWIFT_CONFIG.yaml"
    swift build -c "$SWIFT_CONFIG" "${STATIC[@]}" --package-path "$SWIFT_PACKAGE" \
      --scratch-path "$SWIFT_SCRATCH" --product "$SWIFT_PRODUCT" > swift-build.log 2>&1 ||
      { tail -30 swift-build.log >&2; fail "swift build failed (log: $VM/swift-build.log)"; }
    SWIFT_BIN=$SWIFT_SCRATCH/$SWIFT_CONFIG/$SWIFT_PRODUCT
    [ -x "$SWIFT_BIN" ] || fail "no binary at $SWIFT_BIN"
    log "swift build: $(elapsed "$T_BUILD")s"
  fi
fi

# --- 3. initramfs: busybox, BlueZ tools + their libraries, modules, programs, /init ------------
rm -rf initrd; mkdir -p initrd/{bin,sbin,usr/bin,usr/sbin,lib/x86_64-linux-gnu,lib64,proc,sys,dev,tmp,run,etc}
cp host/bin/busybox initrd/bin/
for a in $(initrd/bin/busybox --list); do [ -e initrd/bin/$a ] || ln -s busybox initrd/bin/$a; done
cp host/usr/bin/btvirt host/usr/bin/btmgmt host/usr/bin/btmon host/usr/bin/hcitool host/usr/bin/l2test host/usr/bin/gatttool \
  bin/cocecho $SWIFT_BIN initrd/usr/bin/ || fail "copying guest programs failed"
for b in $EXTRA_BINS; do cp "$b" initrd/usr/bin/ || fail "missing $b"; done
# Resource bundles (e.g. MeshNode's built-in config) must sit next to the executable.
[ -n "$SWIFT_BIN" ] && for r in "$(dirname "$SWIFT_BIN")"/*.resources; do [ -d "$r" ] && cp -r "$r" initrd/usr/bin/; done
[ -n "$SWIFT_PRODUCT" ] && strip initrd/usr/bin/$SWIFT_PRODUCT 2>/dev/null
for b in initrd/usr/bin/*; do LD_LIBRARY_PATH=$QEMU_LIBS ldd "$b" 2>/dev/null | awk '/=> \//{print $3}'; done | sort -u |
  while read -r l; do cp -L "$l" initrd/lib/x86_64-linux-gnu/; done
cp -L /lib64/ld-linux-x86-64.so.2 initrd/lib64/
echo $MODS | tr ' ' '\n' > initrd/modlist
for m in $MODS; do
  mkdir -p initrd/lib/modules/$KV/kernel/$(dirname $m)
  cp kernel/lib/modules/$KV/kernel/$m.ko initrd/lib/modules/$KV/kernel/$m.ko || fail "missing module $m"
done
cp "$HERE/init.sh" initrd/init && chmod +x initrd/init
cp "$GUEST_TEST" initrd/guest-test.sh || fail "no guest test $GUEST_TEST"
(cd initrd && find . | ../host/bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 > ../initrd.gz) || fail "cpio failed"
log "prepared in $(elapsed "$T_START")s (initramfs $(du -h initrd.gz | cut -f1))"

# --- 4. boot, run the guest test, collect its verdict -------------------------------------------
# The guest's stock 6.1 kernel has known L2CAP races (list corruption when a channel is torn
# down while another connects; fixed upstream in bluetooth-next in 2026). When the guest test
# fails *and* the guest kernel oopsed, the run is repeated once, saying so; a failure
# without a kernel oops, or a second one, fails the run.
for attempt in 1 2; do
  S=$(date +%s.%N)
  LD_LIBRARY_PATH=$QEMU_LIBS timeout "$QEMU_TIMEOUT" $QEMU -L host/usr/share/qemu -L host/usr/share/seabios \
    -accel tcg -smp 1 -m 512 -nographic -no-reboot -net none \
    -kernel kernel/boot/vmlinuz-$KV -initrd initrd.gz \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 scmesh.bench=$BENCH_ROUNDS scmesh.benchset=$BENCH_SET" </dev/null > boot.raw 2>&1
  rc=$?
  tr -d '\r' < boot.raw | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' > boot.log
  sed -n '/GUEST-INIT-START/,/GUEST-RESULT/p' boot.log
  log "qemu rc=$rc; boot + test + poweroff $(elapsed "$S")s; whole run $(elapsed "$T_START")s"
  if grep -q 'GUEST-RESULT PASS' boot.log; then echo PASS; exit 0; fi
  grep -q GUEST-INIT-START boot.log || tail -30 boot.log >&2
  if [ $attempt = 1 ] && grep -qE 'list_del corruption|__list_del_entry_valid|kernel BUG at|Oops:|BUG:|general protection fault|invalid opcode: 0000' boot.log; then
    cp boot.log boot-oops.log
    log "the guest kernel oopsed during the test (log kept in $VM/boot-oops.log): $(grep -m1 -E 'list_del corruption|Oops:|BUG:|general protection fault|RIP:' boot.log)"
    log "that is the guest kernel's Bluetooth stack, not the code under test; running the guest test once more"
    continue
  fi
  break
done
echo FAIL
exit 1
