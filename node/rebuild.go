package node

import (
	"context"
	"errors"
	"fmt"
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
	"memindex/consumer"
	"memindex/embedder"
	"memindex/store"
)

// LockData takes the data directory's lock, so that one worker (or one
// rebuild) uses it at a time. The lock ends with the process or release.
func LockData(dir string) (release func(), err error) {
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

// RebuildRequest names the partitions Rebuild rebuilds and how.
type RebuildRequest struct {
	// NATS, Data and the embedder, chunking and shard settings are the
	// worker's (Config.Data and so on); chunking must match the worker's,
	// or chunk ids change.
	Config
	// Partitions are the partitions to rebuild.
	Partitions []int
	// FromSnapshot starts each from its newest snapshot in the
	// MEMINDEX_SNAPSHOTS object store, then replays the stream after it.
	FromSnapshot bool
	// EmbedderSet says Config.Embedder was given: it must then be the
	// shards' vector space; otherwise the space the shards record is used.
	EmbedderSet bool
	// Every is how often Progress is called (0: every second).
	Every time.Duration
	// Progress is told how each partition advances, then that it is done
	// (Type "rebuild.done"); Note gets a message about one. Either may be
	// nil.
	Progress func(RebuildEvent)
	Note     func(p int, msg string)
}

// Rebuild rebuilds each named partition's shard of a stopped worker's data
// directory from the stream (or its newest snapshot and the stream after
// it), up to the partition's last event at the start, until every chunk has
// its vector. The data lock refuses while a worker runs.
func Rebuild(ctx context.Context, req RebuildRequest) error {
	if len(req.Partitions) == 0 {
		return errors.New("name --partition N")
	}
	release, err := LockData(req.Data)
	if err != nil {
		return err
	}
	defer release()
	o, err := openOfflineStream(ctx, OfflineConfig{NATS: req.NATS, Data: req.Data}, true, "memindex rebuild")
	if err != nil {
		return err
	}
	defer o.close()
	parts, err := partitionList(req.Partitions, false, o.partitions)
	if err != nil {
		return err
	}
	if req.Every <= 0 {
		req.Every = time.Second
	}
	if req.Progress == nil {
		req.Progress = func(RebuildEvent) {}
	}
	if req.Note == nil {
		req.Note = func(int, string) {}
	}
	r := rebuilder{req: req, dir: activeShardDir(req.Data), count: o.partitions, js: o.js}
	for _, p := range parts {
		if err := r.partition(ctx, p); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return nil
}

// DropShards removes every shard file of a stopped worker's serving
// generation (`rebuild --all`): the next node rebuilds them from the
// stream. It returns the shard directory and the partitions removed.
func DropShards(data string) (dir string, removed []int, err error) {
	release, err := LockData(data)
	if err != nil {
		return "", nil, err
	}
	defer release()
	dir = activeShardDir(data)
	matches, _ := filepath.Glob(filepath.Join(dir, "p*.db"))
	var parts []int
	for _, m := range matches {
		if p, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "p"), ".db")); err == nil {
			parts = append(parts, p)
		}
	}
	for i, p := range parts {
		if _, err := removeShard(ShardPath(dir, p)); err != nil {
			return dir, parts[:i], fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return dir, parts, nil
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

// rebuilder rebuilds the partitions of one Rebuild.
type rebuilder struct {
	req   RebuildRequest
	dir   string
	count int
	js    jetstream.JetStream
}

// rebuildConsumerPrefix names the rebuild's own durable consumers, deleted
// when it ends; the worker's are positioned anew when it starts.
const rebuildConsumerPrefix = consumer.DefaultConsumerPrefix + "-rebuild"

// provider returns the provider of the partition's vector space: the one
// its generation's shards record, unless the request names one (which must
// then be the same).
func (r rebuilder) provider(ctx context.Context, p int) (embedder.ProviderConfig, string, error) {
	recorded, _, err := store.ReadSpace(ctx, ShardPath(r.dir, p))
	if err == nil && recorded == "" {
		recorded, _, err = generationSpace(ctx, r.dir, r.count)
	}
	if err != nil {
		return embedder.ProviderConfig{}, "", err
	}
	pf := r.req.Embedder
	if recorded != "" && !r.req.EmbedderSet {
		if pf, err = embedder.ParseSpace(recorded); err != nil {
			return embedder.ProviderConfig{}, "", err
		}
		pf.Timeout, pf.Retries, pf.Keys = r.req.Embedder.Timeout, r.req.Embedder.Retries, r.req.Embedder.Keys
	}
	return pf, recorded, nil
}

// stack builds the embedder stack of the partition's vector space over a
// cache bounded as the worker's (Config.CacheMaxBytes): the same stack a
// node runs, rate limit and breaker included.
func (r rebuilder) stack(ctx context.Context, p int, cache embedder.Cache) (*embedder.Stack, error) {
	pf, recorded, err := r.provider(ctx, p)
	if err != nil {
		return nil, err
	}
	st, err := embedder.NewStack(embedder.StackConfig{
		Provider: pf, RateLimit: r.req.RateLimit, Breaker: r.req.Breaker,
		Pool:  embedder.PoolConfig{BatchSize: r.req.EmbedBatch, Concurrency: r.req.EmbedConcurrency},
		Cache: cache,
	})
	if err != nil {
		return nil, err
	}
	if space := embedder.Space(st.Info()); recorded != "" && space != recorded {
		return nil, fmt.Errorf("the shards hold vectors of %s, the embedder flags give %s: rebuild with the shards' embedder (drop --embedder/--model/--dims), or let `memindex serve` switch embedders (it builds a new generation from the stream)", recorded, space)
	}
	return st, nil
}

// partition rebuilds partition p's shard: from its newest snapshot (when
// asked and there is one) or empty, then from the stream up to the
// partition's last event at the start, until every chunk has its vector.
func (r rebuilder) partition(ctx context.Context, p int) error {
	cache, err := store.OpenCacheWith(ctx, filepath.Join(r.req.Data, "cache.db"), store.CacheConfig{MaxBytes: r.req.CacheMaxBytes})
	if err != nil {
		return err
	}
	defer cache.Close(context.Background())
	stack, err := r.stack(ctx, p, cache)
	if err != nil {
		return err
	}
	info := stack.Info()
	space := embedder.Space(info)
	path := ShardPath(r.dir, p)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	from := ""
	restored := false
	if r.req.FromSnapshot {
		snaps, err := consumer.OpenSnapshots(ctx, r.js, consumer.SnapshotConfig{TempDir: snapshotTempDir(r.req.Data)})
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
			r.req.Note(p, "no snapshot in the object store; rebuilding from the whole stream")
		}
	}
	if !restored {
		if _, err := removeShard(path); err != nil {
			return err
		}
	}
	sh, err := store.Open(ctx, path, store.Config{Dims: info.Dims, Space: space, NoSqliteVec: !r.req.SQLiteVec})
	if err != nil {
		return err
	}
	defer sh.Close(context.Background())
	w, err := consumer.New(r.js, consumer.Config{
		Partitions: []int{p}, ConsumerPrefix: rebuildConsumerPrefix, BatchSize: r.req.Batch,
		Chunker:      chunkerConfig(r.req.ChunkTokens, r.req.ChunkContext),
		EmbedTimeout: embedTimeout(info),
	}, map[int]consumer.Shard{p: sh}, stack)
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.DeleteConsumers(context.WithoutCancel(ctx))
	first, _ := w.Applied(p)
	target, err := lastPartitionSeq(ctx, r.js, p)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	var wg conc.WaitGroup
	wg.Go(func() { _ = w.Run(wctx) })
	defer func() { stop(); wg.Wait() }() // the batch in hand commits first
	t := time.NewTicker(r.req.Every)
	defer t.Stop()
	for {
		applied, _ := w.Applied(p)
		st, err := sh.Stats(ctx)
		if err != nil {
			return err
		}
		ev := RebuildEvent{Type: "rebuild.progress", Partition: p, From: from, FirstSeq: first, AppliedSeq: applied, TargetSeq: target,
			Chunks: st.Chunks, VectorsWaiting: st.VectorsWaiting, Seconds: time.Since(start).Seconds()}
		if applied >= target && st.VectorsWaiting == 0 {
			stop()
			wg.Wait()
			if err := sh.Check(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			ev.Type, ev.Seconds = "rebuild.done", time.Since(start).Seconds()
			r.req.Progress(ev)
			return nil
		}
		r.req.Progress(ev)
		select {
		case <-ctx.Done():
			r.req.Note(p, "interrupted: the shard keeps what it applied; the next serve or rebuild continues from there")
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

// RebuildEvent is the progress of one partition's rebuild (the JSON of
// `memindex rebuild --json`).
type RebuildEvent struct {
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

// Fraction is how far the replay is, from 0 to 1.
func (e RebuildEvent) Fraction() float64 {
	if e.TargetSeq <= e.FirstSeq {
		return 1
	}
	return min(1, float64(e.AppliedSeq-min(e.AppliedSeq, e.FirstSeq))/float64(e.TargetSeq-e.FirstSeq))
}
