package store

import (
	"context"
	"database/sql"
	"fmt"
)

// PendingVectors returns up to limit chunks that wait for a vector, oldest
// first.
func (s *Shard) PendingVectors(ctx context.Context, limit int) ([]PendingChunk, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("pending vectors: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT id, rowid, text, context FROM chunks WHERE has_vector = 0 ORDER BY rowid LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("pending vectors: %w", err)
	}
	defer rows.Close()
	var out []PendingChunk
	for rows.Next() {
		var p PendingChunk
		if err := rows.Scan(&p.ID, &p.Row, &p.Text, &p.Context); err != nil {
			return nil, fmt.Errorf("pending vectors: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending vectors: %w", err)
	}
	return out, nil
}

// SetVectors stores vectors for stored chunks in one transaction, replacing
// any vector a chunk already has. A chunk is named by its id and rowid
// (ChunkRef); one no longer stored (deleted or rechunked since
// PendingVectors) is skipped. It returns how many vectors
// it wrote; a vector of the wrong length fails the whole call with ErrDims.
func (s *Shard) SetVectors(ctx context.Context, vs []ChunkVector) (int, error) {
	n, err := s.setVectors(ctx, vs)
	if err != nil && s.vec0Failed(ctx, err) { // now in go-scan: retry once
		n, err = s.setVectors(ctx, vs)
	}
	if err != nil {
		return 0, fmt.Errorf("set vectors: %w", err)
	}
	return n, nil
}

func (s *Shard) setVectors(ctx context.Context, vs []ChunkVector) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	for _, v := range vs {
		if len(v.Vector) != s.dims {
			return 0, fmt.Errorf("chunk %s: vector of %d, shard %d: %w", v.ID, len(v.Vector), s.dims, ErrDims)
		}
	}
	if len(vs) == 0 {
		return 0, nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.check(); err != nil {
		return 0, err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	w, err := s.newWriter(ctx, tx) // SetVectors adds no session
	if err != nil {
		return 0, err
	}
	defer w.close()
	for start := 0; start < len(vs); start += maxParams {
		if err := w.alive(); err != nil {
			return 0, err
		}
		if err := w.setVectors(vs[start:min(start+maxParams, len(vs))]); err != nil {
			return 0, err
		}
	}
	if err := w.flushVectors(); err != nil {
		return 0, err
	}
	s.visible.Lock() // until the vector index holds the batch
	defer s.visible.Unlock()
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	s.ckpt.kick()
	s.index.apply(w.ops)
	return w.stats.VectorsWritten, nil
}

// setVectors writes one IN-list's worth of vectors.
func (w *writer) setVectors(vs []ChunkVector) error {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v.Row
	}
	rows, err := w.tx.QueryContext(w.ctx, `SELECT id, rowid, namespace, session_key, session_id, ts_start, ts_end, has_vector, source, dir_path
		FROM chunks WHERE rowid IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return err
	}
	type target struct {
		rowid     int64
		hasVector bool
		c         Chunk
	}
	found := make(map[ChunkRef]*target, len(vs))
	for rows.Next() {
		t := &target{}
		var ts0, ts1 sql.NullInt64
		if err := rows.Scan(&t.c.ID, &t.rowid, &t.c.Namespace, &t.c.SessionKey, &t.c.SessionID, &ts0, &ts1, &t.hasVector, &t.c.Source, &t.c.DirPath); err != nil {
			rows.Close()
			return err
		}
		t.c.TimeStart, t.c.TimeEnd = timeOf(ts0), timeOf(ts1)
		found[ChunkRef{ID: t.c.ID, Row: t.rowid}] = t
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, v := range vs {
		t := found[ChunkRef{ID: v.ID, Row: v.Row}]
		if t == nil {
			continue // no longer stored (its row may hold a newer chunk)
		}
		if t.hasVector {
			if err := w.flushVectors(); err != nil {
				return err
			}
			if _, err := w.st(w.ws.vecDelete).ExecContext(w.ctx, t.rowid); err != nil {
				return fmt.Errorf("chunk %s: vec delete: %w", v.ID, err)
			}
		}
		c := t.c
		c.Vector = v.Vector
		if err := w.writeVector(t.rowid, &c, !t.hasVector); err != nil {
			return fmt.Errorf("chunk %s: %w", v.ID, err)
		}
		t.hasVector = true // a repeated id replaces the vector just written
	}
	return nil
}
