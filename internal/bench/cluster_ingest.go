package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/internal/harness"
	"memindex/store"
)

// Ingest runs of the cluster suite (cluster.go): live and from a backlog.

// Ingest modes of the cluster suite.
const (
	IngestLive    = "live"
	IngestBacklog = "backlog"
)

// ClusterIngestFigure is one run of a number of workers ingesting the
// corpus.
type ClusterIngestFigure struct {
	Mode    string `json:"mode"` // live or backlog
	Workers int    `json:"workers"`
	Round   int    `json:"round"`
	// Partitions are each worker's static set, in --partitions syntax.
	Partitions []string `json:"partitions"`
	Messages   int      `json:"messages"`
	Chunks     int64    `json:"chunks"`
	// Seconds is, live, from the first publish to the last commit;
	// backlog, from the workers' start of fetching to the last commit.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"messagesPerSecond"`
	// PublishSeconds is how long the publisher took until the stream had
	// acknowledged every message: live, while the workers consumed; backlog,
	// alone, before any worker started.
	PublishSeconds float64 `json:"publishSeconds"`
	// PublishCPUMicrosPerMessage (backlog) is the process's CPU time per
	// message while the corpus was published alone: publisher and server.
	PublishCPUMicrosPerMessage float64 `json:"publishCpuMicrosPerMessage,omitempty"`
	// CPUSeconds is the process's user+system time over Seconds: every
	// worker, the NATS server and (live) the publisher.
	CPUSeconds          float64 `json:"cpuSeconds"`
	CPUMicrosPerMessage float64 `json:"cpuMicrosPerMessage"`
	// FaultsPerMessage is the process's minor page faults over Seconds, a
	// message: first touches of memory, which a paravirtualised box makes
	// dear (about 10 µs each on this project's, BENCHMARKS.md).
	FaultsPerMessage float64 `json:"pageFaultsPerMessage,omitempty"`
	// CoresBusy is CPUSeconds / Seconds: 2 means both cores of this box.
	CoresBusy         float64   `json:"coresBusy"`
	MessagesPerWorker []int64   `json:"messagesPerWorker"`
	Load1             []float64 `json:"load1"` // the machine's 1-minute load average before and after
}

// IngestLive starts the workers, then publishes lines at full speed and
// times them until every partition's shard has applied the last stream
// sequence of its events.
func (c *benchCluster) IngestLive(ctx context.Context, sets []string, lines [][]byte) (ClusterIngestFigure, error) {
	if err := c.startWorkers(ctx, sets, "", 0); err != nil {
		return ClusterIngestFigure{}, err
	}
	if err := c.waitBound(ctx); err != nil {
		return ClusterIngestFigure{}, err
	}
	shards, err := c.shards()
	if err != nil {
		return ClusterIngestFigure{}, err
	}
	messages := countMessages(lines)
	msgs, parts, err := c.corpusMsgs(lines)
	if err != nil {
		return ClusterIngestFigure{}, err
	}
	load0, u0 := loadAverage(), processUsage()
	start := time.Now()
	last, err := c.publish(ctx, msgs, parts)
	if err != nil {
		return ClusterIngestFigure{}, err
	}
	published := time.Since(start).Seconds()
	if err := waitApplied(ctx, shards, last); err != nil {
		return ClusterIngestFigure{}, err
	}
	el, u := time.Since(start).Seconds(), processUsage().since(u0)
	fig := ClusterIngestFigure{Mode: IngestLive, PublishSeconds: published,
		FaultsPerMessage: float64(u.faults) / float64(messages)}
	err = c.tally(ctx, &fig, sets, messages, el, u.cpu.Seconds(), load0)
	return fig, err
}

// IngestBacklog publishes lines with no worker running, then starts the
// workers and times them, from the moment they all start fetching, until
// every partition's shard has applied the last stream sequence of its
// events.
func (c *benchCluster) IngestBacklog(ctx context.Context, sets []string, lines [][]byte) (ClusterIngestFigure, error) {
	messages := countMessages(lines)
	msgs, parts, err := c.corpusMsgs(lines)
	if err != nil {
		return ClusterIngestFigure{}, err
	}
	u0 := processUsage()
	start := time.Now()
	last, err := c.publish(ctx, msgs, parts)
	if err != nil {
		return ClusterIngestFigure{}, err
	}
	fig := ClusterIngestFigure{Mode: IngestBacklog, PublishSeconds: time.Since(start).Seconds(),
		PublishCPUMicrosPerMessage: processUsage().since(u0).cpu.Seconds() * 1e6 / float64(messages)}
	if err := c.startNodes(ctx, sets, "", 0); err != nil {
		return fig, err
	}
	shards, err := c.shards()
	if err != nil {
		return fig, err
	}
	load0, u0 := loadAverage(), processUsage()
	start = time.Now()
	c.runNodes(ctx)
	if err := waitApplied(ctx, shards, last); err != nil {
		return fig, err
	}
	el, u := time.Since(start).Seconds(), processUsage().since(u0)
	fig.FaultsPerMessage = float64(u.faults) / float64(messages)
	err = c.tally(ctx, &fig, sets, messages, el, u.cpu.Seconds(), load0)
	return fig, err
}

