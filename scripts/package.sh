#!/usr/bin/env bash
# Builds the packages for one PostgreSQL major version ($SIMHASH_PG,
# default 15) into dist/:
#   postgresql-NN-simhash_VERSION_ARCH.deb    for Debian's or PGDG's server
#                                              (apt install ./file.deb)
#   simhash-VERSION-pgNN-linux-ARCH.tar.gz    for any other installation:
#                                              lib/, extension/ and install.sh
# Both hold the library, the control file, the install script of this
# version and of every earlier one (CREATE EXTENSION ... VERSION '0.1.0'
# works) and every upgrade script.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
require_pg

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
dist="$ROOT/dist"
mkdir -p "$dist"
pkglibdir=$("$PG_CONFIG" --pkglibdir)
extdir="$("$PG_CONFIG" --sharedir)/extension"

log "building simhash $version for PostgreSQL $PG_MAJOR (release)"
out="$ROOT/target/package-pg$PG_MAJOR"
rm -rf "$out"
cargo pgrx package --pg-config "$PG_CONFIG" --no-default-features --features "pg$PG_MAJOR" \
    --out-dir "$out" >/dev/null
# The first release's base script, from which PostgreSQL installs any
# earlier version with the update scripts (cargo pgrx packages only the
# current one and the update scripts).
for f in "$ROOT"/sql/simhash--[0-9]*.sql; do
    case $(basename "$f") in
        simhash--*--*) ;;
        *) cp "$f" "$out$extdir/" ;;
    esac
done
[ -f "$out$pkglibdir/simhash.so" ] || die "the build did not produce $out$pkglibdir/simhash.so"

# The tarball: relative paths, and an installer that checks the version.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
name="simhash-$version-pg$PG_MAJOR-linux-$arch"
mkdir -p "$stage/$name/lib" "$stage/$name/extension"
cp "$out$pkglibdir/simhash.so" "$stage/$name/lib/"
cp "$out$extdir"/simhash* "$stage/$name/extension/"
cat > "$stage/$name/install.sh" <<SH
#!/bin/sh
# Installs simhash $version into the PostgreSQL $PG_MAJOR whose pg_config is
# first on PATH (or given as \$PG_CONFIG). Run as a user who may write there.
set -eu
here=\$(cd "\$(dirname "\$0")" && pwd)
pg_config=\${PG_CONFIG:-pg_config}
major=\$("\$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\\1/')
if [ "\$major" != "$PG_MAJOR" ]; then
    echo "error: this package is built for PostgreSQL $PG_MAJOR, but \$pg_config is PostgreSQL \$major;" >&2
    echo "use the package for PostgreSQL \$major, or set PG_CONFIG to PostgreSQL $PG_MAJOR's pg_config" >&2
    exit 1
fi
install -m 755 "\$here/lib/simhash.so" "\$("\$pg_config" --pkglibdir)/"
install -m 644 "\$here"/extension/* "\$("\$pg_config" --sharedir)/extension/"
echo "simhash $version installed into PostgreSQL $PG_MAJOR (\$("\$pg_config" --pkglibdir))"
SH
chmod 755 "$stage/$name/install.sh"
tar -C "$stage" -czf "$dist/$name.tar.gz" "$name"
log "built $dist/$name.tar.gz"

# The .deb, only for the standard Debian/PGDG layout.
if [ "$pkglibdir" != "/usr/lib/postgresql/$PG_MAJOR/lib" ]; then
    log "no .deb: $PG_CONFIG is not a Debian or PGDG server (its libraries are in $pkglibdir)"
    exit 0
fi
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (Debian package dpkg)"
deb="$stage/deb"
mkdir -p "$deb/DEBIAN"
cp -a "$out/." "$deb/"
find "$deb" -type d -exec chmod 755 {} +
find "$deb/usr" -type f -exec chmod 644 {} +
chmod 755 "$deb$pkglibdir/simhash.so"
size=$(du -sk "$deb/usr" | cut -f1)
cat > "$deb/DEBIAN/control" <<CONTROL
Package: postgresql-$PG_MAJOR-simhash
Version: $version
Architecture: $arch
Maintainer: simhash developers
Depends: postgresql-$PG_MAJOR, libc6 (>= 2.34)
Installed-Size: $size
Section: database
Priority: optional
Description: SimHash near-duplicate text search for PostgreSQL $PG_MAJOR
 The simhash64 type, simhash(text) fingerprints (Chinese and English),
 Hamming distance with band-index lookups, whole-table clustering and a
 near-unique trigger. Add simhash to shared_preload_libraries, restart,
 then CREATE EXTENSION simhash.
CONTROL
debfile="$dist/postgresql-${PG_MAJOR}-simhash_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$deb" "$debfile" >/dev/null
log "built $debfile"
