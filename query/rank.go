package query

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"memindex"
)

// Ranking defaults.
const (
	// DefaultMMRLambda balances relevance (1) against novelty (0) when
	// re-ranking hits by maximal marginal relevance.
	DefaultMMRLambda = 0.7
	// DefaultAbstainVectorScore: a hybrid or vector search whose keyword leg
	// matched nothing and whose best vector score is below this abstains.
	DefaultAbstainVectorScore = 0.2
	// mmrPool is how many hits per wanted hit MMR chooses from.
	mmrPool = 3
)

// applyDecay multiplies each hit's score by 0.5^(age/halfLife), age being
// the time since the hit's timestamp; memory files are evergreen and keep
// their score, as do hits without a time. It re-sorts hits by score.
func applyDecay(hits []memindex.Hit, halfLife time.Duration, now time.Time) {
	if halfLife <= 0 {
		return
	}
	for i := range hits {
		h := &hits[i]
		if h.Source == memindex.SourceFiles || h.Timestamp == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, h.Timestamp)
		if err != nil || !t.Before(now) {
			continue
		}
		f := math.Pow(0.5, now.Sub(t).Hours()/halfLife.Hours())
		h.Score *= f
		if h.Scores != nil {
			h.Scores.Decay = f
		}
	}
	slices.SortStableFunc(hits, func(a, b memindex.Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
}

// mmr picks k of hits (best first) by maximal marginal relevance: each next
// hit maximises lambda·score − (1−lambda)·(its highest word-overlap
// similarity to a hit already picked), so near-duplicates (overlapping
// windows, repeated notes) give way to other relevant hits. lambda ≥ 1 keeps
// the order.
func mmr(hits []memindex.Hit, k int, lambda float64) []memindex.Hit {
	if lambda >= 1 || len(hits) <= 1 {
		return hits[:min(k, len(hits))]
	}
	words := make([]map[string]bool, len(hits))
	for i, h := range hits {
		words[i] = wordSet(h.Text)
	}
	picked := make([]int, 0, k)
	used := make([]bool, len(hits))
	maxSim := make([]float64, len(hits))
	for len(picked) < k && len(picked) < len(hits) {
		best, bestVal := -1, math.Inf(-1)
		for i := range hits {
			if used[i] {
				continue
			}
			if v := lambda*hits[i].Score - (1-lambda)*maxSim[i]; v > bestVal {
				best, bestVal = i, v
			}
		}
		used[best] = true
		picked = append(picked, best)
		for i := range hits {
			if !used[i] {
				maxSim[i] = max(maxSim[i], jaccard(words[i], words[best]))
			}
		}
	}
	out := make([]memindex.Hit, len(picked))
	for i, p := range picked {
		out[i] = hits[p]
		if out[i].Scores != nil {
			out[i].Scores.MMRRank = i + 1
		}
	}
	return out
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		m[w] = true
	}
	return m
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// abstention says why a search has no confident match, or "" when it has
// one: the keyword leg (when it ran) matched nothing and the vector leg's
// best score is below threshold.
func abstention(kw, vec legResult, threshold float64) string {
	if threshold <= 0 || !vec.leg.Answered || (kw.leg.Ran && len(kw.cands) > 0) {
		return ""
	}
	best := 0.0
	if len(vec.cands) > 0 {
		best = vec.cands[0].Score
	}
	if best >= threshold {
		return ""
	}
	return fmt.Sprintf("no confident match: no query word occurs in this namespace and the closest chunk scores %.2f (below %.2f)", best, threshold)
}
