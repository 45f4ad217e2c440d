-- 0004_cjk_segments: the FTS index gets its own text, so Chinese, Japanese
-- and Korean words inside a longer run are found (see store/segment.go).
--   fts_seg   chunks.text with a ZERO WIDTH SPACE between the words of its CJK
--             runs; NULL when that is the text itself (no CJK, or Hangul
--             and Kana runs only).
--   fts_words the extra index words of its CJK runs (sub-words, bigrams),
--             space-separated; NULL when none.
--   fts_ver   the tokenizer version fts_seg and fts_words were made with:
--             NULL = not in the FTS index yet, 0 = no CJK text (the same
--             under every version).
--   fts_body  what chunks_fts indexes as the text (virtual, never stored).
-- chunks_fts is rebuilt over (fts_body, ns, fts_words); this migration leaves
-- it empty and every chunk with fts_ver NULL, and Open fills it in batches
-- (reindexKeywords), so a large shard is not rebuilt in one transaction and
-- a crash resumes where it stopped. This migration depends on no other after
-- 0003, so it may run before or after 0005.
ALTER TABLE chunks ADD COLUMN fts_seg TEXT;
ALTER TABLE chunks ADD COLUMN fts_words TEXT;
ALTER TABLE chunks ADD COLUMN fts_ver INTEGER;
ALTER TABLE chunks ADD COLUMN fts_body TEXT GENERATED ALWAYS AS (coalesce(fts_seg, text)) VIRTUAL;

DROP TABLE chunks_fts;
-- External content: chunks holds the text; Apply keeps this index in sync
-- explicitly (insert, and the 'delete' command with the old values).
CREATE VIRTUAL TABLE chunks_fts USING fts5(
  fts_body, ns, fts_words,
  content = 'chunks', content_rowid = 'rowid',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
-- rank = BM25 over the text and the extra words: the namespace column
-- weighs nothing.
INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0, 1.0)');
DELETE FROM meta WHERE key = 'tokenizer';
