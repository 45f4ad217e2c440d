package eval

import (
	"math"

	"memindex"
)

// Budgets are the message budgets the scores are given at, smallest first.
var Budgets = []int{5, 10, 25, 50}

// Resolver names the message at seq of a session ("" when unknown).
// Corpus.MessageAt is one.
type Resolver func(sessionKey, sessionID string, seq int64) string

// Units returns, for each hit in rank order, the messages an agent pastes
// with it: its MessageIDs (or its MessageID); when it has neither, the ids
// of SeqStart..SeqEnd (resolve may be nil, and an id it does not know is
// ""); for a hit of files or records one "". The Around neighbours a
// session hit carries (Hit.Context) are pasted with it, so they are paid
// too, in seq order around the hit's own messages. A hit costs len of its
// unit, and "" is never gold.
func Units(hits []memindex.Hit, resolve Resolver) [][]string {
	units := make([][]string, 0, len(hits))
	for _, h := range hits {
		var own []string
		switch {
		case len(h.MessageIDs) > 0:
			own = h.MessageIDs
		case h.MessageID != "":
			own = []string{h.MessageID}
		case h.Source == memindex.SourceFiles || h.Source == memindex.SourceRecords || h.SeqEnd < h.SeqStart:
			own = []string{""}
		default:
			own = make([]string, 0, h.SeqEnd-h.SeqStart+1)
			for s := h.SeqStart; s <= h.SeqEnd; s++ {
				id := ""
				if resolve != nil {
					id = resolve(h.SessionKey, h.SessionID, s)
				}
				own = append(own, id)
			}
		}
		if len(h.Context) == 0 {
			units = append(units, own)
			continue
		}
		first := h.SeqStart
		if first == 0 {
			first = h.Seq
		}
		u := make([]string, 0, len(own)+len(h.Context))
		i := 0
		for ; i < len(h.Context) && h.Context[i].Seq < first; i++ {
			u = append(u, h.Context[i].MessageID)
		}
		u = append(u, own...)
		for ; i < len(h.Context); i++ {
			u = append(u, h.Context[i].MessageID)
		}
		units = append(units, u)
	}
	return units
}

// Pay takes whole units in rank order while their running cost stays
// within budget, and stops at the first that does not fit: a unit is never
// cut, nor skipped for a smaller one after it. It returns how many units it
// took and the messages paid, in order, repeats included.
func Pay(units [][]string, budget int) (taken int, paid []string) {
	for _, u := range units {
		if len(paid)+len(u) > budget {
			break
		}
		paid = append(paid, u...)
		taken++
	}
	return taken, paid
}

// QuestionScore is one response's strict scores.
type QuestionScore struct {
	// Recall is, per budget, the share of the gold messages among the
	// messages paid (a gold message paid twice counts once).
	Recall map[int]float64
	// Hit is, per budget, whether a gold message was paid.
	Hit map[int]bool
	// RR is 1/position of the first gold message among the messages paid
	// at the largest budget (positions count every message paid, repeats
	// included), 0 when none is.
	RR float64
	// NDCG10 is the binary nDCG of the messages paid at budget 10 (a
	// repeated gold message gains nothing the second time).
	NDCG10 float64
	// Hits10 and Messages10 are the hits taken and messages paid at 10.
	Hits10, Messages10 int
	// Repeats says whether the response (every hit returned) holds a
	// message more than once.
	Repeats bool
}

// Score scores units (Units of a response) against the gold message ids.
func Score(units [][]string, gold []string) QuestionScore {
	g := map[string]bool{}
	for _, id := range gold {
		if id != "" {
			g[id] = true
		}
	}
	qs := QuestionScore{Recall: map[int]float64{}, Hit: map[int]bool{}}
	for _, b := range Budgets {
		_, paid := Pay(units, b)
		found := map[string]bool{}
		for _, id := range paid {
			if g[id] {
				found[id] = true
			}
		}
		if len(g) > 0 {
			qs.Recall[b] = float64(len(found)) / float64(len(g))
		}
		qs.Hit[b] = len(found) > 0
	}
	_, paid := Pay(units, Budgets[len(Budgets)-1])
	for i, id := range paid {
		if g[id] {
			qs.RR = 1 / float64(i+1)
			break
		}
	}
	var paid10 []string
	qs.Hits10, paid10 = Pay(units, 10)
	qs.Messages10 = len(paid10)
	var dcg, ideal float64
	gained := map[string]bool{}
	for i, id := range paid10 {
		if g[id] && !gained[id] {
			gained[id] = true
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	for i := 0; i < min(10, len(g)); i++ {
		ideal += 1 / math.Log2(float64(i+2))
	}
	if ideal > 0 {
		qs.NDCG10 = dcg / ideal
	}
	seen := map[string]bool{}
	for _, u := range units {
		for _, id := range u {
			if id == "" {
				continue
			}
			if seen[id] {
				qs.Repeats = true
			}
			seen[id] = true
		}
	}
	return qs
}