// corpusMsgs turns lines into event messages (new ones for every publish:
// publishing sets their headers) and each one's partition.
func (c *benchCluster) corpusMsgs(lines [][]byte) ([]*nats.Msg, []int, error) {
	msgs := make([]*nats.Msg, len(lines))
	parts := make([]int, len(lines))
	for i, l := range lines {
		m, err := c.hooks.EventMsg(l, "")
		if err != nil {
			return nil, nil, err
		}
		msgs[i] = m
		parts[i] = harness.PartitionOfSubject(m.Subject, memindex.DefaultPartitions)
	}
	return msgs, parts, nil
}

// publish publishes msgs at full speed (harness.Publish) and returns each
// partition's last stream sequence.
func (c *benchCluster) publish(ctx context.Context, msgs []*nats.Msg, parts []int) (map[int]uint64, error) {
	return harness.Publish(ctx, c.js, msgs, parts)
}

// shards returns each partition's shard; every partition has one holder.
func (c *benchCluster) shards() (map[int]*store.Shard, error) {
	out := map[int]*store.Shard{}
	for _, n := range c.nodes {
		for p, sh := range n.Shards() {
			if _, dup := out[p]; dup {
				return nil, fmt.Errorf("partition %d is held by two workers", p)
			}
			out[p] = sh
		}
	}
	if len(out) != memindex.DefaultPartitions {
		return nil, fmt.Errorf("the workers hold %d partitions, want all %d", len(out), memindex.DefaultPartitions)
	}
	return out, nil
}

// waitApplied polls the partitions still behind until each one's shard
// has applied the sequence last gives it; two minutes without progress is
// an error naming them, not a hung bench.
func waitApplied(ctx context.Context, shards map[int]*store.Shard, last map[int]uint64) error {
	last = maps.Clone(last)
	progress := time.Now()
	return pollUntil(ctx, 24*time.Hour, "ingest", func() (bool, error) {
		for p, seq := range last {
			applied, err := shards[p].AppliedSeq(ctx)
			if err != nil {
				return false, err
			}
			if applied >= seq {
				delete(last, p)
				progress = time.Now()
			}
		}
		if len(last) > 0 && time.Since(progress) > 2*time.Minute {
			return false, fmt.Errorf("partitions %v applied nothing new for 2 minutes", slices.Sorted(maps.Keys(last)))
		}
		return len(last) == 0, nil
	})
}

// tally fills fig with the run's figures and the shards' counts, and
// checks that the shards hold every message.
func (c *benchCluster) tally(ctx context.Context, fig *ClusterIngestFigure, sets []string, messages int, el, cpu, load0 float64) error {
	fig.Workers, fig.Partitions, fig.Messages = len(c.nodes), sets, messages
	fig.Seconds, fig.PerSecond = el, float64(messages)/el
	fig.CPUSeconds, fig.CPUMicrosPerMessage, fig.CoresBusy = cpu, cpu*1e6/float64(messages), cpu/el
	fig.Load1 = []float64{load0, loadAverage()}
	var applied int64
	for _, n := range c.nodes {
		t := harness.Count(ctx, n)
		fig.MessagesPerWorker = append(fig.MessagesPerWorker, t.Messages)
		fig.Chunks += t.Chunks
		applied += t.Messages
	}
	if applied != int64(messages) {
		return fmt.Errorf("the shards hold %d messages after every partition applied its last event, want %d", applied, messages)
	}
	return nil
}

// usage is what the process has spent so far: user+system CPU time (all
// threads) and minor page faults.
type usage struct {
	cpu    time.Duration
	faults int64
}

// processUsage reads the process's usage (one getrusage).
func processUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), faults: ru.Minflt}
}

// since is u less an earlier reading u0.
func (u usage) since(u0 usage) usage { return usage{cpu: u.cpu - u0.cpu, faults: u.faults - u0.faults} }

// loadAverage is the machine's 1-minute load average (0 when unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}
