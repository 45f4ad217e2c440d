package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sourcegraph/conc/pool"

	"memindex"
	"memindex/chunker"
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
	if err := freshNodeDirs(cfg.Dir); err != nil {
		return err
	}
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
		hot := hotLoad(HotCaseOne, size, cfg.HotSessions)
		sel := hotSelection{cases: cfg.HotCases, rounds: max(1, cfg.HotRounds)}
		figs, err := runHot(ctx, cfg.Hooks, n, filepath.Join(cfg.Dir, fmt.Sprintf("hot-backlog-%d", size)), hot, cfg.HotSessions, spec.Batch, sel, say)
		if err != nil {
			return err
		}
		if !sel.has(HotCaseFloors) {
			rep.Hot = append(rep.Hot, figs...)
			continue
		}
		say("hot: the floors, in process over the same %d messages …", size)
		floors, err := runHotFloors(ctx, filepath.Join(cfg.Dir, fmt.Sprintf("hot-%d", size)), hot, cfg.HotSessions, spec.Batch, say)
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

// fillSessionLen is how many messages a session of fillNamespace has.
const fillSessionLen = 50

// fillNamespace writes size generated chunks with vectors straight into the
// namespace's shard: search latency does not depend on how chunks arrived.
// The chunks are what ingest makes of sessions of fillSessionLen messages
// (the unit is the message): one chunk a message, chunked by the chunker
// with its context (its date and the two messages before it), embedded
// with that context as the consumer embeds it, beside the message rows a
// hit loads. sink, when not nil, gets each thousand chunks (their texts
// and vectors) after they are applied: the search suite's floors index the
// same data. The next thousand are generated and embedded while one is
// applied, and the sink takes one while the next is applied (a million
// chunks take minutes).
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
		const per = 1000 // a multiple of fillSessionLen: a batch holds whole sessions
		for off := 0; off < size; off += per {
			var fb fillBatch
			var embed []string
			for first := off; first < min(off+per, size); first += fillSessionLen {
				ref := store.SessionRef{Namespace: ns, SessionKey: fmt.Sprintf("chat-%d", first/fillSessionLen), SessionID: "s1"}
				msgs := make([]chunker.Message, min(fillSessionLen, size-first))
				for i := range msgs {
					id := first + i
					msgs[i] = chunker.Message{Seq: int64(i + 1), ID: fmt.Sprintf("m%d", id), Speaker: g.Speakers[i%2],
						Text: g.Sentence(12 + i%3*8), Time: time.Unix(1_700_000_000+int64(id)*60, 0).UTC()}
					fb.batch.Messages = append(fb.batch.Messages, store.Message{Namespace: ns, SessionKey: ref.SessionKey, SessionID: ref.SessionID,
						Seq: msgs[i].Seq, ID: msgs[i].ID, Speaker: msgs[i].Speaker, Text: msgs[i].Text, Time: msgs[i].Time})
				}
				sc := store.SessionChunks{Session: ref, From: 1}
				for _, c := range chunker.Session(chunker.Config{}, ns+"\x00"+ref.SessionKey+"\x00"+ref.SessionID, msgs) {
					sc.Chunks = append(sc.Chunks, store.Chunk{ID: c.ID, Namespace: ns, Source: memindex.SourceSessions,
						SessionKey: ref.SessionKey, SessionID: ref.SessionID, SeqStart: c.SeqStart, SeqEnd: c.SeqEnd, Part: c.Part,
						Text: c.Text, Context: c.Context, TimeStart: c.TimeStart, TimeEnd: c.TimeEnd})
					fb.texts = append(fb.texts, c.Text)
					embed = append(embed, chunker.EmbedText(c.Context, c.Text))
				}
				fb.batch.Rechunk = append(fb.batch.Rechunk, sc)
			}
			vecs, err := emb.Embed(ctx, embedder.Request{Texts: embed, Kind: embedder.KindDocument})
			if err != nil {
				return err
			}
			fb.vecs = vecs
			k := 0
			for r := range fb.batch.Rechunk {
				for c := range fb.batch.Rechunk[r].Chunks {
					fb.batch.Rechunk[r].Chunks[c].Vector = vecs[k]
					k++
				}
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

// freshNodeDirs refuses a data directory that holds an earlier run's node
// or hot-suite directories: their streams and shards would be reused, the
// events published again would all be duplicates, and the rates taken
// would count skipping them (a hot suite run twice on one --data reported
// 108,796 msg/s).
func freshNodeDirs(dir string) error {
	for _, pat := range []string{"node", "hot-*"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return err
		}
		for _, p := range m {
			if ents, err := os.ReadDir(p); err == nil && len(ents) > 0 {
				return fmt.Errorf("%s holds an earlier bench run's stream and shards: reusing them makes every event a duplicate and the rates wrong; remove it or give another --data", p)
			}
		}
	}
	return nil
}
