package main

import (
	"testing"

	"memindex"
)

func TestScoreQuestionCountsTheBudgetInMessages(t *testing.T) {
	hits := []memindex.Hit{
		{MessageIDs: []string{"D1:1", "D1:2", "D1:3"}},
		{MessageIDs: []string{"D1:3", "D1:4"}}, // D1:3 again: counted once
		{MessageIDs: []string{"D2:7"}},
	}
	tests := []struct {
		name      string
		gold      []string
		wantRec5  float64
		wantHit5  bool
		wantRR    float64
		wantRec10 float64
		wantHit10 bool
	}{
		{"gold in the first chunk", []string{"D1:2"}, 1, true, 0.5, 1, true},
		{"gold is the fifth message", []string{"D2:7"}, 1, true, 0.2, 1, true},
		{"half the gold found", []string{"D1:4", "D9:9"}, 0.5, true, 0.25, 0.5, true},
		{"gold not retrieved", []string{"D9:9"}, 0, false, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pq := scoreQuestion(evalQuestion{GoldMessageIDs: tt.gold}, hits)
			if pq.recall[5] != tt.wantRec5 || pq.hit[5] != tt.wantHit5 || pq.rr != tt.wantRR || pq.recall[10] != tt.wantRec10 || pq.hit[10] != tt.wantHit10 {
				t.Fatalf("scoreQuestion()= rec@5 %v hit@5 %v rr %v rec@10 %v; want %v %v %v %v",
					pq.recall[5], pq.hit[5], pq.rr, pq.recall[10], tt.wantRec5, tt.wantHit5, tt.wantRR, tt.wantRec10)
			}
		})
	}
	// A budget of 2 messages stops inside the first chunk.
	pq := scoreQuestion(evalQuestion{GoldMessageIDs: []string{"D1:3"}}, hits)
	evalKsSaved := evalKs
	defer func() { evalKs = evalKsSaved }()
	evalKs = []int{2}
	if pq2 := scoreQuestion(evalQuestion{GoldMessageIDs: []string{"D1:3"}}, hits); pq2.recall[2] != 0 || pq.recall[5] != 1 {
		t.Fatalf("rec@2 = %v (want 0: D1:3 is the third message), rec@5 = %v (want 1)", pq2.recall[2], pq.recall[5])
	}
}
