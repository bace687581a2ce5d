#!/bin/bash
# Two "hosts" for mDNS tests: network namespaces joined by one veth pair, each with its
# own D-Bus system bus and avahi-daemon limited to its veth end. Nothing touches the
# machine's real interfaces; traffic stays on the veth pair (10.213.0.0/24, or IPv6
# link-local with IP_MODE=ipv6).
#
#   netns.sh up                  create the namespaces, start both buses and daemons
#   netns.sh exec H CMD...       run CMD in host H (1 or 2, or its namespace name) with
#                                DBUS_SYSTEM_BUS_ADDRESS pointing at H's bus (the script
#                                execs into CMD, so its PID is CMD's)
#   netns.sh link H down|up      take H's veth end down / up (peers lose / re-find each other)
#   netns.sh addr H              print H's address (10.213.0.N, or fe80::...%vethN)
#   netns.sh addr2 H             print H's address on the second pair (10.214.0.N; SECOND_PAIR=yes)
#   netns.sh link2 H down|up     take H's end of the second pair down / up (SECOND_PAIR=yes)
#   netns.sh status              what runs
#   netns.sh test                self-check: avahi-publish in each host, avahi-browse -rpt from
#                                the other, then veth down -> gone, up -> found again
#   netns.sh down                stop our daemons by PID, delete the namespaces (idempotent)
#
# Environment: SCMESH_NETNS_PREFIX (default "scmesh"; namespaces are PREFIX-h1, PREFIX-h2),
# SCMESH_NETNS_DIR (state, default /tmp/PREFIX-netns), IP_MODE=ipv4 (default) | ipv6,
# SECOND_PAIR=yes: `up` also joins the hosts by a second veth pair (vethNb, 10.214.0.N/24)
# that the avahi-daemons do not use - a path for plain TCP that mDNS never sees, so a test
# can take the mDNS path down while the TCP one stays (pass SECOND_PAIR=yes to every call).
#
# How: a dbus-daemon per host listening on $DIR/hN/system_bus_socket; avahi-daemon and
# libavahi-client both honour DBUS_SYSTEM_BUS_ADDRESS. avahi-daemon keeps its pid file
# at the fixed /run/avahi-daemon, so it runs under `ip netns exec` (a private mount
# namespace) with a tmpfs mounted on /run. use-iff-running=yes makes a daemon drop its
# interface (and flush what it learnt there) when the carrier goes, so taking one veth end
# down makes *both* sides lose each other, as a lost Wi-Fi link would.
# Each daemon has its own host name (else one is
# renamed "-2"), allow-interfaces=vethN, wide-area off, and publish-aaaa-on-ipv4=no (else
# a fe80:: AAAA record crosses over IPv4 mDNS and may be what a resolver hands back).
set -euo pipefail

PREFIX=${SCMESH_NETNS_PREFIX:-scmesh}
DIR=${SCMESH_NETNS_DIR:-/tmp/$PREFIX-netns}
IP_MODE=${IP_MODE:-ipv4}
HERE=$(cd "$(dirname "$0")" && pwd)
N1=$PREFIX-h1 N2=$PREFIX-h2
SECOND_PAIR=${SECOND_PAIR:-no}
declare -A NS=([1]=$N1 [2]=$N2) IF=([1]=veth1 [2]=veth2) IP=([1]=10.213.0.1 [2]=10.213.0.2)
declare -A IF2=([1]=veth1b [2]=veth2b) IP2=([1]=10.214.0.1 [2]=10.214.0.2)

log() { echo "scmesh-netns: $*" >&2; }
bus() { echo "unix:path=$DIR/h$1/system_bus_socket"; }

# host argument: 1, 2, h1, h2 or the namespace name
host() {
  case "$1" in
    1|h1|"$N1") echo 1 ;;
    2|h2|"$N2") echo 2 ;;
    *) log "unknown host '$1' (use 1 or 2)"; exit 2 ;;
  esac
}

# Whether PID $1 runs (a zombie waiting for its reaper counts as gone).
running() {
  local state
  state=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# Runs "$@" in the background with stdin from /dev/null, stdout+stderr to the log file $1,
# no other inherited descriptor (a daemon holding a caller's pipe would keep that
# caller - a test harness, CI - waiting for EOF) and default signal handling.
# Sets SPAWNED to its PID.
spawn() {
  local log=$1; shift
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ] 2>/dev/null; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    # A caller may block or ignore signals (threads of a Swift test process block
    # SIGTERM, and children inherit the mask): give the daemon a clean slate so that
    # `stop` can end it with SIGTERM. perl-base is Essential on Debian.
    if command -v perl >/dev/null 2>&1; then
      exec perl -MPOSIX -e '$SIG{$_} = "DEFAULT" for qw(TERM INT HUP PIPE);
        sigprocmask(SIG_SETMASK, POSIX::SigSet->new) or die "sigprocmask: $!";
        exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!"' "$@" >"$log" 2>&1 </dev/null
    fi
    exec "$@" >"$log" 2>&1 </dev/null
  ) &
  SPAWNED=$!
}

