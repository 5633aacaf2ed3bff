#!/usr/bin/env bash
# Coverage-guided fuzzing of the core's readers of untrusted bytes:
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 30)
#
# With a nightly toolchain, runs each cargo-fuzz target of fuzz/ (pglz,
# scan, hex) for that long on its corpus, fuzz/corpus/<target>, installing
# cargo-fuzz first when it is missing (about a minute on two cores). What a
# run adds to a corpus stays on the machine (fuzz/.gitignore). Without a
# nightly toolchain, runs the same properties on stable instead, on a few
# thousand inputs of a seeded generator
# (crates/simhash-core/tests/fuzz_props.rs), and says so.
#
# Exits non-zero when a target crashed, after the others have run, with
# the path of the input that crashed it and the command that replays it.
# FUZZ_TARGETS="scan" scripts/fuzz.sh 60 runs only some targets.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cd "$ROOT"
started=$SECONDS

seconds=${1:-30}
case $seconds in
    '' | *[!0-9]*) die "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] (a whole number, got '$seconds')" ;;
esac
targets=${FUZZ_TARGETS:-pglz scan hex}
# The version fuzz/Cargo.lock was made with; it builds with rustc 1.95.
CARGO_FUZZ_VERSION=0.13.2

stable_fallback() {
    log "$1: the stable property tests instead (the same properties, seeded inputs; SECONDS_PER_TARGET is not used)"
    cargo test -p simhash-core --test fuzz_props
    log "stable property tests passed in $((SECONDS - started)) s"
}

if ! cargo +nightly --version >/dev/null 2>&1; then
    stable_fallback "no nightly toolchain"
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    t0=$SECONDS
    if ! cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked; then
        stable_fallback "cargo-fuzz did not install"
        exit 0
    fi
    log "cargo-fuzz installed in $((SECONDS - t0)) s"
fi

crashed=()
for t in $targets; do
    [ -f "fuzz/fuzz_targets/$t.rs" ] || die "no fuzz target '$t' (fuzz/fuzz_targets/)"
    log "fuzzing $t for $seconds s"
    out=$(mktemp)
    # The first run builds the targets (a few minutes from nothing).
    set +e
    cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -print_final_stats=1 2>&1 | tee "$out" |
        grep -E '^(#[0-9]+.*(INITED|DONE)|Done [0-9]+ runs|stat::number_of_executed_units)|panicked|ERROR'
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ]; then
        reproducer=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$out" | tail -1)
        tail -40 "$out" >&2
        crashed+=("$t")
        if [ -n "$reproducer" ]; then
            printf 'CRASH in %s: reproducer %s\n  replay: cargo +nightly fuzz run %s %s\n' \
                "$t" "$reproducer" "$t" "$reproducer" >&2
        else
            printf 'CRASH in %s (exit %s) with no input written: the log is above\n' "$t" "$status" >&2
        fi
    fi
    rm -f "$out"
done

if [ ${#crashed[@]} -gt 0 ]; then
    die "crashed: ${crashed[*]} ($((SECONDS - started)) s)"
fi
log "no crash in $targets, $seconds s each ($((SECONDS - started)) s in all)"
