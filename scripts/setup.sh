#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages SCMesh needs. Idempotent: prints nothing and
# touches nothing when everything is installed; runs `apt-get update` only when
# something is missing.
#
#   scripts/setup.sh          packages the build needs
#   scripts/setup.sh --test   also the packages the tests use (daemons, ip netns)
set -euo pipefail

# The build: pkg-config finds the C libraries the system-library targets wrap.
BUILD_PACKAGES=(pkg-config libsodium-dev libavahi-client-dev libbluetooth-dev libsqlite3-dev)
# The tests: a real avahi-daemon on a private D-Bus (TransportMDNS), network
# namespaces joined by veth pairs (multi-host tests).
TEST_PACKAGES=(avahi-daemon avahi-utils dbus iproute2)
# The QR encoder's tests (invitations): an independent decoder, zbarimg, reads the
# symbols the encoder renders.
TEST_PACKAGES+=(zbar-tools)
# The service unit's test: systemd-analyze verifies Config/scmesh.service.
TEST_PACKAGES+=(systemd)
# The test script's lint and the dashboard test's checks and schemathesis (pip).
TEST_PACKAGES+=(python3 python3-pip)

packages=("${BUILD_PACKAGES[@]}")
case "${1:-}" in
  --test) packages+=("${TEST_PACKAGES[@]}") ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
esac

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for package in "${packages[@]}"; do
  installed "$package" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing ${missing[*]}, and this system has no apt-get; install them with its package manager" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: run as root (or install sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
# Daemons are started by the tests themselves, never by the package's postinst.
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
