#!/usr/bin/env bash
# Builds the extension (release) and installs it into Debian's PostgreSQL 15.
#
# Files are put in place by rename, never overwritten: a server that has the
# old library mapped (every server with it in shared_preload_libraries)
# would crash if the file changed under it. Such a server keeps running the
# old code until it restarts; `scripts/cluster.sh start` restarts the
# throwaway cluster.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
log "building the extension (release)"
out="$ROOT/target/package"
cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$out" >/dev/null
log "installing it into PostgreSQL $PG_MAJOR"
(cd "$out" && find . -type f) | while read -r f; do
    dest="/${f#./}"
    $SUDO mkdir -p "$(dirname "$dest")"
    $SUDO cp "$out/$f" "$dest.new.$$"
    $SUDO chmod 644 "$dest.new.$$"
    $SUDO mv -f "$dest.new.$$" "$dest"
done
