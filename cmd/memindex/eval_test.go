package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"memindex/internal/eval"
)

// tinyCorpus is internal/evalrun's corpus of three conversations, each
// with two questions keyword search answers and one without gold ids.
const tinyCorpus = "../../internal/evalrun/testdata/tiny"

func TestEvalEndToEndSplitAndTune(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := tinyCorpus
	var out, errOut bytes.Buffer
	err := runEval(ctx, []string{"--data", dir, "--mode", "keyword,hybrid", "--by-category", "--tune", "rrf-vector-weight=0.5,2", "--json"}, &out, &errOut)
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, errOut.String())
	}
	var reps []eval.CorpusReport
	if err := json.Unmarshal(out.Bytes(), &reps); err != nil {
		t.Fatalf("eval --json: %v\n%s", err, out.String())
	}
	if len(reps) != 1 {
		t.Fatalf("eval --json gave %d corpus reports, want 1", len(reps))
	}
	rep := reps[0]
	if rep.Corpus != "tiny" || rep.Messages != 12 || rep.Questions != 6 || rep.Skipped != 3 {
		t.Fatalf("report: corpus %q, %d messages, %d questions, %d skipped; want tiny, 12, 6, 3", rep.Corpus, rep.Messages, rep.Questions, rep.Skipped)
	}
	if got := strings.Join(rep.HalfA, ",") + "|" + strings.Join(rep.HalfB, ","); got != "conv-1,conv-3|conv-2" {
		t.Fatalf("halves %s, want conv-1,conv-3|conv-2", got)
	}
	var names []string
	for _, s := range rep.Systems {
		names = append(names, s.System)
		if s.All.Questions != 6 || s.A == nil || s.A.Questions != 4 || s.B == nil || s.B.Questions != 2 {
			t.Fatalf("%s: questions all %d, A %v, B %v; want 6, 4, 2", s.System, s.All.Questions, s.A, s.B)
		}
		if len(s.All.ByCategory) != 2 {
			t.Fatalf("%s: categories %v, want single-hop and temporal", s.System, s.All.ByCategory)
		}
	}
	if got, want := strings.Join(names, ","), "memindex keyword,memindex hybrid (rrf),"+eval.BaselineSystem; got != want {
		t.Fatalf("systems %s, want %s", got, want)
	}
	base := rep.Systems[2]
	if base.All.Rec(5) != 1 || base.All.AvgMessages10 != 2.5 || base.All.Repeats != 0 {
		t.Fatalf("baseline: rec@5 %v, avg msgs@10 %v, repeats %v; want 1, 2.5 (3 messages match the puppy question, 2 the sister one), 0",
			base.All.Rec(5), base.All.AvgMessages10, base.All.Repeats)
	}
	if rep.Tune == nil || len(rep.Tune.Candidates) != 2 || rep.Tune.System != "memindex keyword" {
		t.Fatalf("tune report %+v, want two candidates chosen by memindex keyword", rep.Tune)
	}
	if rep.Tune.ChosenOnA.TunedOn != eval.HalfA || rep.Tune.ChosenOnB.TunedOn != eval.HalfB || rep.Tune.ChosenOnA.HeldOut.Questions != 2 {
		t.Fatalf("choices %+v %+v, want one per half, reported on the other", rep.Tune.ChosenOnA, rep.Tune.ChosenOnB)
	}
	if errOut.Len() != 0 {
		t.Fatalf("eval --json wrote progress to stderr: %s", errOut.String())
	}

	var table bytes.Buffer
	printCorpus(&table, rep, true)
	for _, want := range []string{"memindex hybrid (rrf)", "plain BM25 / message", "single-hop", "half A: conv-1 conv-3", "chosen on half A: rrf-vector-weight=", "-> on half B"} {
		if !strings.Contains(table.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, table.String())
		}
	}
}

func TestEvalRefusesABadTune(t *testing.T) {
	tests := []struct{ name, spec string }{
		{"unknown flag", "no-such-flag=1,2"},
		{"not tunable", "mode=keyword,vector"},
		{"bad value", "chunk-context=two"},
		{"no values", "chunk-context="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runEval(context.Background(), []string{"--data", t.TempDir(), "--tune", tt.spec}, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), "tune") {
				t.Fatalf("eval --tune %s: error %v, want one about --tune", tt.spec, err)
			}
		})
	}
}
