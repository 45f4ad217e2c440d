package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"memindex"
	"memindex/chunker"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/query"
	"memindex/store"
)

// A generation is one set of shards in one vector space (embedder provider,
// model, dimension) with the worker that fills them from the stream. A
// worker started with another embedder than its shards were built with keeps
// serving the old generation, with the old embedder for queries, while a new
// generation is built from the stream in the background; each partition
// switches to the new one when it has caught up, and the old one is removed.
//
// Layout: the shards of the first generation live in data/shards; later ones
// in data/shards/g<N>; data/shards/ACTIVE names the serving one ("." or
// "g<N>").
type generation struct {
	name   string // "." or "g<N>"
	dir    string
	space  string
	dims   int
	emb    embedder.Embedder // nil when that embedder cannot be built here
	shards map[int]*store.Shard
	worker *consumer.Worker
	cancel context.CancelFunc
	done   chan error
}

const activeFile = "ACTIVE"

func readActive(root string) string {
	b, err := os.ReadFile(filepath.Join(root, activeFile))
	if err != nil {
		return "."
	}
	if name := strings.TrimSpace(string(b)); name != "" {
		return name
	}
	return "."
}

// writeActive records name as the serving generation (atomic rename).
func writeActive(root, name string) error {
	tmp := filepath.Join(root, activeFile+".tmp")
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(root, activeFile))
}

func consumerPrefix(name string) string {
	if name == "." {
		return consumer.DefaultConsumerPrefix
	}
	return consumer.DefaultConsumerPrefix + "-" + name
}

// generationSpace reads the vector space a generation's shard files hold.
func generationSpace(ctx context.Context, dir string, partitions int) (string, int, error) {
	for p := range partitions {
		sp, dims, err := store.ReadSpace(ctx, ShardPath(dir, p))
		if err != nil || sp != "" {
			return sp, dims, err
		}
	}
	return "", 0, nil
}

// nextGeneration names the generation to build for space: an unfinished one
// already building it, or a new g<N>.
func nextGeneration(ctx context.Context, root string, partitions int, space string) (string, error) {
	entries, _ := os.ReadDir(root)
	highest := 1
	var names []string
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "g")); e.IsDir() && strings.HasPrefix(e.Name(), "g") && err == nil {
			names = append(names, e.Name())
			highest = max(highest, n)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		sp, _, err := generationSpace(ctx, filepath.Join(root, name), partitions)
		if err != nil {
			return "", err
		}
		if sp == space {
			return name, nil
		}
	}
	return "g" + strconv.Itoa(highest+1), nil
}

// openGeneration opens the shards of a generation and its worker (started
// at the applied sequence of each shard, not yet running).
func (n *Node) openGeneration(ctx context.Context, name, space string, dims int, emb embedder.Embedder, ingest embedder.Embedder, embedTimeout time.Duration) (_ *generation, err error) {
	c := n.cfg
	g := &generation{name: name, dir: filepath.Join(n.shardRoot(), name), space: space, dims: dims, emb: emb, shards: map[int]*store.Shard{}}
	defer func() {
		if err != nil {
			g.closeShards(n)
		}
	}()
	if err := os.MkdirAll(g.dir, 0o755); err != nil {
		return nil, fmt.Errorf("shard directory: %w", err)
	}
	owned := n.own.initial // nil in a dynamic group: partitions come with leases
	seams := make(map[int]consumer.Shard, len(owned))
	for _, p := range owned {
		sc := n.shardConfig(dims, space)
		sc.OnReindex = reindexProgress(n.log, p)
		sh, err := store.Open(ctx, ShardPath(g.dir, p), sc)
		if errors.Is(err, store.ErrOldUnits) {
			return nil, fmt.Errorf("partition %d: %w: a search now returns one message a hit; stop every worker on this data directory and run `memindex rebuild --all --data %s` (the next serve rebuilds each shard from the stream), or `memindex rebuild --partition %d --data %s` for this one", p, err, c.Data, p, c.Data)
		}
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, err)
		}
		g.shards[p], seams[p] = sh, sh
	}
	g.worker, err = consumer.New(n.js, consumer.Config{
		Partitions:        owned,
		Dynamic:           c.Group != "",
		ConsumerPrefix:    n.holderPrefix(name),
		InactiveThreshold: c.ConsumerInactive,
		BatchSize:         c.Batch,
		CommitConcurrency: c.CommitConcurrency,
		PullBufferBytes:   n.pullBufferBytes,
		InflightBytes:     n.inflightBytes,
		Chunker:           chunkerConfig(c.ChunkTokens, c.ChunkContext),
		EmbedTimeout:      embedTimeout,
		Limits:            c.Limits,
		Logger:            n.log.With("generation", name),
		Metrics:           n.metrics,
		TracerProvider:    c.TracerProvider,
	}, seams, ingest)
	if err != nil {
		return nil, err
	}
	if err := g.worker.Start(ctx); err != nil {
		return nil, err
	}
	return g, nil
}

