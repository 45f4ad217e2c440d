package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"memindex/internal/bench"
)

// writeLocomoCorpus writes a corpus in LoCoMo's format to a new directory:
// convs conversations of msgs messages and qs questions, each naming a
// message of its conversation as gold. It returns the events file's path.
func writeLocomoCorpus(t testing.TB, convs, msgs, qs int) string {
	t.Helper()
	dir := t.TempDir()
	topics := []string{"painting a sunrise", "the support group", "a camping trip", "adopting a puppy", "the pottery class",
		"running a marathon", "moving to Berlin", "a violin concert", "the garden tomatoes", "a new job interview"}
	speakers := [][2]string{{"Caroline", "Melanie"}, {"Jon", "Gina"}, {"Audrey", "Andrew"}}
	var ev, q bytes.Buffer
	enc := func(b *bytes.Buffer, v any) {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	for c := range convs {
		sk := fmt.Sprintf("conv-%d", c)
		for m := range msgs {
			enc(&ev, map[string]any{"sessionKey": sk, "sessionId": fmt.Sprintf("session_%d", m/10+1), "seq": m%10 + 1,
				"messageId": fmt.Sprintf("D%d:%d", m/10+1, m%10+1), "speaker": speakers[c%len(speakers)][m%2],
				"text":      fmt.Sprintf("Yesterday I told you about %s, it was great number %d.", topics[(c+m)%len(topics)], m),
				"timestamp": fmt.Sprintf("2023-05-%02dT13:56:00Z", m/10+1)})
		}
	}
	for i := range qs {
		c := i % convs
		m := (i * 7) % msgs
		enc(&q, map[string]any{"queryId": fmt.Sprintf("conv-%d/q%04d", c, i), "sessionKey": fmt.Sprintf("conv-%d", c),
			"question":       fmt.Sprintf("When did %s talk about %s?", speakers[c%len(speakers)][m%2], topics[(c+m)%len(topics)]),
			"goldMessageIds": []string{fmt.Sprintf("D%d:%d", m/10+1, m%10+1)}})
	}
	events := filepath.Join(dir, "tiny.events.jsonl")
	if err := os.WriteFile(events, ev.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tiny.queries.jsonl"), q.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return events
}

// TestBenchLocomoReportsEverySystem runs the locomo part of `memindex bench`
// on a tiny corpus in LoCoMo's format and checks that every system answered
// every question with sane percentiles, and that report.json and tables.md
// hold the table. It checks no timing.
func TestBenchLocomoReportsEverySystem(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const convs, msgs, qs = 3, 20, 10
	events := writeLocomoCorpus(t, convs, msgs, qs)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := runBench(ctx, []string{"--suite", "locomo", "--locomo", events, "--out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("runBench: %v\nstderr:\n%s", err, stderr.String())
	}
	rep, b := readReport(t, out)
	r := rep.Locomo
	if r == nil {
		t.Fatalf("report.json has no locomo part:\n%s", b)
	}
	if r.Messages != convs*msgs || r.Questions != qs || r.Conversations != convs || r.Chunks < int64(convs*msgs) {
		t.Errorf("locomo = %d messages, %d questions, %d conversations, %d chunks; want %d, %d, %d, at least %d chunks",
			r.Messages, r.Questions, r.Conversations, r.Chunks, convs*msgs, qs, convs, convs*msgs)
	}
	var names []string
	for _, f := range r.Systems {
		names = append(names, f.System)
		if f.Queries != qs || f.P50Ms <= 0 || f.P50Ms > f.P90Ms || f.P90Ms > f.P99Ms || f.P99Ms > f.MaxMs || f.MeanMs <= 0 || f.PerSecond <= 0 {
			t.Errorf("%s: %d queries, p50 %v, p90 %v, p99 %v, max %v, mean %v, %v q/s; want %d queries, 0 < p50 <= p90 <= p99 <= max, mean and q/s > 0",
				f.System, f.Queries, f.P50Ms, f.P90Ms, f.P99Ms, f.MaxMs, f.MeanMs, f.PerSecond, qs)
		}
		if f.System == bench.LocomoQueryEmbed {
			continue
		}
		want := float64(msgs)
		if f.System == bench.LocomoScanAll {
			want = convs * msgs
		}
		if f.MessagesSearched != want || f.HybridRatio <= 0 {
			t.Errorf("%s: %v messages searched, hybrid ratio %v; want %v and a ratio > 0", f.System, f.MessagesSearched, f.HybridRatio, want)
		}
		if f.NoHit != 0 {
			t.Errorf("%s: %d questions without a hit, want 0 (every question shares words with its conversation)", f.System, f.NoHit)
		}
	}
	want := []string{"memindex hybrid", "memindex keyword", "memindex vector", bench.LocomoFTS5, bench.LocomoScanConv, bench.LocomoScanAll, bench.LocomoQueryEmbed}
	if !slices.Equal(names, want) {
		t.Errorf("systems = %q, want %q", names, want)
	}
	md, err := os.ReadFile(filepath.Join(out, "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(want, "| system | where | messages searched |", "LoCoMo search (tiny)") {
		if !strings.Contains(string(md), s) {
			t.Errorf("tables.md lacks %q:\n%s", s, md)
		}
	}
}
