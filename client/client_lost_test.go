package client

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/internal/natstest"
)

// TestDirectRequestLostFallsBackToRouted: a direct request that nobody
// answers (it reached a holder that was leaving: the server dropped it) is
// asked again on the routed subject within the caller's deadline, where a
// worker answers.
func TestDirectRequestLostFallsBackToRouted(t *testing.T) {
	s := natstest.Server(t)
	const ns, partitions = "agent-1", 8
	p := memindex.Partition(ns, partitions)
	// A holder that swallows the request: interest, no answer.
	sink := natstest.Connect(t, s)
	if _, err := sink.Subscribe(memindex.PartitionSearchSubject(p, ns), func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	// A worker answering the routed subject.
	worker := natstest.Connect(t, s)
	answer, _ := json.Marshal(memindex.SearchResponse{Type: "search.result", Version: 1, Namespace: ns, Hits: []memindex.Hit{{Text: "routed"}}})
	if _, err := worker.Subscribe(memindex.SearchSubject(ns), func(m *nats.Msg) { _ = m.Respond(answer) }); err != nil {
		t.Fatal(err)
	}
	for _, nc := range []*nats.Conn{sink, worker} {
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	c := NewClient(natstest.Connect(t, s))
	c.UsePartitions(partitions)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.Search(ctx, memindex.SearchRequest{Namespace: ns, Query: "harbour"})
	if err != nil || len(resp.Hits) != 1 || resp.Hits[0].Text != "routed" {
		t.Fatalf("Search()=%+v, %v; want the routed worker's answer after the direct request went unanswered", resp, err)
	}
}
