package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc"

	"memindex"
	"memindex/chunker"
	"memindex/consumer"
	"memindex/embedder"
	"memindex/store"
)

// lockData takes the data directory's lock, so that one worker (or one
// rebuild) uses it at a time. The lock ends with the process or release.
func lockData(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner, _ := os.ReadFile(f.Name())
		f.Close()
		return nil, fmt.Errorf("data directory %s is in use by another memindex process (%s); stop it first or use another --data",
			dir, strings.TrimSpace(string(owner)))
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// runRebuild is `memindex rebuild`. With --partition N it rebuilds
// partition N's shard now, from the stream (or, with --from-snapshot, from
// its newest snapshot and then the stream after it), showing progress;
// with --all it removes every shard, and the next `memindex serve`
// rebuilds them. Either way the worker of the data directory must be
// stopped (the data lock refuses otherwise).
func runRebuild(ctx context.Context, args []string, stdout io.Writer) error {
	fl := newFlagSet("rebuild", "--data DIR (--partition N ... [--from-snapshot] | --all)")
	var conn connFlags
	conn.register(fl, "")
	data := fl.String("data", env("MEMINDEX_DATA", "./data"), "data directory of the stopped worker (MEMINDEX_DATA)")
	all := fl.Bool("all", false, "remove every shard; the next `memindex serve` rebuilds them from the stream")
	fromSnapshot := fl.Bool("from-snapshot", false, "start from the partition's newest snapshot in the MEMINDEX_SNAPSHOTS object store, then replay the stream after it")
	asJSON := fl.Bool("json", false, "progress as JSON lines (type rebuild.progress, then rebuild.done)")
	var rc rebuildConfig
	rc.provider.register(fl)
	fl.IntVar(&rc.batch, "batch", envInt("MEMINDEX_BATCH", 1000), "most events applied in one transaction (MEMINDEX_BATCH)")
	fl.IntVar(&rc.embedBatch, "embed-batch", envInt("MEMINDEX_EMBED_BATCH", 64), "texts per embedding request (MEMINDEX_EMBED_BATCH)")
	fl.IntVar(&rc.embedConc, "embed-concurrency", envInt("MEMINDEX_EMBED_CONCURRENCY", 4), "embedding requests in flight (MEMINDEX_EMBED_CONCURRENCY)")
	fl.IntVar(&rc.chunkTokens, "chunk-tokens", envInt("MEMINDEX_CHUNK_TOKENS", defaultChunkTokens), "as serve's: must match it, or chunk ids change (MEMINDEX_CHUNK_TOKENS)")
	fl.IntVar(&rc.contextMsgs, "chunk-context", envInt("MEMINDEX_CHUNK_CONTEXT", 2), "as serve's (MEMINDEX_CHUNK_CONTEXT)")
	sqliteVec := fl.Bool("sqlite-vec", os.Getenv("MEMINDEX_SQLITE_VEC") != "false" && os.Getenv("MEMINDEX_SQLITE_VEC") != "0", "as serve's --sqlite-vec (MEMINDEX_SQLITE_VEC)")
	var parts []int
	partitionFlag(fl, &parts)
	if _, err := parseArgs(fl, args); err != nil {
		return err
	}
	switch {
	case *all && len(parts) > 0:
		return errors.New("name --partition N or --all, not both")
	case !*all && len(parts) == 0:
		fl.Usage()
		return errors.New("name --partition N or --all")
	case *all && *fromSnapshot:
		return errors.New("--from-snapshot restores named partitions: use --partition N (repeatable)")
	}
	rc.noSqliteVec = !*sqliteVec
	rc.contextMsgs = contextMessages(rc.contextMsgs)
	fl.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "embedder", "model", "base-url", "dims":
			rc.providerSet = true
		}
	})
	release, err := lockData(*data)
	if err != nil {
		return err
	}
	defer release()
	root := filepath.Join(*data, "shards")
	dir := filepath.Join(root, readActive(root))
	if *all {
		return dropShards(dir, stdout)
	}
	o, err := openOfflineStream(conn, *data, "", true, "memindex rebuild")
	if err != nil {
		return err
	}
	defer o.close()
	count, err := streamPartitionCount(ctx, o.js)
	if err != nil {
		return err
	}
	if parts, err = partitionList(parts, false, count); err != nil {
		return err
	}
	rc.data, rc.dir, rc.count, rc.js, rc.fromSnapshot = *data, dir, count, o.js, *fromSnapshot
	rc.progress = newRebuildProgress(stdout, *asJSON)
	for _, p := range parts {
		if err := rebuildPartition(ctx, rc, p); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return nil
}

