package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/client"
	"memindex/node"
)

// vecModeNode starts a worker on data directory dir, with sqlite-vec or
// without (--sqlite-vec=false); stop ends it (also at the end of the test).
func vecModeNode(t *testing.T, dir string, sqliteVec bool) (n *node.Node, stop func()) {
	t.Helper()
	cfg := testServeConfig(dir)
	cfg.SQLiteVec = sqliteVec
	return runTestNode(t, cfg, nil)
}

// TestVectorFallbackReported indexes with sqlite-vec, then restarts the
// worker on the same data with --sqlite-vec=false: the shards keep their
// vectors in go-scan mode, vector search still answers, and status, health
// and the search response say so, in JSON and in the commands' output. With
// sqlite-vec none of them mentions go-scan.
func TestVectorFallbackReported(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n, stop := vecModeNode(t, dir, true)
	in := strings.NewReader(`{"sessionKey":"chat","sessionId":"s1","seq":1,"speaker":"Ana","text":"We move to Lisbon in May."}
{"sessionKey":"chat","sessionId":"s1","seq":2,"speaker":"Ben","text":"Great, I will visit the harbour."}
`)
	if err := runPublish(ctx, []string{"--server", n.URL(), "--namespace", "demo", "-"}, in, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("publish: %v", err)
	}
	cl := client.NewClient(n.Conn())
	waitUntil(t, 20*time.Second, "status to show 2 messages with vectors", func() bool {
		sts, err := cl.Status(ctx, 200*time.Millisecond)
		return err == nil && len(sts) == 1 && sts[0].Total().Messages == 2 && sts[0].Total().Chunks > 0 && sts[0].Total().VectorsWaiting == 0
	})

	type report struct {
		status memindex.StatusResponse
		health memindex.HealthResponse
		search memindex.SearchResponse
		human  string // status, health and search output
	}
	gather := func(n *node.Node) report {
		t.Helper()
		var r report
		srv := []string{"--server", n.URL()}
		sts, err := client.NewClient(n.Conn()).Status(ctx, 300*time.Millisecond)
		if err != nil || len(sts) != 1 {
			t.Fatalf("status: %d answers, %v", len(sts), err)
		}
		r.status = sts[0]
		var hb bytes.Buffer
		if err := runHealth(ctx, append(srv, "--json"), &hb); err != nil {
			t.Fatalf("health: %v\n%s", err, hb.String())
		}
		var hs []memindex.HealthResponse
		if err := json.Unmarshal(hb.Bytes(), &hs); err != nil || len(hs) != 1 {
			t.Fatalf("health --json = %s (%v), want one answer", hb.String(), err)
		}
		r.health = hs[0]
		var sb bytes.Buffer
		if err := runSearch(ctx, append(srv, "--namespace", "demo", "--mode", "vector", "--json", "Lisbon move"), &sb); err != nil {
			t.Fatalf("search: %v", err)
		}
		if err := json.Unmarshal(sb.Bytes(), &r.search); err != nil {
			t.Fatalf("search --json = %s: %v", sb.String(), err)
		}
		var human bytes.Buffer
		for _, f := range []func() error{
			func() error { return runStatus(ctx, srv, &human) },
			func() error { return runHealth(ctx, srv, &human) },
			func() error {
				return runSearch(ctx, append(srv, "--namespace", "demo", "--mode", "vector", "Lisbon move"), &human)
			},
		} {
			if err := f(); err != nil {
				t.Fatalf("command: %v\n%s", err, human.String())
			}
		}
		r.human = human.String()
		if !r.search.Legs.Vector.Answered || len(r.search.Hits) == 0 || !strings.Contains(r.search.Hits[0].Text, "Lisbon") {
			t.Fatalf("vector search: legs %+v, hits %+v; want the vector leg to find Lisbon", r.search.Legs, r.search.Hits)
		}
		return r
	}

	with := gather(n)
	for _, p := range with.status.Partitions {
		if p.VectorMode != memindex.VectorModeSqliteVec || p.VectorModeReason != "" {
			t.Fatalf("with sqlite-vec: partition %d vector mode %q (%q), want sqlite-vec", p.Partition, p.VectorMode, p.VectorModeReason)
		}
	}
	if with.health.Status != memindex.HealthOK || with.health.Vectors != memindex.HealthOK {
		t.Fatalf("with sqlite-vec: health %+v, want ok", with.health)
	}
	if with.search.VectorFallback != "" || strings.Contains(with.human, "go-scan") {
		t.Fatalf("with sqlite-vec: search says %q, output:\n%s\nwant no go-scan anywhere", with.search.VectorFallback, with.human)
	}
	stop()

	n, _ = vecModeNode(t, dir, false)
	const why = "sqlite-vec disabled by configuration"
	without := gather(n)
	for _, p := range without.status.Partitions {
		if p.VectorMode != memindex.VectorModeGoScan || p.VectorModeReason != why {
			t.Fatalf("without sqlite-vec: partition %d vector mode %q (%q), want go-scan (%s)", p.Partition, p.VectorMode, p.VectorModeReason, why)
		}
	}
	if h := without.health; h.Status != memindex.HealthDegraded || !strings.HasPrefix(h.Vectors, "go-scan fallback: "+why) || len(h.Problems) == 0 {
		t.Fatalf("without sqlite-vec: health %+v, want degraded with vectors %q", h, "go-scan fallback: "+why)
	}
	if got, want := without.search.VectorFallback, "go-scan: "+why; got != want {
		t.Fatalf("without sqlite-vec: search vectorFallback %q, want %q", got, want)
	}
	for _, line := range []string{
		"vectors: go-scan fallback: " + why + " (partitions 0, 1); vector search runs as the in-process Go scan", // status
		"vectors go-scan fallback: " + why, // health
		"vector leg: go-scan: " + why,      // search
	} {
		if !strings.Contains(without.human, line) {
			t.Errorf("without sqlite-vec: output lacks %q:\n%s", line, without.human)
		}
	}
	// Degraded, never down: health exits 0 unless asked to fail on degraded.
	if err := runHealth(ctx, []string{"--server", n.URL(), "--fail-on-degraded"}, &bytes.Buffer{}); err == nil {
		t.Error("health --fail-on-degraded succeeded in go-scan mode, want it to fail")
	}
}

// TestSqliteVecEnvChecked: a MEMINDEX_SQLITE_VEC that is not a boolean is an
// error naming it, before anything starts.
func TestSqliteVecEnvChecked(t *testing.T) {
	t.Setenv("MEMINDEX_SQLITE_VEC", "maybe")
	err := runServe(context.Background(), []string{"--data", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "MEMINDEX_SQLITE_VEC") {
		t.Fatalf("runServe with MEMINDEX_SQLITE_VEC=maybe: %v, want an error naming it", err)
	}
}
