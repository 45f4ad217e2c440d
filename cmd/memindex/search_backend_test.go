package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memindex"
	"memindex/embedder"
	"memindex/node"
	"memindex/store"
)

// TestSearchBackendFlags: `memindex search --backend local` reads a data
// directory in process, and `--backend remote --fallback local` with no
// server answers from the local shards and says why, in JSON and text.
func TestSearchBackendFlags(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(data, "shards"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh, err := store.Open(ctx, node.ShardPath(filepath.Join(data, "shards"), 0), store.Config{Dims: emb.Info().Dims, Space: embedder.Space(emb.Info())})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := emb.Embed(ctx, embedder.Request{Texts: []string{"Ana moves to Lisbon in May."}, Kind: embedder.KindDocument})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sh.Apply(ctx, store.Batch{Seq: 1, Records: []store.RecordUpsert{{Chunk: store.Chunk{ID: "r1", Namespace: "demo",
		Source: memindex.SourceRecords, Path: "r1", Text: "Ana moves to Lisbon in May.", Vector: vs[0]}}}}); err != nil {
		t.Fatal(err)
	}
	if err := sh.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := runSearch(ctx, []string{"--backend", "local", "--local", data, "--namespace", "demo", "--json", "Lisbon"}, &out); err != nil {
		t.Fatalf("search --backend local: %v", err)
	}
	var resp memindex.SearchResponse
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil || resp.Backend != "local" || resp.Fallback != nil || len(resp.Hits) != 1 {
		t.Fatalf("search --backend local --json = %s (%v), want one hit from local, no fallback", out.String(), err)
	}

	dead := []string{"--server", "nats://127.0.0.1:1", "--backend", "remote", "--fallback", "local", "--local", data, "--namespace", "demo"}
	out.Reset()
	if err := runSearch(ctx, append(dead, "--json", "Lisbon"), &out); err != nil {
		t.Fatalf("search with remote down and --fallback local: %v", err)
	}
	resp = memindex.SearchResponse{}
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil || resp.Backend != "local" || resp.Fallback == nil || resp.Fallback.From != "remote" || resp.Fallback.Reason == "" {
		t.Fatalf("search --json with remote down = %s (%v), want backend local and fallback from remote with a reason", out.String(), err)
	}
	out.Reset()
	if err := runSearch(ctx, append(dead, "Lisbon"), &out); err != nil {
		t.Fatalf("search (text) with remote down: %v", err)
	}
	if !strings.Contains(out.String(), "backend: local") || !strings.Contains(out.String(), "fallback: remote did not answer") {
		t.Fatalf("search output %q, want the backend and why remote did not answer", out.String())
	}
	if err := runSearch(ctx, []string{"--backend", "local", "--namespace", "demo", "Lisbon"}, &out); err == nil || !strings.Contains(err.Error(), "--local") {
		t.Fatalf("search --backend local without --local = %v, want an error naming --local", err)
	}
}
