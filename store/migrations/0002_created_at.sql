-- When each chunk was stored (unix seconds), so status can say how long the
-- oldest chunk has waited for a vector. Chunks stored before this migration
-- have none.
ALTER TABLE chunks ADD COLUMN created_at INTEGER;
