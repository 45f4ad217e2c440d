-- 0011_fts_without_context: chunks_fts no longer indexes a chunk's context.
-- The context (the messages before a chunk) repeats every message's text in
-- the next two chunks, so indexing it tripled the tokens FTS5 writes at
-- every commit: about a quarter of a hot namespace's ingest CPU
-- (BENCHMARKS.md, thirteenth session). The keyword index (kwindex.go) still
-- ranks with the context at half weight, read from chunks.fts_ctx; FTS5, now
-- only its fallback, ranks the text and its extra words.
-- chunks_fts is rebuilt over (fts_body, ns, fts_words, sk); like 0004, 0006
-- and 0007, this migration leaves it empty with every chunk's fts_ver NULL,
-- and Open fills it in batches (reindexKeywords).
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  fts_body, ns, fts_words, sk,
  content = 'chunks', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
-- rank = BM25 over the text and its extra words; the namespace and session
-- key columns weigh nothing.
INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0, 1.0, 0.0)');
UPDATE chunks SET fts_ver = NULL;
DELETE FROM meta WHERE key = 'tokenizer';
