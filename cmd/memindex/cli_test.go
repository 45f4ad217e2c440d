package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"memindex"
	"memindex/client"
	"memindex/consumer"
)

// TestCLIPublishSearchStatusDLQ drives the commands as a user would, against
// a worker on an embedded server, reading their --json output.
func TestCLIPublishSearchStatusDLQ(t *testing.T) {
	n := testNode(t, 4)
	ctx := context.Background()
	srv := []string{"--server", n.URL()}
	run := func(f func(*bytes.Buffer) error) string {
		t.Helper()
		var out bytes.Buffer
		if err := f(&out); err != nil {
			t.Fatalf("command failed: %v\n%s", err, out.String())
		}
		return out.String()
	}

	// publish: two good lines (no type, as in the LoCoMo files), one blank,
	// and one that names a bad namespace, which publish refuses up front.
	in := strings.NewReader(`{"sessionKey":"chat","sessionId":"s1","seq":1,"speaker":"Ana","text":"We move to Lisbon in May."}

{"sessionKey":"chat","sessionId":"s1","seq":2,"speaker":"Ben","text":"Great, I will visit the harbour."}
{"namespace":"bad ns","sessionKey":"chat","sessionId":"s1","seq":3,"text":"x"}
`)
	var out, errOut bytes.Buffer
	gogc := debug.SetGCPercent(-1) // read it, and set it back at once
	debug.SetGCPercent(gogc)
	err := runPublish(ctx, append(srv, "--namespace", "demo", "--json", "-"), in, &out, &errOut)
	if now := debug.SetGCPercent(gogc); now != gogc {
		t.Errorf("publish left the collector at GOGC %d, want %d as before", now, gogc)
	}
	if err == nil || !strings.Contains(errOut.String(), "line 4") {
		t.Fatalf("publish with a bad line: err=%v stderr=%q; want an error naming line 4", err, errOut.String())
	}
	var res client.LinesResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Published != 2 || res.Rejected != 1 {
		t.Fatalf("publish --json = %s (%v), want 2 published and 1 rejected", out.String(), err)
	}
	// A raw event the worker must dead-letter: seq is missing.
	if _, err := jsOf(t, n).Publish(ctx, memindex.EventSubject("demo"), []byte(`{"type":"message","sessionKey":"chat","sessionId":"s1","text":"no seq"}`)); err != nil {
		t.Fatal(err)
	}

	// statusShows runs `status --json` and reports whether the one worker
	// holds msgs messages and dlq dead letters.
	statusShows := func(msgs int64, dlq uint64) bool {
		var b bytes.Buffer
		var sts []memindex.StatusResponse
		if runStatus(ctx, append(srv, "--json", "--wait", "200ms"), &b) != nil || json.Unmarshal(b.Bytes(), &sts) != nil || len(sts) != 1 {
			return false
		}
		return sts[0].Total().Messages == msgs && sts[0].DLQ == dlq
	}
	waitUntil(t, 20*time.Second, "status to show 2 messages and 1 dead letter", func() bool { return statusShows(2, 1) })

	var resp memindex.SearchResponse
	body := run(func(b *bytes.Buffer) error {
		return runSearch(ctx, append(srv, "--namespace", "demo", "--json", "-k", "3", "--explain", "where", "do", "they", "move?"), b)
	})
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Hits) == 0 || !strings.Contains(resp.Hits[0].Text, "Lisbon") {
		t.Fatalf("search --json = %s (%v), want a hit with Lisbon", body, err)
	}
	if resp.Hits[0].Scores == nil || !resp.Legs.Keyword.Answered || !resp.Legs.Vector.Answered {
		t.Fatalf("search --explain: scores %+v, legs %+v; want both legs and scores", resp.Hits[0].Scores, resp.Legs)
	}
	human := run(func(b *bytes.Buffer) error {
		return runSearch(ctx, append(srv, "--namespace", "demo", "Lisbon"), b)
	})
	if !strings.Contains(human, "chat/s1") {
		t.Fatalf("search output %q, want the hit's session", human)
	}
	explained := run(func(b *bytes.Buffer) error {
		return runSearch(ctx, append(srv, "--namespace", "demo", "--explain", "--updated-after", "2000-01-01T00:00:00Z", "Lisbon"), b)
	})
	for _, want := range []string{"stages:", "keyword", `MATCH "lisbon"`, "fusion", "hydrate", "rank 1"} {
		if !strings.Contains(explained, want) {
			t.Fatalf("search --explain output %q, want %q in it", explained, want)
		}
	}
	if err := runSearch(ctx, append(srv, "--namespace", "demo", "--updated-after", "yesterday", "Lisbon"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "updatedAfter") {
		t.Fatalf("search --updated-after yesterday = %v, want an error naming updatedAfter", err)
	}

	var hb bytes.Buffer
	if err := runHealth(ctx, append(srv, "--json", "--fail-on-degraded"), &hb); err != nil {
		t.Fatalf("health: %v\n%s", err, hb.String())
	}
	var hs []memindex.HealthResponse
	if err := json.Unmarshal(hb.Bytes(), &hs); err != nil || len(hs) != 1 || hs[0].Status != memindex.HealthOK {
		t.Fatalf("health --json = %s (%v), want one worker ok", hb.String(), err)
	}

	var rd memindex.ReadResponse
	readOut := run(func(b *bytes.Buffer) error {
		return runRead(ctx, append(srv, "--namespace", "demo", "--session", "chat", "--session-id", "s1", "--from", "2", "--count", "5", "--json"), b)
	})
	if err := json.Unmarshal([]byte(readOut), &rd); err != nil || len(rd.Messages) != 1 || rd.Messages[0].Seq != 2 || rd.Messages[0].Speaker != "Ben" {
		t.Fatalf("read --from 2 --json = %s (%v), want message 2 by Ben", readOut, err)
	}
	if err := runRead(ctx, append(srv, "--namespace", "demo", "--session", "chat", "--session-id", "s1", "--count", "9999"), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "count") {
		t.Fatalf("read --count 9999 = %v, want an error naming count", err)
	}

	var ds []consumer.DeadLetter
	listed := run(func(b *bytes.Buffer) error {
		return runDLQ(ctx, append([]string{"list"}, append(srv, "--json")...), nil, b)
	})
	if err := json.Unmarshal([]byte(listed), &ds); err != nil || len(ds) != 1 || !strings.Contains(ds[0].Reason, "field seq") {
		t.Fatalf("dlq list --json = %s (%v), want one dead letter naming field seq", listed, err)
	}
	shown := run(func(b *bytes.Buffer) error {
		return runDLQ(ctx, append([]string{"show", "1"}, srv...), nil, b)
	})
	if !strings.Contains(shown, "no seq") || !strings.Contains(shown, "field seq") {
		t.Fatalf("dlq show = %q, want payload and reason", shown)
	}
	fixed := strings.NewReader(`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":3,"text":"no seq no more"}`)
	run(func(b *bytes.Buffer) error {
		return runDLQ(ctx, append([]string{"replay", "1", "--data", "-"}, srv...), fixed, b)
	})
	waitUntil(t, 20*time.Second, "the replayed event to be indexed and the DLQ empty", func() bool { return statusShows(3, 0) })
}
