package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc"

	"memindex/consumer"
	"memindex/store"
)

// Conformance of the shard to the snapshot seams.
var _ consumer.Snapshotter = (*store.Shard)(nil)

// snapshotTempDir is where snapshots are written before their upload: on
// the shards' file system, which has room for a shard.
func snapshotTempDir(data string) string { return filepath.Join(data, "snapshots.tmp") }

// startSnapshots starts the periodic snapshot loop of serve when
// --snapshot-interval is positive: every interval, each partition this
// worker owns (static owner, or holder of the owner lease in a group) whose
// shard moved is snapshotted to the MEMINDEX_SNAPSHOTS object store. The
// loop ends, and is waited for, before the shards close.
func (n *Node) startSnapshots(ctx context.Context) error {
	interval := n.cfg.SnapshotInterval
	if interval <= 0 {
		return nil
	}
	snaps, err := consumer.OpenSnapshots(ctx, n.js, consumer.SnapshotConfig{TempDir: snapshotTempDir(n.cfg.Data), Logger: n.log})
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
func (n *Node) snapshotShards() map[int]consumer.Snapshotter {
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
func (n *Node) ownsSnapshot(p int) bool {
	if l := n.own.leaser.Load(); l != nil {
		return l.Owns(p)
	}
	return p >= 0 && p < len(n.own.owner) && n.own.owner[p].Load()
}

// restoreFromSnapshot puts partition p's newest snapshot at path before a
// gained partition opens, when there is no shard file yet: the worker then
// replays only the events after the snapshot. No bucket or no snapshot
// leaves the rebuild to the stream.
func (n *Node) restoreFromSnapshot(ctx context.Context, p int, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if _, err := n.js.ObjectStore(ctx, consumer.SnapshotBucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	n.genMu.RLock()
	space := n.newest().space
	n.genMu.RUnlock()
	snaps, err := consumer.OpenSnapshots(ctx, n.js, consumer.SnapshotConfig{TempDir: snapshotTempDir(n.cfg.Data), Logger: n.log})
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
