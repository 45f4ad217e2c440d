package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/internal/harness"
)

// The cluster suite (`memindex bench --suite cluster`; not in the default
// set) runs W workers in this one process, for each W of --cluster-workers,
// each run on a fresh NATS server and stream started by the bench. Every
// worker is a node as `memindex serve` starts it, connected to that server.
// Ingest uses static partition splits (W=2: 0-7 / 8-15), so the figure is
// W workers' throughput, not lease settling, and is measured two ways:
// live (workers running, the corpus published at full speed, timed from
// the first publish to the last commit, as the ingest suite does) and
// backlog (the corpus published first with no worker running, then the
// workers started together and timed until they have applied it all:
// their own throughput, without the publisher competing for the CPU). CPU
// time is the whole process's (workers, NATS server, publisher): what the
// machine had to give. Search compares the Go client's direct requests
// (memindex.psearch.<p>.<ns>, answered by the holder) with plain requests
// on memindex.search.<ns> as `nats req` sends them, split by whether the
// worker the queue group picked held the partition (no
// Memindex-Forwarded-By header) or relayed it. With --cluster-group a
// dynamic group of the largest W is also started cold and timed until its
// partitions are spread.

// ClusterConfig is what the cluster suite measures.
type ClusterConfig struct {
	Workers  []int
	Messages int
	Rounds   int
	Chunks   int           // 0: no search part
	Queries  int           // per path
	GroupTTL time.Duration // 0: no dynamic group
	Dir      string
	Log      func(string, ...any)
	Hooks    harness.Hooks
}

// ClusterReport is the cluster suite's part of the bench report.
type ClusterReport struct {
	Ingest []ClusterIngestFigure `json:"ingest,omitempty"`
	Search []ClusterSearchFigure `json:"search,omitempty"`
	Spread []ClusterSpreadFigure `json:"spread,omitempty"`
}

// ClusterSpreadFigure is a dynamic group started cold.
type ClusterSpreadFigure struct {
	Workers         int     `json:"workers"`
	LeaseTTLSeconds float64 `json:"leaseTTLSeconds"`
	// Seconds from the first worker's start until every partition is ready
	// on exactly one worker and none holds more than its share.
	Seconds float64 `json:"seconds"`
	Held    []int   `json:"held"` // partitions each worker holds then
}

// RunClusterSuite runs the cluster suite: Rounds rounds over Workers (the
// even rounds in reverse order, so that neither warm-up nor a drift of the
// machine's load favours one number of workers), the search part in the
// first round, then the dynamic group.
func RunClusterSuite(ctx context.Context, cfg ClusterConfig) (*ClusterReport, error) {
	rep := &ClusterReport{}
	lines := GeneratedEvents(cfg.Messages)
	if cfg.Hooks.StartServer == nil {
		return nil, harness.ErrNoHooks
	}
	searchAt := clusterSearchWorkers(cfg.Workers)
	for round := 1; round <= cfg.Rounds; round++ {
		order := slices.Clone(cfg.Workers)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, w := range order {
			search := round == 1 && w == searchAt && cfg.Chunks > 0 && cfg.Queries > 0
			if err := clusterRun(ctx, cfg, rep, lines, w, round, search); err != nil {
				return nil, fmt.Errorf("cluster of %d, round %d: %w", w, round, err)
			}
		}
	}
	if cfg.GroupTTL > 0 {
		w := slices.Max(cfg.Workers)
		cfg.Log("cluster: dynamic group of %d worker(s), lease TTL %s, started cold …", w, cfg.GroupTTL)
		fig, err := benchSpread(ctx, cfg.Hooks, filepath.Join(cfg.Dir, fmt.Sprintf("group%d", w)), w, cfg.GroupTTL)
		if err != nil {
			return nil, fmt.Errorf("group of %d: %w", w, err)
		}
		rep.Spread = append(rep.Spread, fig)
		cfg.Log("  spread after %.1fs: %v partitions per worker", fig.Seconds, fig.Held)
	}
	return rep, nil
}

