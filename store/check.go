package store

import (
	"context"
	"fmt"
)

// Check verifies that the shard's tables agree: the FTS5 index matches the
// chunks table; every chunk flagged with a vector has exactly one row in the
// vector table of the mode (vec_chunks, or vec_plain in go-scan), no vector
// row lacks its chunk, and the other table holds none (in go-scan a
// vec_chunks left from sqlite-vec is stale and not counted); the recorded
// vector location matches the mode; every message and chunk names the
// sessions row of its own namespace, session key and session id, and every
// sessions row names some message or chunk; and the in-memory index holds
// exactly the stored vectors; and no chunk id is stored twice (no index
// enforces it: see ChunkRef). It returns an error wrapping ErrInconsistent naming
// the first disagreement. It takes the writer, so batches wait while it runs.
func (s *Shard) Check(ctx context.Context) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.w.ExecContext(ctx, `INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		return fmt.Errorf("check: fts index: %v: %w", err, ErrInconsistent)
	}
	vs := s.vec.Load()
	table, other := "vec_chunks", "vec_plain"
	if vs.plain() {
		table, other = "vec_plain", ""
	}
	plainFlag, err := vecPlainFlag(ctx, s.w)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if plainFlag != vs.plain() {
		return fmt.Errorf("check: the file records vectors in vec_plain=%t, the shard runs in %s: %w", plainFlag, vs.mode, ErrInconsistent)
	}
	var flagged, vecRows, orphans, missing, stray, badSid, emptySessions, twice int64
	qs := []struct {
		sql string
		dst *int64
	}{
		{`SELECT (SELECT count(*) FROM messages m LEFT JOIN sessions s ON s.sid = m.sid
			WHERE s.sid IS NULL OR s.namespace <> m.namespace OR s.session_key <> m.session_key OR s.session_id <> m.session_id)
			+ (SELECT count(*) FROM chunks c LEFT JOIN sessions s ON s.sid = c.sid
			WHERE s.sid IS NULL OR s.namespace <> c.namespace OR s.session_key <> c.session_key OR s.session_id <> c.session_id)`, &badSid},
		{`SELECT count(*) FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.sid = s.sid)
			AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.sid = s.sid)`, &emptySessions},
		{`SELECT count(*) FROM (SELECT id FROM chunks GROUP BY id HAVING count(*) > 1)`, &twice},
		{`SELECT count(*) FROM chunks WHERE has_vector = 1`, &flagged},
		{`SELECT count(*) FROM ` + table, &vecRows},
		{`SELECT count(*) FROM ` + table + ` WHERE rowid NOT IN (SELECT rowid FROM chunks)`, &orphans},
		{`SELECT count(*) FROM chunks WHERE has_vector = 1 AND rowid NOT IN (SELECT rowid FROM ` + table + `)`, &missing},
	}
	if other != "" {
		qs = append(qs, struct {
			sql string
			dst *int64
		}{`SELECT count(*) FROM ` + other, &stray})
	}
	for _, q := range qs {
		if err := s.w.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			return fmt.Errorf("check: %w", err)
		}
	}
	switch {
	case badSid > 0:
		return fmt.Errorf("check: %d messages and chunks without the sessions row of their session: %w", badSid, ErrInconsistent)
	case twice > 0:
		return fmt.Errorf("check: %d chunk ids stored more than once: %w", twice, ErrInconsistent)
	case emptySessions > 0:
		return fmt.Errorf("check: %d sessions rows name no message and no chunk: %w", emptySessions, ErrInconsistent)
	case orphans > 0:
		return fmt.Errorf("check: %d vectors in %s without a chunk: %w", orphans, table, ErrInconsistent)
	case missing > 0:
		return fmt.Errorf("check: %d chunks flagged with a vector have none in %s: %w", missing, table, ErrInconsistent)
	case flagged != vecRows:
		return fmt.Errorf("check: %d chunks flagged with a vector, %d vectors in %s: %w", flagged, vecRows, table, ErrInconsistent)
	case stray > 0:
		return fmt.Errorf("check: %d vectors in %s while the shard keeps them in %s: %w", stray, other, table, ErrInconsistent)
	}
	if n := s.indexLen(); int64(n) != vecRows {
		return fmt.Errorf("check: in-memory index holds %d vectors, %s %d: %w", n, table, vecRows, ErrInconsistent)
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
