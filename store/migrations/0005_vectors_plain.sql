-- 0005_vectors_plain: a plain table for vectors, used instead of vec_chunks
-- when a shard runs without sqlite-vec ("go-scan" mode: sqlite-vec missing,
-- disabled by configuration, or its vec0 table failing). rowid =
-- chunks.rowid; embedding is a float32 little-endian BLOB of the shard's
-- dimension. meta 'vec_plain' says where a shard's vectors live: 0 in
-- vec_chunks (vec_plain is then empty), 1 in vec_plain (vec_chunks, when it
-- exists, is then stale and is emptied the next time the shard opens with
-- sqlite-vec, which moves the vectors back). This migration depends on no
-- other after 0003, so it may run before or after 0004.
CREATE TABLE IF NOT EXISTS vec_plain (
  rowid     INTEGER PRIMARY KEY,
  embedding BLOB NOT NULL
);
INSERT OR IGNORE INTO meta(key, value) VALUES ('vec_plain', 0);
