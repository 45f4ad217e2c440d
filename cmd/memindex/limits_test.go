package main

import (
	"flag"
	"io"
	"memindex/node"
	"os"
	"reflect"
	"strings"
	"testing"

	"memindex"
)

func parseLimitFlags(t *testing.T, args ...string) (*limitFlags, error) {
	t.Helper()
	var l limitFlags
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	l.register(fs, memindex.DefaultLimits(), 0)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q) error %v", args, err)
	}
	return &l, l.validate()
}

func TestLimitFlagsDefaultsAreTodaysConstants(t *testing.T) {
	l, err := parseLimitFlags(t)
	if err != nil {
		t.Fatalf("validate()=%v, want nil", err)
	}
	if l.limits != memindex.DefaultLimits() || l.rate != 0 {
		t.Fatalf("defaults %+v rate %g, want %+v rate 0", l.limits, l.rate, memindex.DefaultLimits())
	}
}

func TestLimitFlagsFromFlagsAndEnv(t *testing.T) {
	t.Setenv("MEMINDEX_MAX_TEXT_BYTES", "2048")
	t.Setenv("MEMINDEX_RATE_PER_NAMESPACE", "2.5")
	t.Setenv("MEMINDEX_MAX_K", "50")
	l, err := parseLimitFlags(t, "--max-event-bytes", "65536", "--max-session-messages", "10000", "--max-query-bytes", "4096", "--max-k", "20")
	if err != nil {
		t.Fatalf("validate()=%v, want nil", err)
	}
	want := memindex.Limits{MaxEventBytes: 65536, MaxTextBytes: 2048, MaxSessionMessages: 10000, MaxQueryBytes: 4096, MaxK: 20}
	if l.limits != want || l.rate != 2.5 {
		t.Fatalf("limits %+v rate %g, want %+v rate 2.5 (a flag beats its env var)", l.limits, l.rate, want)
	}
}

func TestLimitFlagsErrorsNameTheFlag(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"event over the stream", nil, []string{"--max-event-bytes", "2000000"}, "--max-event-bytes 2000000: must be between 1 and the stream's max message size (1048576)"},
		{"text over event", nil, []string{"--max-event-bytes", "1000", "--max-text-bytes", "2000"}, "--max-text-bytes 2000: must be between 1 and --max-event-bytes (1000)"},
		{"query zero", nil, []string{"--max-query-bytes", "0"}, "--max-query-bytes 0"},
		{"k over", nil, []string{"--max-k", "201"}, "--max-k 201: must be between 1 and the engine's candidate pool (200)"},
		{"negative session", nil, []string{"--max-session-messages", "-1"}, "--max-session-messages -1: must not be negative"},
		{"negative rate", nil, []string{"--rate-per-namespace", "-1"}, "--rate-per-namespace -1"},
		{"env not a number", map[string]string{"MEMINDEX_MAX_K": "ten"}, nil, `MEMINDEX_MAX_K="ten": want a whole number`},
		{"env rate not a number", map[string]string{"MEMINDEX_RATE_PER_NAMESPACE": "fast"}, nil, `MEMINDEX_RATE_PER_NAMESPACE="fast": want a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := parseLimitFlags(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("validate()=%v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestServeFlagDefaultsAreNodeDefaults: serve with no flags and no
// environment configures exactly node.DefaultConfig (but the worker name,
// the host's), so the flags cannot drift from what a node started by code
// gets.
func TestServeFlagDefaultsAreNodeDefaults(t *testing.T) {
	for _, v := range os.Environ() {
		if k, _, _ := strings.Cut(v, "="); strings.HasPrefix(k, "MEMINDEX_") || strings.HasPrefix(k, "NATS_") || k == "OLLAMA_HOST" {
			t.Setenv(k, "")
		}
	}
	s := newServeFlags()
	if err := s.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.config()
	if err != nil {
		t.Fatalf("config() = %v", err)
	}
	want := node.DefaultConfig()
	want.Worker = got.Worker
	if got.Embedder.Keys == nil {
		t.Fatal("serve's provider has no key source")
	}
	got.Embedder.Keys = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("serve's defaults\n%+v\nwant node.DefaultConfig\n%+v", got, want)
	}
	// A zero on the command line stays zero.
	s = newServeFlags()
	if err := s.fs.Parse([]string{"--chunk-context", "0", "--cache-max-bytes", "0", "--snapshot-interval", "0"}); err != nil {
		t.Fatal(err)
	}
	if got, err = s.config(); err != nil || got.ChunkContext != 0 || got.CacheMaxBytes != 0 || got.SnapshotInterval != 0 {
		t.Fatalf("--chunk-context 0 --cache-max-bytes 0 --snapshot-interval 0: %+v, %v; want the zeros kept", got, err)
	}
}
