package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc"

	"memindex"
	"memindex/consumer"
	"memindex/store"
)

// Conformance of the shard to the snapshot seams.
var _ consumer.Snapshotter = (*store.Shard)(nil)

// defaultSnapshotInterval is serve's --snapshot-interval default.
const defaultSnapshotInterval = 10 * time.Minute

// snapshotTempDir is where snapshots are written before their upload: on
// the shards' file system, which has room for a shard.
func snapshotTempDir(data string) string { return filepath.Join(data, "snapshots.tmp") }

// startSnapshots starts the periodic snapshot loop of serve when
// --snapshot-interval is positive: every interval, each partition this
// worker owns (static owner, or holder of the owner lease in a group) whose
// shard moved is snapshotted to the MEMINDEX_SNAPSHOTS object store. The
// loop ends, and is waited for, before the shards close.
func (n *node) startSnapshots(ctx context.Context) error {
	interval := n.cfg.snapshotInterval
	if interval <= 0 {
		return nil
	}
	snaps, err := consumer.OpenSnapshots(ctx, n.js, consumer.SnapshotConfig{TempDir: snapshotTempDir(n.cfg.data), Logger: n.log})
	if err != nil {
		return fmt.Errorf("--snapshot-interval: %w (0 turns snapshots off)", err)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg conc.WaitGroup
	wg.Go(func() { snaps.Loop(lctx, interval, n.snapshotShards, n.ownsSnapshot) })
	n.closers = append(n.closers, func() { cancel(); wg.Wait() }) // runs before the shards close
	n.log.Info("periodic snapshots on", "interval", interval, "bucket", consumer.SnapshotBucket)
	return nil
}

// snapshotShards returns the serving generation's shards (a copy: a group
// member's partitions come and go).
func (n *node) snapshotShards() map[int]consumer.Snapshotter {
	n.genMu.RLock()
	defer n.genMu.RUnlock()
	out := make(map[int]consumer.Snapshotter, len(n.serving.shards))
	for p, sh := range n.serving.shards {
		out[p] = sh
	}
	return out
}

// ownsSnapshot reports whether this worker is the one that writes
// partition p's snapshots: the holder of its owner lease in a group, the
// static owner otherwise.
func (n *node) ownsSnapshot(p int) bool {
	if n.own.leaser != nil {
		return n.own.leaser.Owns(p)
	}
	return p >= 0 && p < len(n.own.owner) && n.own.owner[p].Load()
}

func init() { restoreShard = restoreFromSnapshot }

// restoreFromSnapshot puts partition p's newest snapshot at path before a
// gained partition opens, when there is no shard file yet: the worker then
// replays only the events after the snapshot. No bucket or no snapshot
// leaves the rebuild to the stream.
func restoreFromSnapshot(ctx context.Context, n *node, p int, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if _, err := n.js.ObjectStore(ctx, consumer.SnapshotBucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	n.genMu.RLock()
	space := n.newest().space
	n.genMu.RUnlock()
	snaps, err := consumer.OpenSnapshots(ctx, n.js, consumer.SnapshotConfig{TempDir: snapshotTempDir(n.cfg.data), Logger: n.log})
	if err != nil {
		return err
	}
	ref, ok, err := snaps.Restore(ctx, p, path, space)
	if err == nil && ok {
		n.log.Info("partition restored from a snapshot; replaying the stream after it", "partition", p,
			"object", ref.Name, "applied_seq", ref.Info.AppliedSeq)
	}
	return err
}

// offlineStream is a JetStream connection for an offline command
// (snapshot, rebuild): to --server/--context when set, else to the data
// directory's embedded server: started here from data/nats when this
// process holds the data lock (the worker is stopped), or reached at
// --listen when a worker runs it.
type offlineStream struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	closers []func()
}

func (o *offlineStream) close() {
	for i := len(o.closers) - 1; i >= 0; i-- {
		o.closers[i]()
	}
}

func openOfflineStream(conn connFlags, data, listen string, locked bool, name string) (_ *offlineStream, err error) {
	o := &offlineStream{}
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	if conn.server == "" && conn.context == "" {
		if locked {
			if _, err := os.Stat(filepath.Join(data, "auth")); err == nil {
				return nil, fmt.Errorf("the embedded server of %s requires authentication: start it with `memindex serve --auth` and pass --server and --nkey", data)
			}
			s, err := startEmbedded("127.0.0.1:-1", filepath.Join(data, "nats"), nil)
			if err != nil {
				return nil, err
			}
			o.closers = append(o.closers, func() { s.Shutdown(); s.WaitForShutdown() })
			conn.server = s.ClientURL()
		} else {
			conn.server = "nats://" + listen
		}
	}
	if o.nc, err = conn.connect(name); err != nil {
		return nil, err
	}
	o.closers = append(o.closers, o.nc.Close)
	if o.js, err = jetstream.New(o.nc); err != nil {
		return nil, err
	}
	return o, nil
}

// streamPartitionCount reads P from the event stream.
func streamPartitionCount(ctx context.Context, js jetstream.JetStream) (int, error) {
	s, err := js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w (has a worker ever run against this server?)", memindex.StreamEvents, err)
	}
	return consumer.StreamPartitions(s.CachedInfo().Config)
}

