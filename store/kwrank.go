package store

import (
	"slices"
	"sync"
)

// The keyword index's ranking: term at a time, with max-score pruning.
//
// A query's terms are taken in descending order of their score's upper
// bound (idf × the largest tf a posting of the term can give, kwPost's
// maxF2 and minD). Each term's whole posting list is added into a dense
// score array of the space (one float64 a doc, 0 for a doc no term has
// reached yet) while a doc not yet reached could still make the top k; as
// soon as the k-th best partial score exceeds what the terms left could
// give a new doc together, no new doc is admitted: the docs reached so far
// are the only candidates, each dropped once its partial score plus the
// bounds of the terms left cannot reach the k-th best, and the terms left
// are added to the candidates only (probed in their posting lists when
// they are few, else streamed). Partial scores only grow, so the k-th best
// partial score is a lower bound of the final k-th best, and no doc of the
// exact top k is ever dropped.
//
// Every doc's score is summed in the same term order, so docs with the
// same frequencies and length score the same to the bit and ties go by
// rowid, as kwTop orders them. The cost follows the postings of the terms
// that decide the top k, not every match: a common term met after the
// candidates are fixed costs a probe a candidate.

// kwAcc is the scratch of one ranking: a score per doc of a space (0 for a
// doc not reached, -1 for one dropped) and the docs reached. Between uses
// every score is 0.
type kwAcc struct {
	score []float64
	cands []uint32 // docs reached, in the order reached
	live  []uint32 // candidates once no new doc is admitted, ascending
}

var kwAccPool = sync.Pool{New: func() any { return new(kwAcc) }}

// kwRankTerm is one term of a query in one space: its posting list, its
// weight n·idf and the upper bound of what it adds to a doc's score.
type kwRankTerm struct {
	p  *kwPost
	w  float64
	ub float64
}

// kwNorm is kwLenNorm of every doc of a space, for one avgdl.
type kwNorm struct {
	avgdl float64
	n     []float64
}

// norms returns kwLenNorm of every doc of sp for s's avgdl, from sp's
// cache when it holds them (a doc added or avgdl moved since: computed
// afresh and cached). Caller holds the index's read lock.
func (s *kwSelect) norms(sp *kwSpace) []float64 {
	if nm := sp.norm.Load(); nm != nil && nm.avgdl == s.avgdl && len(nm.n) == len(sp.dlen) {
		return nm.n
	}
	n := make([]float64, len(sp.dlen))
	for i, dl := range sp.dlen {
		n[i] = kwLenNorm(dl, s.avgdl)
	}
	sp.norm.Store(&kwNorm{avgdl: s.avgdl, n: n})
	return n
}

// kwProbeRatio: a term is probed for the candidates (a galloping search
// each) rather than streamed when its posting list is longer than this
// many times the candidates.
const kwProbeRatio = 16

// rankTerms returns the terms of s's query that sp holds, in the order
// scan adds them: descending upper bound, then query order.
func (s *kwSelect) rankTerms(sp *kwSpace) []kwRankTerm {
	terms := s.terms[:0]
	for i := range s.q.phrases {
		ph := &s.q.phrases[i]
		p := sp.post[ph.id]
		if p == nil {
			continue
		}
		w := float64(ph.n) * ph.idf
		terms = append(terms, kwRankTerm{p: p, w: w, ub: w * s.tf(p.maxF2, p.minD) * slack})
	}
	slices.SortStableFunc(terms, func(a, b kwRankTerm) int {
		switch {
		case a.ub > b.ub:
			return -1
		case a.ub < b.ub:
			return 1
		}
		return 0
	})
	s.terms = terms
	return terms
}

