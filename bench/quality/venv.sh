# The Python environment of the quality benchmark in .cache/quality-venv,
# (re)built when requirements.txt changes; sourced by run.sh and
# second.sh after scripts/common.sh, with HERE set to bench/quality.
# shellcheck shell=bash
VENV=$ROOT/.cache/quality-venv
STAMP=$VENV/requirements.sha256
want=$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
    log "preparing the Python environment in ${VENV#"$ROOT"/}"
    command -v python3 >/dev/null || die "python3 is missing"
    python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
    echo "$want" >"$STAMP"
fi
