-- 0003_files: memory files. A file's chunks live in chunks with source
-- 'files', the file path and its project scope (dir_path, '' = global), and
-- seq_start/seq_end holding the section's first and last line. files keeps
-- each file's content hash (an unchanged file is a no-op) and content (for
-- the read endpoint).
ALTER TABLE chunks ADD COLUMN path TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN dir_path TEXT NOT NULL DEFAULT '';
CREATE INDEX chunks_path ON chunks(namespace, path) WHERE path <> '';

CREATE TABLE files (
  namespace    TEXT NOT NULL,
  path         TEXT NOT NULL,
  dir_path     TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  content      TEXT NOT NULL,
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (namespace, path)
) WITHOUT ROWID;
