package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// otherVersion is a tokenizer version that is not this binary's.
const otherVersion = tokenizerVersion + 1

// rawDB opens the shard file at path directly, as a file written by
// another binary would be seen; closed at cleanup.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	registerDriver()
	db, err := sql.Open(driverName, dsn(path, "_busy_timeout=5000&_foreign_keys=on"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// unsegment rewrites the index of every CJK chunk of the file as a binary
// of otherVersion might have written it: the text indexed as it is (as
// before segmentation), fts_ver and meta 'tokenizer' set to otherVersion.
func unsegment(t *testing.T, db *sql.DB) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query(`SELECT rowid, text, fts_body, fts_words, ns, sk FROM chunks WHERE fts_ver > 0`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		rowid              int64
		text, body, ns, sk string
		words              sql.NullString
	}
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.rowid, &r.text, &r.body, &r.words, &r.ns, &r.sk); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rows.Close()
	for _, r := range rs {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{sqlFTSDelete, []any{r.rowid, r.body, r.ns, r.words, "", r.sk}},
			{`UPDATE chunks SET fts_seg = NULL, fts_words = NULL, fts_ver = ? WHERE rowid = ?`, []any{otherVersion, r.rowid}},
			{sqlFTSInsert, []any{r.rowid, r.text, r.ns, nil, "", r.sk}},
		} {
			if _, err := tx.Exec(q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
	}
	if _, err := tx.Exec(`UPDATE meta SET value = ? WHERE key = 'tokenizer'`, otherVersion); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// ftsMatches counts the chunks the raw FTS index matches for one term.
func ftsMatches(t *testing.T, db *sql.DB, term string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?`, ftsColumns+` : `+quoteTerm(term)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func tokenizerOf(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var v int64
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'tokenizer'`).Scan(&v); err != nil {
		t.Fatalf("meta tokenizer: %v", err)
	}
	return v
}

// progressLog records OnReindex calls.
type progressLog struct{ calls [][2]int64 }

func (p *progressLog) record(done, total int64) { p.calls = append(p.calls, [2]int64{done, total}) }

func TestReindexOnTokenizerVersionChange(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{{Session: SessionRef{"n", "k", "s"}, Chunks: cjkChunks}}})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	unsegment(t, db)
	if n := ftsMatches(t, db, "智能"); n != 0 {
		t.Fatalf("the old index matches 智能 in %d chunks, want 0 (the test needs an unsegmented index)", n)
	}
	db.Close()

	var log progressLog
	s, err = Open(ctx, path, Config{Dims: testDims, OnReindex: log.record})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	cjk := int64(len(cjkChunks) - 1) // all but the English chunk, which is the same in every version
	if want := [][2]int64{{cjk, cjk}}; !slices.Equal(log.calls, want) {
		t.Errorf("OnReindex calls = %v, want %v", log.calls, want)
	}
	if got := hitIDs(t, s, "智能"); !slices.Equal(got, []string{"zh", "zh2"}) {
		t.Errorf("after re-index KeywordSearch(智能) = %v, want [zh zh2]", got)
	}
	if got := hitIDs(t, s, "학교"); !slices.Equal(got, []string{"ko"}) {
		t.Errorf("after re-index KeywordSearch(학교) = %v, want [ko]", got)
	}
	mustCheck(t, s)
	if v := tokenizerOf(t, s.w); v != tokenizerVersion {
		t.Errorf("meta tokenizer = %d, want %d", v, tokenizerVersion)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Up to date: nothing to do at the next Open.
	log.calls = nil
	s, err = Open(ctx, path, Config{Dims: testDims, OnReindex: log.record})
	if err != nil {
		t.Fatal(err)
	}
	if len(log.calls) != 0 {
		t.Errorf("OnReindex calls on an up-to-date shard = %v, want none", log.calls)
	}
}

