package evalrun

import (
	"path/filepath"
	"testing"

	"memindex"
	"memindex/internal/eval"
)

// tinyCorpus has three conversations, each with two questions keyword
// search answers and one without gold ids (cmd/memindex's end-to-end eval
// test runs it too).
const tinyCorpus = "testdata/tiny"

func TestStrictScoreCountsEveryMessagePaid(t *testing.T) {
	c, err := eval.Load(tinyCorpus)
	if err != nil {
		t.Fatal(err)
	}
	hits := []memindex.Hit{
		{MessageIDs: []string{"D1:1", "D1:2", "D1:3"}},
		{MessageIDs: []string{"D1:3", "D1:4"}}, // D1:3 again: paid again
		{MessageIDs: []string{"D2:7"}},
		// No ids: named by its range, within the question's conversation.
		{Source: memindex.SourceSessions, SessionID: "session_1", SeqStart: 2, SeqEnd: 3},
	}
	tests := []struct {
		name      string
		gold      []string
		wantRec5  float64
		wantRR    float64
		wantRec10 float64
	}{
		{"gold in the first hit", []string{"D1:2"}, 1, 0.5, 1},
		{"the third hit does not fit in 5 (the repeat is paid)", []string{"D2:7"}, 0, 1.0 / 6, 1},
		{"half the gold found, at message 5", []string{"D1:4", "D9:9"}, 0.5, 0.2, 0.5},
		{"gold not retrieved", []string{"D9:9"}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := eval.Question{SessionKey: "conv-1", Gold: tt.gold}
			got := strictScore(c, q, hits)
			if got.Recall[5] != tt.wantRec5 || got.RR != tt.wantRR || got.Recall[10] != tt.wantRec10 || got.Hit[5] != (tt.wantRec5 > 0) {
				t.Fatalf("strictScore()= rec@5 %v rr %v rec@10 %v hit@5 %v; want %v %v %v %v",
					got.Recall[5], got.RR, got.Recall[10], got.Hit[5], tt.wantRec5, tt.wantRR, tt.wantRec10, tt.wantRec5 > 0)
			}
			if got.Hits10 != 4 || got.Messages10 != 8 || !got.Repeats {
				t.Fatalf("strictScore()= hits@10 %d msgs@10 %d repeats %v; want 4 8 true", got.Hits10, got.Messages10, got.Repeats)
			}
		})
	}
}

func TestSyntheticCorporaLoad(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			dir, err := SyntheticDir(lang, 2, 1, filepath.Join(t.TempDir(), "corpus"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := eval.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != "synthetic-"+lang || len(c.Messages) == 0 || len(c.Questions) == 0 || len(c.SessionKeys()) != 2 {
				t.Fatalf("Load(synthetic-%s)= %q, %d messages, %d questions, %d conversations; want some of each, 2 conversations",
					lang, c.Name, len(c.Messages), len(c.Questions), len(c.SessionKeys()))
			}
		})
	}
}
