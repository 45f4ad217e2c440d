package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/consumer"
	"memindex/internal/natsconn"
	"memindex/store"
)

// OfflineConfig is where an offline command (Snapshot, Rebuild) finds a
// worker's data and stream.
type OfflineConfig struct {
	// NATS is the worker's server; with neither Server nor Context set, the
	// data directory's embedded server: started here from Data/nats when
	// the worker is stopped, or reached at Listen when it runs.
	NATS natsconn.Config
	// Data is the worker's data directory.
	Data string
	// Listen is the running worker's embedded server address.
	Listen string
}

// offlineStream is a JetStream connection for an offline command.
type offlineStream struct {
	nc         *nats.Conn
	js         jetstream.JetStream
	partitions int // P of the event stream
	closers    []func()
}

func (o *offlineStream) close() {
	for i := len(o.closers) - 1; i >= 0; i-- {
		o.closers[i]()
	}
}

// openOfflineStream connects as OfflineConfig says and reads the stream's
// partition count; locked says this process holds the data lock (the
// worker is stopped).
func openOfflineStream(ctx context.Context, c OfflineConfig, locked bool, name string) (_ *offlineStream, err error) {
	o := &offlineStream{}
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	conn := c.NATS
	if conn.Server == "" && conn.Context == "" {
		if locked {
			if _, err := os.Stat(filepath.Join(c.Data, AuthDir)); err == nil {
				return nil, fmt.Errorf("the embedded server of %s requires authentication: start it with `memindex serve --auth` and pass --server and --nkey", c.Data)
			}
			s, err := StartEmbedded("127.0.0.1:-1", filepath.Join(c.Data, "nats"))
			if err != nil {
				return nil, err
			}
			o.closers = append(o.closers, func() { s.Shutdown(); s.WaitForShutdown() })
			conn.Server = s.ClientURL()
		} else {
			conn.Server = "nats://" + c.Listen
		}
	}
	if o.nc, err = conn.Connect(name); err != nil {
		return nil, err
	}
	o.closers = append(o.closers, o.nc.Close)
	if o.js, err = jetstream.New(o.nc); err != nil {
		return nil, err
	}
	if o.partitions, err = streamPartitionCount(ctx, o.js); err != nil {
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

// partitionList turns the named partitions, or all, into the partitions
// to work on, each checked against P.
func partitionList(parts []int, all bool, count int) ([]int, error) {
	parts = append([]int(nil), parts...)
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

// SnapshotRequest names the shards Snapshot takes.
type SnapshotRequest struct {
	OfflineConfig
	// Partitions are the partitions to snapshot; All takes every one with
	// a shard file instead.
	Partitions []int
	All        bool
	// Keep is the snapshots kept per partition; older ones are deleted (0:
	// consumer's default).
	Keep int
}

// SnapshotTaken is one snapshot Snapshot took.
type SnapshotTaken struct {
	Partition int
	Object    string
	Info      store.SnapshotInfo
	Took      time.Duration
}

// Snapshot snapshots the named shards of the data directory to the
// MEMINDEX_SNAPSHOTS object store now, calling taken after each. It works
// beside a running worker (a snapshot is one more reader of the shard
// file) and on a stopped one.
func Snapshot(ctx context.Context, req SnapshotRequest, taken func(SnapshotTaken)) error {
	if !req.All && len(req.Partitions) == 0 {
		return errors.New("name --partition N or --all")
	}
	locked := false
	if release, err := LockData(req.Data); err == nil {
		defer release()
		locked = true
	}
	o, err := openOfflineStream(ctx, req.OfflineConfig, locked, "memindex snapshot")
	if err != nil {
		return err
	}
	defer o.close()
	parts, err := partitionList(req.Partitions, req.All, o.partitions)
	if err != nil {
		return err
	}
	snaps, err := consumer.OpenSnapshots(ctx, o.js, consumer.SnapshotConfig{Keep: req.Keep, TempDir: snapshotTempDir(req.Data)})
	if err != nil {
		return err
	}
	dir := activeShardDir(req.Data)
	n := 0
	for _, p := range parts {
		src := ShardPath(dir, p)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			if !req.All {
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
		n++
		if taken != nil {
			taken(SnapshotTaken{Partition: p, Object: ref.Name, Info: ref.Info, Took: time.Since(start)})
		}
	}
	if n == 0 {
		return fmt.Errorf("no shard file under %s to snapshot", dir)
	}
	return nil
}

// activeShardDir is the serving generation's shard directory under data.
func activeShardDir(data string) string {
	root := filepath.Join(data, "shards")
	return filepath.Join(root, readActive(root))
}