exists() { ip netns list 2>/dev/null | grep -qw "$1"; }

up() {
  if exists "$N1" || exists "$N2"; then log "namespaces already exist; run '$0 down' first"; exit 1; fi
  command -v ip >/dev/null || { apt-get update -qq && apt-get install -y -qq iproute2 >/dev/null; }
  "$HERE/loopback.sh" install
  mkdir -p "$DIR"
  ip netns add "$N1"
  ip netns add "$N2"
  ip link add veth1 netns "$N1" type veth peer name veth2 netns "$N2"
  if [ "$SECOND_PAIR" = yes ]; then
    ip link add veth1b netns "$N1" type veth peer name veth2b netns "$N2"
    for h in 1 2; do
      ip -n "${NS[$h]}" addr add "${IP2[$h]}/24" dev "${IF2[$h]}"
      ip -n "${NS[$h]}" link set "${IF2[$h]}" up
    done
  fi
  local use_v4=yes use_v6=no
  [ "$IP_MODE" = ipv6 ] && { use_v4=no; use_v6=yes; }
  for h in 1 2; do
    local ns=${NS[$h]} dev=${IF[$h]}
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf."$dev".disable_ipv6=0 || true
    [ "$IP_MODE" = ipv6 ] && ip netns exec "$ns" sysctl -qw net.ipv6.conf."$dev".accept_dad=0 || true
    [ "$IP_MODE" = ipv4 ] && ip -n "$ns" addr add "${IP[$h]}/24" dev "$dev"
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$dev" up multicast on
    mkdir -p "$DIR/h$h"; chmod 755 "$DIR/h$h"
    cat >"$DIR/h$h/dbus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>$(bus $h)</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
CONF
    cat >"$DIR/h$h/avahi.conf" <<CONF
[server]
host-name=$PREFIX-h$h
use-ipv4=$use_v4
use-ipv6=$use_v6
allow-interfaces=$dev
use-iff-running=yes
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-aaaa-on-ipv4=no
publish-a-on-ipv6=no
publish-hinfo=no
publish-workstation=no
[reflector]
enable-reflector=no
CONF
    rm -f "$DIR/h$h/system_bus_socket"
    spawn "$DIR/h$h/dbus.log" ip netns exec "$ns" dbus-daemon --config-file="$DIR/h$h/dbus.conf" --nofork --nopidfile
    echo "$SPAWNED" >"$DIR/h$h/dbus.pid"
    for _ in $(seq 100); do [ -S "$DIR/h$h/system_bus_socket" ] && break; sleep 0.05; done
    # exec chain ip -> sh -> avahi-daemon keeps $! the daemon's PID
    spawn "$DIR/h$h/avahi.log" ip netns exec "$ns" env DBUS_SYSTEM_BUS_ADDRESS="$(bus $h)" sh -c \
      "mount -t tmpfs -o size=1m,mode=755 $PREFIX-run /run && exec avahi-daemon --no-chroot --no-rlimits -f $DIR/h$h/avahi.conf"
    echo "$SPAWNED" >"$DIR/h$h/avahi.pid"
  done
  for h in 1 2; do
    for _ in $(seq 200); do grep -q 'Server startup complete' "$DIR/h$h/avahi.log" && break; sleep 0.05; done
    grep -q 'Server startup complete' "$DIR/h$h/avahi.log" || { cat "$DIR/h$h/avahi.log" >&2; log "avahi-daemon in ${NS[$h]} did not start"; exit 1; }
  done
  log "up: ${NS[1]} ($(addr 1)) and ${NS[2]} ($(addr 2)), daemons: h1 dbus=$(cat "$DIR/h1/dbus.pid") avahi=$(cat "$DIR/h1/avahi.pid"), h2 dbus=$(cat "$DIR/h2/dbus.pid") avahi=$(cat "$DIR/h2/avahi.pid")"
}

addr() {
  local h; h=$(host "$1")
  if [ "$IP_MODE" = ipv6 ]; then
    local a; a=$(ip -n "${NS[$h]}" -6 -o addr show dev "${IF[$h]}" scope link | awk '{print $4}' | cut -d/ -f1 | head -1)
    echo "$a%${IF[$h]}"
  else
    echo "${IP[$h]}"
  fi
}

addr2() {
  [ "$SECOND_PAIR" = yes ] || { log "addr2 needs SECOND_PAIR=yes"; exit 2; }
  echo "${IP2[$(host "$1")]}"
}

