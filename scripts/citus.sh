#!/usr/bin/env bash
# Citus for the scale-out tests: builds it from a vendored source tarball
# (no network) into the server of $SIMHASH_PG (default 15), and runs a
# throwaway local Citus cluster of a coordinator and two workers with the
# simhash library preloaded after Citus's.
#
#   scripts/citus.sh build TARBALL   build and install Citus from TARBALL
#                                    (path/to/citus-13.2.2.tar.gz
#                                    for 15-17, citus-14.0.1.tar.gz for 16-18);
#                                    skipped when that version is installed
#   scripts/citus.sh start           initdb if needed, (re)start the three
#                                    nodes, create the database simhash_citus
#                                    with citus and simhash on each, register
#                                    the workers with the coordinator; safe to
#                                    run again (it restarts the nodes)
#   scripts/citus.sh stop
#   scripts/citus.sh env             print PGHOST/PGPORT/PGUSER/PGDATABASE
#                                    exports for the coordinator
#   scripts/citus.sh destroy         stop and delete the data directories
#
# The nodes live under /tmp/simhash-citus-pg<version>/ (coordinator,
# worker1, worker2; SIMHASH_CITUS_DIR overrides), listen only on Unix
# sockets in that directory's run/, on ports 55430 (coordinator), 55431 and
# 55432 (SIMHASH_CITUS_PORT moves the first), and trust every local user.
# The nodes know each other by that socket directory: it is their node name
# in pg_dist_node. The simhash extension must already be installed into the
# same server (scripts/install.sh). SIMHASH_CITUS_REBUILD=1 builds even when
# the tarball's version is already installed. Notes and known limits:
# docs/citus.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

CITUS_DIR=${SIMHASH_CITUS_DIR:-/tmp/simhash-citus-pg$PG_MAJOR}
SOCK_DIR=$CITUS_DIR/run
BASE_PORT=${SIMHASH_CITUS_PORT:-55430}
NODES=(coordinator worker1 worker2)
DB=simhash_citus

# The Debian packages building Citus needs beyond the server's headers:
# the server's headers include zstd, lz4, GSSAPI, OpenSSL, SELinux, libxslt
# and PAM ones when it was built with them (Debian's was).
BUILD_PACKAGES=(gcc make libzstd-dev liblz4-dev libkrb5-dev libssl-dev
                libselinux1-dev libxslt1-dev libpam0g-dev)

node_port() { # node_port INDEX
    printf '%s' $((BASE_PORT + $1))
}

# psql on node INDEX, database DATABASE, as the server's user.
node_psql() { # node_psql INDEX DATABASE [psql arguments...]
    local i=$1 db=$2
    shift 2
    PGOPTIONS="-c client_min_messages=warning" \
        "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$SOCK_DIR" -p "$(node_port "$i")" \
        -U "$SERVER_USER" -d "$db" "$@"
}

# ---------------------------------------------------------------- build

