package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// exhaustiveTop scores every live doc of space ns that passes q's filter,
// summing its terms in scan's order (rankTerms), and returns the best
// q.limit, equal scores by rowid: what scan must return, to the bit.
func exhaustiveTop(x *kwIndex, q kwQuery) []kwHit {
	sp := x.byNS[q.ns]
	if sp == nil || len(q.phrases) == 0 {
		return nil
	}
	s := newKWSelect(q, float64(x.tokens)/float64(x.rows), x.syms)
	terms := s.rankTerms(sp)
	var all []kwHit
	for d := range uint32(len(sp.rowids)) {
		if sp.dead[d] || !sp.passes(&s.filter, d) {
			continue
		}
		score, hit := 0.0, false
		for _, t := range terms {
			if j, ok := slices.BinarySearch(t.p.docs, d); ok {
				score += t.w * s.tf(t.p.f2[j], sp.dlen[d])
				hit = true
			}
		}
		if hit {
			all = append(all, kwHit{rowid: sp.rowids[d], score: score * s.boost(sp, d)})
		}
	}
	slices.SortFunc(all, kwBestFirst)
	return all[:min(len(all), q.limit)]
}

// TestKeywordRankingIsExhaustive compares the pruned ranking with scoring
// every doc, hit by hit (rowid and score bits), on generated corpora whose
// queries hold the commonest words (long posting lists, idf at its floor)
// and whose docs repeat (exact ties): k from 1 to 200, filters, speakers,
// and dead docs.
func TestKeywordRankingIsExhaustive(t *testing.T) {
	tok, err := getTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer putTokenizer(tok)
	for _, tc := range []struct {
		name  string
		docs  int
		words int // a doc's words: 1 + rand(words)
		dups  int // one doc in dups repeats an earlier one
	}{
		{"short docs, many ties", 3000, 6, 3},
		{"long docs", 2000, 60, 10},
		{"mixed", 4000, 25, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.docs), uint64(tc.words)))
			x := newKWIndex()
			var ops []kwOp
			var docs []kwDoc
			for i := range tc.docs {
				d := kwDoc{rowid: int64(i + 1), ns: fmt.Sprintf("n%d", i%2), sessionKey: fmt.Sprintf("k%d", i%5), sessionID: fmt.Sprintf("s%d", i%11),
					source: "sessions", tsStart: t0.Add(time.Duration(i) * time.Minute).UnixNano()}
				d.tsEnd = d.tsStart
				if len(docs) > 0 && r.IntN(tc.dups) == 0 {
					old := docs[r.IntN(len(docs))]
					d.head, d.body, d.ctx = old.head, old.body, old.ctx
				} else {
					sp := kwSpeakers[r.IntN(len(kwSpeakers))]
					d.body = sp + ": " + kwText(r, 1+r.IntN(tc.words))
					d.head = d.body
					if r.IntN(2) == 0 {
						d.ctx = kwText(r, 1+r.IntN(tc.words))
					}
				}
				docs = append(docs, d)
				ops = append(ops, kwOp{add: true, doc: d})
			}
			if err := x.apply(ops); err != nil {
				t.Fatal(err)
			}
			var dels []kwOp // a few dead docs, not enough to compact
			for i := 0; i < len(docs); i += 97 {
				dels = append(dels, kwOp{doc: docs[i]})
			}
			if err := x.apply(dels); err != nil {
				t.Fatal(err)
			}
			n, pruned := 0, 0
			for qi := range 300 {
				var words []string
				for range 1 + r.IntN(12) {
					j := r.IntN(12) // the commonest words, half the time
					if r.IntN(2) == 0 {
						j = r.IntN(len(kwVocab))
					}
					words = append(words, kwVocab[j])
				}
				q := kwQuery{ns: fmt.Sprintf("n%d", qi%2), limit: []int{1, 3, 10, 40, 200}[qi%5]}
				terms := matchTerms(strings.Join(words, " "))
				q.phrases, _, err = x.phrases(tok, terms)
				if err != nil {
					t.Fatal(err)
				}
				switch qi % 7 {
				case 1:
					q.speakers = []string{"Ana"}
				case 2:
					q.filter.SessionKey = fmt.Sprintf("k%d", r.IntN(5))
				case 3:
					q.filter.After = t0.Add(time.Duration(r.IntN(tc.docs)) * time.Minute)
				case 4:
					q.speakers = []string{"chen wei", "Bruno"}
					q.filter.SessionID = fmt.Sprintf("s%d", r.IntN(11))
				}
				got, want := x.search(q), exhaustiveTop(x, q)
				if len(got) != len(want) {
					t.Fatalf("query %d %v (limit %d, filter %+v, speakers %v): %d hits, exhaustive %d", qi, terms, q.limit, q.filter, q.speakers, len(got), len(want))
				}
				for j := range got {
					if got[j] != want[j] {
						t.Fatalf("query %d %v (limit %d, filter %+v, speakers %v): hit %d is %+v, exhaustive %+v", qi, terms, q.limit, q.filter, q.speakers, j, got[j], want[j])
					}
				}
				if len(want) > 0 {
					n++
				}
				if len(want) == q.limit {
					pruned++
				}
			}
			if n < 250 || pruned < 150 {
				t.Fatalf("%d queries with hits, %d with a full top k: the corpus tests too little", n, pruned)
			}
		})
	}
}
