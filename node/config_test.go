package node

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

// TestValidateNamesTheFlag: each setting out of range is reported with its
// flag, all of them at once.
func TestValidateNamesTheFlag(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no data", func(c *Config) { c.Data = "" }, "--data"},
		{"bad listen", func(c *Config) { c.Listen = "nowhere" }, `--listen "nowhere"`},
		{"negative replicas", func(c *Config) { c.Replicas = -1 }, "--replicas -1"},
		{"group with partitions", func(c *Config) { c.Group, c.Partitions = "g", "0-3" }, `--partitions "0-3" and --group "g"`},
		{"bad group", func(c *Config) { c.Group = "a b" }, `--group "a b"`},
		{"zero batch", func(c *Config) { c.Batch = 0 }, "--batch 0"},
		{"zero embed batch", func(c *Config) { c.EmbedBatch = 0 }, "--embed-batch 0"},
		{"zero chunk tokens", func(c *Config) { c.ChunkTokens = 0 }, "--chunk-tokens 0"},
		{"negative chunk context", func(c *Config) { c.ChunkContext = -1 }, "--chunk-context -1"},
		{"negative consumer inactive", func(c *Config) { c.ConsumerInactive = -time.Second }, "--consumer-inactive -1s"},
		{"negative ready lag", func(c *Config) { c.ReadyLag = -1 }, "--ready-lag -1"},
		{"negative cache", func(c *Config) { c.CacheMaxBytes = -1 }, "--cache-max-bytes -1"},
		{"negative rrf k", func(c *Config) { c.RRFK = -1 }, "--rrf-k -1"},
		{"negative breaker", func(c *Config) { c.Breaker.Failures = -1 }, "--breaker-failures"},
		{"k over", func(c *Config) { c.Limits.MaxK = 10_000 }, "--max-k 10000"},
		{"negative rate", func(c *Config) { c.RatePerNamespace = -1 }, "--rate-per-namespace -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	c := DefaultConfig()
	c.Batch, c.ReadyLag = 0, -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--batch") || !strings.Contains(err.Error(), "--ready-lag") {
		t.Fatalf("Validate() of two bad settings = %v, want both named", err)
	}
}

// TestZeroMeansWhatTheFlagSays: a zero that a flag documents is kept, not
// replaced by a default: --chunk-context 0 indexes no context (the chunker
// spells that negative; its 0 would mean its default of 2).
func TestZeroMeansWhatTheFlagSays(t *testing.T) {
	if got := chunkerConfig(400, 0).ContextMessages; got >= 0 {
		t.Fatalf("chunkerConfig(400, 0).ContextMessages = %d, want negative (no context)", got)
	}
	if got := chunkerConfig(400, DefaultChunkContext).ContextMessages; got != DefaultChunkContext {
		t.Fatalf("chunkerConfig(400, %d).ContextMessages = %d, want %d", DefaultChunkContext, got, DefaultChunkContext)
	}
	c := DefaultConfig()
	c.ChunkContext, c.CacheMaxBytes, c.ConsumerInactive, c.SnapshotInterval, c.ReadyLag = 0, 0, 0, 0, 0
	if err := c.Validate(); err != nil {
		t.Fatalf("zero context, cache bound, consumer TTL, snapshot interval and ready lag: Validate() = %v, want nil", err)
	}
}
