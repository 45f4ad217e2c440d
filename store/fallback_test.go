package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// openMode opens the shard file at path with sqlite-vec enabled or not; the
// caller closes it (closeShard) or leaves it to the cleanup.
func openMode(tb testing.TB, path string, sqliteVec bool) *Shard {
	tb.Helper()
	s, err := Open(context.Background(), path, Config{Dims: testDims, NoSqliteVec: !sqliteVec})
	if err != nil {
		tb.Fatalf("Open(sqlite-vec %t): %v", sqliteVec, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil && !isClosed(err) {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func closeShard(tb testing.TB, s *Shard) {
	tb.Helper()
	if err := s.Close(context.Background()); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

func wantMode(tb testing.TB, s *Shard, mode, reasonPart string) {
	tb.Helper()
	got, why := s.VectorMode()
	if got != mode || !strings.Contains(why, reasonPart) || (mode == VectorModeSqliteVec) != (why == "") {
		tb.Fatalf("VectorMode()=%q, %q, want %q with a reason containing %q", got, why, mode, reasonPart)
	}
}

func mustCheck(tb testing.TB, s *Shard) {
	tb.Helper()
	if err := s.Check(context.Background()); err != nil {
		tb.Fatalf("Check: %v", err)
	}
}

// countRows returns count(*) of a table through the writer.
func countRows(tb testing.TB, s *Shard, table string) int {
	tb.Helper()
	var n int
	if err := s.w.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		tb.Fatalf("count %s: %v", table, err)
	}
	return n
}

// vectors returns a chunk id → vector map of the chunks of sc.
func vectors(sc SessionChunks) map[string][]float32 {
	out := map[string][]float32{}
	for _, c := range sc.Chunks {
		out[c.ID] = c.Vector
	}
	return out
}

// wantNearest checks that searching namespace ns with each vector finds its
// chunk first.
func wantNearest(tb testing.TB, s *Shard, ns string, vecs map[string][]float32) {
	tb.Helper()
	for id, v := range vecs {
		got, err := s.VectorSearch(context.Background(), ns, v, Filter{}, 3)
		if err != nil {
			tb.Fatalf("VectorSearch: %v", err)
		}
		if len(got) == 0 || got[0].ID != id || got[0].Score < 0.999 {
			tb.Fatalf("VectorSearch(vector of %s)=%+v, want %s first with score 1", id, got, id)
		}
	}
}

// wantAbsent checks that no search with the vectors finds their chunks.
func wantAbsent(tb testing.TB, s *Shard, ns string, vecs map[string][]float32) {
	tb.Helper()
	for id, v := range vecs {
		got, err := s.VectorSearch(context.Background(), ns, v, Filter{}, 50)
		if err != nil {
			tb.Fatalf("VectorSearch: %v", err)
		}
		for _, c := range got {
			if c.ID == id {
				tb.Fatalf("VectorSearch found deleted chunk %s: %+v", id, got)
			}
		}
	}
}

// TestGoScanShard runs a shard with sqlite-vec disabled: the module is not
// even loaded on its connections, vectors go to vec_plain, searches find
// them, SetVectors replaces them, deletes remove them, Check passes, and a
// reopened shard keeps them.
func TestGoScanShard(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s := openMode(t, path, false)
	wantMode(t, s, VectorModeGoScan, "disabled by configuration")
	for _, db := range []struct {
		name string
		q    queryer
	}{{"writer", s.w}, {"reader", s.r}} {
		rows, err := db.q.QueryContext(ctx, `SELECT vec_version()`)
		if err == nil {
			rows.Close()
			t.Fatalf("%s: vec_version() answers: sqlite-vec is loaded although disabled", db.name)
		}
	}
	if n := countRows(t, s, `sqlite_master WHERE name = 'vec_chunks'`); n != 0 {
		t.Fatalf("a shard created without sqlite-vec has a vec_chunks table")
	}

	r := rand.New(rand.NewPCG(41, 42))
	msgs, sc1 := session("n", "k", "s1", 20, r, testDims)
	_, other := session("o", "k", "s1", 5, r, testDims)
	mustApply(t, s, Batch{Seq: 1, Messages: msgs, Rechunk: []SessionChunks{sc1, other}})
	if got := countRows(t, s, "vec_plain"); got != 25 {
		t.Fatalf("vec_plain holds %d vectors, want 25", got)
	}
	wantNearest(t, s, "n", vectors(sc1))
	wantNearest(t, s, "o", vectors(other))
	mustCheck(t, s)

	// SetVectors replaces a vector in place.
	id := sc1.Chunks[7].ID
	v2 := randVec(r, testDims)
	if n, err := setVectorsByID(t, s, []ChunkVector{{ID: id, Vector: v2}}); err != nil || n != 1 {
		t.Fatalf("SetVectors()=%d, %v, want 1, nil", n, err)
	}
	wantNearest(t, s, "n", map[string][]float32{id: v2})
	if got := countRows(t, s, "vec_plain"); got != 25 {
		t.Fatalf("vec_plain holds %d vectors after a replacement, want 25", got)
	}
	mustCheck(t, s)

	// Deletes remove the vectors.
	mustApply(t, s, Batch{Seq: 2, DeleteSessions: []SessionRef{sc1.Session}})
	if got := countRows(t, s, "vec_plain"); got != 5 {
		t.Fatalf("vec_plain holds %d vectors after deleting the session, want 5", got)
	}
	wantAbsent(t, s, "n", vectors(sc1))
	mustCheck(t, s)

	_, sc2 := session("n", "k", "s2", 10, r, testDims)
	mustApply(t, s, Batch{Seq: 3, Rechunk: []SessionChunks{sc2}})
	closeShard(t, s)

	s = openMode(t, path, false)
	wantMode(t, s, VectorModeGoScan, "disabled by configuration")
	wantNearest(t, s, "n", vectors(sc2))
	wantNearest(t, s, "o", vectors(other))
	wantAbsent(t, s, "n", vectors(sc1))
	mustCheck(t, s)
	st, err := s.Stats(ctx)
	if err != nil || st.VectorsWaiting != 0 {
		t.Fatalf("Stats()=%+v, %v: want no chunk waiting for a vector", st, err)
	}
}

// TestVec0ShardReopenedWithoutSqliteVec creates a shard with sqlite-vec,
// reopens it without (its vectors, read from vec0's shadow tables, stay
// searchable; new ones and deletes work) and with sqlite-vec again (every
// vector is back in vec0, which sqlite-vec's own KNN confirms).
func TestVec0ShardReopenedWithoutSqliteVec(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	r := rand.New(rand.NewPCG(43, 44))
	_, a1 := session("n", "k", "a1", 12, r, testDims)
	_, a2 := session("n", "k", "a2", 12, r, testDims)
	_, b := session("n", "k", "b", 12, r, testDims)

	s := openMode(t, path, true)
	wantMode(t, s, VectorModeSqliteVec, "")
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{a1, a2}})
	mustCheck(t, s)
	closeShard(t, s)

	s = openMode(t, path, false)
	wantMode(t, s, VectorModeGoScan, "disabled by configuration")
	if got := countRows(t, s, "vec_plain"); got != 24 {
		t.Fatalf("vec_plain holds %d vectors after the switch, want the 24 of vec0", got)
	}
	wantNearest(t, s, "n", vectors(a1))
	wantNearest(t, s, "n", vectors(a2))
	mustApply(t, s, Batch{Seq: 2, Rechunk: []SessionChunks{b}})
	mustApply(t, s, Batch{Seq: 3, DeleteSessions: []SessionRef{a1.Session}})
	wantNearest(t, s, "n", vectors(a2))
	wantNearest(t, s, "n", vectors(b))
	wantAbsent(t, s, "n", vectors(a1))
	if got := countRows(t, s, "vec_plain"); got != 24 {
		t.Fatalf("vec_plain holds %d vectors, want 24 (a2 and b)", got)
	}
	mustCheck(t, s)
	closeShard(t, s)

	s = openMode(t, path, true)
	wantMode(t, s, VectorModeSqliteVec, "")
	if got := countRows(t, s, "vec_plain"); got != 0 {
		t.Fatalf("vec_plain holds %d vectors after reopening with sqlite-vec, want 0", got)
	}
	if got := countRows(t, s, "vec_chunks"); got != 24 {
		t.Fatalf("vec_chunks holds %d vectors, want 24", got)
	}
	wantNearest(t, s, "n", vectors(a2))
	wantNearest(t, s, "n", vectors(b))
	wantAbsent(t, s, "n", vectors(a1))
	mustCheck(t, s)
	for id, v := range vectors(b) {
		got, err := s.vec0Search(ctx, "n", v, Filter{}, 1)
		if err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("vec0Search(vector of %s)=%+v, %v: sqlite-vec does not hold the vector written in go-scan", id, got, err)
		}
	}
	var plainFlag int
	if err := s.w.QueryRow(`SELECT value FROM meta WHERE key = 'vec_plain'`).Scan(&plainFlag); err != nil || plainFlag != 0 {
		t.Fatalf("meta vec_plain=%d, %v, want 0", plainFlag, err)
	}
}

// TestShardCreatedWithoutSqliteVecGetsVec0 opens with sqlite-vec a shard
// created without it: vec_chunks is created and takes the vectors.
func TestShardCreatedWithoutSqliteVecGetsVec0(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	r := rand.New(rand.NewPCG(45, 46))
	_, sc := session("n", "k", "s", 15, r, testDims)
	s := openMode(t, path, false)
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{sc}})
	closeShard(t, s)

	s = openMode(t, path, true)
	wantMode(t, s, VectorModeSqliteVec, "")
	if got := countRows(t, s, "vec_chunks"); got != 15 {
		t.Fatalf("vec_chunks holds %d vectors, want 15", got)
	}
	wantNearest(t, s, "n", vectors(sc))
	mustCheck(t, s)
	for id, v := range vectors(sc) {
		got, err := s.vec0Search(ctx, "n", v, Filter{}, 1)
		if err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("vec0Search(vector of %s)=%+v, %v", id, got, err)
		}
	}
}

