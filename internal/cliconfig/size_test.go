package cliconfig

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "512MiB": 512 << 20, "2 GiB": 2 << 30, "1500MB": 1500e6, "64KiB": 64 << 10, "7B": 7, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1GiB", "1.5GiB", "9999999999GiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestSizeFlag: a Size registered with a `size` usage parses units on the
// command line, is described as a size, and keeps its value on a refusal.
func TestSizeFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s := Size(1 << 30)
	fs.Var(&s, "memory-limit", "bound, a `size` such as 2GiB")
	if got := FlagType(fs.Lookup("memory-limit")); got != "a size such as 512MiB or 2GiB" {
		t.Errorf("FlagType(--memory-limit) = %q, want a size", got)
	}
	if err := fs.Parse([]string{"--memory-limit", "512MiB"}); err != nil || s != 512<<20 || s.String() != "536870912" {
		t.Fatalf("--memory-limit 512MiB: %d (%s), %v; want 536870912", s, s.String(), err)
	}
	if err := fs.Set("memory-limit", "half"); err == nil || s != 512<<20 {
		t.Fatalf("Set(half) = %v, value %d; want an error and 512MiB kept", err, s)
	}
}

// TestAutoSizeFlag: an AutoSize takes auto in any case or a size, says
// which it holds, works auto out only when read, and keeps its value on a
// refusal, whose error names both forms.
func TestAutoSizeFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a := AutoSize{Auto: true}
	fs.Var(&a, "memory-limit", "bound, a `size` such as 2GiB")
	if got := FlagType(fs.Lookup("memory-limit")); got != "auto or a size such as 512MiB or 2GiB" {
		t.Errorf("FlagType(--memory-limit) = %q, want auto or a size", got)
	}
	if d := fs.Lookup("memory-limit").DefValue; d != "auto" {
		t.Errorf("default shown as %q, want auto", d)
	}
	calls := 0
	auto := func() int64 { calls++; return 7 << 30 }
	if err := fs.Parse([]string{"--memory-limit", "512MiB"}); err != nil || a.Auto || a.Bytes(auto) != 512<<20 || a.String() != "536870912" || calls != 0 {
		t.Fatalf("--memory-limit 512MiB: %+v (%s), %v, auto called %d times; want 536870912 and auto not asked", a, a.String(), err, calls)
	}
	if err := fs.Set("memory-limit", " AUTO "); err != nil || !a.Auto || a.Bytes(auto) != 7<<30 || a.String() != "auto" || calls != 1 {
		t.Fatalf("Set(AUTO) = %v: %+v (%s), auto called %d times; want auto, 7 GiB", err, a, a.String(), calls)
	}
	err := fs.Set("memory-limit", "half")
	if err == nil || !a.Auto || !strings.Contains(err.Error(), "auto") || !strings.Contains(err.Error(), "2GiB") {
		t.Fatalf("Set(half) = %v, value %+v; want an error naming both forms and auto kept", err, a)
	}
	if err := fs.Set("memory-limit", "0"); err != nil || a.Auto || a.Bytes(auto) != 0 {
		t.Fatalf("Set(0) = %v: %+v; want 0, no bound", err, a)
	}
}
