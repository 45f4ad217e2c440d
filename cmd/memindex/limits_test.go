package main

import (
	"context"
	"memindex/internal/cliconfig"
	"memindex/node"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"memindex"
)

// TestLimitFlagsDefaultsAreTodaysConstants: `config show` with nothing set
// shows memindex.DefaultLimits and no rate limit.
func TestLimitFlagsDefaultsAreTodaysConstants(t *testing.T) {
	for _, v := range os.Environ() {
		if k, _, _ := strings.Cut(v, "="); strings.HasPrefix(k, "MEMINDEX_") {
			t.Setenv(k, "")
		}
	}
	got, _ := showConfig(t)
	d := memindex.DefaultLimits()
	for name, want := range map[string]string{
		"max-event-bytes": strconv.Itoa(d.MaxEventBytes), "max-text-bytes": strconv.Itoa(d.MaxTextBytes),
		"max-session-messages": strconv.FormatInt(d.MaxSessionMessages, 10), "max-query-bytes": strconv.Itoa(d.MaxQueryBytes),
		"max-k": strconv.Itoa(d.MaxK), "rate-per-namespace": "0",
	} {
		if s := got[name]; s.Value != want || s.Source != cliconfig.SourceDefault {
			t.Errorf("config show: %s = %+v, want %s by default", name, s, want)
		}
	}
}

// TestLimitFlagsFromFlagsAndEnv: a limit comes from its flag or its
// MEMINDEX_* variable, the flag winning, as `config show` reports.
func TestLimitFlagsFromFlagsAndEnv(t *testing.T) {
	t.Setenv("MEMINDEX_MAX_TEXT_BYTES", "2048")
	t.Setenv("MEMINDEX_RATE_PER_NAMESPACE", "2.5")
	t.Setenv("MEMINDEX_MAX_K", "50")
	got, _ := showConfig(t, "--max-event-bytes", "65536", "--max-session-messages", "10000", "--max-query-bytes", "4096", "--max-k", "20")
	for name, want := range map[string]cliconfig.Setting{
		"max-event-bytes":      {Value: "65536", Source: cliconfig.SourceFlag},
		"max-text-bytes":       {Value: "2048", Source: cliconfig.SourceEnv, From: "MEMINDEX_MAX_TEXT_BYTES"},
		"max-session-messages": {Value: "10000", Source: cliconfig.SourceFlag},
		"max-query-bytes":      {Value: "4096", Source: cliconfig.SourceFlag},
		"max-k":                {Value: "20", Source: cliconfig.SourceFlag},
		"rate-per-namespace":   {Value: "2.5", Source: cliconfig.SourceEnv, From: "MEMINDEX_RATE_PER_NAMESPACE"},
	} {
		want.Name = name
		if got[name] != want {
			t.Errorf("config show: %s = %+v, want %+v (a flag beats its env var)", name, got[name], want)
		}
	}
}

// TestLimitFlagsErrorsNameTheFlag: `memindex serve` refuses a limit out of
// range or a MEMINDEX_* value that is not a number before it starts
// anything, naming the flag or variable.
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
			// A data directory that is not there yet: serve must refuse before creating it.
			data := filepath.Join(t.TempDir(), "data")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a serve that accepted the flags runs until then
			defer cancel()
			err := runServe(ctx, append([]string{"--data", data, "--listen", "127.0.0.1:-1"}, tt.args...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("serve %v = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("serve refused the flags but made its data directory (%v)", err)
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
	if err := s.fs.Parse([]string{"--chunk-context", "0", "--cache-max-bytes", "0", "--snapshot-interval", "0", "--memory-limit", "0"}); err != nil {
		t.Fatal(err)
	}
	if got, err = s.config(); err != nil || got.ChunkContext != 0 || got.CacheMaxBytes != 0 || got.SnapshotInterval != 0 || got.MemoryLimit != 0 {
		t.Fatalf("--chunk-context 0 --cache-max-bytes 0 --snapshot-interval 0 --memory-limit 0: %+v, %v; want the zeros kept", got, err)
	}
	// The memory limit's default is auto: half of the machine's memory
	// (or its cgroup's limit), as an explicit auto and the environment's.
	if want.MemoryLimit != node.AutoMemoryLimit() {
		t.Fatalf("node.DefaultConfig's memory limit %d, want AutoMemoryLimit %d", want.MemoryLimit, node.AutoMemoryLimit())
	}
	t.Setenv("MEMINDEX_MEMORY_LIMIT", "Auto")
	s = newServeFlags()
	if err := s.fs.Parse([]string{"--memory-limit", "3GiB"}); err != nil {
		t.Fatal(err)
	}
	if got, err = s.config(); err != nil || got.MemoryLimit != 3<<30 {
		t.Fatalf("--memory-limit 3GiB over MEMINDEX_MEMORY_LIMIT=Auto: %d, %v; want 3 GiB", got.MemoryLimit, err)
	}
	s = newServeFlags()
	if err := s.fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if got, err = s.config(); err != nil || got.MemoryLimit != node.AutoMemoryLimit() {
		t.Fatalf("MEMINDEX_MEMORY_LIMIT=Auto: %d, %v; want %d", got.MemoryLimit, err, node.AutoMemoryLimit())
	}
}
