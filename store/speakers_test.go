package store

import (
	"context"
	"testing"
)

// Messages with the same words rank by BM25 alone (length decides) until
// the query names one's speaker; then that speaker's message comes first,
// above a memory record with the same words and the name (never boosted).
func TestKeywordSearchBoostsTheSpeakerTheQueryNames(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	ref := SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}
	msgs := []Message{
		{Namespace: "ns", SessionKey: "chat", SessionID: "s1", Seq: 1, Speaker: "Ben", Text: "the pottery class starts in May"},
		{Namespace: "ns", SessionKey: "chat", SessionID: "s1", Seq: 2, Speaker: "Élodie Martin", Text: "the pottery class starts in May"},
		{Namespace: "ns", SessionKey: "chat", SessionID: "s1", Seq: 3, Speaker: "王芳", Text: "the pottery class starts in May"},
	}
	sc := SessionChunks{Session: ref}
	for _, m := range msgs {
		sc.Chunks = append(sc.Chunks, Chunk{ID: "c-" + m.Speaker, Namespace: "ns", Source: "sessions", SessionKey: "chat", SessionID: "s1",
			SeqStart: m.Seq, SeqEnd: m.Seq, Text: m.Speaker + ": " + m.Text})
	}
	mustApply(t, s, Batch{Seq: 1, Messages: msgs, Rechunk: []SessionChunks{sc},
		Records: []RecordUpsert{{Chunk: Chunk{ID: "r1", Namespace: "ns", Source: "records", Path: "r1", Text: "Ben: the pottery class starts in May"}}}})
	for _, tt := range []struct{ query, first string }{
		{"When does Ben's pottery class start?", "c-Ben"},
		{"when does élodie's pottery class start", "c-Élodie Martin"},
		{"王芳的pottery class", "c-王芳"},
	} {
		got, err := s.KeywordSearch(ctx, "ns", tt.query, Filter{}, 10)
		if err != nil || len(got) != 4 {
			t.Fatalf("KeywordSearch(%q) = %v, %v; want 4 candidates", tt.query, got, err)
		}
		if got[0].ID != tt.first {
			t.Fatalf("KeywordSearch(%q) first = %s, want %s (the named speaker's message)", tt.query, got[0].ID, tt.first)
		}
		if got[0].Score <= got[1].Score {
			t.Fatalf("KeywordSearch(%q): the named speaker's score %g is not above the next %g", tt.query, got[0].Score, got[1].Score)
		}
	}
}
