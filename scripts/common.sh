# Shared settings for the scripts in this folder; sourced, not run.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_MAJOR=15
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
PG_CONFIG=$PG_BIN/pg_config
PGRX_VERSION=0.18.0
export PATH="$HOME/.cargo/bin:$PATH"

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

# Run a command as the server's user.
as_server() {
    if [ "$(id -un)" = "$SERVER_USER" ]; then
        "$@"
    else
        sudo -u "$SERVER_USER" -- "$@"
    fi
}
