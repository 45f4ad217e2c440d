package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// A shard whose session chunks span several messages (the windows of an
// older memindex) is refused read-write with ErrOldUnits; a shard of
// message chunks, split pieces included, opens.
func TestOpenRefusesMultiMessageWindows(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		seqEnd  int64
		part    int
		wantOld bool
	}{
		{"one message", 1, 0, false},
		{"a later piece of one message", 1, 1, false},
		{"a window of two messages", 2, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shard.db")
			s, err := Open(ctx, path, Config{Dims: testDims})
			if err != nil {
				t.Fatal(err)
			}
			msgs, sc := session("ns", "chat", "s1", 3, rand.New(rand.NewPCG(1, 1)), testDims)
			sc.Chunks = append(sc.Chunks, Chunk{ID: "extra", Namespace: "ns", Source: "sessions", SessionKey: "chat", SessionID: "s1",
				SeqStart: 1, SeqEnd: tt.seqEnd, Part: tt.part, Text: "extra text"})
			mustApply(t, s, Batch{Seq: 1, Messages: msgs, Rechunk: []SessionChunks{sc}})
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			// As a file of an older memindex: not marked as checked.
			if _, err := rawDB(t, path).Exec(`DELETE FROM meta WHERE key = 'message_units'`); err != nil {
				t.Fatal(err)
			}
			s, err = Open(ctx, path, Config{Dims: testDims})
			if got := errors.Is(err, ErrOldUnits); got != tt.wantOld {
				t.Fatalf("Open() = %v; want ErrOldUnits %v", err, tt.wantOld)
			}
			if err == nil {
				s.Close(ctx)
			}
		})
	}
}

// A file that passed the check once is marked and not scanned again.
func TestOpenMarksCheckedUnits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(context.Background(), path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	s.Close(context.Background())
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM meta WHERE key = 'message_units'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("meta message_units rows = %d, %v; want 1", n, err)
	}
}

// The look for Han text at Open reads the index of CJK chunks, not every
// chunk (migration 0007).
func TestHanLookUsesTheCJKIndex(t *testing.T) {
	s := openTest(t, testDims)
	rows, err := s.r.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+sqlHoldsHan, hanGlob)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan += detail + "; "
	}
	if !strings.Contains(plan, "chunks_cjk") {
		t.Fatalf("query plan %q does not use chunks_cjk", plan)
	}
}
