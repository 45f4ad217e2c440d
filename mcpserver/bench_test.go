package mcpserver_test

import (
	"context"
	"fmt"
	"testing"

	"memindex"
	"memindex/client"
	"memindex/mcpserver"
)

// BenchmarkToolCalls measures, against a real worker in process, a
// memory_search over streamable HTTP beside the NATS search it sends, and
// a memory_add that waits until the worker applied the record.
func BenchmarkToolCalls(b *testing.B) {
	n := startWorker(b, nil)
	nc := connect(b, n.URL())
	publishChat(b, nc, "demo")
	cs := httpSession(b, newServer(b, nc, mcpserver.Config{Namespace: "demo", StatusWait: mcpserver.DefaultStatusWait}), mcpserver.HTTPConfig{})
	b.Run("memory_search-http", func(b *testing.B) {
		for b.Loop() {
			if res := call(b, cs, "memory_search", map[string]any{"query": "harbour Lisbon"}); res.IsError {
				b.Fatal(textOf(res))
			}
		}
	})
	b.Run("nats-search", func(b *testing.B) {
		c := client.NewClient(nc)
		for b.Loop() {
			if _, err := c.Search(context.Background(), memindex.SearchRequest{Namespace: "demo", Query: "harbour Lisbon"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memory_add-applied", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			var out mcpserver.AddOutput
			callOK(b, cs, "memory_add", map[string]any{"text": fmt.Sprintf("fact number %d about the harbour", i)}, &out)
			if !out.Applied {
				b.Fatalf("memory_add not applied: %+v", out)
			}
		}
	})
}
