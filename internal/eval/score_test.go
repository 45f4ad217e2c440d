package eval

import (
	"math"
	"reflect"
	"testing"

	"memindex"
)

func msgs(ids ...string) memindex.Hit {
	return memindex.Hit{Source: memindex.SourceSessions, MessageIDs: ids}
}

func TestScoreIsStrict(t *testing.T) {
	file := memindex.Hit{Source: memindex.SourceFiles, Path: "notes.md"}
	tests := []struct {
		name   string
		hits   []memindex.Hit
		gold   []string
		rec    map[int]float64
		rr     float64
		hits10 int
		msgs10 int
		repeat bool
	}{
		{
			name: "a repeated message is paid twice",
			// 3 + 2 = 5 messages at budget 5; deduplicated it would be 4 and
			// the next hit (g) would fit.
			hits: []memindex.Hit{msgs("a", "b", "c"), msgs("c", "d"), msgs("g")},
			gold: []string{"g"},
			rec:  map[int]float64{5: 0, 10: 1, 25: 1, 50: 1},
			rr:   1.0 / 6, hits10: 3, msgs10: 6, repeat: true,
		},
		{
			name: "the hit that does not fit stops the count",
			// 4 fits in 5; the next (3) does not, and the one after it (1,
			// gold) is not taken either.
			hits: []memindex.Hit{msgs("a", "b", "c", "d"), msgs("e", "f", "h"), msgs("g")},
			gold: []string{"g"},
			rec:  map[int]float64{5: 0, 10: 1, 25: 1, 50: 1},
			rr:   1.0 / 8, hits10: 3, msgs10: 8,
		},
		{
			name: "a first hit over the budget pays nothing",
			hits: []memindex.Hit{msgs("a", "b", "c", "d", "e", "f", "g"), msgs("h")},
			gold: []string{"a"},
			rec:  map[int]float64{5: 0, 10: 1, 25: 1, 50: 1},
			rr:   1, hits10: 2, msgs10: 8,
		},
		{
			name: "a gold message found twice counts once",
			hits: []memindex.Hit{msgs("a", "g"), msgs("g", "b")},
			gold: []string{"g", "z"},
			rec:  map[int]float64{5: 0.5, 10: 0.5, 25: 0.5, 50: 0.5},
			rr:   0.5, hits10: 2, msgs10: 4, repeat: true,
		},
		{
			name: "files and records cost 1",
			hits: []memindex.Hit{file, {Source: memindex.SourceRecords, RecordID: "r1"}, file, msgs("x", "y"), msgs("g")},
			gold: []string{"g"},
			rec:  map[int]float64{5: 0, 10: 1, 25: 1, 50: 1},
			rr:   1.0 / 6, hits10: 5, msgs10: 6,
		},
		{
			name:   "nothing found",
			hits:   []memindex.Hit{msgs("a")},
			gold:   []string{"g"},
			rec:    map[int]float64{5: 0, 10: 0, 25: 0, 50: 0},
			hits10: 1, msgs10: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(Units(tt.hits, nil), tt.gold)
			if !reflect.DeepEqual(got.Recall, tt.rec) {
				t.Fatalf("Score().Recall=%v, want %v", got.Recall, tt.rec)
			}
			for b, r := range tt.rec {
				if got.Hit[b] != (r > 0) {
					t.Fatalf("Score().Hit[%d]=%v, want %v", b, got.Hit[b], r > 0)
				}
			}
			if math.Abs(got.RR-tt.rr) > 1e-12 || got.Hits10 != tt.hits10 || got.Messages10 != tt.msgs10 || got.Repeats != tt.repeat {
				t.Fatalf("Score()= rr %v hits10 %d msgs10 %d repeats %v, want %v %d %d %v", got.RR, got.Hits10, got.Messages10, got.Repeats, tt.rr, tt.hits10, tt.msgs10, tt.repeat)
			}
		})
	}
}