// run runs the generation's worker until stop or ctx ends.
func (g *generation) run(ctx context.Context) {
	ctx, g.cancel = context.WithCancel(ctx)
	g.done = make(chan error, 1)
	go func() { g.done <- g.worker.Run(ctx) }()
}

// stop ends the worker after it committed its batch in hand.
func (g *generation) stop() error {
	if g.cancel == nil {
		return nil
	}
	g.cancel()
	return <-g.done
}

func (g *generation) closeShards(n *Node) {
	for p, sh := range g.shards {
		if err := sh.Close(context.Background()); err != nil {
			n.log.Error("close shard", "generation", g.name, "partition", p, "err", err)
		}
	}
}

// spaceShard is a shard of the generation still serving while another is
// built: its queries are embedded with the embedder its vectors came from.
type spaceShard struct {
	*store.Shard
	emb embedder.Embedder
}

// QueryEmbedder returns the embedder of the shard's vector space.
func (s spaceShard) QueryEmbedder() embedder.Embedder { return s.emb }

// route is what one partition's searches go to, in generation gen.
type route struct {
	searcher query.Searcher
	gen      *generation
}

// setRoute points partition p's searches at generation g; genMu is held.
func (n *Node) setRoute(p int, g *generation) {
	sh, ok := g.shards[p]
	if !ok {
		return
	}
	var s query.Searcher = sh
	if g != n.newest() {
		s = spaceShard{Shard: sh, emb: g.emb}
	}
	n.routes[p].Store(&route{searcher: s, gen: g})
}

// heldPartitions returns the partitions generation g holds shards of;
// genMu is held.
func (g *generation) heldPartitions() []int {
	out := make([]int, 0, len(g.shards))
	for p := range g.shards {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

func (n *Node) newest() *generation {
	if n.next != nil {
		return n.next
	}
	return n.serving
}

// switchOver moves each partition to the new generation once it has caught
// up with the serving one and holds every vector, then retires the old
// generation. It returns when the switch is complete or ctx ends.
func (n *Node) switchOver(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// The partitions held now (a group member's come and go): each
		// switches once caught up; the switch ends when all have.
		n.genMu.RLock()
		held := n.next.heldPartitions()
		n.genMu.RUnlock()
		left := 0
		for _, p := range held {
			if r := n.routes[p].Load(); r == nil || r.gen == n.next {
				continue
			}
			oldApplied, _ := n.serving.worker.Applied(p)
			newApplied, _ := n.next.worker.Applied(p)
			n.genMu.RLock()
			sh := n.next.shards[p]
			n.genMu.RUnlock()
			if sh == nil {
				continue
			}
			st, err := sh.Stats(ctx)
			if err != nil || newApplied < oldApplied || st.VectorsWaiting > 0 {
				left++
				continue
			}
			n.genMu.RLock()
			n.setRoute(p, n.next)
			n.genMu.RUnlock()
			n.switched.Add(1)
			n.log.Info("partition switched to the new vector space", "partition", p, "generation", n.next.name, "space", n.next.space)
		}
		if left > 0 || len(held) == 0 && n.cfg.Group == "" {
			continue
		}
		// Searches that started on the old shards finish before they close.
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		// No partition moves while the old generation retires (ownership.go,
		// moving): a gain or drop in progress finishes with the old
		// generation's worker and shard map first, and any later one sees
		// only the new generation, so nothing adds to the old worker once
		// stopped or writes the shard map closeShards reads. A partition
		// gained since the check above still routes to the old generation:
		// it switches first.
		n.own.moving.Lock()
		if n.allSwitched() {
			break
		}
		n.own.moving.Unlock()
	}
	old := n.serving
	if err := old.stop(); err != nil {
		n.log.Error("stop the old generation's worker", "err", err)
	}
	_ = old.worker.DeleteConsumers(context.Background())
	if err := writeActive(n.shardRoot(), n.next.name); err != nil {
		n.own.moving.Unlock()
		n.log.Error("record the serving generation", "err", err)
		return
	}
	n.genMu.Lock()
	n.serving, n.next = n.next, nil
	n.genMu.Unlock()
	n.own.moving.Unlock()
	old.closeShards(n)
	for p := range n.partitions { // every partition: a group member may have held others before
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(ShardPath(old.dir, p) + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				n.log.Warn("remove an old shard file", "path", ShardPath(old.dir, p)+suffix, "err", err)
			}
		}
	}
	if old.name != "." {
		_ = os.Remove(old.dir)
	}
	n.log.Info("vector space switch complete", "space", n.serving.space, "generation", n.serving.name)
}

