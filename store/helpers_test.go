package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

const testDims = 8

// openTest opens a shard in t.TempDir and closes it at cleanup.
func openTest(tb testing.TB, dims int) *Shard {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "shard.db"), Config{Dims: dims})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil && !isClosed(err) {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func isClosed(err error) bool { return err != nil && errorsIs(err, ErrClosed) }

// randVec returns a random unit vector.
func randVec(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	var ss float64
	for i := range v {
		f := r.NormFloat64()
		v[i] = float32(f)
		ss += f * f
	}
	inv := 1 / math.Sqrt(ss)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// session builds n messages and one chunk per message of a session; vectors
// are random when r is not nil.
func session(ns, key, id string, n int, r *rand.Rand, dims int) ([]Message, SessionChunks) {
	ref := SessionRef{Namespace: ns, SessionKey: key, SessionID: id}
	sc := SessionChunks{Session: ref}
	var msgs []Message
	for i := 0; i < n; i++ {
		ts := t0.Add(time.Duration(i) * time.Minute)
		text := fmt.Sprintf("%s %s message %d about topic%d", ns, id, i, i%5)
		msgs = append(msgs, Message{Namespace: ns, SessionKey: key, SessionID: id, Seq: int64(i),
			ID: fmt.Sprintf("m-%s-%s-%d", ns, id, i), Role: "user", Speaker: "Ana", Text: text, Time: ts})
		c := Chunk{ID: fmt.Sprintf("c-%s-%s-%s-%d", ns, key, id, i), Namespace: ns, Source: "sessions",
			SessionKey: key, SessionID: id, SeqStart: int64(i), SeqEnd: int64(i), Text: text, TimeStart: ts, TimeEnd: ts}
		if r != nil {
			c.Vector = randVec(r, dims)
		}
		sc.Chunks = append(sc.Chunks, c)
	}
	return msgs, sc
}

func mustApply(tb testing.TB, s *Shard, b Batch) ApplyStats {
	tb.Helper()
	st, err := s.Apply(context.Background(), b)
	if err != nil {
		tb.Fatalf("Apply: %v", err)
	}
	return st
}

// countRows counts a shard's rows in every table, per namespace where the
// table has one. fts counts index entries (via the namespace token), so it
// sees a stale FTS row that the content table no longer has.
type rowCounts struct{ messages, chunks, fts, vec int }

func counts(tb testing.TB, s *Shard, ns string) rowCounts {
	tb.Helper()
	ctx := context.Background()
	var c rowCounts
	q := func(dst *int, sql string, args ...any) {
		if err := s.w.QueryRowContext(ctx, sql, args...).Scan(dst); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
	q(&c.messages, `SELECT count(*) FROM messages WHERE namespace = ?`, ns)
	q(&c.chunks, `SELECT count(*) FROM chunks WHERE namespace = ?`, ns)
	q(&c.fts, `SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?`, `ns : "`+nsToken(ns)+`"`)
	// vec0 rows are keyed by chunk rowid: count those of the namespace's
	// chunks plus any orphan (a vector without a chunk).
	var inNS, orphans int
	q(&inNS, `SELECT count(*) FROM vec_chunks v WHERE v.rowid IN (SELECT rowid FROM chunks WHERE namespace = ?)`, ns)
	q(&orphans, `SELECT count(*) FROM vec_chunks v WHERE v.rowid NOT IN (SELECT rowid FROM chunks)`)
	c.vec = inNS + orphans
	return c
}

// integrity runs FTS5's integrity check against the content table.
func integrity(tb testing.TB, s *Shard) {
	tb.Helper()
	if _, err := s.w.Exec(`INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		tb.Fatalf("fts integrity-check: %v", err)
	}
}

// snippetOf is c's snippet as a search returns it: cut from its chunk's
// stored text (Candidate.SnippetFor).
func snippetOf(tb testing.TB, s *Shard, c Candidate) string {
	tb.Helper()
	recs, err := s.ChunksByID(context.Background(), []string{c.ID})
	if err != nil {
		tb.Fatalf("Chunks(%s): %v", c.ID, err)
	}
	rec, ok := recs[c.ID]
	if !ok {
		tb.Fatalf("Chunks(%s): not stored", c.ID)
	}
	return c.SnippetFor(rec)
}

// setVectorsByID is SetVectors for vectors named by chunk id alone (as
// tests know them): each gets the rowid its chunk has now, an id not stored
// none (0, which no row has).
func setVectorsByID(tb testing.TB, s *Shard, vs []ChunkVector) (int, error) {
	tb.Helper()
	out := make([]ChunkVector, len(vs))
	for i, v := range vs {
		out[i] = v
		out[i].Row = rowOf(tb, s, v.ID)
	}
	return s.SetVectors(context.Background(), out)
}

// rowOf is the rowid of the chunk id (0 when it is not stored).
func rowOf(tb testing.TB, s *Shard, id string) int64 {
	tb.Helper()
	refs, err := chunkRefs(context.Background(), s.r, []string{id})
	if err != nil {
		tb.Fatalf("rowid of %s: %v", id, err)
	}
	if len(refs) == 0 {
		return 0
	}
	return refs[0].Row
}
