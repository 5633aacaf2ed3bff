#!/usr/bin/env bash
# Builds the extension (release) and installs it into Debian's PostgreSQL 15.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
log "building and installing the extension"
if [ -n "$SUDO" ]; then
    cargo pgrx install --release --pg-config "$PG_CONFIG" --sudo
else
    cargo pgrx install --release --pg-config "$PG_CONFIG"
fi
