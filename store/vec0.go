package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
)

// vec0KMax is the largest k sqlite-vec accepts in one KNN query.
const vec0KMax = 4096

// loadIndex fills the in-memory index from the vector table of the mode
// (vec_chunks, or vec_plain in go-scan) and chunks (separate statements,
// joined in Go). It repairs the two inconsistencies it can find: a vector
// row whose chunk is gone or not flagged is deleted, and a chunk flagged
// has_vector without a vector row is marked pending again.
func (s *Shard) loadIndex(ctx context.Context) error {
	type meta struct {
		ns    string
		entry vecEntry
		seen  bool
	}
	metas := map[int64]*meta{}
	rows, err := s.r.QueryContext(ctx, `SELECT rowid, id, namespace, session_key, session_id, ts_start, ts_end, source, dir_path
		FROM chunks WHERE has_vector = 1`)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for rows.Next() {
		var rowid int64
		var ts0, ts1 sql.NullInt64
		m := &meta{}
		if err := rows.Scan(&rowid, &m.entry.id, &m.ns, &m.entry.sessionKey, &m.entry.sessionID, &ts0, &ts1, &m.entry.source, &m.entry.dirPath); err != nil {
			rows.Close()
			return err
		}
		m.entry.tsStart, m.entry.tsEnd = nullNanos(ts0), nullNanos(ts1)
		metas[rowid] = m
		counts[m.ns]++
	}
	if err := rows.Close(); err != nil {
		return err
	}

	x := s.index
	x.mu.Lock()
	defer x.mu.Unlock()
	var load *vecLoad
	reset := func() {
		load = &vecLoad{dims: x.dims}
		x.resetExact(len(metas))
		x.spaces, x.syms = make(map[string]*vecSpace, len(counts)), newSymtab()
		for ns, n := range counts {
			x.spaces[ns] = &vecSpace{
				rowids: make([]int64, 0, n),
				ids:    make([]chunkID, 0, n),
				pos:    make(map[int64]int, n),
			}
		}
		for _, m := range metas {
			m.seen = false
		}
	}
	var orphans []int64
	buf := make([]float32, 0, x.dims)
	add := func(rowid int64, blob []byte) error {
		m := metas[rowid]
		if m == nil {
			orphans = append(orphans, rowid)
			return nil
		}
		var err error
		if buf, err = decodeVector(buf[:0], blob); err != nil || len(buf) != x.dims {
			return fmt.Errorf("vector of chunk %s: %d floats, want %d: %w", m.entry.id, len(buf), x.dims, ErrDims)
		}
		m.seen = true
		m.entry.vec = buf
		sp := x.spaces[m.ns]
		i, _ := sp.place(rowid, &m.entry, x.dims, x.syms)
		load.add(sp, i, buf)
		x.putExact(rowid, buf)
		return nil
	}
	reset()
	if s.vec.Load().plain() {
		err = s.scanPlain(ctx, s.r, add)
	} else {
		err = s.scanVec0Shadow(ctx, s.r, add)
		if errors.Is(err, errShadowLayout) {
			reset()
			orphans = orphans[:0]
			err = s.scanVec0(ctx, s.r, add)
		}
	}
	if err != nil {
		return err
	}
	load.finish(x.spaces)
	var missing []int64
	for rowid, m := range metas {
		if !m.seen {
			missing = append(missing, rowid)
		}
	}
	for ns, sp := range x.spaces {
		if len(sp.rowids) == 0 {
			delete(x.spaces, ns)
		}
	}
	if len(orphans) == 0 && len(missing) == 0 || s.readOnly { // read-only: a writer repairs
		return nil
	}
	return s.repairVectors(ctx, orphans, missing)
}

// scanVec0 calls add with every row of vec_chunks, through the virtual table
// (the documented way; about 10 µs a row).
func (s *Shard) scanVec0(ctx context.Context, q queryer, add func(rowid int64, blob []byte) error) error {
	return scanVectorRows(ctx, q, `SELECT rowid, embedding FROM vec_chunks`, add)
}

// scanVectorRows calls add with each (rowid, embedding) row query returns.
func scanVectorRows(ctx context.Context, q queryer, query string, add func(rowid int64, blob []byte) error) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var rowid int64
		var blob sql.RawBytes
		if err := rows.Scan(&rowid, &blob); err != nil {
			return err
		}
		if err := add(rowid, blob); err != nil {
			return err
		}
	}
	return rows.Err()
}

// errShadowLayout means vec0's shadow tables are not laid out as
// scanVec0Shadow expects; loadIndex then falls back to scanVec0.
var errShadowLayout = errors.New("unexpected vec0 shadow layout")

