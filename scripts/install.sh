#!/usr/bin/env bash
# Builds the extension (release) and installs it into Debian's PostgreSQL 15.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
# A preloaded library must not change under a running server (its
# processes have the old file mapped): stop the throwaway cluster first;
# `scripts/cluster.sh start` brings it back with the new library.
"$ROOT/scripts/cluster.sh" stop
log "building and installing the extension"
if [ -n "$SUDO" ]; then
    cargo pgrx install --release --pg-config "$PG_CONFIG" --sudo
else
    cargo pgrx install --release --pg-config "$PG_CONFIG"
fi