// breakVec0Writes makes every insert into vec_chunks fail, as a damaged
// vec0 table would, while reads keep working.
func breakVec0Writes(tb testing.TB, s *Shard) {
	tb.Helper()
	if _, err := s.w.Exec(`CREATE TRIGGER vec0_broken BEFORE INSERT ON vec_chunks_rowids
		BEGIN SELECT RAISE(ABORT, 'test: vec0 is broken'); END`); err != nil {
		tb.Fatalf("break vec0: %v", err)
	}
}

// TestVec0WriteFailureFallsBack breaks vec0 writes under a running shard:
// the next Apply and SetVectors still succeed because the shard falls back
// to go-scan, keeping every vector; reopened while vec0 is broken it starts
// in go-scan, and once vec0 is repaired it returns to sqlite-vec.
func TestVec0WriteFailureFallsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shard.db")
	r := rand.New(rand.NewPCG(47, 48))
	_, a := session("n", "k", "a", 10, r, testDims)
	_, b := session("n", "k", "b", 10, r, testDims)
	_, c := session("n", "k", "c", 10, r, testDims)
	for i := range c.Chunks {
		c.Chunks[i].Vector = nil // embedded later, with SetVectors
	}

	s := openMode(t, path, true)
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{a, c}})
	breakVec0Writes(t, s)
	if _, err := s.w.Exec(`INSERT INTO vec_chunks(rowid, embedding) VALUES (9999, ?)`, encodeVector(nil, randVec(r, testDims))); err == nil {
		t.Fatal("vec0 insert succeeded: the test cannot break vec0")
	}
	mustApply(t, s, Batch{Seq: 2, Rechunk: []SessionChunks{b}})
	wantMode(t, s, VectorModeGoScan, "vec0 table failed")
	wantMode(t, s, VectorModeGoScan, "write") // vec0 words the trigger's abort as its own error
	wantNearest(t, s, "n", vectors(a))
	wantNearest(t, s, "n", vectors(b))
	cv := make([]ChunkVector, len(c.Chunks))
	cvecs := map[string][]float32{}
	for i, ch := range c.Chunks {
		cv[i] = ChunkVector{ID: ch.ID, Vector: randVec(r, testDims)}
		cvecs[ch.ID] = cv[i].Vector
	}
	if n, err := setVectorsByID(t, s, cv); err != nil || n != len(cv) {
		t.Fatalf("SetVectors()=%d, %v, want %d, nil", n, err, len(cv))
	}
	wantNearest(t, s, "n", cvecs)
	if got := countRows(t, s, "vec_plain"); got != 30 {
		t.Fatalf("vec_plain holds %d vectors, want 30", got)
	}
	mustCheck(t, s)
	closeShard(t, s)

	s = openMode(t, path, true) // vec0 still broken
	wantMode(t, s, VectorModeGoScan, "vec0 table unusable")
	wantNearest(t, s, "n", vectors(b))
	mustCheck(t, s)
	if _, err := s.w.Exec(`DROP TRIGGER vec0_broken`); err != nil {
		t.Fatal(err)
	}
	closeShard(t, s)

	s = openMode(t, path, true)
	wantMode(t, s, VectorModeSqliteVec, "")
	wantNearest(t, s, "n", vectors(a))
	wantNearest(t, s, "n", vectors(b))
	wantNearest(t, s, "n", cvecs)
	if got := countRows(t, s, "vec_chunks"); got != 30 {
		t.Fatalf("vec_chunks holds %d vectors, want 30", got)
	}
	mustCheck(t, s)
}

