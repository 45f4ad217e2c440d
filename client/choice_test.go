package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
	"memindex/query"
)

// TestChoiceConfig: names become a Config, and each mistake names the flag
// of `memindex search` to fix.
func TestChoiceConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		c       client.Choice
		want    string // backend, then fallback's after a slash
		wantErr string
	}{
		{"remote alone", client.Choice{Backend: client.BackendRemote}, "remote", ""},
		{"fallback none", client.Choice{Backend: client.BackendRemote, Fallback: client.BackendNone}, "remote", ""},
		{"remote then local", client.Choice{Backend: client.BackendRemote, Fallback: client.BackendLocal, LocalPath: "/d", Opener: query.Local{}}, "remote/local", ""},
		{"local then qmd", client.Choice{Backend: client.BackendLocal, Fallback: client.BackendQMD, LocalPath: "/d", Opener: query.Local{}}, "local/qmd", ""},
		{"local without a path", client.Choice{Backend: client.BackendLocal}, "", "--backend: --local PATH is required"},
		{"fallback local without a path", client.Choice{Backend: client.BackendRemote, Fallback: client.BackendLocal}, "", "--fallback: --local PATH is required"},
		{"unknown backend", client.Choice{Backend: "sqlite"}, "", `--backend: "sqlite" is not one of remote, local, qmd, none`},
		{"unknown fallback", client.Choice{Backend: client.BackendRemote, Fallback: "s3"}, "", `--fallback: "s3" is not one of`},
		{"fallback is the backend", client.Choice{Backend: client.BackendQMD, Fallback: client.BackendQMD}, "", "--fallback qmd is the --backend too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.c.Config()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Config() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Config() = %v", err)
			}
			got := cfg.Backend
			if cfg.Fallback != nil {
				got += "/" + cfg.Fallback.Backend
				if cfg.Fallback.Backend == client.BackendLocal && (cfg.Fallback.Local.Path != "/d" || cfg.Fallback.Local.Opener == nil) {
					t.Errorf("fallback local = %+v, want the path and opener given", cfg.Fallback.Local)
				}
			}
			if got != tc.want {
				t.Errorf("Config() backends = %s, want %s", got, tc.want)
			}
			if cfg.Backend == client.BackendLocal && (cfg.Local.Path != "/d" || cfg.Local.Opener == nil) {
				t.Errorf("local = %+v, want the path and opener given", cfg.Local)
			}
		})
	}
}

// TestChoiceSearchFallsBackWhenNATSIsDown: a remote backend whose server
// does not answer is not tried again: the local fallback (real shards)
// answers at once, saying remote did not and why; without a fallback the
// connection's error is the answer; a fallback's refusal carries the
// connection's error too.
func TestChoiceSearchFallsBackWhenNATSIsDown(t *testing.T) {
	ctx := context.Background()
	data := writeTestShards(t)
	var connErr error
	dead := func() (*nats.Conn, error) {
		nc, err := nats.Connect("nats://127.0.0.1:1", nats.NoReconnect())
		connErr = err
		return nc, err
	}
	req := memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"}
	c := client.Choice{Backend: client.BackendRemote, Fallback: client.BackendLocal, LocalPath: data, Opener: query.Local{}, Connect: dead}
	resp, err := c.Search(ctx, req)
	if err != nil {
		t.Fatalf("Search with NATS down and a local fallback: %v", err)
	}
	if resp.Backend != client.BackendLocal || resp.Fallback == nil || resp.Fallback.From != client.BackendRemote || resp.Fallback.Reason != connErr.Error() || len(resp.Hits) == 0 {
		t.Fatalf("Search() = backend %q fallback %+v, %d hits; want local's hits, remote's connection error as the reason", resp.Backend, resp.Fallback, len(resp.Hits))
	}

	c.Fallback = ""
	if _, err := c.Search(ctx, req); err == nil || !errors.Is(err, connErr) {
		t.Fatalf("Search with NATS down and no fallback: err = %v, want the connection's %v", err, connErr)
	}

	c.Fallback = client.BackendLocal
	_, err = c.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon", Mode: "telepathy"}) // the fallback refuses it
	if err == nil || !errors.Is(err, connErr) || !strings.Contains(err.Error(), "; fallback local: ") {
		t.Fatalf("Search with both failing: err = %v, want the connection's error and the fallback's", err)
	}
}

// TestChoiceSearchLocal: a local backend answers from the shard files,
// without connecting to anything.
func TestChoiceSearchLocal(t *testing.T) {
	c := client.Choice{Backend: client.BackendLocal, LocalPath: writeTestShards(t), Opener: query.Local{},
		Connect: func() (*nats.Conn, error) { t.Fatal("a local search connected to NATS"); return nil, nil }}
	resp, err := c.Search(context.Background(), memindex.SearchRequest{Namespace: "agent-7", Query: "Lisbon"})
	if err != nil || resp.Backend != client.BackendLocal || resp.Fallback != nil || len(resp.Hits) == 0 || !strings.Contains(resp.Hits[0].Snippet, "Lisbon") {
		t.Fatalf("Search(local) = %+v, %v; want Lisbon from the local shards", resp, err)
	}
}
