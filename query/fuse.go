package query

import (
	"cmp"
	"slices"

	"memindex"
	"memindex/store"
)

// Fusion defaults.
const (
	// DefaultRRFK is the k constant of reciprocal rank fusion.
	DefaultRRFK = 60
	// DefaultVectorWeight is the weight of the vector leg in weighted fusion.
	DefaultVectorWeight = 0.7
	// DefaultKeywordWeight is the weight of the keyword leg in weighted fusion.
	DefaultKeywordWeight = 0.3
)

// FuseParams tunes Fuse. Zero fields take the defaults: RRFK DefaultRRFK,
// and when both weights are zero DefaultVectorWeight and DefaultKeywordWeight.
type FuseParams struct {
	RRFK          float64
	VectorWeight  float64
	KeywordWeight float64
	// RRFVectorWeight and RRFKeywordWeight weigh each leg's 1/(k+rank) in
	// RRF; zero means 1 (both zero: plain RRF). A leg is left out by the
	// search mode, not by a weight.
	RRFVectorWeight  float64
	RRFKeywordWeight float64
}

func (p FuseParams) withDefaults() FuseParams {
	if p.RRFK <= 0 {
		p.RRFK = DefaultRRFK
	}
	if p.VectorWeight == 0 && p.KeywordWeight == 0 {
		p.VectorWeight, p.KeywordWeight = DefaultVectorWeight, DefaultKeywordWeight
	}
	if p.RRFVectorWeight == 0 {
		p.RRFVectorWeight = 1
	}
	if p.RRFKeywordWeight == 0 {
		p.RRFKeywordWeight = 1
	}
	return p
}

// Fused is one candidate after fusion: its fused Score and, per leg, the
// leg's own score and 1-based rank (0 when the leg did not find it).
type Fused struct {
	ID           string
	Row          int64 // the chunk's rowid as the first leg that found it read it
	Score        float64
	VectorScore  float64
	KeywordScore float64
	VectorRank   int
	KeywordRank  int
}

// Ref names f's chunk for Searcher.Chunks (store.ChunkRef).
func (f Fused) Ref() store.ChunkRef { return store.ChunkRef{ID: f.ID, Row: f.Row} }

// Fuse merges the candidates of the vector and keyword legs (each best
// first) into one list sorted by Score descending, ties by ID ascending.
//
// Only legs with at least one candidate count; a leg that failed, did not
// run or found nothing is passed as an empty slice and takes no part.
//
// With memindex.FusionRRF (also "" and any unknown method) the score is
// Σ 1/(RRFK + rank) over the legs, divided by its largest possible value
// (legs/(RRFK+1)), so a candidate ranked first by every counting leg scores
// 1.0 and every score is in (0,1]. With memindex.FusionWeighted it is
// VectorWeight*vectorScore + KeywordWeight*keywordScore, a leg that did not
// find the candidate adding 0; when only one leg counts, its score is used
// alone. A candidate's rank is its Rank when set, else its position.
func Fuse(method string, vector, keyword []store.Candidate, p FuseParams) []Fused {
	p = p.withDefaults()
	byID := make(map[string]*Fused, len(vector)+len(keyword))
	order := make([]*Fused, 0, len(vector)+len(keyword))
	get := func(c store.Candidate) *Fused {
		f, ok := byID[c.ID]
		if !ok {
			f = &Fused{ID: c.ID, Row: c.Row}
			byID[c.ID] = f
			order = append(order, f)
		}
		return f
	}
	for i, c := range vector {
		if f := get(c); f.VectorRank == 0 {
			f.VectorScore, f.VectorRank = c.Score, rankOf(c, i)
		}
	}
	for i, c := range keyword {
		if f := get(c); f.KeywordRank == 0 {
			f.KeywordScore, f.KeywordRank = c.Score, rankOf(c, i)
		}
	}

	legs := 0
	for _, l := range [][]store.Candidate{vector, keyword} {
		if len(l) > 0 {
			legs++
		}
	}
	out := make([]Fused, 0, len(order))
	for _, f := range order {
		switch {
		case method == memindex.FusionWeighted && legs == 1:
			f.Score = f.VectorScore + f.KeywordScore // one of them is 0
		case method == memindex.FusionWeighted:
			f.Score = p.VectorWeight*f.VectorScore + p.KeywordWeight*f.KeywordScore
		default:
			var sum float64
			if f.VectorRank > 0 {
				sum += p.RRFVectorWeight / (p.RRFK + float64(f.VectorRank))
			}
			if f.KeywordRank > 0 {
				sum += p.RRFKeywordWeight / (p.RRFK + float64(f.KeywordRank))
			}
			// Normalised so that first place in every leg that answered is 1.
			var most float64
			if len(vector) > 0 {
				most += p.RRFVectorWeight
			}
			if len(keyword) > 0 {
				most += p.RRFKeywordWeight
			}
			f.Score = sum / (most / (p.RRFK + 1))
		}
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Fused) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

func rankOf(c store.Candidate, i int) int {
	if c.Rank > 0 {
		return c.Rank
	}
	return i + 1
}
