package eval

import (
	"fmt"
	"strings"
)

// Setting is one flag and the value a run gives it.
type Setting struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// Axis is one --tune spec: a flag and the values to try.
type Axis struct {
	Flag   string
	Values []string
}

// ParseAxis parses "FLAG=v1,v2,...". A leading "--" on FLAG is dropped.
func ParseAxis(spec string) (Axis, error) {
	flag, vals, ok := strings.Cut(spec, "=")
	flag = strings.TrimLeft(strings.TrimSpace(flag), "-")
	if !ok || flag == "" {
		return Axis{}, fmt.Errorf("%w %q: want FLAG=v1,v2,...", ErrBadTune, spec)
	}
	a := Axis{Flag: flag}
	for _, v := range strings.Split(vals, ",") {
		if v = strings.TrimSpace(v); v != "" {
			a.Values = append(a.Values, v)
		}
	}
	if len(a.Values) == 0 {
		return Axis{}, fmt.Errorf("%w %q: no values", ErrBadTune, spec)
	}
	return a, nil
}

// Combinations returns every combination of the axes' values, the first
// axis varying slowest. No axes give one empty combination.
func Combinations(axes []Axis) [][]Setting {
	combos := [][]Setting{nil}
	for _, a := range axes {
		var next [][]Setting
		for _, c := range combos {
			for _, v := range a.Values {
				next = append(next, append(append([]Setting(nil), c...), Setting{Flag: a.Flag, Value: v}))
			}
		}
		combos = next
	}
	return combos
}

// Candidate is one combination's reports.
type Candidate struct {
	Settings []Setting      `json:"settings"`
	Systems  []SystemReport `json:"systems"`
}

// Choice is the candidate chosen on one half, by the Objective of one
// system, and how it does on the other.
type Choice struct {
	System   string    `json:"system"`
	TunedOn  Half      `json:"tunedOn"`
	Index    int       `json:"index"`
	Settings []Setting `json:"settings"`
	// Tuned is the choice's scores on TunedOn, HeldOut on the other half.
	Tuned   Scores `json:"tuned"`
	HeldOut Scores `json:"heldOut"`
}

// Choose picks the candidate whose system scores the best Objective on half
// on (the first of equals), and reports it on the other half.
func Choose(cands []Candidate, system string, on Half) (Choice, error) {
	best := Choice{Index: -1, System: system, TunedOn: on}
	bestObj := 0.0
	for i, c := range cands {
		r := find(c.Systems, system)
		if r == nil {
			continue
		}
		s, held := r.Slice(on), r.Slice(on.Other())
		if s == nil || held == nil {
			continue
		}
		if o := Objective(s.Scores); best.Index < 0 || o > bestObj {
			best.Index, bestObj = i, o
			best.Settings, best.Tuned, best.HeldOut = c.Settings, s.Scores, held.Scores
		}
	}
	if best.Index < 0 {
		return Choice{}, fmt.Errorf("%w: %s on half %s", ErrNoCandidate, system, on)
	}
	return best, nil
}

func find(rs []SystemReport, system string) *SystemReport {
	for i := range rs {
		if rs[i].System == system {
			return &rs[i]
		}
	}
	return nil
}
