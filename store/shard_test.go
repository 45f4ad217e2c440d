package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
)

var errorsIs = errors.Is

type querier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

func TestOpenVerifiesPragmas(t *testing.T) {
	s := openTest(t, testDims)
	ctx := context.Background()
	for _, tc := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"busy_timeout", "5000"},
		{"foreign_keys", "1"},
	} {
		for name, db := range map[string]querier{"writer": s.w, "reader": s.r} {
			var got string
			if err := db.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
				t.Fatalf("%s PRAGMA %s: %v", name, tc.pragma, err)
			}
			if got != tc.want {
				t.Errorf("%s PRAGMA %s = %q, want %q", name, tc.pragma, got, tc.want)
			}
		}
	}
	var sync string
	if err := s.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil || sync != "1" {
		t.Errorf("writer PRAGMA synchronous = %q (%v), want 1", sync, err)
	}
	var qo string
	if err := s.r.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qo); err != nil || qo != "1" {
		t.Errorf("reader PRAGMA query_only = %q (%v), want 1", qo, err)
	}
	if _, err := s.r.ExecContext(ctx, `DELETE FROM messages`); err == nil {
		t.Errorf("reader accepted a write")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path string
		cfg  Config
		want error
	}{
		{"zero dims", filepath.Join(dir, "a.db"), Config{}, ErrInvalidConfig},
		{"negative read conns", filepath.Join(dir, "a.db"), Config{Dims: 4, ReadConns: -1}, ErrInvalidConfig},
		{"empty path", "", Config{Dims: 4}, ErrInvalidConfig},
		{"in memory", ":memory:", Config{Dims: 4}, ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(context.Background(), tc.path, tc.cfg)
			if err == nil {
				s.Close(context.Background())
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open() error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestOpenDimsMismatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(ctx, path, Config{Dims: 8})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = Open(ctx, path, Config{Dims: 16})
	if !errors.Is(err, ErrDims) {
		t.Fatalf("Open(dims 16) of a dims 8 file: error = %v, want ErrDims", err)
	}
	s, err = Open(ctx, path, Config{Dims: 8})
	if err != nil {
		t.Fatalf("reopen with the right dims: %v", err)
	}
	s.Close(ctx)
}

func TestMigrationsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		t.Fatalf("loadMigrations() = %d, %v", len(ms), err)
	}
	read := func(s *Shard) (n int, last int64) {
		if err := s.r.QueryRowContext(ctx, `SELECT count(*), max(applied_at) FROM schema_migrations`).Scan(&n, &last); err != nil {
			t.Fatalf("schema_migrations: %v", err)
		}
		return n, last
	}
	s, err := Open(ctx, path, Config{Dims: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	mustApply(t, s, Batch{Seq: 3, Messages: []Message{{Namespace: "a", SessionKey: "k", SessionID: "s", Text: "hi"}}})
	n1, at1 := read(s)
	s.Close(ctx)
	for i := 0; i < 2; i++ {
		s, err = Open(ctx, path, Config{Dims: 4})
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		n2, at2 := read(s)
		if n2 != n1 || at2 != at1 || n2 != len(ms) {
			t.Errorf("reopen %d: migrations = %d (last %d), want %d (last %d)", i, n2, at2, len(ms), at1)
		}
		seq, err := s.AppliedSeq(ctx)
		if err != nil || seq != 3 {
			t.Errorf("reopen %d: AppliedSeq() = %d, %v, want 3", i, seq, err)
		}
		s.Close(ctx)
	}
}

func TestMigrationFromNewerBinary(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(ctx, path, Config{Dims: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	if _, err := Open(ctx, path, Config{Dims: 4}); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open() error = %v, want ErrSchemaTooNew", err)
	}
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Apply(ctx, Batch{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if _, err := s.KeywordSearch(ctx, "a", "x", Filter{}, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("KeywordSearch after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

func TestOpenRefusesAnotherVectorSpace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(ctx, path, Config{Dims: testDims, Space: "builtin/hash-ngram-v1/8"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	if s, err = Open(ctx, path, Config{Dims: testDims, Space: "builtin/hash-ngram-v1/8"}); err != nil {
		t.Fatalf("reopen with the same space = %v, want nil", err)
	}
	s.Close(ctx)
	if _, err := Open(ctx, path, Config{Dims: testDims, Space: "openai/text-embedding-3-small/8"}); !errors.Is(err, ErrSpace) {
		t.Fatalf("Open with another space = %v, want ErrSpace", err)
	}
}

func TestReadSpace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	if sp, d, err := ReadSpace(ctx, path); sp != "" || d != 0 || err != nil {
		t.Fatalf("ReadSpace(missing)=%q, %d, %v; want empty", sp, d, err)
	}
	s, err := Open(ctx, path, Config{Dims: testDims, Space: "builtin/hash-ngram-v1/8"})
	if err != nil {
		t.Fatal(err)
	}
	sp, d, err := ReadSpace(ctx, path)
	if sp != "builtin/hash-ngram-v1/8" || d != testDims || err != nil {
		t.Fatalf("ReadSpace()=%q, %d, %v; want the space and %d", sp, d, err, testDims)
	}
	s.Close(ctx)
}