// dropShards removes every shard file of dir (rebuild --all).
func dropShards(dir string, stdout io.Writer) error {
	matches, _ := filepath.Glob(filepath.Join(dir, "p*.db"))
	var parts []int
	for _, m := range matches {
		if p, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "p"), ".db")); err == nil {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if _, err := removeShard(shardPath(dir, p)); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
		fmt.Fprintf(stdout, "partition %d: shard removed; the next `memindex serve` rebuilds it from the stream\n", p)
	}
	if len(parts) == 0 {
		fmt.Fprintf(stdout, "no shard file under %s\n", dir)
	}
	return nil
}

// removeShard removes a shard file with its -wal and -shm and says whether
// there was one.
func removeShard(path string) (bool, error) {
	removed := false
	for _, suffix := range []string{"-wal", "-shm", ""} {
		err := os.Remove(path + suffix)
		switch {
		case err == nil:
			removed = removed || suffix == ""
		case !errors.Is(err, fs.ErrNotExist):
			return removed, err
		}
	}
	return removed, nil
}

// rebuildConfig is what rebuilding one partition needs.
type rebuildConfig struct {
	data, dir    string
	count        int
	js           jetstream.JetStream
	fromSnapshot bool
	provider     providerFlags
	providerSet  bool // an embedder flag was given: it must match the shards' space
	batch        int
	embedBatch   int
	embedConc    int
	chunkTokens  int
	contextMsgs  int
	noSqliteVec  bool
	progress     *rebuildProgress
}

// rebuildConsumerPrefix names the rebuild's own durable consumers, deleted
// when it ends; the worker's are positioned anew when it starts.
const rebuildConsumerPrefix = consumer.DefaultConsumerPrefix + "-rebuild"

// rebuildEmbedder builds the embedder of the partition's vector space: the
// one its generation's shards record, unless flags name one (which must
// then be the same).
func rebuildEmbedder(ctx context.Context, rc rebuildConfig, p int) (embedder.Embedder, embedder.Info, error) {
	recorded, _, err := store.ReadSpace(ctx, shardPath(rc.dir, p))
	if err == nil && recorded == "" {
		recorded, _, err = generationSpace(ctx, rc.dir, rc.count)
	}
	if err != nil {
		return nil, embedder.Info{}, err
	}
	pf := rc.provider
	if recorded != "" && !rc.providerSet {
		if pf, err = parseSpace(recorded); err != nil {
			return nil, embedder.Info{}, err
		}
		pf.timeout, pf.retries = rc.provider.timeout, rc.provider.retries
	}
	emb, info, err := newEmbedder(pf)
	if err != nil {
		return nil, embedder.Info{}, err
	}
	if space := vectorSpace(info); recorded != "" && space != recorded {
		return nil, embedder.Info{}, fmt.Errorf("the shards hold vectors of %s, the embedder flags give %s: rebuild with the shards' embedder (drop --embedder/--model/--dims), or let `memindex serve` switch embedders (it builds a new generation from the stream)", recorded, space)
	}
	return emb, info, nil
}

