#!/bin/bash
# A system D-Bus and an avahi-daemon limited to the loopback interface, for the
# single-host mDNS tests (Tests/TransportMDNSTests) and local node runs.
#
#   loopback.sh start        install what is missing, start the system bus (unless one
#                            already answers) and an avahi-daemon on `lo` only
#   loopback.sh stop         stop what `start` started (by PID), nothing else
#   loopback.sh stop-avahi   stop only our avahi-daemon (the bus stays)
#   loopback.sh start-avahi  start only our avahi-daemon (the bus must run)
#   loopback.sh status       say what runs
#   loopback.sh install      only install the packages when missing (netns.sh uses it)
#
# The daemon uses the standard system bus (/run/dbus/system_bus_socket), so clients
# need no environment. It never touches a real interface: allow-interfaces=lo,
# IPv4 only, wide-area off. If some other avahi-daemon already owns the bus name,
# `start` refuses (it might be publishing on a real network) and says how to proceed.
# State (PIDs, config, logs) lives in $SCMESH_AVAHI_DIR (default /tmp/scmesh-avahi).
set -euo pipefail

DIR=${SCMESH_AVAHI_DIR:-/tmp/scmesh-avahi}
BUS_SOCKET=/run/dbus/system_bus_socket

log() { echo "scmesh-avahi: $*" >&2; }

need_install() {
  command -v avahi-daemon >/dev/null 2>&1 || return 0
  command -v avahi-browse >/dev/null 2>&1 || return 0
  command -v avahi-publish >/dev/null 2>&1 || return 0
  command -v dbus-daemon >/dev/null 2>&1 || return 0
  command -v dbus-send >/dev/null 2>&1 || return 0
  command -v pkg-config >/dev/null 2>&1 || return 0
  pkg-config --exists avahi-client || return 0
  return 1
}

install_packages() {
  if need_install; then
    log "installing avahi-daemon avahi-utils dbus libavahi-client-dev pkg-config"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # policy-rc.d stops the package scripts from starting a daemon on the real interfaces
    local policy=/usr/sbin/policy-rc.d created_policy=0
    if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created_policy=1; fi
    apt-get install -y -qq --no-install-recommends avahi-daemon avahi-utils dbus libavahi-client-dev pkg-config >/dev/null
    if [ "$created_policy" = 1 ]; then rm -f "$policy"; fi
  fi
}

bus_answers() {
  [ -S "$BUS_SOCKET" ] && timeout 5 dbus-send --system --print-reply --dest=org.freedesktop.DBus \
    /org/freedesktop/DBus org.freedesktop.DBus.GetId >/dev/null 2>&1
}

avahi_on_bus() {
  timeout 5 dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Avahi 2>/dev/null | grep -q 'boolean true'
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

alive() { [ -f "$1" ] && running "$(cat "$1")"; }

start_bus() {
  if bus_answers; then
    if alive "$DIR/dbus.pid"; then log "system bus already running (ours, pid $(cat "$DIR/dbus.pid"))"
    else log "using the system bus that already runs (not ours: stop will leave it)"; fi
    return
  fi
  # a stopped dbus-daemon leaves its pid file and socket behind
  rm -f /run/dbus/pid "$BUS_SOCKET"
  mkdir -p /run/dbus
  local pid
  spawn "$DIR/dbus.log" dbus-daemon --system --nofork
  pid=$SPAWNED
  echo "$pid" >"$DIR/dbus.pid"
  for _ in $(seq 100); do bus_answers && break; sleep 0.05; done
  bus_answers || { log "dbus-daemon (pid $pid) started but does not answer on $BUS_SOCKET"; exit 1; }
  log "started system bus (pid $pid)"
}

write_config() {
  cat >"$DIR/avahi-daemon.conf" <<CONF
# scmesh test daemon: loopback only, never a real interface
[server]
use-ipv4=yes
use-ipv6=no
allow-interfaces=lo
allow-point-to-point=no
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-aaaa-on-ipv4=no
publish-hinfo=no
publish-workstation=no
[reflector]
enable-reflector=no
CONF
}

start_avahi() {
  if alive "$DIR/avahi.pid" && avahi_on_bus; then
    log "avahi-daemon already running (ours, pid $(cat "$DIR/avahi.pid"))"; return
  fi
  if avahi_on_bus; then
    log "another avahi-daemon (not started by this script) owns org.freedesktop.Avahi on the system bus;"
    log "it may publish on real interfaces. Stop it (or use scripts/avahi/netns.sh) and run start again."
    exit 1
  fi
  write_config
  # no -D: we keep the PID ourselves; setsid so the daemon outlives this shell's job control
  spawn "$DIR/avahi.log" setsid avahi-daemon --no-chroot --no-rlimits -f "$DIR/avahi-daemon.conf"
  echo "$SPAWNED" >"$DIR/avahi.pid"
  for _ in $(seq 200); do avahi_on_bus && grep -q 'Server startup complete' "$DIR/avahi.log" && break; sleep 0.05; done
  if ! avahi_on_bus; then log "avahi-daemon did not come up; its log:"; cat "$DIR/avahi.log" >&2; exit 1; fi
  log "started avahi-daemon on lo (pid $(cat "$DIR/avahi.pid"), log $DIR/avahi.log)"
}

stop_pidfile() {
  local file=$1 what=$2
  if [ -f "$file" ]; then
    local pid; pid=$(cat "$file")
    if running "$pid"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do running "$pid" || break; sleep 0.05; done
      running "$pid" && kill -9 "$pid" 2>/dev/null || true
      log "stopped $what (pid $pid)"
    fi
    rm -f "$file"
  fi
}

stop_avahi() { stop_pidfile "$DIR/avahi.pid" avahi-daemon; }

stop_bus() {
  if [ -f "$DIR/dbus.pid" ]; then
    stop_pidfile "$DIR/dbus.pid" dbus-daemon
    rm -f /run/dbus/pid "$BUS_SOCKET"
  fi
}

status() {
  if bus_answers; then echo "system bus: answers$(alive "$DIR/dbus.pid" && echo " (ours, pid $(cat "$DIR/dbus.pid"))")"; else echo "system bus: not running"; fi
  if avahi_on_bus; then echo "avahi-daemon: on the bus$(alive "$DIR/avahi.pid" && echo " (ours, pid $(cat "$DIR/avahi.pid"))")"; else echo "avahi-daemon: not on the bus"; fi
}

mkdir -p "$DIR"
case "${1:-}" in
  start) install_packages; start_bus; start_avahi ;;
  stop) stop_avahi; stop_bus ;;
  start-avahi) start_avahi ;;
  stop-avahi) stop_avahi ;;
  status) status ;;
  install) install_packages ;;
  *) echo "usage: $0 start|stop|start-avahi|stop-avahi|status|install" >&2; exit 2 ;;
esac
