-- 0001_init: messages, chunks, their FTS5 index, the vec0 vector table, meta.
-- {{DIMS}} is replaced by the shard's vector dimension when the migration runs.
-- Times are unix nanoseconds (UTC), NULL when unknown.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO meta(key, value) VALUES ('applied_seq', 0), ('dims', {{DIMS}});

CREATE TABLE messages (
  namespace   TEXT NOT NULL,
  session_key TEXT NOT NULL,
  session_id  TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  id          TEXT NOT NULL DEFAULT '',
  role        TEXT NOT NULL DEFAULT '',
  speaker     TEXT NOT NULL DEFAULT '',
  text        TEXT NOT NULL,
  ts          INTEGER,
  PRIMARY KEY (namespace, session_key, session_id, seq)
) WITHOUT ROWID;

-- rowid is the key shared with chunks_fts and vec_chunks.
-- ns is the namespace as one FTS token that cannot collide with a word or
-- another namespace: 'n' || lower(hex(namespace)) || '0' (the trailing digit
-- keeps the porter stemmer away). Virtual: computed, never stored.
CREATE TABLE chunks (
  rowid       INTEGER PRIMARY KEY,
  id          TEXT NOT NULL UNIQUE,
  namespace   TEXT NOT NULL,
  source      TEXT NOT NULL,
  session_key TEXT NOT NULL,
  session_id  TEXT NOT NULL,
  seq_start   INTEGER NOT NULL,
  seq_end     INTEGER NOT NULL,
  part        INTEGER NOT NULL,
  text        TEXT NOT NULL,
  ts_start    INTEGER,
  ts_end      INTEGER,
  has_vector  INTEGER NOT NULL DEFAULT 0,
  ns          TEXT GENERATED ALWAYS AS ('n' || lower(hex(namespace)) || '0') VIRTUAL
);

CREATE INDEX chunks_session ON chunks(namespace, session_key, session_id, seq_start);
CREATE INDEX chunks_pending ON chunks(has_vector) WHERE has_vector = 0;

-- External content: chunks holds the text; Apply keeps this index in sync
-- explicitly (insert, and the 'delete' command with the old values).
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  text, ns,
  content = 'chunks', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
-- rank = BM25 over text only: the namespace column weighs nothing.
INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');

-- Durable copy of the vectors, rowid = chunks.rowid, float32 BLOBs. Searches
-- use the in-memory index loaded from here at Open, and read the exact
-- vectors of their best candidates back from it (store/vecquant_rescore.go).
-- chunk_size=8 (vec0's default is 1024): vec0 reads one vector by opening
-- its chunk's BLOB and reading at the vector's offset, and SQLite reaches
-- that offset by walking the BLOB's overflow pages from the first, so a read
-- costs a page per 4 KiB of the chunk before the vector. At 384 dims a
-- chunk of 256 is 96 pages: 6.7 µs a vector where the file is memory-mapped
-- and 126 µs where it is not (a shard past SQLite's 2 GiB map, or pages the
-- kernel dropped: each a read from disk), against 7.6 and 15.0 µs for a
-- chunk of 8, whose 12 KiB span 4 pages; inserts measured the same
-- (BENCHMARKS.md, issue 13, sixth session). A file created before keeps
-- the chunk size it was made with (256) until it is rebuilt; every reader
-- and writer takes the size from the file.
CREATE VIRTUAL TABLE vec_chunks USING vec0(
  embedding float[{{DIMS}}] distance_metric=cosine,
  chunk_size=8
);
