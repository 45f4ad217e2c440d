package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/internal/eval"
)

// writeEvalCorpus writes a corpus folder of two conversations with one
// question each that keyword search answers, plus one without gold ids.
func writeEvalCorpus(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	var ev, qs []string
	add := func(sk string, seq int, speaker, text string) {
		ev = append(ev, fmt.Sprintf(`{"sessionKey":%q,"sessionId":"session_1","seq":%d,"messageId":"D1:%d","eventId":"%s/D1:%d","speaker":%q,"text":%q,"timestamp":"2023-05-08T13:56:00Z"}`,
			sk, seq, seq, sk, seq, speaker, text))
	}
	for i, sk := range []string{"conv-1", "conv-2", "conv-3"} {
		add(sk, 1, "Ann", "Hi Bob, long time no see!")
		add(sk, 2, "Bob", "I adopted a beagle puppy named Biscuit"+strings.Repeat("!", i))
		add(sk, 3, "Ann", "My sister moved to Lisbon last spring.")
		add(sk, 4, "Bob", "We should go hiking together soon.")
		qs = append(qs,
			fmt.Sprintf(`{"queryId":"%s/q1","sessionKey":%q,"question":"What is the name of Bob's beagle puppy?","category":4,"categoryName":"single-hop","goldMessageIds":["D1:2"]}`, sk, sk),
			fmt.Sprintf(`{"queryId":"%s/q2","sessionKey":%q,"question":"Where did Ann's sister move to?","category":2,"categoryName":"temporal","goldMessageIds":["D1:3"]}`, sk, sk),
			fmt.Sprintf(`{"queryId":"%s/q3","sessionKey":%q,"question":"No evidence?","category":5,"categoryName":"adversarial","goldMessageIds":[]}`, sk, sk))
	}
	for name, lines := range map[string][]string{"tiny.events.jsonl": ev, "tiny.queries.jsonl": qs} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStrictScoreCountsEveryMessagePaid(t *testing.T) {
	c, err := eval.Load(writeEvalCorpus(t))
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

func TestEvalEndToEndSplitAndTune(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := writeEvalCorpus(t)
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

func TestSyntheticCorporaLoad(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			dir, err := syntheticDir(lang, 2, 1, filepath.Join(t.TempDir(), "corpus"))
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