func TestUnitsResolvesASequenceRange(t *testing.T) {
	at := map[int64]string{3: "D1:3", 4: "D1:4"}
	resolve := func(sk, sid string, seq int64) string {
		if sk != "conv" || sid != "s1" {
			return ""
		}
		return at[seq]
	}
	hits := []memindex.Hit{{Source: memindex.SourceSessions, SessionKey: "conv", SessionID: "s1", SeqStart: 3, SeqEnd: 5}}
	got := Units(hits, resolve)
	if want := [][]string{{"D1:3", "D1:4", ""}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Units()=%q, want %q", got, want)
	}
	if got := Units(hits, nil); len(got[0]) != 3 {
		t.Fatalf("Units(nil resolver) cost %d, want 3", len(got[0]))
	}
}

func TestUnitsPaysMessageIDAndContext(t *testing.T) {
	tests := []struct {
		name string
		hit  memindex.Hit
		want []string
	}{
		{"one message by MessageID", memindex.Hit{Source: memindex.SourceSessions, Seq: 4, SeqStart: 4, SeqEnd: 4, MessageID: "D1:4"}, []string{"D1:4"}},
		{"Around neighbours are paid, in seq order", memindex.Hit{Source: memindex.SourceSessions, Seq: 4, SeqStart: 4, SeqEnd: 4, MessageID: "D1:4",
			Context: []memindex.ContextMessage{{Seq: 2, MessageID: "D1:2"}, {Seq: 3, MessageID: "D1:3"}, {Seq: 5, MessageID: "D1:5"}}},
			[]string{"D1:2", "D1:3", "D1:4", "D1:5"}},
		{"a record", memindex.Hit{Source: memindex.SourceRecords, RecordID: "r"}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Units([]memindex.Hit{tt.hit}, nil); !reflect.DeepEqual(got, [][]string{tt.want}) {
				t.Fatalf("Units()=%q, want %q", got, [][]string{tt.want})
			}
		})
	}
}

func TestNDCG10CountsPaidMessages(t *testing.T) {
	tests := []struct {
		name string
		hits []memindex.Hit
		gold []string
		want float64
	}{
		{"gold first", []memindex.Hit{msgs("g")}, []string{"g"}, 1},
		{"gold third", []memindex.Hit{msgs("a", "b", "g")}, []string{"g"}, 1 / math.Log2(4)},
		{"gold repeated gains once", []memindex.Hit{msgs("g"), msgs("g")}, []string{"g", "h"}, 1 / (1 + 1/math.Log2(3))},
		{"gold past the budget of 10", []memindex.Hit{msgs("a", "b", "c", "d", "e", "f", "h", "i", "j"), msgs("k", "g")}, []string{"g"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Score(Units(tt.hits, nil), tt.gold).NDCG10; math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("NDCG10=%v, want %v", got, tt.want)
			}
		})
	}
}

func TestAggregateAndLosses(t *testing.T) {
	q := func(sk string) Question {
		return Question{SessionKey: sk, CategoryName: "single-hop", Gold: []string{"g"}}
	}
	good := QuestionScore{Recall: map[int]float64{5: 1, 10: 1, 25: 1, 50: 1}, Hit: map[int]bool{5: true, 10: true, 25: true, 50: true}, RR: 1, Hits10: 2, Messages10: 10, Repeats: true}
	bad := QuestionScore{Recall: map[int]float64{}, Hit: map[int]bool{}, Hits10: 1, Messages10: 1}
	halves := Split([]string{"c1", "c2"})
	sys := Summarize(Run{System: "memindex keyword", Results: []Result{{q("c1"), good}, {q("c2"), bad}}}, halves, true)
	base := Summarize(Run{System: BaselineSystem, Results: []Result{{q("c1"), bad}, {q("c2"), good}}}, halves, true)
	if got := sys.All.Rec(5); got != 0.5 {
		t.Fatalf("All rec@5=%v, want 0.5", got)
	}
	if got := sys.All.AvgMessages10; got != 5.5 {
		t.Fatalf("avg msgs@10=%v, want 5.5", got)
	}
	if got := sys.All.Repeats; got != 0.5 {
		t.Fatalf("repeats=%v, want 0.5", got)
	}
	if got := sys.A.ByCategory["single-hop"].Questions; got != 1 {
		t.Fatalf("A single-hop questions=%d, want 1", got)
	}
	got := Losses([]SystemReport{sys, base}, BaselineSystem)
	want := []Loss{{System: "memindex keyword", Half: HalfB, Objective: 0, Baseline: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Losses()=%+v, want %+v", got, want)
	}
}
