package eval

// CorpusReport is everything an eval found on one corpus; its JSON field
// names are stable.
type CorpusReport struct {
	Corpus string `json:"corpus"`
	Dir    string `json:"dir"`
	Date   string `json:"date"`
	// Messages and Chunks are what the node indexed (flags as given).
	Messages  int   `json:"messages"`
	Chunks    int64 `json:"chunks"`
	Questions int   `json:"questions"`
	// Skipped counts the questions without gold ids, left out.
	Skipped int `json:"skippedNoGold"`
	// Settings are the eval flags as given (without --tune).
	Settings []Setting `json:"settings"`
	// HalfA and HalfB are the conversations of each half (with a split).
	HalfA []string `json:"halfA,omitempty"`
	HalfB []string `json:"halfB,omitempty"`
	// Systems are memindex in each mode (flags as given) and the baseline.
	Systems []SystemReport `json:"systems"`
	// Losses are the systems of Systems below the baseline on a half.
	Losses []Loss      `json:"losses"`
	Tune   *TuneReport `json:"tune,omitempty"`
}

// TuneReport is a --tune run: every combination's reports, and the
// combination chosen on each half by System's Objective, reported on the
// other half.
type TuneReport struct {
	System     string      `json:"system"`
	Candidates []Candidate `json:"candidates"`
	ChosenOnA  Choice      `json:"chosenOnA"`
	ChosenOnB  Choice      `json:"chosenOnB"`
}

// HalfKeys returns the conversations of each half of halves, sorted.
func HalfKeys(halves map[string]Half, keys []string) (a, b []string) {
	for _, k := range keys {
		switch halves[k] {
		case HalfA:
			a = append(a, k)
		case HalfB:
			b = append(b, k)
		}
	}
	return a, b
}
