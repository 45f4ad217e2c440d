package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"memindex/node"
	"memindex/store"
)

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

// runSnapshot is `memindex snapshot --partition N|--all`: node.Snapshot
// snapshots the named shards of the data directory to the
// MEMINDEX_SNAPSHOTS object store now, beside a running worker or on a
// stopped one; this prints each.
func runSnapshot(ctx context.Context, args []string, stdout io.Writer) error {
	fl := newFlagSet("snapshot", "--data DIR (--partition N ... | --all) [--json]")
	d := node.DefaultConfig()
	var req node.SnapshotRequest
	var conn connFlags
	conn.register(fl, "")
	fl.StringVar(&req.Data, "data", env("MEMINDEX_DATA", d.Data), "data directory of the worker (MEMINDEX_DATA)")
	fl.StringVar(&req.Listen, "listen", env("MEMINDEX_LISTEN", d.Listen), "address of the running worker's embedded NATS server, when --server is not set (MEMINDEX_LISTEN)")
	fl.BoolVar(&req.All, "all", false, "snapshot every partition that has a shard file")
	fl.IntVar(&req.Keep, "keep", 2, "snapshots kept per partition; older ones are deleted")
	asJSON := fl.Bool("json", false, "print one JSON object per snapshot")
	partitionFlag(fl, &req.Partitions)
	if _, err := parseArgs(fl, args); err != nil {
		return err
	}
	if !req.All && len(req.Partitions) == 0 {
		fl.Usage()
		return errors.New("name --partition N or --all")
	}
	req.NATS = conn.Config
	return node.Snapshot(ctx, req, func(t node.SnapshotTaken) {
		if *asJSON {
			b, _ := json.Marshal(struct {
				Type      string             `json:"type"`
				Partition int                `json:"partition"`
				Object    string             `json:"object"`
				Info      store.SnapshotInfo `json:"info"`
				Seconds   float64            `json:"seconds"`
			}{"snapshot", t.Partition, t.Object, t.Info, t.Took.Seconds()})
			fmt.Fprintln(stdout, string(b))
			return
		}
		fmt.Fprintf(stdout, "partition %d: snapshot %s at stream sequence %d: %d chunks, %d vectors, %s, sha256 %s (%.1fs)\n",
			t.Partition, t.Object, t.Info.AppliedSeq, t.Info.Chunks, t.Info.Vectors, byteSize(t.Info.Size), t.Info.SHA256[:12], t.Took.Seconds())
	})
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