// partitionList turns --partition values and --all into the partitions to
// work on, each checked against P.
func partitionList(parts []int, all bool, count int) ([]int, error) {
	if all {
		parts = parts[:0]
		for p := range count {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if p >= count {
			return nil, fmt.Errorf("--partition %d: the stream has partitions 0 to %d", p, count-1)
		}
	}
	sort.Ints(parts)
	return parts, nil
}

// partitionFlag registers a repeatable --partition flag on fs.
func partitionFlag(fs interface {
	Func(name, usage string, fn func(string) error)
}, parts *[]int) {
	fs.Func("partition", "partition number (repeatable)", func(s string) error {
		p, err := strconv.Atoi(s)
		if err != nil || p < 0 {
			return fmt.Errorf("%q is not a partition number", s)
		}
		*parts = append(*parts, p)
		return nil
	})
}

// runSnapshot is `memindex snapshot --partition N|--all`: it snapshots the
// named shards of the data directory to the MEMINDEX_SNAPSHOTS object store
// now. It works beside a running worker (a snapshot is one more reader of
// the shard file) and on a stopped one.
func runSnapshot(ctx context.Context, args []string, stdout io.Writer) error {
	fl := newFlagSet("snapshot", "--data DIR (--partition N ... | --all) [--json]")
	var conn connFlags
	conn.register(fl, "")
	data := fl.String("data", env("MEMINDEX_DATA", "./data"), "data directory of the worker (MEMINDEX_DATA)")
	listen := fl.String("listen", env("MEMINDEX_LISTEN", "127.0.0.1:4222"), "address of the running worker's embedded NATS server, when --server is not set (MEMINDEX_LISTEN)")
	all := fl.Bool("all", false, "snapshot every partition that has a shard file")
	keep := fl.Int("keep", 2, "snapshots kept per partition; older ones are deleted")
	asJSON := fl.Bool("json", false, "print one JSON object per snapshot")
	var parts []int
	partitionFlag(fl, &parts)
	if _, err := parseArgs(fl, args); err != nil {
		return err
	}
	if !*all && len(parts) == 0 {
		fl.Usage()
		return errors.New("name --partition N or --all")
	}
	locked := false
	if release, err := lockData(*data); err == nil {
		defer release()
		locked = true
	}
	o, err := openOfflineStream(conn, *data, *listen, locked, "memindex snapshot")
	if err != nil {
		return err
	}
	defer o.close()
	count, err := streamPartitionCount(ctx, o.js)
	if err != nil {
		return err
	}
	if parts, err = partitionList(parts, *all, count); err != nil {
		return err
	}
	snaps, err := consumer.OpenSnapshots(ctx, o.js, consumer.SnapshotConfig{Keep: *keep, TempDir: snapshotTempDir(*data)})
	if err != nil {
		return err
	}
	root := filepath.Join(*data, "shards")
	dir := filepath.Join(root, readActive(root))
	taken := 0
	for _, p := range parts {
		src := shardPath(dir, p)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			if !*all {
				return fmt.Errorf("partition %d: no shard file %s (this worker does not hold it, or never did)", p, src)
			}
			continue
		}
		start := time.Now()
		ref, err := snaps.Take(ctx, p, consumer.SnapshotWriterFunc(func(ctx context.Context, path string) (store.SnapshotInfo, error) {
			return store.SnapshotFile(ctx, src, path)
		}))
		if err != nil {
			return err
		}
		taken++
		if *asJSON {
			b, _ := json.Marshal(struct {
				Type      string             `json:"type"`
				Partition int                `json:"partition"`
				Object    string             `json:"object"`
				Info      store.SnapshotInfo `json:"info"`
				Seconds   float64            `json:"seconds"`
			}{"snapshot", p, ref.Name, ref.Info, time.Since(start).Seconds()})
			fmt.Fprintln(stdout, string(b))
			continue
		}
		fmt.Fprintf(stdout, "partition %d: snapshot %s at stream sequence %d: %d chunks, %d vectors, %s, sha256 %s (%.1fs)\n",
			p, ref.Name, ref.Info.AppliedSeq, ref.Info.Chunks, ref.Info.Vectors, byteSize(ref.Info.Size), ref.Info.SHA256[:12], time.Since(start).Seconds())
	}
	if taken == 0 {
		return fmt.Errorf("no shard file under %s to snapshot", dir)
	}
	return nil
}

// byteSize formats n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
