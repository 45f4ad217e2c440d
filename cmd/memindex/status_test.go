package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStatusShowsTheCluster runs `memindex status` against two workers on
// one NATS server, holding partitions 0 and 1 of 3: the cluster view names
// each partition's owner and partition 2 as held by nobody.
func TestStatusShowsTheCluster(t *testing.T) {
	c1 := testServeConfig(t.TempDir())
	c1.PartitionCount, c1.Partitions, c1.Worker = 3, "0", "w1"
	n1, _ := runTestNode(t, c1, nil)
	c2 := testServeConfig(t.TempDir())
	c2.PartitionCount, c2.Partitions, c2.Worker = 3, "1", "w2"
	c2.NATS.Server = n1.URL()
	runTestNode(t, c2, nil)

	var out string
	waitUntil(t, 20*time.Second, "both workers in status's cluster view", func() bool {
		var b bytes.Buffer
		err := runStatus(context.Background(), []string{"--server", n1.URL(), "--wait", "300ms"}, &b)
		out = b.String()
		return err == nil && strings.Contains(out, "cluster: 3 partitions, 2 workers")
	})
	_, cluster, _ := strings.Cut(out, "cluster: 3 partitions, 2 workers")
	rows := map[string][]string{}
	for _, line := range strings.Split(cluster, "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			rows[f[0]] = f[1:]
		}
	}
	for p, want := range map[string][]string{
		"0": {"w1"},
		"1": {"w2"},
		"2": {"NONE", "(no", "worker", "holds", "it:"},
	} {
		if got := rows[p]; len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Errorf("cluster row of partition %s = %q, want it to start %q:\n%s", p, got, want, out)
		}
	}
}

// TestStatusShowsMemory: `memindex status` prints the worker's memory and
// the bounds its --memory-limit sets.
func TestStatusShowsMemory(t *testing.T) {
	prev := debug.SetMemoryLimit(-1) // the worker sets the process's Go limit
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	prevGC := debug.SetGCPercent(100) // status shows the collector's GOGC
	t.Cleanup(func() { debug.SetGCPercent(prevGC) })
	c := testServeConfig(t.TempDir())
	c.MemoryLimit = 512 << 20
	n, _ := runTestNode(t, c, nil)
	var out string
	waitUntil(t, 20*time.Second, "the worker to answer status", func() bool {
		var b bytes.Buffer
		err := runStatus(context.Background(), []string{"--server", n.URL(), "--wait", "300ms"}, &b)
		out = b.String()
		return err == nil
	})
	t.Log(out)
	for _, want := range []string{"memory: RSS ", " of a 512 MiB limit; Go heap ", ", GOGC 100)", "SQLite caches up to ", "pull buffers up to ", "batches up to "} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
}
