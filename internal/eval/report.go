package eval

import (
	"sort"
	"strconv"
)

// Result is one question's strict score for one system.
type Result struct {
	Question Question
	Score    QuestionScore
}

// Run is one system's results on a corpus's questions.
type Run struct {
	System  string
	Results []Result
}

// Scores are strict scores averaged over questions. Recall and Hit are keyed
// by budget ("5", "10", "25", "50"); Repeats is the share of responses
// holding a repeated message.
type Scores struct {
	Questions     int                `json:"questions"`
	Recall        map[string]float64 `json:"recall"`
	Hit           map[string]float64 `json:"hit"`
	MRR           float64            `json:"mrr"`
	NDCG10        float64            `json:"ndcg10"`
	AvgHits10     float64            `json:"avgHits10"`
	AvgMessages10 float64            `json:"avgMessages10"`
	Repeats       float64            `json:"repeats"`
}

// Rec returns the recall at budget b.
func (s Scores) Rec(b int) float64 { return s.Recall[strconv.Itoa(b)] }

// HitAt returns hit@b.
func (s Scores) HitAt(b int) float64 { return s.Hit[strconv.Itoa(b)] }

// Objective is what tuning maximises and what the defaults are held to
// against the baseline: rec@5 + rec@10.
func Objective(s Scores) float64 { return s.Rec(5) + s.Rec(10) }

// Aggregate averages results.
func Aggregate(rs []Result) Scores {
	s := Scores{Questions: len(rs), Recall: map[string]float64{}, Hit: map[string]float64{}}
	for _, b := range Budgets {
		s.Recall[strconv.Itoa(b)] = 0
		s.Hit[strconv.Itoa(b)] = 0
	}
	if len(rs) == 0 {
		return s
	}
	n := float64(len(rs))
	// Sums first, one division each: 1/3+1/3+1/3 summed as thirds is not 1.
	for _, r := range rs {
		for _, b := range Budgets {
			key := strconv.Itoa(b)
			s.Recall[key] += r.Score.Recall[b]
			if r.Score.Hit[b] {
				s.Hit[key]++
			}
		}
		s.MRR += r.Score.RR
		s.NDCG10 += r.Score.NDCG10
		s.AvgHits10 += float64(r.Score.Hits10)
		s.AvgMessages10 += float64(r.Score.Messages10)
		if r.Score.Repeats {
			s.Repeats++
		}
	}
	for k := range s.Recall {
		s.Recall[k] /= n
		s.Hit[k] /= n
	}
	s.MRR /= n
	s.NDCG10 /= n
	s.AvgHits10 /= n
	s.AvgMessages10 /= n
	s.Repeats /= n
	return s
}

// Slice is the scores on a set of questions, overall and per category
// name (when asked for).
type Slice struct {
	Scores
	ByCategory map[string]Scores `json:"byCategory,omitempty"`
}

// SystemReport is one system's scores on all questions and, with a split,
// on each half.
type SystemReport struct {
	System string `json:"system"`
	All    Slice  `json:"all"`
	A      *Slice `json:"a,omitempty"`
	B      *Slice `json:"b,omitempty"`
}

// Slice returns the report's slice of h (All for anything but A and B),
// or nil when the report has no such half.
func (r SystemReport) Slice(h Half) *Slice {
	switch h {
	case HalfA:
		return r.A
	case HalfB:
		return r.B
	}
	return &r.All
}

// Summarize reports run on all its questions and, when halves is not nil,
// on each half (a question belongs to its sessionKey's half); byCategory
// adds the per-category scores.
func Summarize(run Run, halves map[string]Half, byCategory bool) SystemReport {
	rep := SystemReport{System: run.System, All: slice(run.Results, byCategory)}
	if halves != nil {
		var a, b []Result
		for _, r := range run.Results {
			if halves[r.Question.SessionKey] == HalfA {
				a = append(a, r)
			} else if halves[r.Question.SessionKey] == HalfB {
				b = append(b, r)
			}
		}
		sa, sb := slice(a, byCategory), slice(b, byCategory)
		rep.A, rep.B = &sa, &sb
	}
	return rep
}

func slice(rs []Result, byCategory bool) Slice {
	s := Slice{Scores: Aggregate(rs)}
	if byCategory {
		cats := map[string][]Result{}
		for _, r := range rs {
			cats[Category(r.Question)] = append(cats[Category(r.Question)], r)
		}
		s.ByCategory = map[string]Scores{}
		for c, crs := range cats {
			s.ByCategory[c] = Aggregate(crs)
		}
	}
	return s
}

// Category returns a question's category name, or its number when it has
// no name.
func Category(q Question) string {
	if q.CategoryName != "" {
		return q.CategoryName
	}
	return strconv.Itoa(q.Category)
}

// Categories returns the category names of a slice, sorted.
func (s Slice) Categories() []string {
	var out []string
	for c := range s.ByCategory {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Loss is a system that scores below the baseline on a half (rec@5+rec@10).
type Loss struct {
	System    string  `json:"system"`
	Half      Half    `json:"half"`
	Objective float64 `json:"objective"`
	Baseline  float64 `json:"baseline"`
}

// Losses compares every system but baseline with it on each half (on all
// questions when the reports have no halves) by Objective, and returns where
// a system scores below the baseline.
func Losses(reports []SystemReport, baseline string) []Loss {
	var base *SystemReport
	for i := range reports {
		if reports[i].System == baseline {
			base = &reports[i]
		}
	}
	if base == nil {
		return nil
	}
	halves := []Half{All}
	if base.A != nil {
		halves = []Half{HalfA, HalfB}
	}
	var out []Loss
	for _, r := range reports {
		if r.System == baseline {
			continue
		}
		for _, h := range halves {
			s, bs := r.Slice(h), base.Slice(h)
			if s == nil || bs == nil {
				continue
			}
			if o, bo := Objective(s.Scores), Objective(bs.Scores); o < bo {
				out = append(out, Loss{System: r.System, Half: h, Objective: o, Baseline: bo})
			}
		}
	}
	return out
}
