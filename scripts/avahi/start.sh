#!/bin/bash
# Start a system D-Bus and a loopback-only avahi-daemon for the mDNS tests (see loopback.sh).
exec "$(dirname "$0")/loopback.sh" start
