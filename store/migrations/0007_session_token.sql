-- 0007_session_token: a keyword search within one sessionKey confines its
-- MATCH to that session key's FTS token, so FTS5 ranks the rows of that
-- conversation only instead of every row of the shard that matches a term
-- (the ranking is the same: the column weighs nothing in bm25, and term
-- statistics stay those of the whole index).
--   sk  the session key as one FTS token: 'k' || lower(hex(session_key)) ||
--       '0' (the trailing digit keeps the porter stemmer away); virtual.
-- chunks_fts is rebuilt over (fts_body, ns, fts_words, fts_ctx, sk); like
-- 0004 and 0006, this migration leaves it empty with every chunk's fts_ver
-- NULL, and Open fills it in batches (reindexKeywords).
ALTER TABLE chunks ADD COLUMN sk TEXT GENERATED ALWAYS AS ('k' || lower(hex(session_key)) || '0') VIRTUAL;

DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  fts_body, ns, fts_words, fts_ctx, sk,
  content = 'chunks', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
-- rank = BM25 over the text and its extra words, the context at half
-- weight; the namespace and session key columns weigh nothing.
INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0, 1.0, 0.5, 0.0)');
UPDATE chunks SET fts_ver = NULL;
DELETE FROM meta WHERE key = 'tokenizer';

-- The chunks with CJK text (or not indexed yet), for the look for Han text
-- at Open (segment_load.go holdsHan): an English shard's look reads this
-- small index instead of every chunk.
CREATE INDEX chunks_cjk ON chunks(fts_ver) WHERE fts_ver IS NULL OR fts_ver <> 0;
