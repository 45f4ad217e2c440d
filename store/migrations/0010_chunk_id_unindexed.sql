-- 0010_chunk_id_unindexed: chunks.id loses its UNIQUE index. The id is a
-- content hash (hex of 16 bytes of SHA-256), so every new chunk's entry went
-- to a random leaf of that index: a batch wrote most of its leaves, and the
-- index grows with the shard, so the commit cost a message grew with it
-- (BenchmarkApplyHotNamespace/batch=8000 over 500,000 messages: 10,884
-- msgs/s with it, 15,177 without; BENCHMARKS.md, eighth session).
--
-- Nothing needs it: a search's candidates and PendingVectors' chunks carry
-- the rowid their leg read (store.ChunkRef), and Chunks and SetVectors read
-- those rows and take a row only while it holds the same id; a chunk id
-- hashes its scope and position, so Apply finds a stored chunk of the same
-- id in the session tail it replaces (rechunk) and deletes a file's or a
-- record's chunks before inserting them again.
--
-- SQLite cannot drop a column's UNIQUE constraint, so the table is rebuilt
-- with the same columns in the same order and the same rowids (the key of
-- chunks_fts and vec_chunks), and its other indexes made again.
CREATE TABLE chunks_rebuilt (
  rowid       INTEGER PRIMARY KEY,
  id          TEXT NOT NULL,
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
  ns          TEXT GENERATED ALWAYS AS ('n' || lower(hex(namespace)) || '0') VIRTUAL,
  created_at  INTEGER,
  path        TEXT NOT NULL DEFAULT '',
  dir_path    TEXT NOT NULL DEFAULT '',
  fts_seg     TEXT,
  fts_words   TEXT,
  fts_ver     INTEGER,
  fts_body    TEXT GENERATED ALWAYS AS (coalesce(fts_seg, text)) VIRTUAL,
  context     TEXT NOT NULL DEFAULT '',
  ctx_seg     TEXT,
  fts_ctx     TEXT GENERATED ALWAYS AS (coalesce(ctx_seg, context)) VIRTUAL,
  sk          TEXT GENERATED ALWAYS AS ('k' || lower(hex(session_key)) || '0') VIRTUAL,
  sid         INTEGER NOT NULL DEFAULT 0
);
INSERT INTO chunks_rebuilt(rowid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text,
    ts_start, ts_end, has_vector, created_at, path, dir_path, fts_seg, fts_words, fts_ver, context, ctx_seg, sid)
  SELECT rowid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text,
    ts_start, ts_end, has_vector, created_at, path, dir_path, fts_seg, fts_words, fts_ver, context, ctx_seg, sid
  FROM chunks ORDER BY rowid;
DROP TABLE chunks;
ALTER TABLE chunks_rebuilt RENAME TO chunks;
CREATE INDEX chunks_session ON chunks(sid, seq_start);
CREATE INDEX chunks_pending ON chunks(has_vector) WHERE has_vector = 0;
CREATE INDEX chunks_path ON chunks(namespace, path) WHERE path <> '';
CREATE INDEX chunks_cjk ON chunks(fts_ver) WHERE fts_ver IS NULL OR fts_ver <> 0;