// allSwitched reports whether every partition the new generation holds
// routes to it.
func (n *Node) allSwitched() bool {
	n.genMu.RLock()
	defer n.genMu.RUnlock()
	for _, p := range n.next.heldPartitions() {
		if r := n.routes[p].Load(); r != nil && r.gen != n.next {
			return false
		}
	}
	return true
}

// switchStatus reports a switch in progress, or nil.
func (n *Node) switchStatus(ctx context.Context) *memindex.SwitchStatus {
	n.genMu.RLock()
	old, next := n.serving, n.next
	n.genMu.RUnlock()
	if next == nil {
		return nil
	}
	var oldSum, newSum uint64
	n.genMu.RLock()
	held := next.heldPartitions()
	n.genMu.RUnlock()
	for _, p := range held {
		a, _ := old.worker.Applied(p)
		b, _ := next.worker.Applied(p)
		oldSum, newSum = oldSum+a, newSum+min(a, b)
	}
	progress := 1.0
	if oldSum > 0 {
		progress = float64(newSum) / float64(oldSum)
	}
	return &memindex.SwitchStatus{From: old.space, To: next.space, Partitions: len(held),
		Switched: int(n.switched.Load()), Progress: progress}
}

func (n *Node) shardRoot() string { return filepath.Join(n.cfg.Data, "shards") }

// openGenerations opens the serving generation and, when the configured
// embedder's vector space differs from the one the shards hold, a new one
// to build; it sets each partition's route.
func (n *Node) openGenerations(ctx, sctx context.Context, info embedder.Info) error {
	root := n.shardRoot()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("shard directory: %w", err)
	}
	n.closers = append(n.closers, func() {
		n.genMu.RLock()
		defer n.genMu.RUnlock()
		for _, g := range []*generation{n.serving, n.next} {
			if g != nil {
				g.closeShards(n)
			}
		}
	})
	space := embedder.Space(info)
	timeout := embedTimeout(info)
	active := readActive(root)
	oldSpace, oldDims, err := generationSpace(ctx, filepath.Join(root, active), n.partitions)
	if err != nil {
		return err
	}
	if oldSpace == "" || oldSpace == space {
		if n.serving, err = n.openGeneration(sctx, active, space, info.Dims, n.cached, n.cached, timeout); err != nil {
			return err
		}
	} else {
		// Another embedder built the shards: they keep serving, with that
		// embedder for queries when it can be built here, while the new
		// generation is filled from the stream.
		var oldEmb embedder.Embedder
		var oldIngest embedder.Embedder = embedder.Func{
			EmbedFunc: func(context.Context, embedder.Request) ([][]float32, error) {
				return nil, fmt.Errorf("the previous embedder (%s) is not available here", oldSpace)
			},
			Desc: embedder.Info{Provider: "unavailable", Dims: oldDims},
		}
		if pf, perr := embedder.ParseSpace(oldSpace); perr == nil {
			// The same stack as the serving embedder's: rate limit,
			// breaker, batches, cache.
			pf.Timeout, pf.Retries, pf.Keys = n.cfg.Embedder.Timeout, n.cfg.Embedder.Retries, n.cfg.Embedder.Keys
			if st, eerr := n.newStack(pf); eerr == nil {
				oldEmb, oldIngest = st, st
			} else {
				n.log.Warn("the previous embedder cannot be built; its shards serve keywords only until the switch", "space", oldSpace, "err", eerr)
			}
		}
		if n.serving, err = n.openGeneration(sctx, active, oldSpace, oldDims, oldEmb, oldIngest, timeout); err != nil {
			return err
		}
		name, err := nextGeneration(ctx, root, n.partitions, space)
		if err != nil {
			return err
		}
		if n.next, err = n.openGeneration(sctx, name, space, info.Dims, n.cached, n.cached, timeout); err != nil {
			return err
		}
		n.log.Info("embedder changed: serving the old vectors while a new vector set is built from the stream",
			"from", oldSpace, "to", space, "generation", name)
	}
	if err := n.waitSegmenter(ctx, n.shardsNow()); err != nil {
		return err
	}
	n.routes = make([]atomic.Pointer[route], n.partitions)
	n.genMu.RLock()
	for _, p := range n.own.initial {
		n.setRoute(p, n.serving)
	}
	n.genMu.RUnlock()
	return nil
}

