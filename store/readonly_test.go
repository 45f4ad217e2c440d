package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// fileDigest returns the sha256 of the file at path.
func fileDigest(tb testing.TB, path string) [32]byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	return sha256.Sum256(b)
}

// writeShard writes a shard with one session of n chunks (vectors set) in
// dir and closes it, so its WAL is checkpointed into the file.
func writeShard(tb testing.TB, path string, noVec bool) {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Config{Dims: testDims, Space: "test/m/8", NoSqliteVec: noVec})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	msgs, sc := session("ns1", "k", "s1", 6, rand.New(rand.NewPCG(1, 2)), testDims)
	mustApply(tb, s, Batch{Seq: 7, Messages: msgs, Rechunk: []SessionChunks{sc}})
	if err := s.Close(ctx); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

// TestOpenReadOnly opens a written shard read-only: it searches both legs,
// reads sessions back, refuses writes, and leaves the file byte for byte as
// it was; a second read-write writer can work on it at the same time.
func TestOpenReadOnly(t *testing.T) {
	for _, noVec := range []bool{false, true} {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "p0.db")
		writeShard(t, path, noVec)
		before := fileDigest(t, path)

		ro, err := Open(ctx, path, Config{Dims: testDims, Space: "test/m/8", ReadOnly: true})
		if err != nil {
			t.Fatalf("noVec %t: Open read-only: %v", noVec, err)
		}
		seq, err := ro.AppliedSeq(ctx)
		if err != nil || seq != 7 {
			t.Fatalf("noVec %t: AppliedSeq()=%d, %v, want 7", noVec, seq, err)
		}
		kw, err := ro.KeywordSearch(ctx, "ns1", "topic3", Filter{}, 5)
		if err != nil || len(kw) != 1 {
			t.Fatalf("noVec %t: KeywordSearch(topic3)=%d hits, %v, want 1", noVec, len(kw), err)
		}
		_, sc := session("ns1", "k", "s1", 6, rand.New(rand.NewPCG(1, 2)), testDims)
		vs, err := ro.VectorSearch(ctx, "ns1", sc.Chunks[2].Vector, Filter{}, 3)
		if err != nil || len(vs) == 0 || vs[0].ID != sc.Chunks[2].ID {
			t.Fatalf("noVec %t: VectorSearch()=%v, %v, want %s first", noVec, vs, err, sc.Chunks[2].ID)
		}
		msgs, err := ro.SessionMessages(ctx, SessionRef{Namespace: "ns1", SessionKey: "k", SessionID: "s1"}, 0, 10)
		if err != nil || len(msgs) != 6 {
			t.Fatalf("noVec %t: SessionMessages()=%d, %v, want 6", noVec, len(msgs), err)
		}
		m2, sc2 := session("ns1", "k", "s2", 1, nil, testDims)
		if _, err := ro.Apply(ctx, Batch{Seq: 8, Messages: m2, Rechunk: []SessionChunks{sc2}}); err == nil {
			t.Fatalf("noVec %t: Apply on a read-only shard succeeded, want an error", noVec)
		}
		if err := ro.Close(ctx); err != nil {
			t.Fatalf("noVec %t: Close: %v", noVec, err)
		}
		if after := fileDigest(t, path); after != before {
			t.Fatalf("noVec %t: the read-only open changed the shard file", noVec)
		}
	}
}

// TestOpenReadOnlyBesideWriter reads a shard that a writer has open and
// writes to; a reopen sees the new writes.
func TestOpenReadOnlyBesideWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p0.db")
	w, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	msgs, sc := session("ns1", "k", "s1", 3, rand.New(rand.NewPCG(3, 4)), testDims)
	mustApply(t, w, Batch{Seq: 1, Messages: msgs, Rechunk: []SessionChunks{sc}})
	ro, err := Open(ctx, path, Config{Dims: testDims, ReadOnly: true})
	if err != nil {
		t.Fatalf("Open read-only beside a writer: %v", err)
	}
	if n := ro.indexLen(); n != 3 {
		t.Fatalf("read-only index holds %d vectors, want 3", n)
	}
	ro.Close(ctx)
	msgs, sc = session("ns1", "k", "s2", 2, rand.New(rand.NewPCG(5, 6)), testDims)
	mustApply(t, w, Batch{Seq: 2, Messages: msgs, Rechunk: []SessionChunks{sc}})
	ro, err = Open(ctx, path, Config{Dims: testDims, ReadOnly: true})
	if err != nil {
		t.Fatalf("reopen read-only: %v", err)
	}
	defer ro.Close(ctx)
	if seq, err := ro.AppliedSeq(ctx); err != nil || seq != 2 {
		t.Fatalf("AppliedSeq()=%d, %v, want 2", seq, err)
	}
	if n := ro.indexLen(); n != 5 {
		t.Fatalf("reopened read-only index holds %d vectors, want 5", n)
	}
}

// TestOpenReadOnlyRefuses: a missing file is not created, a file that
// needs a migration or another space is refused, with errors that say so.
func TestOpenReadOnlyRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	if _, err := Open(ctx, missing, Config{Dims: testDims, ReadOnly: true}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Open(missing)=%v, want ErrReadOnly", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only Open created %s (stat: %v)", missing, err)
	}
	path := filepath.Join(dir, "p0.db")
	writeShard(t, path, false)
	if _, err := Open(ctx, path, Config{Dims: testDims, Space: "other/m/8", ReadOnly: true}); !errors.Is(err, ErrSpace) {
		t.Fatalf("Open(other space)=%v, want ErrSpace", err)
	}
	if _, err := Open(ctx, path, Config{Dims: testDims + 1, ReadOnly: true}); !errors.Is(err, ErrDims) {
		t.Fatalf("Open(other dims)=%v, want ErrDims", err)
	}
	db, err := sql.Open(driverName, dsn(path, "_busy_timeout=5000"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatalf("forget a migration: %v", err)
	}
	db.Close()
	before := fileDigest(t, path)
	if _, err := Open(ctx, path, Config{Dims: testDims, ReadOnly: true}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Open(needs migration)=%v, want ErrReadOnly", err)
	}
	if fileDigest(t, path) != before {
		t.Fatal("a refused read-only open changed the file")
	}
}
