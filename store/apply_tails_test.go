package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestApplyReadsTheTailsOfManySessionsAtOnce: a batch that re-chunks the
// tails of more sessions than one statement reads (readTails), one of them
// twice, leaves every session with the chunks applying its SessionChunks
// one batch at a time leaves, and the keyword and vector indexes with the
// rows FTS5 and vec0 hold.
func TestApplyReadsTheTailsOfManySessionsAtOnce(t *testing.T) {
	const sessions = 2*tailSessionsPerQuery + 50
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	chunk := func(ref SessionRef, seq int64, v string) Chunk {
		return Chunk{ID: fmt.Sprintf("%s-%d-%s", ref.SessionKey, seq, v), Namespace: ref.Namespace, Source: "sessions",
			SessionKey: ref.SessionKey, SessionID: ref.SessionID, SeqStart: seq, SeqEnd: seq,
			Text: fmt.Sprintf("Ana: %s message %d version %s", ref.SessionKey, seq, v), Vector: randVec(r, testDims)}
	}
	// The stored state: three chunks a session. The change: from seq 2 on,
	// chunk 2 kept, chunk 3 replaced, chunk 4 added; session 7 then again
	// from seq 4 (its chunk 4 replaced).
	var first Batch
	var change []SessionChunks
	for i := range sessions {
		ref := SessionRef{Namespace: "n", SessionKey: fmt.Sprintf("k%d", i), SessionID: "s"}
		sc := SessionChunks{Session: ref, From: 1}
		for seq := int64(1); seq <= 3; seq++ {
			sc.Chunks = append(sc.Chunks, chunk(ref, seq, "a"))
		}
		first.Rechunk = append(first.Rechunk, sc)
		change = append(change, SessionChunks{Session: ref, From: 2,
			Chunks: []Chunk{sc.Chunks[1], chunk(ref, 3, "b"), chunk(ref, 4, "b")}})
	}
	again := SessionChunks{Session: change[7].Session, From: 4, Chunks: []Chunk{chunk(change[7].Session, 4, "c")}}
	change = append(change, again)

	apart, together := openTest(t, testDims), openTest(t, testDims)
	first.Seq = 1
	mustApply(t, apart, first)
	mustApply(t, together, first)
	for i, sc := range change {
		mustApply(t, apart, Batch{Seq: uint64(2 + i), Rechunk: []SessionChunks{sc}})
	}
	st := mustApply(t, together, Batch{Seq: 2, Rechunk: change})
	if want := (ApplyStats{ChunksInserted: 2*sessions + 1, ChunksDeleted: sessions + 1, VectorsWritten: 2*sessions + 1}); st != want {
		t.Fatalf("Apply()=%+v, want %+v", st, want)
	}
	for i := range sessions {
		ref := change[i].Session
		want, err := apart.SessionChunkSpans(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := together.SessionChunkSpans(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("session %s: chunks %v, want %v", ref.SessionKey, got, want)
		}
	}
	if got, want := counts(t, together, "n"), counts(t, apart, "n"); got != want || got.chunks != 4*sessions {
		t.Fatalf("rows %+v, want %+v with %d chunks", got, want, 4*sessions)
	}
	integrity(t, together)
	if got := together.index.len("n"); got != 4*sessions {
		t.Fatalf("vector index holds %d, want %d", got, 4*sessions)
	}
	kw := together.kw.Load()
	if kw == nil || kw.rows != int64(4*sessions) {
		t.Fatalf("keyword index %v, want %d rows", kw, 4*sessions)
	}
}
