package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A search ranks the int8 codes of the whole namespace, keeps a pool of the
// best candidates by approximate score (rescorePool), and reads the exact
// float32 vectors of as few of them as it can from SQLite: first the top
// limit, which gives a bar (the limit-th best exact score), then every other
// candidate of the pool whose approximate score plus its error margin
// (errMargin) reaches the bar. A candidate below the bar cannot enter the
// top limit (within the margin's six standard deviations), so the result is
// the exact scan's whenever fewer than pool-limit candidates are that close
// to the bar: about 3 of them for a top 10 and 10 for a top 40 on random or
// real-text vectors, against a pool of 74 and 104. Only many near-identical
// vectors at the bar (the same message stored hundreds of times) fill the
// pool; their order is then that of their approximate scores and rowids
// (exact duplicates: as exact), and a search still reads at most a pool of
// vectors. An earlier version grew the pool instead and read thousands of
// duplicates at 1M generated messages (p99 0.8 s).
//
// Reading the float32 vectors from SQLite rather than keeping them in memory
// too costs one vec0 point query a candidate (about 10 µs; vec_plain reads
// them in one IN query), and saves dims×4 bytes a vector of Go heap: at
// 384 dims, 146 MiB per 100,000 chunks (BENCHMARKS.md, issue 13 item 2).

// vecCand is a candidate of the quantized scan: its rowid and chunk id, its
// approximate cosine and the bound on that approximation's error.
type vecCand struct {
	rowid  int64
	id     string
	approx float32
	margin float32
}

// rescorePool is how many candidates the scan keeps for a search of limit.
func rescorePool(limit int) int { return max(2*limit, limit+64) }

// sqlVecPoint reads the vectors of a JSON array of rowids through vec0: a
// point query on rowid for each element of the array, all in one statement
// (an IN list makes vec0 scan the whole table). One statement for the 40–60
// vectors a search rescores took 0.58 ms where as many point queries of
// their own took 0.91 ms (100,000 vectors, BENCHMARKS.md).
const sqlVecPoint = `SELECT v.rowid, v.embedding FROM json_each(?) j JOIN vec_chunks v ON v.rowid = j.value`

// plainBatch bounds the rowids of one IN query on vec_plain.
const plainBatch = 256

// vectorSearch is VectorSearchTop after its checks; it also returns how
// many float32 vectors it read.
func (s *Shard) vectorSearch(ctx context.Context, ns string, q *quantQuery, vf vecFilter, limit, exactTop int) ([]Candidate, int, error) {
	if limit <= 0 {
		return nil, 0, nil
	}
	exact := map[int64]float32{} // rowid → exact score; NaN: no vector in SQLite
	cands := s.index.candidates(ns, q, &vf, rescorePool(limit))
	out, err := s.rescore(ctx, q, cands, limit, exactTop, exact)
	return out, len(exact), err
}

// rescore reads the exact scores of the candidates that can enter the top
// exactTop (into exact) and returns the top limit of cands, best first:
// the exact top exactTop, then the others by their exact score where it
// was read and by their approximate one where not. A candidate not read
// scores below the exactTop-th exact score by more than its error margin,
// so none can come before the exact top exactTop.
func (s *Shard) rescore(ctx context.Context, q *quantQuery, cands []vecCand, limit, exactTop int, exact map[int64]float32) ([]Candidate, error) {
	first := cands[:min(exactTop, len(cands))]
	if err := s.exactScores(ctx, q, first, exact); err != nil {
		return nil, err
	}
	bar := kthScore(first, exact, exactTop)
	var more []vecCand
	for _, c := range cands[len(first):] {
		if c.approx+c.margin >= bar {
			more = append(more, c)
		}
	}
	if err := s.exactScores(ctx, q, more, exact); err != nil {
		return nil, err
	}
	top := make([]scored, 0, len(cands))
	for i, c := range cands {
		score, read := exact[c.rowid]
		switch {
		case !read:
			score = c.approx
		case score != score: // NaN: no vector in SQLite any more
			continue
		}
		top = append(top, scored{score: score, pos: int32(i), rowid: c.rowid}) // pos: c's index in cands
	}
	sort.Slice(top, func(i, j int) bool { return better(top[i], top[j]) })
	top = top[:min(limit, len(top))]
	out := make([]Candidate, len(top))
	for i, t := range top {
		out[i] = Candidate{ID: cands[t.pos].id, Row: t.rowid, Score: clamp01(float64(t.score)), Rank: i + 1}
	}
	return out, nil
}

// kthScore returns the limit-th best exact score of cands, -Inf when fewer
// than limit have one.
func kthScore(cands []vecCand, exact map[int64]float32, limit int) float32 {
	var ss []float32
	for _, c := range cands {
		if e := exact[c.rowid]; e == e {
			ss = append(ss, e)
		}
	}
	if len(ss) < limit {
		return float32(math.Inf(-1))
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i] > ss[j] })
	return ss[limit-1]
}

