package store

import (
	"context"
	"slices"
	"testing"
)

// A chunk's context is searched at a lower weight than its text, never
// shown, and leaves the index with the chunk.
func TestKeywordSearchUsesContext(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	ref := SessionRef{"n", "k", "s"}
	chunks := []Chunk{
		{ID: "q", Namespace: "n", SessionKey: "k", SessionID: "s", SeqStart: 1, SeqEnd: 1,
			Text: "Melanie: Where did you go on Sunday?", Context: "8 May 2023"},
		{ID: "a", Namespace: "n", SessionKey: "k", SessionID: "s", SeqStart: 2, SeqEnd: 2,
			Text: "Caroline: To the support group. It was powerful.", Context: "8 May 2023\nMelanie: Where did you go on Sunday?"},
		{ID: "z", Namespace: "n", SessionKey: "k", SessionID: "s", SeqStart: 3, SeqEnd: 3,
			Text: "Melanie: 我们在研究人工智能。", Context: "Caroline: 周末去了图书馆"},
	}
	mustApply(t, s, Batch{Seq: 1, Rechunk: []SessionChunks{{Session: ref, From: 1, Chunks: chunks}}})

	ids := func(q string) []string {
		t.Helper()
		cs, err := s.KeywordSearch(ctx, "n", q, Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	if got := ids("Sunday"); !slices.Equal(got, []string{"q", "a"}) {
		t.Fatalf("Sunday finds %v, want q (in its text) before a (in its context)", got)
	}
	if got := ids("powerful group"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("powerful group finds %v, want a", got)
	}
	if got := ids("May 2023"); len(got) != 2 {
		t.Fatalf("the date words find %v, want the two dated chunks", got)
	}
	if got := ids("图书馆"); !slices.Equal(got, []string{"z"}) {
		t.Fatalf("a CJK word of the context finds %v, want z", got)
	}
	recs, err := s.ChunksByID(ctx, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if recs["a"].Text != chunks[1].Text {
		t.Fatalf("hit text %q, want the chunk text alone", recs["a"].Text)
	}
	p, err := s.PendingVectors(ctx, 10)
	if err != nil || len(p) != 3 || p[1].Context != chunks[1].Context {
		t.Fatalf("pending %+v, %v: want the chunks with their contexts (the embedder needs them)", p, err)
	}

	// Replace the tail: the old context must leave the index with its chunk.
	mustApply(t, s, Batch{Seq: 2, Rechunk: []SessionChunks{{Session: ref, From: 2, Chunks: []Chunk{
		{ID: "a2", Namespace: "n", SessionKey: "k", SessionID: "s", SeqStart: 2, SeqEnd: 2, Text: "Caroline: To the park."},
	}}}})
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after replacing chunks with contexts: %v", err)
	}
	if got := ids("Sunday"); !slices.Equal(got, []string{"q"}) {
		t.Fatalf("after the replacement Sunday finds %v, want q only", got)
	}
	if got := ids("图书馆"); len(got) != 0 {
		t.Fatalf("after the replacement the old CJK context still finds %v", got)
	}
	mustApply(t, s, Batch{Seq: 3, DeleteSessions: []SessionRef{ref}})
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check after deleting the session: %v", err)
	}
}