// shardsNow returns the serving generation's shards.
func (n *Node) shardsNow() map[int]*store.Shard {
	n.genMu.RLock()
	defer n.genMu.RUnlock()
	return maps.Clone(n.serving.shards)
}

// switching reports whether a new vector set is being built.
func (n *Node) switching() bool {
	n.genMu.RLock()
	defer n.genMu.RUnlock()
	return n.next != nil
}

// embedTimeout is how long a batch waits for its vectors inline before the
// backfill takes over: the built-in embedder is local and never down.
func embedTimeout(info embedder.Info) time.Duration {
	if info.Provider == "builtin" {
		return 5 * time.Second
	}
	return 2 * time.Second
}

// chunkerConfig is the chunker configuration of --chunk-tokens and
// --chunk-context (0: no context, which chunker.Config spells negative).
func chunkerConfig(tokens, contextMsgs int) chunker.Config {
	if contextMsgs <= 0 {
		contextMsgs = -1
	}
	return chunker.Config{BudgetTokens: tokens, ContextMessages: contextMsgs}
}

// reindexProgress logs the keyword re-index a shard runs at Open after a
// tokenizer or schema change: its first batch, then at most once every
// reindexLogEvery, and its end with the seconds since reindexProgress was
// made (just before Open), so a re-index of a million chunks writes a few
// dozen lines rather than two thousand.
func reindexProgress(log *slog.Logger, p int) func(done, total int64) {
	start := time.Now()
	var last time.Time
	return func(done, total int64) {
		now := time.Now()
		switch {
		case done >= total:
			log.Info("re-indexed keywords (tokenizer or schema change)", "partition", p, "chunks", done,
				"seconds", math.Round(now.Sub(start).Seconds()*100)/100)
		case last.IsZero() || now.Sub(last) >= reindexLogEvery:
			log.Info("re-indexing keywords (tokenizer or schema change)", "partition", p, "done", done, "total", total)
			last = now
		}
	}
}

// reindexLogEvery is the least time between two progress lines of a
// re-index.
const reindexLogEvery = 2 * time.Second

// segmenterWait bounds how long a partition waits for the Chinese
// dictionary before it is served anyway (its Han searches then wait for the
// load within their own deadline).
const segmenterWait = 30 * time.Second

// waitSegmenter waits until the Chinese dictionary is loaded when one of
// shards holds Han text (store loads it in the background from Open), so
// that the first Chinese search after a start, or after a partition is
// gained, does not wait for it. It fails only when ctx ends.
func (n *Node) waitSegmenter(ctx context.Context, shards map[int]*store.Shard) error {
	wctx, cancel := context.WithTimeout(ctx, segmenterWait)
	defer cancel()
	for p, sh := range shards {
		if sh == nil {
			continue
		}
		start := time.Now()
		err := sh.WaitSegmenter(wctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			n.log.Warn("Chinese dictionary not loaded yet; serving the partition anyway", "partition", p, "err", err)
			return nil
		}
		if d := time.Since(start); d > 10*time.Millisecond {
			n.log.Info("Chinese dictionary loaded before serving", "partition", p, "waited", d.Round(time.Millisecond))
		}
	}
	return nil
}
