#!/usr/bin/env bash
# Builds the extension (release) for PostgreSQL $SIMHASH_PG (default 15)
# and installs it into that server's directories.
#
# Files are put in place by rename, never overwritten: a server that has the
# old library mapped (every server with it in shared_preload_libraries)
# would crash if the file changed under it. Such a server keeps running the
# old code until it restarts; `scripts/cluster.sh start` restarts the
# throwaway cluster.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
require_pg
log "building the extension (release) for PostgreSQL $PG_MAJOR"
out="$ROOT/target/package-pg$PG_MAJOR"
rm -rf "$out"
cargo pgrx package --pg-config "$PG_CONFIG" --no-default-features --features "pg$PG_MAJOR" \
    --out-dir "$out" >/dev/null
log "installing it into PostgreSQL $PG_MAJOR"
(cd "$out" && find . -type f) | while read -r f; do
    dest="/${f#./}"
    $SUDO mkdir -p "$(dirname "$dest")"
    $SUDO cp "$out/$f" "$dest.new.$$"
    $SUDO chmod 644 "$dest.new.$$"
    $SUDO mv -f "$dest.new.$$" "$dest"
done
# The base script of the first release: cargo pgrx packages only the
# current one and the update scripts, and PostgreSQL installs any earlier
# version (`CREATE EXTENSION simhash VERSION '0.3.0'`, the upgrade test)
# from it and the update scripts in turn.
extdir=$($PG_CONFIG --sharedir)/extension
for f in "$ROOT"/sql/simhash--[0-9]*.sql; do
    case $(basename "$f") in
        simhash--*--*) continue ;;
    esac
    $SUDO cp "$f" "$extdir/$(basename "$f").new.$$"
    $SUDO chmod 644 "$extdir/$(basename "$f").new.$$"
    $SUDO mv -f "$extdir/$(basename "$f").new.$$" "$extdir/$(basename "$f")"
done
