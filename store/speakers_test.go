package store

import (
	"context"
	"fmt"
	"strings"
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

// A search within one session key ranks exactly as a search of the whole
// namespace kept to that key: the session key's FTS token (migration 0007)
// narrows the rows FTS5 ranks, never their scores or order.
func TestSessionKeyTokenKeepsTheRanking(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	words := []string{"pottery", "class", "lisbon", "train", "dog", "walk", "park", "concert", "tickets", "sunday"}
	var b Batch
	b.Seq = 1
	for k := 0; k < 4; k++ {
		key := string(rune('a' + k))
		sc := SessionChunks{Session: SessionRef{Namespace: "ns", SessionKey: key, SessionID: "s"}}
		for i := 1; i <= 40; i++ {
			txt := words[(i*7+k)%len(words)] + " " + words[(i*3+k*5)%len(words)] + " " + words[(i+k)%len(words)]
			b.Messages = append(b.Messages, Message{Namespace: "ns", SessionKey: key, SessionID: "s", Seq: int64(i), Speaker: "Ana", Text: txt})
			sc.Chunks = append(sc.Chunks, Chunk{ID: key + string(rune('A'+i)), Namespace: "ns", Source: "sessions", SessionKey: key, SessionID: "s",
				SeqStart: int64(i), SeqEnd: int64(i), Text: "Ana: " + txt})
		}
		b.Rechunk = append(b.Rechunk, sc)
	}
	mustApply(t, s, b)
	for _, q := range []string{"pottery class in lisbon", "walk the dog in the park", "sunday concert tickets"} {
		all, err := s.KeywordSearch(ctx, "ns", q, Filter{}, 200)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"a", "c"} {
			got, err := s.KeywordSearch(ctx, "ns", q, Filter{SessionKey: key}, 10)
			if err != nil {
				t.Fatal(err)
			}
			var want []Candidate
			for _, c := range all {
				if c.ID[:1] == key && len(want) < 10 {
					want = append(want, c)
				}
			}
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("KeywordSearch(%q, key %s) = %d candidates, want %d", q, key, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Score != want[i].Score {
					t.Fatalf("KeywordSearch(%q, key %s)[%d] = %s %g, want %s %g", q, key, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
				}
			}
		}
	}
}

// A speaker name the keyword index cannot match (longer than the head of
// a row it keeps) is ranked by FTS5, still boosted, and the answer says it
// was ranked by FTS5 and why.
func TestKeywordSearchFlagsASpeakerTheIndexCannotMatch(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	long := "Maximilian " + strings.Repeat("von Habsburg-Lothringen ", 3)
	long = strings.TrimSpace(long)
	if len(long) <= speakerHeadMax {
		t.Fatalf("name of %d bytes is not longer than the index keeps", len(long))
	}
	ref := SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}
	msgs := []Message{
		{Namespace: "ns", SessionKey: "chat", SessionID: "s1", Seq: 1, Speaker: "Ben", Text: "the pottery class starts in May"},
		{Namespace: "ns", SessionKey: "chat", SessionID: "s1", Seq: 2, Speaker: long, Text: "the pottery class starts in May"},
	}
	sc := SessionChunks{Session: ref}
	for _, m := range msgs {
		sc.Chunks = append(sc.Chunks, Chunk{ID: fmt.Sprintf("c%d", m.Seq), Namespace: "ns", Source: "sessions", SessionKey: "chat", SessionID: "s1",
			SeqStart: m.Seq, SeqEnd: m.Seq, Text: m.Speaker + ": " + m.Text})
	}
	mustApply(t, s, Batch{Seq: 1, Messages: msgs, Rechunk: []SessionChunks{sc}})
	got, err := s.KeywordSearch(ctx, "ns", "when does maximilian's pottery class start", Filter{}, 10)
	if !rankedByFTSFor(err, "the speaker name ") || len(got) != 2 || got[0].ID != "c2" {
		t.Fatalf("KeywordSearch naming %q = %v, %v; want c2 first, flagged as ranked by FTS5", long, ids(got), err)
	}
	got, err = s.KeywordSearch(ctx, "ns", "when does ben's pottery class start", Filter{}, 10)
	if err != nil || len(got) != 2 || got[0].ID != "c1" {
		t.Fatalf("KeywordSearch naming Ben = %v, %v; want c1 first, ranked by the index", ids(got), err)
	}
}