// rebuildPartition rebuilds partition p's shard: from its newest snapshot
// (--from-snapshot, when there is one) or empty, then from the stream up to
// the partition's last event at the start, until every chunk has its vector.
func rebuildPartition(ctx context.Context, rc rebuildConfig, p int) error {
	emb, info, err := rebuildEmbedder(ctx, rc, p)
	if err != nil {
		return err
	}
	space := vectorSpace(info)
	path := shardPath(rc.dir, p)
	if err := os.MkdirAll(rc.dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	from := ""
	restored := false
	if rc.fromSnapshot {
		snaps, err := consumer.OpenSnapshots(ctx, rc.js, consumer.SnapshotConfig{TempDir: snapshotTempDir(rc.data)})
		if err != nil {
			return err
		}
		ref, ok, err := snaps.Restore(ctx, p, path, space)
		if err != nil {
			return fmt.Errorf("%w (rebuild without --from-snapshot to replay the whole stream)", err)
		}
		if ok {
			from, restored = ref.Name, true
		} else {
			rc.progress.note(p, "no snapshot in the object store; rebuilding from the whole stream")
		}
	}
	if !restored {
		if _, err := removeShard(path); err != nil {
			return err
		}
	}
	cache, err := store.OpenCache(ctx, filepath.Join(rc.data, "cache.db"))
	if err != nil {
		return err
	}
	defer cache.Close(context.Background())
	cached := embedder.NewCached(embedder.NewBatched(emb, embedder.PoolConfig{BatchSize: rc.embedBatch, Concurrency: rc.embedConc}), cache)
	sh, err := store.Open(ctx, path, store.Config{Dims: info.Dims, Space: space, NoSqliteVec: rc.noSqliteVec})
	if err != nil {
		return err
	}
	defer sh.Close(context.Background())
	embedTimeout := 2 * time.Second
	if info.Provider == "builtin" {
		embedTimeout = 5 * time.Second
	}
	w, err := consumer.New(rc.js, consumer.Config{
		Partitions: []int{p}, ConsumerPrefix: rebuildConsumerPrefix, BatchSize: rc.batch,
		Chunker:      chunker.Config{BudgetTokens: rc.chunkTokens, ContextMessages: rc.contextMsgs},
		EmbedTimeout: embedTimeout,
	}, map[int]consumer.Shard{p: sh}, cached)
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.DeleteConsumers(context.WithoutCancel(ctx))
	first, _ := w.Applied(p)
	target, err := lastPartitionSeq(ctx, rc.js, p)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	var wg conc.WaitGroup
	wg.Go(func() { _ = w.Run(wctx) })
	defer func() { stop(); wg.Wait() }() // the batch in hand commits first
	t := time.NewTicker(rc.progress.every)
	defer t.Stop()
	for {
		applied, _ := w.Applied(p)
		st, err := sh.Stats(ctx)
		if err != nil {
			return err
		}
		ev := rebuildEvent{Type: "rebuild.progress", Partition: p, From: from, FirstSeq: first, AppliedSeq: applied, TargetSeq: target,
			Chunks: st.Chunks, VectorsWaiting: st.VectorsWaiting, Seconds: time.Since(start).Seconds()}
		if applied >= target && st.VectorsWaiting == 0 {
			stop()
			wg.Wait()
			if err := sh.Check(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			ev.Type, ev.Seconds = "rebuild.done", time.Since(start).Seconds()
			rc.progress.done(ev)
			return nil
		}
		rc.progress.update(ev)
		select {
		case <-ctx.Done():
			rc.progress.note(p, "interrupted: the shard keeps what it applied; the next serve or rebuild continues from there")
			return ctx.Err()
		case <-t.C:
		}
	}
}

// lastPartitionSeq returns the stream sequence of partition p's last event
// (0: none).
func lastPartitionSeq(ctx context.Context, js jetstream.JetStream, p int) (uint64, error) {
	s, err := js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		return 0, err
	}
	m, err := s.GetLastMsgForSubject(ctx, memindex.PartitionFilter(p))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last event of partition %d: %w", p, err)
	}
	return m.Sequence, nil
}