# The directory the tarball unpacks into (citus-13.2.2).
tarball_top() {
    local top
    # tar exits non-zero on the broken pipe; the first line is all we need.
    top=$( (tar -tzf "$1" 2>/dev/null || true) | head -n 1)
    top=${top%%/*}
    [ -n "$top" ] || die "$1 is not a gzipped tar archive"
    printf '%s' "$top"
}

# The PostgreSQL major versions the tarball's configure accepts, e.g.
# "15 16 17", read from its version check:
#   elif test "$version_num" != '15' -a  "$version_num" != '16' -a ...
# Falls back to the release series in the file name when the check is not
# found.
tarball_pg_versions() { # tarball_pg_versions TARBALL TOP
    local versions
    # shellcheck disable=SC2016 # a literal $version_num
    versions=$(tar -xzOf "$1" "$2/configure" 2>/dev/null \
        | grep -E '^elif test "\$version_num" != ' | head -n 1 \
        | grep -oE "'[0-9]+'" | tr -d "'" | tr '\n' ' ' || true)
    if [ -z "$versions" ]; then
        case $(basename "$1") in
            citus-13.*) versions="15 16 17" ;;
            citus-14.*) versions="16 17 18" ;;
            *) die "cannot tell which PostgreSQL versions $1 supports: no version check in $2/configure" ;;
        esac
    fi
    printf '%s' "${versions% }"
}

# The Citus release (13.2.2) of the tarball, from its configure.
tarball_version() { # tarball_version TARBALL TOP
    local v
    v=$(tar -xzOf "$1" "$2/configure" 2>/dev/null \
        | sed -n "s/^PACKAGE_VERSION='\\(.*\\)'\$/\\1/p" | head -n 1 || true)
    [ -n "$v" ] || v=${2#citus-}
    printf '%s' "$v"
}

# The default_version of the tarball's citus.control (13.2-1).
tarball_control_version() { # tarball_control_version TARBALL TOP
    tar -xzOf "$1" "$2/src/backend/distributed/citus.control" 2>/dev/null \
        | sed -n "s/^default_version *= *'\\(.*\\)'.*/\\1/p" | head -n 1 || true
}

# True when Citus VERSION (its control version CONTROL_VERSION) is what the
# server has installed: the control file's default_version and the version
# string compiled into citus.so ("Citus 13.2.2 on x86_64-...") both match.
citus_installed() { # citus_installed VERSION CONTROL_VERSION
    local control lib
    control="$("$PG_CONFIG" --sharedir)/extension/citus.control"
    lib="$("$PG_CONFIG" --pkglibdir)/citus.so"
    [ -f "$control" ] && [ -f "$lib" ] || return 1
    grep -qE "^default_version *= *'$2'" "$control" || return 1
    grep -aqF "Citus $1 on " "$lib"
}

install_build_packages() {
    command -v dpkg-query >/dev/null || {
        log "no dpkg here: make sure the headers of zstd, lz4, GSSAPI, OpenSSL, SELinux, libxslt and PAM are installed"
        return
    }
    local p missing=()
    for p in "${BUILD_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
        die "missing packages (${missing[*]}) and no sudo to install them: install them as root"
    fi
    log "installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# PostgreSQL 15.20 (and the other 15.x that got the backport) declares
# have_createdb_privilege() extern in commands/dbcommands.h, which clashes
# with the static inline definition Citus 13 keeps for 15 in
# pg_version_compat.h. When the server declares it, rename Citus's copy out
# of the way (nothing calls it then: the calls go to the server's).
fix_have_createdb_privilege() { # fix_have_createdb_privilege SOURCE_DIR
    local compat="$1/src/include/pg_version_compat.h" server_h
    server_h="$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h"
    grep -q 'have_createdb_privilege' "$server_h" 2>/dev/null || return 0
    grep -qx 'have_createdb_privilege(void)' "$compat" 2>/dev/null || return 0
    log "the server declares have_createdb_privilege(): skipping Citus's own definition"
    sed -i 's/^have_createdb_privilege(void)$/citus_unused_have_createdb_privilege(void)/' "$compat"
    ! grep -qx 'have_createdb_privilege(void)' "$compat" || die "could not patch $compat"
}

# The server's CFLAGS (which PGXS compiles with) without the options this
# machine's compiler rejects as unknown, or nothing when it takes them all.
# The wheel's PostgreSQL 18 was built by a newer GCC than Debian 12's GCC 12
# (-Wmissing-variable-declarations).
usable_cflags() {
    local cc out bad flag flags kept dropped=()
    cc=$("$PG_CONFIG" --cc)
    command -v "${cc%% *}" >/dev/null || cc=gcc
    read -r -a flags <<<"$("$PG_CONFIG" --cflags)"
    # shellcheck disable=SC2086 # $cc may carry options
    while ! out=$(LC_ALL=C $cc "${flags[@]}" -x c -c -o /dev/null /dev/null 2>&1); do
        bad=$(printf '%s\n' "$out" \
            | sed -n "s/.*unrecognized command[- ]line option '\([^']*\)'.*/\1/p" | head -n 1)
        # Any other failure is make's to report.
        [ -n "$bad" ] || break
        dropped+=("$bad")
        kept=()
        for flag in "${flags[@]}"; do
            [ "$flag" = "$bad" ] || kept+=("$flag")
        done
        flags=("${kept[@]}")
    done
    [ ${#dropped[@]} -gt 0 ] || return 0
    log "$cc does not know the server's CFLAGS ${dropped[*]}: building without them"
    printf '%s' "${flags[*]}"
}

build() {
    local tarball=${1:-}
    [ -n "$tarball" ] || die "usage: $0 build TARBALL (e.g. path/to/citus-13.2.2.tar.gz)"
    [ -f "$tarball" ] || die "no such Citus source tarball: $tarball"
    tarball=$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")
    require_pg
    [ -f "$("$PG_CONFIG" --includedir-server)/postgres.h" ] \
        || die "the server headers of PostgreSQL $PG_MAJOR are missing ($("$PG_CONFIG" --includedir-server)). To get them: $(how_to_get "$PG_MAJOR")"

    local top version control_version supported
    top=$(tarball_top "$tarball")
    version=$(tarball_version "$tarball" "$top")
    control_version=$(tarball_control_version "$tarball" "$top")
    supported=$(tarball_pg_versions "$tarball" "$top")
    [[ " $supported " == *" $PG_MAJOR "* ]] \
        || die "Citus $version ($(basename "$tarball")) supports PostgreSQL ${supported// /, }, not $PG_MAJOR (SIMHASH_PG=$PG_MAJOR): use a tarball made for PostgreSQL $PG_MAJOR"

    if [ "${SIMHASH_CITUS_REBUILD:-0}" != 1 ] && [ -n "$control_version" ] \
        && citus_installed "$version" "$control_version"; then
        log "Citus $version is already installed into PostgreSQL $PG_MAJOR ($("$PG_CONFIG" --pkglibdir)/citus.so): nothing to build"
        return
    fi

    install_build_packages

    local tmp started=$SECONDS
    tmp=$(mktemp -d /tmp/simhash-citus-build.XXXXXX)
    # shellcheck disable=SC2064 # expand $tmp now
    trap "rm -rf '$tmp'" EXIT
    log "building Citus $version for PostgreSQL $PG_MAJOR in $tmp (a few minutes)"
    tar -xzf "$tarball" -C "$tmp"
    local src="$tmp/$top"
    fix_have_createdb_privilege "$src"
    # Keep the output in a log; show its end when a step fails.
    local buildlog="$tmp/build.log"
    run_logged() {
        "$@" >>"$buildlog" 2>&1 || {
            tail -n 40 "$buildlog" >&2
            die "building Citus $version failed at: $*"
        }
    }
    # No libcurl: it only serves Citus's usage statistics upload. No LLVM
    # bitcode: the server does not need it.
    local make_args=(with_llvm=no) cflags
    cflags=$(usable_cflags)
    [ -z "$cflags" ] || make_args+=("CFLAGS=$cflags")
    (cd "$src" && run_logged ./configure PG_CONFIG="$PG_CONFIG" --without-libcurl)
    (cd "$src" && run_logged make -j"$(nproc)" "${make_args[@]}")
    log "installing Citus $version into $("$PG_CONFIG" --pkglibdir)"
    local install=(make install "${make_args[@]}")
    [ -z "$SUDO" ] || install=("$SUDO" "${install[@]}")
    (cd "$src" && run_logged "${install[@]}")
    citus_installed "$version" "$control_version" \
        || die "Citus $version is not where it should be after make install ($("$PG_CONFIG" --pkglibdir)/citus.so)"
    log "Citus $version built and installed in $(( SECONDS - started )) s"
}

# ---------------------------------------------------------------- cluster

node_dir() { # node_dir INDEX
    printf '%s' "$CITUS_DIR/${NODES[$1]}"
}

node_running() { # node_running INDEX
    [ -f "$(node_dir "$1")/PG_VERSION" ] \
        && as_server "$PG_BIN/pg_ctl" -D "$(node_dir "$1")" status >/dev/null 2>&1
}

init_node() { # init_node INDEX
    local i=$1 dir
    dir=$(node_dir "$i")
    [ -f "$dir/PG_VERSION" ] && return
    log "creating the Citus ${NODES[$i]} in $dir (port $(node_port "$i"))"
    init_cluster "$dir" "$PG_BIN" "$(node_port "$i")" "$SOCK_DIR" <<CONF
# Citus refuses to load unless it comes first.
shared_preload_libraries = 'citus,simhash'
# How a node connects to itself (Citus's default is localhost over TCP).
citus.local_hostname = '$SOCK_DIR'
# Citus commits multi-shard writes with two-phase commit.
max_prepared_transactions = 200
max_connections = 200
# Logical replication is how Citus moves shards (citus_rebalance_start).
wal_level = logical
shared_buffers = 128MB
work_mem = 16MB
maintenance_work_mem = 256MB
CONF
}

require_libraries() {
    local libdir
    libdir=$("$PG_CONFIG" --pkglibdir)
    [ -f "$libdir/citus.so" ] \
        || die "Citus is not installed into PostgreSQL $PG_MAJOR ($libdir/citus.so): run SIMHASH_PG=$PG_MAJOR $0 build path/to/citus-<version>.tar.gz first"
    [ -f "$libdir/simhash.so" ] \
        || die "the simhash extension is not installed into PostgreSQL $PG_MAJOR ($libdir/simhash.so): run SIMHASH_PG=$PG_MAJOR scripts/install.sh first"
}

start_node() { # start_node INDEX
    local i=$1 dir
    dir=$(node_dir "$i")
    start_cluster "$dir" "$PG_BIN"
}

# The database with citus and simhash, and Citus's SQL objects at the
# version of the library (after a rebuild, the server refuses distributed
# queries until they match).
prepare_database() { # prepare_database INDEX
    local i=$1 ext found
    # A failed check must stop here, not read as "missing" (a node still
    # recovering from a crash refuses connections for a moment).
    found=$(node_psql "$i" postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'") \
        || die "cannot query the Citus ${NODES[$i]} (port $(node_port "$i"))"
    if [ -z "$found" ]; then
        node_psql "$i" postgres -c "CREATE DATABASE $DB"
    fi
    # Not CREATE EXTENSION IF NOT EXISTS: once the coordinator has
    # distributed simhash, a worker refuses even that ("operation is not
    # allowed on this node").
    for ext in citus simhash; do
        found=$(node_psql "$i" "$DB" -tAc "SELECT 1 FROM pg_extension WHERE extname = '$ext'") \
            || die "cannot query the Citus ${NODES[$i]} (port $(node_port "$i"))"
        if [ -z "$found" ]; then
            node_psql "$i" "$DB" -c "CREATE EXTENSION $ext"
        fi
    done
    node_psql "$i" "$DB" -c "ALTER EXTENSION citus UPDATE"
}

register_nodes() {
    local i port
    node_psql 0 "$DB" -c "SELECT citus_set_coordinator_host('$SOCK_DIR', $(node_port 0))" >/dev/null
    for i in $(seq 1 $(( ${#NODES[@]} - 1 ))); do
        port=$(node_port "$i")
        if [ -z "$(node_psql 0 "$DB" -tAc "SELECT 1 FROM pg_dist_node WHERE nodename = '$SOCK_DIR' AND nodeport = $port")" ]; then
            log "registering ${NODES[$i]} (port $port) with the coordinator"
            node_psql 0 "$DB" -c "SELECT citus_add_node('$SOCK_DIR', $port)" >/dev/null
        fi
    done
}

start() {
    require_pg
    require_libraries
    mkdir -p "$SOCK_DIR"
    [ "$SERVER_USER" = "$(id -un)" ] || chown "$SERVER_USER" "$CITUS_DIR" "$SOCK_DIR"
    chmod 700 "$SOCK_DIR"
    local i
    for i in "${!NODES[@]}"; do
        init_node "$i"
        start_node "$i"
    done
    # Workers first: the coordinator's citus_add_node checks them.
    for i in $(seq $(( ${#NODES[@]} - 1 )) -1 0); do
        prepare_database "$i"
    done
    register_nodes
    log "Citus cluster up: coordinator on $SOCK_DIR port $(node_port 0), workers on ports $(node_port 1) and $(node_port 2); eval \"\$($0 env)\" && psql"
}

stop() {
    local i
    for i in "${!NODES[@]}"; do
        if node_running "$i"; then
            as_server "$PG_BIN/pg_ctl" -D "$(node_dir "$i")" -m fast -w stop >/dev/null
        fi
    done
}

case "${1:-}" in
    build) build "${2:-}" ;;
    start) start ;;
    stop) stop ;;
    env) printf 'export PGHOST=%q PGPORT=%q PGUSER=%q PGDATABASE=%q PATH=%q\n' \
             "$SOCK_DIR" "$(node_port 0)" "$SERVER_USER" "$DB" "$PG_BIN:$PATH" ;;
    destroy) stop; rm -rf "$CITUS_DIR" ;;
    *) die "usage: $0 build TARBALL|start|stop|env|destroy" ;;
esac
