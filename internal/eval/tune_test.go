package eval

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseAxis(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		want    Axis
		wantErr bool
	}{
		{"values", "rrf-vector-weight=0.5,1, 2", Axis{Flag: "rrf-vector-weight", Values: []string{"0.5", "1", "2"}}, false},
		{"dashes dropped", "--chunk-context=0", Axis{Flag: "chunk-context", Values: []string{"0"}}, false},
		{"no equals", "chunk-context", Axis{}, true},
		{"no values", "chunk-context=,", Axis{}, true},
		{"no flag", "=1,2", Axis{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAxis(tt.spec)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrBadTune)) {
				t.Fatalf("ParseAxis(%q) error %v, want error %v", tt.spec, err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseAxis(%q)=%+v, want %+v", tt.spec, got, tt.want)
			}
		})
	}
}

func TestCombinations(t *testing.T) {
	got := Combinations([]Axis{{"a", []string{"1", "2"}}, {"b", []string{"x", "y"}}})
	want := [][]Setting{
		{{"a", "1"}, {"b", "x"}}, {{"a", "1"}, {"b", "y"}},
		{{"a", "2"}, {"b", "x"}}, {{"a", "2"}, {"b", "y"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Combinations()=%v, want %v", got, want)
	}
	if got := Combinations(nil); len(got) != 1 || got[0] != nil {
		t.Fatalf("Combinations(nil)=%v, want one empty combination", got)
	}
}

func TestChoose(t *testing.T) {
	// rep gives a system rec@5 and rec@10 of a on half A and b on half B.
	rep := func(system string, a, b float64) SystemReport {
		sl := func(r float64) *Slice {
			return &Slice{Scores: Scores{Recall: map[string]float64{"5": r, "10": r}}}
		}
		return SystemReport{System: system, A: sl(a), B: sl(b)}
	}
	cands := []Candidate{
		{Settings: []Setting{{"w", "0"}}, Systems: []SystemReport{rep("memindex hybrid", 0.2, 0.6), rep("memindex keyword", 0.9, 0.9)}},
		{Settings: []Setting{{"w", "1"}}, Systems: []SystemReport{rep("memindex hybrid", 0.5, 0.3)}},
		{Settings: []Setting{{"w", "2"}}, Systems: []SystemReport{rep("memindex hybrid", 0.5, 0.1)}}, // ties with w=1 on A
	}
	tests := []struct {
		name      string
		system    string
		on        Half
		wantIndex int
		wantHeld  float64
	}{
		{"best on A, first of equals", "memindex hybrid", HalfA, 1, 0.3},
		{"best on B", "memindex hybrid", HalfB, 0, 0.2},
		{"only the candidates that have the system", "memindex keyword", HalfA, 0, 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Choose(cands, tt.system, tt.on)
			if err != nil {
				t.Fatal(err)
			}
			if got.Index != tt.wantIndex || got.HeldOut.Rec(5) != tt.wantHeld || got.TunedOn != tt.on {
				t.Fatalf("Choose()= index %d held-out rec@5 %v on %s, want %d %v %s", got.Index, got.HeldOut.Rec(5), got.TunedOn, tt.wantIndex, tt.wantHeld, tt.on)
			}
		})
	}
	if _, err := Choose(cands, "memindex vector", HalfA); !errors.Is(err, ErrNoCandidate) {
		t.Fatalf("Choose(missing system) error %v, want ErrNoCandidate", err)
	}
}
