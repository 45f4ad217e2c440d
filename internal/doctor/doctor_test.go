package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/embedder"
	"memindex/internal/natstest"
)

func byName(t *testing.T, rep Report) map[string]Check {
	t.Helper()
	m := map[string]Check{}
	for _, c := range rep.Checks {
		if _, dup := m[c.Name]; dup {
			t.Fatalf("check %q reported twice: %+v", c.Name, rep.Checks)
		}
		m[c.Name] = c
	}
	return m
}

func builtin() (embedder.Embedder, embedder.Info, error) {
	e, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: 64})
	if err != nil {
		return nil, embedder.Info{}, err
	}
	return e, e.Info(), nil
}

// TestRunOnABareServer: a JetStream server no worker has used yet fails the
// stream checks with how to fix them, skips the consumers, still checks the
// provider, and the report is not ok.
func TestRunOnABareServer(t *testing.T) {
	s := natstest.Server(t)
	rep := Run(context.Background(), Config{
		Connect:     func() (*nats.Conn, error) { return nats.Connect(s.ClientURL()) },
		Provider:    "builtin",
		NewEmbedder: builtin,
		Data:        filepath.Join(t.TempDir(), "none"),
	})
	m := byName(t, rep)
	want := map[string]string{
		"nats": OK, "jetstream": OK,
		"stream " + memindex.StreamEvents: Fail, "stream " + memindex.StreamDLQ: Fail,
		"consumers": Skip, "shards": Skip, "embedder builtin": OK,
	}
	for name, status := range want {
		c, ok := m[name]
		if !ok {
			t.Fatalf("no check %q in %+v", name, rep.Checks)
		}
		if c.Status != status {
			t.Errorf("check %q = %s (%s), want %s", name, c.Status, c.Detail, status)
		}
		if status == Fail && !strings.Contains(c.Fix, "memindex serve") {
			t.Errorf("check %q fix %q, want how to create the streams", name, c.Fix)
		}
	}
	if rep.OK || rep.Failed() != 2 || rep.Type != "doctor" {
		t.Errorf("report ok=%t failed=%d type=%q, want not ok with 2 failures", rep.OK, rep.Failed(), rep.Type)
	}
}

// TestRunRedactsAndSkips: without NATS every server check is skipped after
// the failed connection, and a provider error reaches the report only
// through RedactSecrets.
func TestRunRedactsAndSkips(t *testing.T) {
	const key = "sk-secret-key-1234"
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "shards"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep := Run(context.Background(), Config{
		Connect:  func() (*nats.Conn, error) { return nil, nats.ErrNoServers },
		Provider: "openai",
		NewEmbedder: func() (embedder.Embedder, embedder.Info, error) {
			return nil, embedder.Info{}, errors.New("bad key " + key)
		},
		Data:          data,
		RedactSecrets: func(s string) string { return strings.ReplaceAll(s, key, "[redacted]") },
	})
	m := byName(t, rep)
	if c := m["nats"]; c.Status != Fail || !strings.Contains(c.Fix, "start the NATS server") {
		t.Errorf("nats = %+v, want a failure saying to start the server", c)
	}
	for _, name := range []string{"jetstream", "stream " + memindex.StreamEvents, "stream " + memindex.StreamDLQ, "consumers", "sync_interval", "shards"} {
		if c := m[name]; c.Status != Skip {
			t.Errorf("check %q = %+v, want skipped", name, c)
		}
	}
	c := m["embedder openai"]
	if c.Status != Fail || strings.Contains(c.Detail, key) || !strings.Contains(c.Detail, "[redacted]") {
		t.Errorf("embedder = %+v, want a failure with the key redacted", c)
	}
}
