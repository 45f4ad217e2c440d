package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestKeywordSearchDropsTermsTooCommonToRank(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	ref := SessionRef{Namespace: "ns", SessionKey: "k", SessionID: "s"}
	var chunks []Chunk
	for i := range 50 {
		text := fmt.Sprintf("common filler words number%d", i)
		if i%10 == 0 {
			text += " uncommon"
		}
		if i == 7 {
			text += " needle"
		}
		chunks = append(chunks, Chunk{ID: fmt.Sprint("c", i), SeqStart: int64(i + 1), SeqEnd: int64(i + 1), Text: text})
	}
	if _, err := s.Apply(ctx, Batch{Seq: 1, Rechunk: []SessionChunks{{Session: ref, From: 1, Chunks: chunks}}}); err != nil {
		t.Fatal(err)
	}
	s.df.budget = 10
	// Pruning is the FTS5 path's, taken when the keyword index cannot rank
	// a query (or is off); the index ranks every term (below).
	kw := s.kw.Swap(nil)
	tests := []struct {
		name  string
		terms []string
		want  []string
	}{
		{"one term is never dropped", []string{"common"}, []string{"common"}},
		{"common term dropped", []string{"common", "needle"}, []string{"needle"}},
		{"rare terms within budget kept", []string{"needle", "uncommon"}, []string{"needle", "uncommon"}},
		{"order kept, the commonest dropped", []string{"uncommon", "filler", "needle"}, []string{"uncommon", "needle"}},
		{"all common: the rarest kept", []string{"common", "filler"}, []string{"common"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := s.df.prune(ctx, s.r, tt.terms, 50)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("prune(%v)=%v, want %v", tt.terms, got, tt.want)
			}
		})
	}
	got, err := s.KeywordSearch(ctx, "ns", "common needle", Filter{}, 5)
	if !rankedByFTSFor(err, "no keyword index)") || len(got) != 1 || got[0].ID != "c7" {
		t.Fatalf("KeywordSearch(common needle)=%v, %v; want only c7, flagged as ranked by FTS5", got, err)
	}
	// Only terms matching all 50 chunks with a budget of 10: the newest
	// ~10 chunks are ranked, and the answer says it is partial.
	got, err = s.KeywordSearch(ctx, "ns", "common", Filter{}, 50)
	var pe *PartialError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPartial) || !strings.Contains(pe.Reason, "; ranked only the newest 10 matching chunks") {
		t.Fatalf("KeywordSearch(common) error = %v, want a *PartialError that says it ranked the newest", err)
	}
	if len(got) == 0 || len(got) > 12 {
		t.Fatalf("KeywordSearch(common) = %d hits, want about the budget of 10", len(got))
	}
	for _, c := range got {
		var i int
		fmt.Sscanf(c.ID, "c%d", &i)
		if i < 38 {
			t.Fatalf("KeywordSearch(common) ranked %s, want only the newest chunks", c.ID)
		}
	}
	// With the keyword index: every term ranked, every match, no partial
	// answer.
	s.kw.Store(kw)
	got, err = s.KeywordSearch(ctx, "ns", "common", Filter{}, 50)
	if err != nil || len(got) != 50 {
		t.Fatalf("indexed KeywordSearch(common) = %d hits, %v; want all 50 and no error", len(got), err)
	}
	got, err = s.KeywordSearch(ctx, "ns", "common needle", Filter{}, 5)
	if err != nil || len(got) != 5 || got[0].ID != "c7" {
		t.Fatalf("indexed KeywordSearch(common needle) = %v, %v; want c7 first of 5", got, err)
	}
}

// TestKeywordWindowIsPerNamespace: a namespace whose matches are old and
// few among a big namespace's must still find them when the search is
// windowed to the newest matches.
func TestKeywordWindowIsPerNamespace(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	mk := func(ns string, n int) []SessionChunks {
		var cs []Chunk
		for i := range n {
			cs = append(cs, Chunk{ID: fmt.Sprintf("%s-%d", ns, i), SeqStart: int64(i + 1), SeqEnd: int64(i + 1), Text: fmt.Sprintf("common word %d", i)})
		}
		return []SessionChunks{{Session: SessionRef{Namespace: ns, SessionKey: "k", SessionID: "s"}, From: 1, Chunks: cs}}
	}
	if _, err := s.Apply(ctx, Batch{Seq: 1, Rechunk: mk("small", 5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, Batch{Seq: 2, Rechunk: mk("big", 60)}); err != nil {
		t.Fatal(err)
	}
	s.df.budget = 10
	s.kw.Store(nil) // windows are the FTS5 path's (prune.go)
	got, err := s.KeywordSearch(ctx, "small", "common", Filter{}, 10)
	if !rankedByFTSFor(err, "no keyword index)") {
		t.Fatalf("KeywordSearch(small, common) error = %v, want only the FTS5 flag: all 5 matches were ranked", err)
	}
	if len(got) != 5 {
		t.Fatalf("KeywordSearch(small, common) = %d hits (%v), want the namespace's 5", len(got), err)
	}
	got, err = s.KeywordSearch(ctx, "big", "common", Filter{}, 60)
	if !errors.Is(err, ErrPartial) || len(got) != 10 {
		t.Fatalf("KeywordSearch(big, common) = %d hits, %v; want the newest 10 and a partial error", len(got), err)
	}
}
