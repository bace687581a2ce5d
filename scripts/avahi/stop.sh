#!/bin/bash
# Stop what start.sh started (see loopback.sh).
exec "$(dirname "$0")/loopback.sh" stop