// scan ranks the rows of sp into s.top (see above).
func (s *kwSelect) scan(sp *kwSpace) {
	terms := s.rankTerms(sp)
	if len(terms) == 0 {
		return
	}
	// rem[i] bounds what terms i.. add to a doc together.
	rem := s.rem[:0]
	for range len(terms) + 1 {
		rem = append(rem, 0)
	}
	for i := len(terms) - 1; i >= 0; i-- {
		rem[i] = rem[i+1] + terms[i].ub
	}
	s.rem = rem

	acc := kwAccPool.Get().(*kwAcc)
	if len(acc.score) < len(sp.rowids) {
		acc.score = make([]float64, len(sp.rowids)+len(sp.rowids)/4)
	}
	defer func() {
		for _, d := range acc.cands {
			acc.score[d] = 0
		}
		acc.cands, acc.live = acc.cands[:0], acc.live[:0]
		kwAccPool.Put(acc)
	}()
	sc := acc.score[:len(sp.rowids)]

	// A query whose postings outnumber the docs reads the docs' length
	// norms from the space's cache, which costs a division a doc to fill.
	var norm []float64
	postings := 0
	for _, t := range terms {
		postings += len(t.p.docs)
	}
	if postings >= len(sp.rowids) {
		norm = s.norms(sp)
	}

	// Admitting: every posting of each term, until the k-th best partial
	// score (th) beats rem of the terms left. thAt and cumAt are the
	// last th computed and the bounds added up to then: th cannot have
	// grown by more than the bounds added since, so it is recomputed only
	// when that could make the difference.
	i := 0
	th, cum, thAt, cumAt := 0.0, 0.0, 0.0, 0.0
	for ; i < len(terms); i++ {
		t := &terms[i]
		docs, f2 := t.p.docs, t.p.f2[:len(t.p.docs)]
		if norm != nil {
			norm := norm[:len(sc)]
			for j, d := range docs {
				a := sc[d]
				if a == 0 {
					acc.cands = append(acc.cands, d)
				} else if a < 0 { // dead or filtered out
					continue
				}
				sc[d] = a + t.w*kwTF(f2[j], norm[d])
			}
		} else {
			for j, d := range docs {
				a := sc[d]
				if a == 0 {
					acc.cands = append(acc.cands, d)
				} else if a < 0 {
					continue
				}
				sc[d] = a + t.w*s.tf(f2[j], sp.dlen[d])
			}
		}
		cum += t.ub
		if i+1 == len(terms) || len(acc.cands) < s.top.k {
			continue
		}
		left := rem[i+1] * s.bmax * slack
		if left >= thAt+(cum-cumAt)*s.bmax*slack {
			continue
		}
		var full bool
		th, full = s.collect(sp, sc, acc.cands)
		thAt, cumAt = th, cum
		if full && left < th {
			i++
			break
		}
	}
	if i == len(terms) {
		s.collect(sp, sc, acc.cands)
		return
	}

	// Candidates only: the docs reached (sorted, ascending, the first time
	// a term is probed for them).
	live := append(acc.live[:0], acc.cands...)
	sorted := false
	for ; i < len(terms); i++ {
		left := rem[i]
		k := 0
		for _, d := range live {
			if a := sc[d]; a > 0 && (a+left)*s.bmax*slack >= th {
				live[k] = d
				k++
			} else {
				sc[d] = -1
			}
		}
		live = live[:k]
		if len(live) == 0 {
			break
		}
		t := &terms[i]
		docs, f2 := t.p.docs, t.p.f2[:len(t.p.docs)]
		if len(docs) > kwProbeRatio*len(live) {
			if !sorted {
				slices.Sort(live)
				sorted = true
			}
			j := 0
			for _, d := range live {
				j = gallop(docs, j, d)
				if j == len(docs) {
					break
				}
				if docs[j] == d {
					sc[d] += t.w * s.tf(f2[j], sp.dlen[d])
					j++
				}
			}
		} else {
			for j, d := range docs {
				if a := sc[d]; a > 0 {
					if norm != nil {
						sc[d] = a + t.w*kwTF(f2[j], norm[d])
					} else {
						sc[d] = a + t.w*s.tf(f2[j], sp.dlen[d])
					}
				}
			}
		}
		if i+1 < len(terms) {
			th, _ = s.collect(sp, sc, live)
		}
	}
	acc.live = live
	s.collect(sp, sc, live)
}

// collect puts the docs of ds whose score sc is positive into s.top,
// afresh, boost applied; a doc that is dead or fails the filter is marked
// dropped (-1). It returns the k-th best score and whether k docs are
// held.
func (s *kwSelect) collect(sp *kwSpace, sc []float64, ds []uint32) (float64, bool) {
	s.top.h = s.top.h[:0]
	for _, d := range ds {
		a := sc[d]
		if a <= 0 {
			continue
		}
		if th, full := s.top.threshold(); full && a*s.bmax < th {
			continue
		}
		if sp.dead[d] || !sp.passes(&s.filter, d) {
			sc[d] = -1
			continue
		}
		s.top.push(kwHit{rowid: sp.rowids[d], score: a * s.boost(sp, d)})
	}
	return s.top.threshold()
}

// gallop returns the first index at or after j of docs (ascending) whose
// doc is at least d, len(docs) when none is.
func gallop(docs []uint32, j int, d uint32) int {
	if j >= len(docs) || docs[j] >= d {
		return j
	}
	lo, step := j, 1 // docs[lo] < d
	hi := j + step
	for hi < len(docs) && docs[hi] < d {
		lo = hi
		step *= 2
		hi = lo + step
	}
	hi = min(hi, len(docs))
	// docs[lo] < d, and docs[hi] >= d or hi == len(docs)
	k, _ := slices.BinarySearch(docs[lo+1:hi], d)
	return lo + 1 + k
}
