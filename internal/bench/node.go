package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sourcegraph/conc/pool"

	"memindex"
	"memindex/embedder"
	"memindex/internal/corpus"
	"memindex/internal/harness"
	"memindex/store"
)

// nodeSpec is the node every suite that needs one starts: the built-in
// embedder (384 dims), all partitions, data under dir.
func nodeSpec(dir, worker string) harness.NodeSpec {
	return harness.NodeSpec{Dir: dir, Worker: worker, Partitions: memindex.DefaultPartitions, Dims: vecDims, Batch: 1000, ChunkTokens: 400, ContextMessages: 2}
}

// runNodeSuites starts a node in process and runs the ingest, hot, search
// and concurrency suites against it.
func runNodeSuites(ctx context.Context, cfg Config, run map[string]bool, rep *Report) error {
	say := cfg.Log
	spec := nodeSpec(filepath.Join(cfg.Dir, "node"), "bench")
	n, stop, err := cfg.Hooks.Start(ctx, spec)
	if err != nil {
		return err
	}
	defer stop() //nolint:errcheck // the figures are taken; a shutdown error changes none

	if run["ingest"] {
		if f, err := os.Open(cfg.Locomo); err == nil {
			var lines [][]byte
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines = append(lines, append([]byte(nil), sc.Bytes()...))
			}
			f.Close()
			say("ingest: LoCoMo, %d messages …", len(lines))
			fig, err := ingest(ctx, cfg.Hooks, n, "locomo", lines, "bench-locomo")
			if err != nil {
				return err
			}
			rep.Ingest = append(rep.Ingest, fig)
			say("  %.0f messages/s (%.2fs, %d chunks)", fig.PerSecond, fig.Seconds, fig.Chunks)
		} else {
			say("ingest: LoCoMo skipped (%v)", err)
		}
		if cfg.Messages > 0 {
			lines := GeneratedEvents(cfg.Messages)
			say("ingest: generated, %d messages …", len(lines))
			fig, err := ingest(ctx, cfg.Hooks, n, fmt.Sprintf("generated-%d", cfg.Messages), lines, "")
			if err != nil {
				return err
			}
			rep.Ingest = append(rep.Ingest, fig)
			say("  %.0f messages/s (%.2fs, %d chunks)", fig.PerSecond, fig.Seconds, fig.Chunks)
		}
	}
	for _, size := range cfg.HotMessages {
		if !run["hot"] || size <= 0 {
			break
		}
		figs, err := runHot(ctx, cfg.Hooks, n, size, cfg.HotSessions, say)
		if err != nil {
			return err
		}
		say("hot: the floors, in process over the same %d messages …", size)
		floors, err := runHotFloors(ctx, filepath.Join(cfg.Dir, fmt.Sprintf("hot-%d", size)), size, cfg.HotSessions, spec.Batch, say)
		if err != nil {
			return err
		}
		rep.Hot = append(rep.Hot, append(figs, floors...)...)
	}
	if !run["search"] && !run["concurrency"] {
		return nil
	}
	for _, size := range cfg.SearchChunks {
		if err := runSearchSize(ctx, cfg, run, n, size, rep); err != nil { // search.go
			return err
		}
	}
	return nil
}

// ingest publishes lines into n and measures until every partition has
// applied them: messages per second from the first publish to the last
// commit.
func ingest(ctx context.Context, h harness.Hooks, n harness.Node, name string, lines [][]byte, ns string) (IngestFigure, error) {
	in, err := h.Ingest(ctx, n, lines, ns)
	if err != nil {
		return IngestFigure{}, err
	}
	return IngestFigure{Corpus: name, Messages: in.Messages, Chunks: in.Chunks, Seconds: in.Seconds, PerSecond: in.PerSecond()}, nil
}

// fillNamespace writes size generated chunks with vectors straight into the
// namespace's shard: search latency does not depend on how chunks arrived.
// sink, when not nil, gets each thousand chunks (texts and vectors) after
// they are applied: the search suite's floors index the same data. The
// next thousand are generated and embedded while one is applied, and the
// sink takes one while the next is applied (a million chunks take minutes).
func fillNamespace(ctx context.Context, n harness.Node, ns string, size int, sink func(texts []string, vecs [][]float32) error) error {
	p := memindex.Partition(ns, n.Partitions())
	sh := n.Shards()[p]
	if sh == nil {
		return fmt.Errorf("fill %s: the node holds no shard of partition %d", ns, p)
	}
	emb := n.Embedder()
	type fillBatch struct {
		texts []string
		vecs  [][]float32
		batch store.Batch
	}
	pl := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError()
	made, applied := make(chan fillBatch, 2), make(chan fillBatch, 2)
	pl.Go(func(ctx context.Context) error { // generate and embed
		defer close(made)
		g := corpus.New(uint64(size))
		const per = 1000
		for off := 0; off < size; off += per {
			cnt := min(per, size-off)
			chunks := make([]store.Chunk, cnt)
			texts := make([]string, cnt)
			for i := range chunks {
				var b strings.Builder
				for l := 0; l < 10; l++ {
					fmt.Fprintf(&b, "%s: %s\n", g.Speakers[l%2], g.Sentence(12+l%3*8))
				}
				texts[i] = b.String()
				id := off + i
				chunks[i] = store.Chunk{ID: fmt.Sprintf("%s-%d", ns, id), Namespace: ns, Source: memindex.SourceSessions,
					SessionKey: fmt.Sprintf("chat-%d", id/50), SessionID: "s1", SeqStart: int64(id%50*10 + 1), SeqEnd: int64(id%50*10 + 10),
					Text: texts[i], TimeStart: time.Unix(1_700_000_000+int64(id)*60, 0), TimeEnd: time.Unix(1_700_000_000+int64(id)*60+600, 0)}
			}
			vecs, err := emb.Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
			if err != nil {
				return err
			}
			for i := range chunks {
				chunks[i].Vector = vecs[i]
			}
			byKey := map[string][]store.Chunk{}
			var keys []string
			for _, c := range chunks {
				if _, ok := byKey[c.SessionKey]; !ok {
					keys = append(keys, c.SessionKey)
				}
				byKey[c.SessionKey] = append(byKey[c.SessionKey], c)
			}
			fb := fillBatch{texts: texts, vecs: vecs}
			for _, k := range keys {
				cs := byKey[k]
				fb.batch.Rechunk = append(fb.batch.Rechunk, store.SessionChunks{Session: store.SessionRef{Namespace: ns, SessionKey: k, SessionID: "s1"}, From: cs[0].SeqStart, Chunks: cs})
			}
			select {
			case made <- fb:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	pl.Go(func(ctx context.Context) error { // apply, in order
		defer close(applied)
		for fb := range made {
			if _, err := sh.Apply(ctx, fb.batch); err != nil {
				return err
			}
			select {
			case applied <- fb:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return ctx.Err()
	})
	pl.Go(func(ctx context.Context) error { // the sink, in order
		for fb := range applied {
			if sink != nil {
				if err := sink(fb.texts, fb.vecs); err != nil {
					return err
				}
			}
		}
		return ctx.Err()
	})
	return pl.Wait()
}
