package evalrun

import (
	"flag"
	"reflect"
	"strings"
	"testing"

	"memindex/internal/eval"
)

// evalFlags is a flag set shaped like `memindex eval`'s: two tunable
// flags and two that choose what is measured.
func evalFlags(t *testing.T) (Tunable, *int, *string) {
	t.Helper()
	fs := flag.NewFlagSet("memindex eval", flag.ContinueOnError)
	tokens := fs.Int("chunk-tokens", 256, "")
	fusion := fs.String("fusion", "rrf", "")
	fs.String("mode", "hybrid", "")
	var tune TuneFlag
	fs.Var(&tune, "tune", "")
	return Tunable{Flags: fs, Fixed: map[string]bool{"mode": true, "tune": true}}, tokens, fusion
}

func TestTuneFlag(t *testing.T) {
	var tf TuneFlag
	for _, s := range []string{"chunk-tokens=64,128", "fusion=weighted"} {
		if err := tf.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	want := TuneFlag{{Flag: "chunk-tokens", Values: []string{"64", "128"}}, {Flag: "fusion", Values: []string{"weighted"}}}
	if !reflect.DeepEqual(tf, want) {
		t.Fatalf("TuneFlag = %+v, want %+v", tf, want)
	}
	if err := tf.Set("chunk-tokens"); err == nil {
		t.Errorf("Set(no values) = nil, want an error")
	}
}

// TestTunableCheck: unknown, fixed and --config flags and values a flag
// does not take are refused naming the flag, and every flag is left as
// it was, refused or not.
func TestTunableCheck(t *testing.T) {
	tn, tokens, _ := evalFlags(t)
	if err := tn.Check([]eval.Axis{{Flag: "chunk-tokens", Values: []string{"64", "512"}}, {Flag: "fusion", Values: []string{"weighted"}}}); err != nil {
		t.Fatalf("Check(good axes) = %v", err)
	}
	for _, tc := range []struct {
		axis eval.Axis
		want string
	}{
		{eval.Axis{Flag: "chunk-tokenz", Values: []string{"1"}}, "eval: --tune chunk-tokenz: not a tunable eval flag"},
		{eval.Axis{Flag: "mode", Values: []string{"keyword"}}, "eval: --tune mode: not a tunable eval flag"},
		{eval.Axis{Flag: "config", Values: []string{"x.yaml"}}, "eval: --tune config: not a tunable eval flag"},
		{eval.Axis{Flag: "chunk-tokens", Values: []string{"64", "lots"}}, "eval: --tune chunk-tokens=lots: "},
	} {
		if err := tn.Check([]eval.Axis{tc.axis}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%v) = %v, want %q", tc.axis, err, tc.want)
		}
	}
	if *tokens != 256 {
		t.Errorf("after Check --chunk-tokens = %d, want 256 as it was", *tokens)
	}
}

// TestTunableConfigure: a pass reads the flags with the combination set,
// and they are set back after, also when a value is refused.
func TestTunableConfigure(t *testing.T) {
	tn, tokens, fusion := evalFlags(t)
	configure := tn.Configure(func() Pass { return Pass{ChunkTokens: *tokens, Fusion: *fusion} })
	got, err := configure([]eval.Setting{{Flag: "chunk-tokens", Value: "64"}, {Flag: "fusion", Value: "weighted"}})
	if err != nil || got != (Pass{ChunkTokens: 64, Fusion: "weighted"}) {
		t.Fatalf("Configure(combo) = %+v, %v; want 64 weighted", got, err)
	}
	if got, err := configure(nil); err != nil || got != (Pass{ChunkTokens: 256, Fusion: "rrf"}) {
		t.Fatalf("Configure(nil) = %+v, %v; want the flags as given (256 rrf): the combination was not set back", got, err)
	}
	if _, err := configure([]eval.Setting{{Flag: "fusion", Value: "weighted"}, {Flag: "chunk-tokens", Value: "lots"}}); err == nil {
		t.Fatal("Configure(bad value) = nil error, want one")
	}
	if _, err := configure([]eval.Setting{{Flag: "mode", Value: "keyword"}}); err == nil {
		t.Fatal("Configure(fixed flag) = nil error, want one")
	}
	if *tokens != 256 || *fusion != "rrf" {
		t.Errorf("after refused combinations: chunk-tokens %d fusion %q, want 256 rrf", *tokens, *fusion)
	}
	want := []eval.Setting{{Flag: "chunk-tokens", Value: "256"}, {Flag: "fusion", Value: "rrf"}}
	if got := tn.Settings(); !reflect.DeepEqual(got, want) {
		t.Errorf("Settings() = %v, want %v (fixed flags left out)", got, want)
	}
}