// A re-index interrupted after its first batch keeps that batch, and the
// next Open resumes with the rest.
func TestReindexResumesAfterInterruption(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*reindexBatch + 200
	var chunks []Chunk
	for i := 0; i < n; i++ {
		chunks = append(chunks, Chunk{ID: fmt.Sprint("c", i), Text: fmt.Sprintf("第%d条：%s", i, zhSentence)})
	}
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{{Session: SessionRef{"n", "k", "s"}, Chunks: chunks}}})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	unsegment(t, db)
	db.Close()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first progressLog
	_, err = Open(cctx, path, Config{Dims: testDims, OnReindex: func(done, total int64) {
		first.record(done, total)
		cancel() // as if the process died after the first batch
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open cancelled during the re-index: %v, want context.Canceled", err)
	}
	if want := [][2]int64{{reindexBatch, n}}; !slices.Equal(first.calls, want) {
		t.Fatalf("OnReindex calls before the interruption = %v, want %v", first.calls, want)
	}
	db = rawDB(t, path)
	var done int
	if err := db.QueryRow(`SELECT count(*) FROM chunks WHERE fts_ver = ?`, tokenizerVersion).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if done != reindexBatch || tokenizerOf(t, db) != otherVersion {
		t.Fatalf("after the interruption: %d chunks at version %d and meta %d; want the first batch (%d) done and meta still %d",
			done, tokenizerVersion, tokenizerOf(t, db), reindexBatch, otherVersion)
	}
	db.Close()

	var second progressLog
	s, err = Open(ctx, path, Config{Dims: testDims, OnReindex: second.record})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	rest := int64(n - reindexBatch)
	if want := [][2]int64{{reindexBatch, rest}, {rest, rest}}; !slices.Equal(second.calls, want) {
		t.Errorf("OnReindex calls when resuming = %v, want %v", second.calls, want)
	}
	mustCheck(t, s)
	if got := hitIDs(t, s, "智能"); len(got) != 20 { // hitIDs asks for 20
		t.Errorf("KeywordSearch(智能) found %d chunks, want 20", len(got))
	}
	if v := tokenizerOf(t, s.w); v != tokenizerVersion {
		t.Errorf("meta tokenizer = %d, want %d", v, tokenizerVersion)
	}
}

// A shard file written before migration 0004 (its FTS index over the raw
// text) is migrated and indexed on Open, and then finds CJK words inside
// longer runs while Latin words still stem.
func TestMigrationFromUnsegmentedShard(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	db := migratedTo(t, path, 3)
	// Rows as Apply wrote them before 0004: the FTS index over the raw text.
	for i, c := range cjkChunks {
		if _, err := db.Exec(`INSERT INTO chunks(rowid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text)
			VALUES (?, ?, 'n', 'sessions', 'k', 's', ?, ?, 0, ?)`, i+1, c.ID, i, i, c.Text); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO chunks_fts(rowid, text, ns) VALUES (?, ?, ?)`, i+1, c.Text, nsToken("n")); err != nil {
			t.Fatal(err)
		}
	}
	if n := ftsMatches0003(t, db, "智能"); n != 0 {
		t.Fatalf("the old index matches 智能 in %d chunks, want 0", n)
	}
	db.Close()

	var log progressLog
	s, err := Open(ctx, path, Config{Dims: testDims, OnReindex: log.record})
	if err != nil {
		t.Fatalf("Open a shard from before 0004: %v", err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	all := int64(len(cjkChunks))
	if want := [][2]int64{{all, all}}; !slices.Equal(log.calls, want) {
		t.Errorf("OnReindex calls = %v, want %v", log.calls, want)
	}
	mustCheck(t, s)
	for q, want := range map[string][]string{
		"智能": {"zh", "zh2"}, "学習": {"ja"}, "학교": {"ko"}, "run": {"en"}, "python": {"mixed"},
	} {
		if got := hitIDs(t, s, q); !slices.Equal(got, want) {
			t.Errorf("KeywordSearch(%q) = %v, want %v", q, got, want)
		}
	}
	// New chunks are indexed as usual after the migration.
	mustApply(t, s, Batch{Seq: 2, Rechunk: []SessionChunks{{Session: SessionRef{"n", "k2", "s"}, Chunks: []Chunk{
		{ID: "new", Text: "明天我们讨论深度学习。"}}}}})
	if got := hitIDs(t, s, "深度"); !slices.Equal(got, []string{"new"}) {
		t.Errorf("KeywordSearch(深度) = %v, want [new]", got)
	}
	mustCheck(t, s)
}

// migratedTo returns a new shard file at path with the migrations up to
// version applied, as a binary of that schema left it.
func migratedTo(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	db := rawDB(t, path)
	execAll(t, db, `PRAGMA journal_mode = WAL`, `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version <= version {
			if err := applyMigration(context.Background(), db, m, testDims); err != nil {
				t.Fatalf("%s: %v", m.name, err)
			}
		}
	}
	return db
}

// ftsMatches0003 counts the chunks the FTS index of a file before
// migration 0004 (columns text, ns) matches for one term.
func ftsMatches0003(t *testing.T, db *sql.DB, term string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?`, `text : `+quoteTerm(term)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
