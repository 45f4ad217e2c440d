package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// TestNewShardFilesHave16KiBPages: a shard file Open creates, or an empty
// one it finds, has shardPageBytes pages and is in WAL mode, and its
// writer's valve is walValveBytes in those pages. Without
// prepareShardFile the file has SQLite's 4 KiB.
func TestNewShardFilesHave16KiBPages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "new.db"), empty} {
		s, err := Open(ctx, path, Config{Dims: 8})
		if err != nil {
			t.Fatal(err)
		}
		var page, auto int
		var mode string
		if err := s.w.QueryRowContext(ctx, `SELECT (SELECT page_size FROM pragma_page_size), (SELECT journal_mode FROM pragma_journal_mode)`).Scan(&page, &mode); err != nil {
			t.Fatal(err)
		}
		if err := s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil {
			t.Fatal(err)
		}
		if page != shardPageBytes || mode != "wal" || auto != walValveBytes/shardPageBytes {
			t.Errorf("%s: page size %d, journal mode %s, wal_autocheckpoint %d; want %d, wal, %d",
				filepath.Base(path), page, mode, auto, shardPageBytes, walValveBytes/shardPageBytes)
		}
		if s.PageBytes() != shardPageBytes {
			t.Errorf("%s: PageBytes %d, want %d", filepath.Base(path), s.PageBytes(), shardPageBytes)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := filePageBytes(path); err != nil || n != shardPageBytes {
			t.Errorf("%s: header page size %d (%v), want %d", filepath.Base(path), n, err, shardPageBytes)
		}
	}
}

// TestShardOfAnOlderPageSizeKeepsIt: a shard file created with SQLite's
// 4 KiB pages (as every shard was before shardPageBytes) opens, keeps its
// page size, gets the valve in its own pages, and indexes and finds rows.
func TestShardOfAnOlderPageSizeKeepsIt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	createOldShardFile(t, path)
	s, err := Open(ctx, path, Config{Dims: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var page, auto int
	if err := s.w.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&page); err != nil {
		t.Fatal(err)
	}
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil {
		t.Fatal(err)
	}
	if page != 4096 || auto != walValveBytes/4096 || s.PageBytes() != 4096 {
		t.Fatalf("page size %d (PageBytes %d), wal_autocheckpoint %d; want 4096 and %d", page, s.PageBytes(), auto, walValveBytes/4096)
	}
	msgs, sc := session("n", "k", "s", 20, rand.New(rand.NewPCG(1, 2)), 8)
	mustApply(t, s, Batch{Seq: 1, Messages: msgs, Rechunk: []SessionChunks{sc}})
	got, err := s.KeywordSearch(ctx, "n", "topic3", Filter{}, 10)
	if err != nil || len(got) != 4 {
		t.Fatalf("keyword search of a 4 KiB shard: %d hits (%v), want 4", len(got), err)
	}
	integrity(t, s)
}

// TestShardFileThatIsNotSQLite: Open refuses a file that is not an SQLite
// database, saying so, and leaves it as it was.
func TestShardFileThatIsNotSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	body := []byte(strings.Repeat("not a database ", 20))
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, Config{Dims: 8})
	if err == nil || !strings.Contains(err.Error(), "not an SQLite database") {
		t.Fatalf("Open of a text file: %v, want an error saying it is not an SQLite database", err)
	}
	after, rerr := os.ReadFile(path)
	if rerr != nil || string(after) != string(body) {
		t.Fatalf("the file changed: %q (%v)", after, rerr)
	}
	for _, tc := range []struct {
		header []byte
		want   string
	}{
		{append([]byte("SQLite format 3\x00\x00\x03"), make([]byte, 82)...), "page size 3 in its header"},
		{append([]byte("SQLite format 3\x00\x00\x01"), make([]byte, 82)...), ""}, // 65,536
	} {
		if err := os.WriteFile(path, tc.header, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := filePageBytes(path)
		switch {
		case tc.want == "" && (err != nil || n != 65536):
			t.Errorf("header page size field 1: %d, %v; want 65536", n, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("header %q: %d, %v; want an error with %q", fmt.Sprint(tc.header[16:18]), n, err, tc.want)
		}
	}
}

// createOldShardFile creates an empty database file at path as SQLite
// makes one (4 KiB pages) in WAL mode: a shard file before 16 KiB pages.
func createOldShardFile(t *testing.T, path string) {
	t.Helper()
	c, err := (&sqlite3.SQLiteDriver{}).Open(dsn(path, noVecParam))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.(*sqlite3.SQLiteConn).Exec("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