// exactScores reads the float32 vectors of cands that exact does not hold
// yet from the shard's vector table and records their exact cosine with q
// (NaN for a rowid without a vector: deleted since the index was read).
func (s *Shard) exactScores(ctx context.Context, q *quantQuery, cands []vecCand, exact map[int64]float32) error {
	var rowids []int64
	for _, c := range cands {
		if _, ok := exact[c.rowid]; !ok {
			rowids = append(rowids, c.rowid)
			exact[c.rowid] = float32(math.NaN())
		}
	}
	if rowids = s.index.scoreExact(q, rowids, exact); len(rowids) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("read vectors: %w", err)
	}
	ctx = boundedRead(ctx)
	plain := s.vec.Load().plain()
	var st *sql.Stmt
	if !plain {
		var err error
		if st, err = s.index.pointStmt(ctx, s.r); err != nil {
			return fmt.Errorf("read vectors: %w", err)
		}
	}
	// Reads of more than rescoreSplit vectors are split over two readers
	// side by side: each vec0 point query waits on SQLite's pages, not on a
	// core (53 reads of a top 40 took 1.4 ms of a 6 ms search in one).
	parts := 1
	if len(rowids) > rescoreSplit {
		parts = 2
	}
	scores := make([][]scored, parts)
	errs := make([]error, parts)
	forParts(len(rowids), parts, func(p, lo, hi int) {
		unit := make([]float32, len(q.unit))
		buf := make([]float32, 0, len(q.unit))
		score := func(rowid int64, blob []byte) error {
			var err error
			if buf, err = decodeVector(buf[:0], blob); err != nil || len(buf) != len(q.unit) {
				return fmt.Errorf("vector of rowid %d: %d floats, want %d: %w", rowid, len(buf), len(q.unit), ErrDims)
			}
			normalizeInto(unit, buf)
			scores[p] = append(scores[p], scored{rowid: rowid, score: dot(q.unit, unit)})
			return nil
		}
		if plain {
			errs[p] = readPlainVectors(ctx, s.r, rowids[lo:hi], score)
		} else {
			errs[p] = readVec0Vectors(ctx, st, rowids[lo:hi], score)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, part := range scores {
		for _, sc := range part {
			exact[sc.rowid] = sc.score
		}
	}
	return nil
}

// rescoreSplit is the most vectors exactScores reads on one connection.
const rescoreSplit = 24

// pointStmt returns sqlVecPoint prepared on db, preparing it on first use
// (about 30 µs a search saved). database/sql closes it with db's
// connections when the shard closes.
func (x *vectorIndex) pointStmt(ctx context.Context, db *sql.DB) (*sql.Stmt, error) {
	x.stmtMu.Lock()
	defer x.stmtMu.Unlock()
	if x.point == nil {
		st, err := db.PrepareContext(ctx, sqlVecPoint)
		if err != nil {
			return nil, err
		}
		x.point = st
	}
	return x.point, nil
}

// readPlainVectors calls fn with the vector of each rowid that vec_plain
// holds, in IN queries of at most plainBatch rowids.
func readPlainVectors(ctx context.Context, db *sql.DB, rowids []int64, fn func(rowid int64, blob []byte) error) error {
	for len(rowids) > 0 {
		part := rowids[:min(len(rowids), plainBatch)]
		rowids = rowids[len(part):]
		args := make([]any, len(part))
		for i, r := range part {
			args[i] = r
		}
		rows, err := db.QueryContext(ctx, `SELECT rowid, embedding FROM vec_plain WHERE rowid IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...)
		if err != nil {
			return fmt.Errorf("read vectors: %w", err)
		}
		for rows.Next() {
			var rowid int64
			var blob sql.RawBytes
			if err := rows.Scan(&rowid, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("read vectors: %w", err)
			}
			if err := fn(rowid, blob); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read vectors: %w", err)
		}
	}
	return nil
}

// readVec0Vectors calls fn with the vector of each rowid that vec_chunks
// holds, in one statement (st: sqlVecPoint).
func readVec0Vectors(ctx context.Context, st *sql.Stmt, rowids []int64, fn func(rowid int64, blob []byte) error) error {
	list := make([]byte, 0, 2+len(rowids)*8)
	list = append(list, '[')
	for i, r := range rowids {
		if i > 0 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, r, 10)
	}
	list = append(list, ']')
	rows, err := st.QueryContext(ctx, string(list))
	if err != nil {
		return fmt.Errorf("read vectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var rowid int64
		var blob sql.RawBytes
		if err := rows.Scan(&rowid, &blob); err != nil {
			return fmt.Errorf("read vectors: %w", err)
		}
		if err := fn(rowid, blob); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read vectors: %w", err)
	}
	return nil
}
