package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sourcegraph/conc"

	"memindex"
	"memindex/client"
	"memindex/internal/corpus"
)

// ConcurrencyFigure is search throughput with a number of clients that each
// send one request at a time, as fast as answers come, for a fixed time.
type ConcurrencyFigure struct {
	Chunks    int     `json:"chunks"`
	Mode      string  `json:"mode"`
	Clients   int     `json:"clients"`
	Seconds   float64 `json:"seconds"`
	Queries   int     `json:"queries"`
	Errors    int     `json:"errors"`
	PerSecond float64 `json:"queriesPerSecond"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
}

// runConcurrency runs clients concurrent searchers against the node at
// url for dur, each on its own NATS connection with its own query stream.
// Answered queries count toward throughput and latency; errors (such as an
// overloaded service's 429) are counted apart.
func runConcurrency(ctx context.Context, url, ns string, size int, mode string, clients int, dur time.Duration) (ConcurrencyFigure, error) {
	conns := make([]*nats.Conn, clients)
	defer func() {
		for _, nc := range conns {
			if nc != nil {
				nc.Close()
			}
		}
	}()
	for i := range conns {
		nc, err := nats.Connect(url)
		if err != nil {
			return ConcurrencyFigure{}, fmt.Errorf("client %d: %w", i, err)
		}
		conns[i] = nc
	}
	// Warm up with one client so every level starts from the same caches.
	warm := corpus.New(99)
	for i := 0; i < 10; i++ {
		if _, err := client.NewClient(conns[0]).Search(ctx, memindex.SearchRequest{Namespace: ns, Query: warm.Query(i%2 == 0), K: 10, Mode: mode}); err != nil {
			return ConcurrencyFigure{}, fmt.Errorf("warm-up search: %w", err)
		}
	}
	lat := make([][]float64, clients)
	errs := make([]int, clients)
	start := time.Now()
	deadline := start.Add(dur)
	var wg conc.WaitGroup
	for c := range clients {
		wg.Go(func() {
			cl := client.NewClient(conns[c])
			g := corpus.New(uint64(1000 + c))
			for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
				qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				t := time.Now()
				_, err := cl.Search(qctx, memindex.SearchRequest{Namespace: ns, Query: g.Query(i%2 == 0), K: 10, Mode: mode})
				el := time.Since(t)
				cancel()
				if err != nil {
					errs[c]++
					continue
				}
				lat[c] = append(lat[c], float64(el.Nanoseconds())/1e6)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return ConcurrencyFigure{}, err
	}
	el := time.Since(start).Seconds()
	var all []float64
	nerr := 0
	for c := range clients {
		all = append(all, lat[c]...)
		nerr += errs[c]
	}
	slices.Sort(all)
	return ConcurrencyFigure{Chunks: size, Mode: mode, Clients: clients, Seconds: el, Queries: len(all), Errors: nerr,
		PerSecond: float64(len(all)) / el, P50Ms: benchPercentile(all, 0.50), P99Ms: benchPercentile(all, 0.99)}, nil
}