link2() {
  [ "$SECOND_PAIR" = yes ] || { log "link2 needs SECOND_PAIR=yes"; exit 2; }
  local h; h=$(host "$1")
  case "$2" in
    up|down) ip -n "${NS[$h]}" link set "${IF2[$h]}" "$2" ;;
    *) log "link2 H up|down"; exit 2 ;;
  esac
}

hexec() {
  local h; h=$(host "$1"); shift
  ip netns exec "${NS[$h]}" env DBUS_SYSTEM_BUS_ADDRESS="$(bus $h)" "$@"
}

link() {
  local h; h=$(host "$1")
  case "$2" in
    up|down) ip -n "${NS[$h]}" link set "${IF[$h]}" "$2" ;;
    *) log "link H up|down"; exit 2 ;;
  esac
}

status() {
  for h in 1 2; do
    if exists "${NS[$h]}"; then
      local d a
      d=$(running "$(cat "$DIR/h$h/dbus.pid" 2>/dev/null)" && echo running || echo stopped)
      a=$(running "$(cat "$DIR/h$h/avahi.pid" 2>/dev/null)" && echo running || echo stopped)
      echo "${NS[$h]}: $(ip -n "${NS[$h]}" -br link show "${IF[$h]}" | awk '{print $2}') $(addr $h) dbus=$d avahi=$a"
    else
      echo "${NS[$h]}: absent"
    fi
  done
}

# wait until `avahi-browse -pt` run in host $1 does (want=1) / does not (want=0) list $2
wait_browse() {
  local h=$1 name=$2 want=$3
  for _ in $(seq 100); do
    if hexec "$h" avahi-browse -pt _scmesh._tcp 2>/dev/null | grep -q ";$name;"; then
      [ "$want" = 1 ] && return 0
    else
      [ "$want" = 0 ] && return 0
    fi
    sleep 0.2
  done
  return 1
}

test_() {
  local rc=0 pids=()
  for h in 1 2; do
    spawn "$DIR/pub$h.log" ip netns exec "${NS[$h]}" env DBUS_SYSTEM_BUS_ADDRESS="$(bus $h)" \
      avahi-publish -s "selftest-h$h" _scmesh._tcp "700$h" v=1 "id=h$h"
    pids+=("$SPAWNED")
  done
  for h in 1 2; do
    local other=$((3 - h)) t0 t1
    t0=$(date +%s%N)
    local line; line=$(hexec "$other" avahi-browse -rpt _scmesh._tcp | grep "^=.*;selftest-h$h;" || true)
    t1=$(date +%s%N)
    if echo "$line" | grep -q ";700$h;"; then echo "h$other resolves selftest-h$h: $line ($(( (t1 - t0) / 1000000 )) ms)"
    else echo "FAIL: h$other does not resolve selftest-h$h"; rc=1; fi
  done
  link 1 down
  if wait_browse 2 selftest-h1 0; then echo "veth1 down: h2 lost selftest-h1"; else echo "FAIL: h2 still lists selftest-h1 after veth1 down"; rc=1; fi
  link 1 up
  if wait_browse 2 selftest-h1 1; then echo "veth1 up: h2 found selftest-h1 again"; else echo "FAIL: h2 did not find selftest-h1 after veth1 up"; rc=1; fi
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  return $rc
}

down() {
  for h in 1 2; do
    for d in avahi dbus; do
      local f="$DIR/h$h/$d.pid"
      if [ -f "$f" ]; then
        local pid; pid=$(cat "$f")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 60); do running "$pid" || break; sleep 0.05; done
        running "$pid" && kill -9 "$pid" 2>/dev/null || true
        rm -f "$f"
      fi
    done
    rm -f "$DIR/h$h/system_bus_socket"
    exists "${NS[$h]}" && ip netns del "${NS[$h]}"   # its veth end goes, and the peer with it
  done
  # `ip netns add` made /run/netns a mount point; undo it when no namespace is left
  if [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then umount /run/netns 2>/dev/null || true; rmdir /run/netns 2>/dev/null || true; fi
  log "down"
}

case "${1:-}" in
  up) up ;;
  # exec, not a child: the caller's PID is CMD's (a test can signal the command it started)
  exec) shift; [ $# -ge 2 ] || { log "exec H CMD..."; exit 2; }; h=$(host "$1"); shift
        exec ip netns exec "${NS[$h]}" env DBUS_SYSTEM_BUS_ADDRESS="$(bus "$h")" "$@" ;;
  link) shift; link "$@" ;;
  addr) shift; addr "$1" ;;
  addr2) shift; addr2 "$1" ;;
  link2) shift; link2 "$@" ;;
  status) status ;;
  test) test_ ;;
  down) down ;;
  *) echo "usage: $0 up|exec H CMD...|link H up|down|link2 H up|down|addr H|addr2 H|status|test|down" >&2; exit 2 ;;
esac