// clusterRun measures w workers ingesting lines live and from a backlog,
// each on a fresh server and stream, and, when asked, the search paths
// after the live run.
func clusterRun(ctx context.Context, cfg ClusterConfig, rep *ClusterReport, lines [][]byte, w, round int, search bool) error {
	sets := splitPartitions(memindex.DefaultPartitions, w)
	for _, mode := range []string{IngestLive, IngestBacklog} {
		cfg.Log("cluster: round %d, %d worker(s), partitions %s, %d generated messages, %s …", round, w, strings.Join(sets, " / "), len(lines), mode)
		err := withBenchCluster(ctx, cfg.Hooks, filepath.Join(cfg.Dir, fmt.Sprintf("w%d-%s", w, mode)), func(c *benchCluster) error {
			var fig ClusterIngestFigure
			var err error
			if mode == IngestLive {
				fig, err = c.IngestLive(ctx, sets, lines)
			} else {
				fig, err = c.IngestBacklog(ctx, sets, lines)
			}
			if err != nil {
				return err
			}
			fig.Round = round
			rep.Ingest = append(rep.Ingest, fig)
			cfg.Log("  %.0f messages/s (%.2fs, %d chunks), CPU %.1f µs/message, %.2f cores busy, per worker %v; published in %.2fs",
				fig.PerSecond, fig.Seconds, fig.Chunks, fig.CPUMicrosPerMessage, fig.CoresBusy, fig.MessagesPerWorker, fig.PublishSeconds)
			if !search || mode != IngestLive {
				return nil
			}
			cfg.Log("cluster: search at %d workers, %d chunks, %d queries per path …", w, cfg.Chunks, cfg.Queries)
			figs, err := c.search(ctx, "bench-cluster", cfg.Chunks, cfg.Queries)
			if err != nil {
				return err
			}
			for _, f := range figs {
				cfg.Log("  %s: %d queries, p50 %.2f ms, p90 %.2f ms, p99 %.2f ms", f.Path, f.Queries, f.P50Ms, f.P90Ms, f.P99Ms)
			}
			rep.Search = append(rep.Search, figs...)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
	}
	return nil
}

// clusterSearchWorkers is the number of workers the search part runs at: 2
// when measured, else the most above 1 (0: none, a single worker has no
// one to relay).
func clusterSearchWorkers(ws []int) int {
	if slices.Contains(ws, 2) {
		return 2
	}
	if m := slices.Max(ws); m > 1 {
		return m
	}
	return 0
}

// splitPartitions splits 0..p-1 into w contiguous ranges, the first ones a
// partition longer when p is not a multiple of w (16/3: 0-5, 6-10, 11-15).
func splitPartitions(p, w int) []string {
	out := make([]string, 0, w)
	lo := 0
	for i := range w {
		n := p / w
		if i < p%w {
			n++
		}
		out = append(out, fmt.Sprintf("%d-%d", lo, lo+n-1))
		lo += n
	}
	return out
}

// clusterReadyLag is the workers' --ready-lag: serve's default.
const clusterReadyLag = 1000

// benchCluster is a NATS server started by the bench with the event
// stream, the bench's connection to it, and the workers running on it.
type benchCluster struct {
	hooks harness.Hooks
	dir   string
	srv   *server.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	nodes []harness.Node
	names []string // each node's worker name
	stops []func() error
}

// withBenchCluster starts a NATS server with a fresh store and stream under
// dir (removed first), runs f, then stops the workers f started and the
// server.
func withBenchCluster(ctx context.Context, h harness.Hooks, dir string, f func(*benchCluster) error) (err error) {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	c := &benchCluster{hooks: h, dir: dir}
	defer func() { err = errors.Join(err, c.close()) }()
	if c.srv, err = h.StartServer(filepath.Join(dir, "nats")); err != nil {
		return err
	}
	if c.nc, err = nats.Connect(c.srv.ClientURL(), nats.Name("memindex bench")); err != nil {
		return err
	}
	if c.js, err = jetstream.New(c.nc, jetstream.WithPublishAsyncMaxPending(2*harness.PublishWindow)); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := consumer.EnsureStreams(sctx, c.js, consumer.StreamConfig{Partitions: memindex.DefaultPartitions}); err != nil {
		return err
	}
	return f(c)
}

// close stops the workers, last started first, then the connection and
// the server.
func (c *benchCluster) close() error {
	var err error
	for i := len(c.stops) - 1; i >= 0; i-- {
		err = errors.Join(err, c.stops[i]())
	}
	c.stops = nil
	if c.nc != nil {
		c.nc.Close()
	}
	if c.srv != nil {
		c.srv.Shutdown()
		c.srv.WaitForShutdown()
	}
	return err
}

// startWorkers starts one worker per static partition set, or, with a
// group, len(sets) workers of that dynamic group, configured as the ingest
// suite's node, and runs them.
func (c *benchCluster) startWorkers(ctx context.Context, sets []string, group string, ttl time.Duration) error {
	if err := c.startNodes(ctx, sets, group, ttl); err != nil {
		return err
	}
	c.runNodes(ctx)
	return nil
}

// startNodes starts the workers as startWorkers does without running
// them: their consumers exist, nothing is fetched yet.
func (c *benchCluster) startNodes(ctx context.Context, sets []string, group string, ttl time.Duration) error {
	if c.hooks.StartNode == nil {
		return harness.ErrNoHooks
	}
	for i, set := range sets {
		spec := nodeSpec(filepath.Join(c.dir, fmt.Sprintf("w%d", i+1)), fmt.Sprintf("bench-w%d", i+1))
		spec.Server, spec.Owned, spec.ReadyLag = c.srv.ClientURL(), set, clusterReadyLag
		if group != "" {
			spec.Owned, spec.Group, spec.LeaseTTL = "", group, ttl
		}
		n, err := c.hooks.StartNode(ctx, spec)
		if err != nil {
			return fmt.Errorf("start worker %s: %w", spec.Worker, err)
		}
		c.nodes, c.names = append(c.nodes, n), append(c.names, spec.Worker)
		c.stops = append(c.stops, func() error { return n.Close(context.Background()) })
	}
	return nil
}

// runNodes runs the started workers until close.
func (c *benchCluster) runNodes(ctx context.Context) {
	for i, n := range c.nodes {
		c.stops[i] = harness.Run(ctx, n) // called by close
	}
}

// waitBound waits until every held partition's consumer is bound.
func (c *benchCluster) waitBound(ctx context.Context) error {
	return pollUntil(ctx, time.Minute, "every partition's consumer bound", func() (bool, error) {
		for _, n := range c.nodes {
			for _, r := range n.Readiness(ctx) {
				if !r.Bound {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// pollUntil calls cond every 10 ms until it is true, fails or d passes.
func pollUntil(ctx context.Context, d time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s", d, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// benchSpread starts a dynamic group of w workers on a fresh stream and
// times it, from the first worker's start, until every partition is ready
// on exactly one worker and none holds more than ceil(P/w).
func benchSpread(ctx context.Context, h harness.Hooks, dir string, w int, ttl time.Duration) (fig ClusterSpreadFigure, err error) {
	err = withBenchCluster(ctx, h, dir, func(c *benchCluster) error {
		start := time.Now()
		if err := c.startWorkers(ctx, make([]string, w), "bench", ttl); err != nil {
			return err
		}
		P := memindex.DefaultPartitions
		share := (P + w - 1) / w
		var held []int
		err := pollUntil(ctx, 10*ttl+time.Minute, "the group's partitions spread", func() (bool, error) {
			held = make([]int, w)
			for p := range P {
				k := 0
				for i, n := range c.nodes {
					if n.Holds(p) {
						k++
						held[i]++
					}
				}
				if k != 1 {
					return false, nil
				}
			}
			return slices.Max(held) <= share, nil
		})
		fig = ClusterSpreadFigure{Workers: w, LeaseTTLSeconds: ttl.Seconds(), Seconds: time.Since(start).Seconds(), Held: held}
		return err
	})
	return fig, err
}