// TestApplyErrorIsNotAVec0Failure: a batch that fails for its own reasons
// leaves a healthy shard in sqlite-vec.
func TestApplyErrorIsNotAVec0Failure(t *testing.T) {
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(49, 50))
	_, sc := session("n", "k", "s", 3, r, testDims)
	sc.Chunks[1].Vector = sc.Chunks[1].Vector[:3]
	if _, err := s.Apply(context.Background(), Batch{Rechunk: []SessionChunks{sc}}); !errors.Is(err, ErrDims) {
		t.Fatalf("Apply(short vector)=%v, want ErrDims", err)
	}
	s.applyHook = func(stage string) error { return fmt.Errorf("hook at %s", stage) }
	_, sc = session("n", "k", "s", 3, r, testDims)
	if _, err := s.Apply(context.Background(), Batch{Rechunk: []SessionChunks{sc}}); err == nil {
		t.Fatal("Apply with a failing hook succeeded")
	}
	wantMode(t, s, VectorModeSqliteVec, "")
}

// TestUnreadableVec0VectorsWaitAgain: a shard whose vec0 data cannot be read
// without sqlite-vec loses no chunk; their vectors are marked as waiting
// (status shows them) and the backfill's SetVectors restores them.
func TestUnreadableVec0VectorsWaitAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	r := rand.New(rand.NewPCG(51, 52))
	_, sc := session("n", "k", "s", 8, r, testDims)
	s := openMode(t, path, true)
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{sc}})
	closeShard(t, s)

	// Damage the vec0 data through a connection without sqlite-vec (the
	// shadow tables are plain tables there).
	raw, err := sql.Open(driverName, dsn(path, noVecParam))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`DROP TABLE vec_chunks_vector_chunks00`); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	s = openMode(t, path, false)
	wantMode(t, s, VectorModeGoScan, "disabled")
	st, err := s.Stats(ctx)
	if err != nil || st.VectorsWaiting != 8 || st.Chunks != 8 {
		t.Fatalf("Stats()=%+v, %v: want 8 chunks, all 8 waiting for vectors", st, err)
	}
	mustCheck(t, s)
	pend, err := s.PendingVectors(ctx, 100)
	if err != nil || len(pend) != 8 {
		t.Fatalf("PendingVectors()=%d, %v, want 8", len(pend), err)
	}
	var cv []ChunkVector
	for _, c := range sc.Chunks {
		cv = append(cv, ChunkVector{ID: c.ID, Vector: c.Vector})
	}
	if _, err := setVectorsByID(t, s, cv); err != nil {
		t.Fatal(err)
	}
	wantNearest(t, s, "n", vectors(sc))
	mustCheck(t, s)
}

// TestCheckVectorTables: Check fails on a vector without its chunk in
// go-scan, and on a vector left in vec_plain under sqlite-vec.
func TestCheckVectorTables(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, sqliteVec := range []bool{false, true} {
		t.Run(fmt.Sprintf("sqlite-vec=%t", sqliteVec), func(t *testing.T) {
			s := openMode(t, filepath.Join(t.TempDir(), "shard.db"), sqliteVec)
			_, sc := session("n", "k", "s", 4, r, testDims)
			mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{sc}})
			mustCheck(t, s)
			if _, err := s.w.Exec(`INSERT INTO vec_plain(rowid, embedding) VALUES (99999, ?)`, encodeVector(nil, randVec(r, testDims))); err != nil {
				t.Fatal(err)
			}
			err := s.Check(context.Background())
			if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), "vec_plain") {
				t.Fatalf("Check()=%v, want ErrInconsistent naming vec_plain", err)
			}
		})
	}
}
