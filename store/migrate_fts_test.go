package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// A shard written before migration 0011 (chunks_fts indexing each chunk's
// context) has its FTS index rebuilt without the context on Open: every
// chunk indexed again, the index in agreement with chunks, and a word found
// only in a context still found by the keyword index (which ranks with the
// context) but no longer by FTS5.
func TestMigrationDropsTheContextFromFTS(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	db := migratedTo(t, path, 10)
	// As a binary of schema 10 left it: the tokenizer version recorded,
	// every chunk indexed (fts_ver 0: no CJK text), context included.
	execAll(t, db, fmt.Sprintf(`INSERT INTO meta(key, value) VALUES ('tokenizer', %d)`, tokenizerVersion))
	res, err := db.Exec(`INSERT INTO sessions(namespace, session_key, session_id) VALUES ('n', 'k', 's')`)
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := res.LastInsertId()
	texts := []string{"Ana: we adopted a zebra", "Bo: what is its name", "Ana: she is called Stripes"}
	for i, text := range texts {
		context := ""
		if i > 0 {
			context = texts[i-1]
		}
		res, err := db.Exec(`INSERT INTO chunks(sid, id, namespace, source, session_key, session_id, seq_start, seq_end, part, text, context, fts_ver)
			VALUES (?, ?, 'n', 'sessions', 'k', 's', ?, ?, 0, ?, ?, 0)`, sid, fmt.Sprintf("c%d", i), i+1, i+1, text, context)
		if err != nil {
			t.Fatal(err)
		}
		row, _ := res.LastInsertId()
		if _, err := db.Exec(`INSERT INTO chunks_fts(rowid, fts_body, ns, fts_words, fts_ctx, sk) VALUES (?, ?, ?, NULL, ?, ?)`,
			row, text, nsToken("n"), context, skToken("k")); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatalf("Open a shard from before 0011: %v", err)
	}
	t.Cleanup(func() { s.Close(ctx) })
	rows, err := s.r.Query(`SELECT * FROM chunks_fts LIMIT 0`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := rows.Columns()
	rows.Close()
	if err != nil || !slices.Equal(cols, []string{"fts_body", "ns", "fts_words", "sk"}) {
		t.Fatalf("chunks_fts columns after 0011 = %v, %v", cols, err)
	}
	integrity(t, s)
	mustCheck(t, s)
	if n := countRows(t, s, "chunks_fts_docsize"); n != len(texts) {
		t.Fatalf("chunks_fts holds %d rows after 0011, want %d", n, len(texts))
	}

	// "zebra" is in c0's text and c1's context; "stripes" only in c2's text.
	kw, err := s.KeywordSearch(ctx, "n", "zebra", Filter{}, 10)
	if err != nil || !slices.Equal(ids(kw), []string{"c0", "c1"}) {
		t.Fatalf("KeywordSearch(zebra) = %v, %v; want c0 (its text), then c1 (its context)", ids(kw), err)
	}
	fts, err := s.keywordFTS(ctx, "n", []string{"zebra"}, nil, Filter{}, 10)
	if err != nil || !slices.Equal(ids(fts), []string{"c0"}) {
		t.Fatalf("FTS5 ranks zebra as %v, %v; want c0 alone: the context is not in chunks_fts", ids(fts), err)
	}
	fts, err = s.keywordFTS(ctx, "n", []string{"stripes"}, nil, Filter{}, 10)
	if err != nil || !slices.Equal(ids(fts), []string{"c2"}) {
		t.Fatalf("FTS5 ranks stripes as %v, %v; want c2", ids(fts), err)
	}

	// The writer goes on: a chunk with a context, then its session deleted.
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s"}, From: 4,
		Chunks: []Chunk{{ID: "c3", Source: "sessions", SeqStart: 4, SeqEnd: 4, Text: "Bo: lovely", Context: texts[2]}}}}})
	integrity(t, s)
	if kw, err := s.KeywordSearch(ctx, "n", "stripes", Filter{}, 10); err != nil || !slices.Equal(ids(kw), []string{"c2", "c3"}) {
		t.Fatalf("KeywordSearch(stripes) = %v, %v; want c2, then c3 (its context)", ids(kw), err)
	}
	mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "n", SessionKey: "k"}}})
	integrity(t, s)
	mustCheck(t, s)
	if n := countRows(t, s, "chunks_fts_docsize"); n != 0 {
		t.Fatalf("chunks_fts holds %d rows after the session's deletion", n)
	}
}
