package store

import (
	"context"
	"fmt"
)

// Check verifies that the shard's tables agree: the FTS5 index matches the
// chunks table, every chunk flagged with a vector has exactly one vec0 row,
// no vec0 row lacks its chunk, and the in-memory index holds exactly the
// stored vectors. It returns an error wrapping ErrInconsistent naming the
// first disagreement. It takes the writer, so batches wait while it runs.
func (s *Shard) Check(ctx context.Context) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		return fmt.Errorf("check: fts index: %v: %w", err, ErrInconsistent)
	}
	var flagged, vecRows, orphans, missing int64
	for _, q := range []struct {
		sql string
		dst *int64
	}{
		{`SELECT count(*) FROM chunks WHERE has_vector = 1`, &flagged},
		{`SELECT count(*) FROM vec_chunks`, &vecRows},
		{`SELECT count(*) FROM vec_chunks WHERE rowid NOT IN (SELECT rowid FROM chunks)`, &orphans},
		{`SELECT count(*) FROM chunks WHERE has_vector = 1 AND rowid NOT IN (SELECT rowid FROM vec_chunks)`, &missing},
	} {
		if err := s.w.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	switch {
	case orphans > 0:
		return fmt.Errorf("check: %d vectors without a chunk: %w", orphans, ErrInconsistent)
	case missing > 0:
		return fmt.Errorf("check: %d chunks flagged with a vector have none: %w", missing, ErrInconsistent)
	case flagged != vecRows:
		return fmt.Errorf("check: %d chunks flagged with a vector, %d vectors: %w", flagged, vecRows, ErrInconsistent)
	}
	if n := s.indexLen(); int64(n) != vecRows {
		return fmt.Errorf("check: in-memory index holds %d vectors, vec0 %d: %w", n, vecRows, ErrInconsistent)
	}
	return nil
}

// indexLen returns the number of vectors in the in-memory index.
func (s *Shard) indexLen() int {
	x := s.index
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := 0
	for _, sp := range x.spaces {
		n += len(sp.rowids)
	}
	return n
}

// VectorCoverage returns how many of namespace ns's chunks have a vector in
// the index and how many chunks it has; the difference waits for the
// backfill. It reads in-memory counts only.
func (s *Shard) VectorCoverage(ns string) (vectors, chunks int64) {
	s.sizes.mu.RLock()
	chunks = s.sizes.n[ns]
	s.sizes.mu.RUnlock()
	return int64(s.index.len(ns)), chunks
}