// scanVec0Shadow calls add with every vector of vec_chunks read straight
// from vec0's shadow tables (sqlite-vec v0.1.x): vec_chunks_rowids locates
// each live row (chunk_id, chunk_offset) and vec_chunks_vector_chunks00
// holds one BLOB of chunk_size vectors per chunk. Reading whole chunk BLOBs
// is an order of magnitude faster than a scan of the virtual table. Any
// mismatch with that layout returns errShadowLayout before add is called
// for a row that could be wrong. The shadow tables are ordinary tables, so
// this works without sqlite-vec too.
func (s *Shard) scanVec0Shadow(ctx context.Context, q queryer, add func(rowid int64, blob []byte) error) error {
	type slot struct {
		rowid  int64
		offset int64
	}
	rows, err := q.QueryContext(ctx, `SELECT rowid, chunk_id, chunk_offset FROM vec_chunks_rowids`)
	if err != nil {
		return fmt.Errorf("%w: %v", errShadowLayout, err)
	}
	byChunk := map[int64][]slot{}
	total := 0
	for rows.Next() {
		var sl slot
		var chunk sql.NullInt64
		var off sql.NullInt64
		if err := rows.Scan(&sl.rowid, &chunk, &off); err != nil {
			rows.Close()
			return fmt.Errorf("%w: %v", errShadowLayout, err)
		}
		if !chunk.Valid || !off.Valid || off.Int64 < 0 {
			rows.Close()
			return fmt.Errorf("%w: row %d has no chunk position", errShadowLayout, sl.rowid)
		}
		sl.offset = off.Int64
		byChunk[chunk.Int64] = append(byChunk[chunk.Int64], sl)
		total++
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("%w: %v", errShadowLayout, err)
	}
	width := 4 * s.dims
	vrows, err := q.QueryContext(ctx, `SELECT rowid, vectors FROM vec_chunks_vector_chunks00`)
	if err != nil {
		return fmt.Errorf("%w: %v", errShadowLayout, err)
	}
	defer vrows.Close()
	done := 0
	for vrows.Next() {
		var chunk int64
		var blob sql.RawBytes
		if err := vrows.Scan(&chunk, &blob); err != nil {
			return fmt.Errorf("%w: %v", errShadowLayout, err)
		}
		slots := byChunk[chunk]
		for _, sl := range slots {
			if int64(len(blob)) < (sl.offset+1)*int64(width) {
				return fmt.Errorf("%w: chunk %d of %d bytes has no slot %d", errShadowLayout, chunk, len(blob), sl.offset)
			}
		}
		for _, sl := range slots {
			if err := add(sl.rowid, blob[sl.offset*int64(width):(sl.offset+1)*int64(width)]); err != nil {
				return err
			}
		}
		done += len(slots)
	}
	if err := vrows.Err(); err != nil {
		return fmt.Errorf("%w: %v", errShadowLayout, err)
	}
	if done != total {
		return fmt.Errorf("%w: %d rows located, %d read", errShadowLayout, total, done)
	}
	return nil
}

// repairVectors deletes vector rows without a flagged chunk and marks chunks
// flagged without a vector as pending.
func (s *Shard) repairVectors(ctx context.Context, orphans, missing []int64) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, del := vecSQL(s.vec.Load().plain())
	for _, id := range orphans {
		if _, err := tx.ExecContext(ctx, del, id); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
	}
	for _, id := range missing {
		if _, err := tx.ExecContext(ctx, `UPDATE chunks SET has_vector = 0 WHERE rowid = ?`, id); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
	}
	return tx.Commit()
}

// vec0Search answers a vector search with sqlite-vec's KNN over vec_chunks
// instead of the in-memory index. It is the reference the index is checked
// against in tests: vec0 is queried in its own statement (whole table, k up
// to 4096), metadata is joined afterwards, then namespace and filters apply,
// so it is exact only while the table holds at most 4096 vectors.
func (s *Shard) vec0Search(ctx context.Context, ns string, vec []float32, f Filter, limit int) ([]Candidate, error) {
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM chunks WHERE has_vector = 1`).Scan(&total); err != nil {
		return nil, err
	}
	k := min(total, vec0KMax)
	if k == 0 || limit <= 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH ? AND k = ? ORDER BY distance`,
		encodeVector(nil, vec), k)
	if err != nil {
		return nil, err
	}
	type hit struct {
		rowid int64
		dist  float64
	}
	var hits []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.rowid, &h.dist); err != nil {
			rows.Close()
			return nil, err
		}
		hits = append(hits, h)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	rf := stringFilter(f)
	var out []Candidate
	for _, h := range hits {
		var id, cns, sk, sid, src, dir string
		var ts0, ts1 sql.NullInt64
		err := s.r.QueryRowContext(ctx, sqlChunkVecRow, h.rowid).Scan(&id, &cns, &sk, &sid, &ts0, &ts1, &src, &dir)
		if err != nil {
			return nil, fmt.Errorf("chunk of vector %d: %w", h.rowid, err)
		}
		if cns != ns {
			continue
		}
		if !rf.pass(sk, sid, src, dir, nullNanos(ts0), nullNanos(ts1)) {
			continue
		}
		out = append(out, Candidate{ID: id, Row: h.rowid, Score: clamp01(1 - h.dist)})
		if len(out) == limit {
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	for i := range out {
		out[i].Rank = i + 1
	}
	return out, nil
}
