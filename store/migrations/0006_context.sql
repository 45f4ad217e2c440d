-- 0006_context: a chunk's context (for a session chunk: its date and the
-- messages before it, chunker.Chunk.Context) is indexed for keyword search
-- in its own column, weighted half as much as the text, and never shown.
--   context  the context as the chunker made it ('' when none).
--   ctx_seg  its index form when it has CJK characters: the segmented
--            context then its extra index words; NULL otherwise.
--   fts_ctx  what chunks_fts indexes as the context (virtual).
-- chunks_fts is rebuilt over (fts_body, ns, fts_words, fts_ctx); like 0004,
-- this migration leaves it empty with every chunk's fts_ver NULL, and Open
-- fills it in batches (reindexKeywords). Chunks stored before this
-- migration have no context until their session is re-chunked or the shard
-- is rebuilt from the stream (memindex rebuild).
ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN ctx_seg TEXT;
ALTER TABLE chunks ADD COLUMN fts_ctx TEXT GENERATED ALWAYS AS (coalesce(ctx_seg, context)) VIRTUAL;

DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  fts_body, ns, fts_words, fts_ctx,
  content = 'chunks', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
-- rank = BM25 over the text and its extra words, the context at half weight
-- (LoCoMo: 0.4-0.5 is best, BENCHMARKS.md); the namespace weighs nothing.
INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0, 1.0, 0.5)');
UPDATE chunks SET fts_ver = NULL;
DELETE FROM meta WHERE key = 'tokenizer';