// rebuildEvent is one --json progress line.
type rebuildEvent struct {
	Type           string  `json:"type"` // rebuild.progress, rebuild.done
	Partition      int     `json:"partition"`
	From           string  `json:"fromSnapshot,omitempty"` // the snapshot object restored
	FirstSeq       uint64  `json:"firstSeq"`               // applied sequence at the start
	AppliedSeq     uint64  `json:"appliedSeq"`
	TargetSeq      uint64  `json:"targetSeq"` // the partition's last event at the start
	Chunks         int64   `json:"chunks"`
	VectorsWaiting int64   `json:"vectorsWaiting"`
	Seconds        float64 `json:"seconds"`
}

// fraction is how far the replay is, from 0 to 1.
func (e rebuildEvent) fraction() float64 {
	if e.TargetSeq <= e.FirstSeq {
		return 1
	}
	return min(1, float64(e.AppliedSeq-min(e.AppliedSeq, e.FirstSeq))/float64(e.TargetSeq-e.FirstSeq))
}

// rebuildProgress shows a rebuild's progress: a bar redrawn in place on a
// terminal, a line every few seconds otherwise, JSON lines with --json.
type rebuildProgress struct {
	w     io.Writer
	json  bool
	tty   bool
	every time.Duration
}

func newRebuildProgress(w io.Writer, asJSON bool) *rebuildProgress {
	r := &rebuildProgress{w: w, json: asJSON, tty: !asJSON && isTerminal(w), every: 2 * time.Second}
	if r.tty {
		r.every = 200 * time.Millisecond
	} else if asJSON {
		r.every = time.Second
	}
	return r
}

func (r *rebuildProgress) update(e rebuildEvent) {
	switch {
	case r.json:
		r.emit(e)
	case r.tty:
		const width = 30
		n := int(e.fraction() * width)
		fmt.Fprintf(r.w, "\rpartition %d [%s%s] %3.0f%%  seq %d/%d  %d chunks  %d waiting for vectors  %4.0fs ",
			e.Partition, strings.Repeat("#", n), strings.Repeat(" ", width-n), 100*e.fraction(),
			e.AppliedSeq, e.TargetSeq, e.Chunks, e.VectorsWaiting, e.Seconds)
	default:
		fmt.Fprintf(r.w, "partition %d: %.0f%%, applied stream sequence %d of %d, %d chunks, %d waiting for vectors, %.0fs\n",
			e.Partition, 100*e.fraction(), e.AppliedSeq, e.TargetSeq, e.Chunks, e.VectorsWaiting, e.Seconds)
	}
}

func (r *rebuildProgress) done(e rebuildEvent) {
	if r.json {
		r.emit(e)
		return
	}
	if r.tty {
		fmt.Fprint(r.w, "\r\033[K")
	}
	from := "from the stream"
	if e.From != "" {
		from = fmt.Sprintf("from snapshot %s (stream sequence %d) and the stream after it", e.From, e.FirstSeq)
	}
	fmt.Fprintf(r.w, "partition %d: rebuilt %s: stream sequence %d, %d chunks, in %.1fs\n", e.Partition, from, e.AppliedSeq, e.Chunks, e.Seconds)
}

func (r *rebuildProgress) note(p int, msg string) {
	if r.json {
		b, _ := json.Marshal(map[string]any{"type": "rebuild.note", "partition": p, "message": msg})
		fmt.Fprintln(r.w, string(b))
		return
	}
	if r.tty {
		fmt.Fprint(r.w, "\r\033[K")
	}
	fmt.Fprintf(r.w, "partition %d: %s\n", p, msg)
}

func (r *rebuildProgress) emit(e rebuildEvent) {
	b, _ := json.Marshal(e)
	fmt.Fprintln(r.w, string(b))
}
