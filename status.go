package memindex

import (
	"fmt"
	"strconv"
	"strings"
)

// StatusResponse is one worker's answer on StatusSubject.
type StatusResponse struct {
	Type       string            `json:"type"` // "status"
	Version    int               `json:"version"`
	Worker     string            `json:"worker"`
	Ready      bool              `json:"ready"`
	Embedder   EmbedderStatus    `json:"embedder"`
	Partitions []PartitionStatus `json:"partitions"`
	DLQ        uint64            `json:"dlq"`
	// Switch reports a change of embedder in progress (nil when none): the
	// old vectors serve while the new ones are built from the stream.
	Switch *SwitchStatus `json:"switch,omitempty"`
	// Backend names the client backend that gave this status ("remote",
	// "local", "qmd"), set by the client (client.Manager), not by a worker.
	Backend string `json:"backend,omitempty"`
	// Fallback, when set, says that a fallback backend answered and why
	// the primary did not (see SearchResponse.Fallback).
	Fallback *FallbackInfo `json:"fallback,omitempty"`
	// Ownership: the stream's partition count P, the dynamic group this
	// worker belongs to ("" for a static owned set), the holders wanted per
	// partition and the group's size as this worker last saw it.
	PartitionCount int    `json:"partitionCount,omitempty"`
	Group          string `json:"group,omitempty"`
	Replicas       int    `json:"replicas,omitempty"`
	GroupMembers   int    `json:"groupMembers,omitempty"`
	// Memory is the worker's memory: its bound and what holds it (nil from
	// clients' backends).
	Memory *MemoryStatus `json:"memory,omitempty"`
}

// MemoryStatus is a worker's memory. LimitBytes is its --memory-limit (0:
// none); from it the worker derives the Go heap's soft limit
// (GoLimitBytes, debug.SetMemoryLimit) and the SQLite page caches of every
// shard it holds, at most SQLiteCacheBytes together, and the pull buffers
// of the partitions it holds (at most PullBufferBytes together: events
// received ahead of the batch being collected, in the Go heap), and the
// event payload its batches hold while collected, prepared or committed
// (at most InflightBytes together; 0: no bound). HeapBytes is the Go
// heap in use, of which the shards' keyword and vector indexes
// (IndexBytes, estimated); RSSBytes the process's resident memory (0 where
// it cannot be read); GCPercent the collector's GOGC (-1: off).
type MemoryStatus struct {
	LimitBytes       int64 `json:"limitBytes"`
	GoLimitBytes     int64 `json:"goLimitBytes"`
	SQLiteCacheBytes int64 `json:"sqliteCacheBytes"`
	PullBufferBytes  int64 `json:"pullBufferBytes"`
	InflightBytes    int64 `json:"inflightBytes"`
	HeapBytes        int64 `json:"heapBytes"`
	IndexBytes       int64 `json:"indexBytes"`
	RSSBytes         int64 `json:"rssBytes"`
	GCPercent        int64 `json:"gcPercent"`
}

// SwitchStatus describes a switch from one vector space (provider/model/
// dims) to another.
type SwitchStatus struct {
	From       string  `json:"from"`
	To         string  `json:"to"`
	Partitions int     `json:"partitions"`
	Switched   int     `json:"switched"` // partitions already served by the new vectors
	Progress   float64 `json:"progress"` // share of the stream the new shards have applied
}

// EmbedderStatus describes the worker's embedder and its cache.
type EmbedderStatus struct {
	Provider    string `json:"provider"`
	Model       string `json:"model"`
	Dims        int    `json:"dims"`
	CacheHits   uint64 `json:"cacheHits"`
	CacheMisses uint64 `json:"cacheMisses"`
	// CacheEntries, CacheBytes and CacheMaxBytes describe the embedding
	// cache file (MaxBytes 0: unbounded); CacheEvictions counts since start.
	CacheEntries   int64  `json:"cacheEntries"`
	CacheBytes     int64  `json:"cacheBytes"`
	CacheMaxBytes  int64  `json:"cacheMaxBytes"`
	CacheEvictions uint64 `json:"cacheEvictions"`
	// Breaker is the provider's circuit breaker: closed, open or half-open
	// ("" for the built-in embedder, which has none); BreakerOpenUntil is
	// when an open breaker lets a probe through.
	Breaker          string `json:"breaker,omitempty"`
	BreakerOpenUntil string `json:"breakerOpenUntil,omitempty"`
	BreakerOpens     uint64 `json:"breakerOpens,omitempty"`
}

// PartitionStatus describes one partition the worker owns.
type PartitionStatus struct {
	Partition      int    `json:"partition"`
	AppliedSeq     uint64 `json:"appliedSeq"`
	Pending        uint64 `json:"pending"`    // events in the stream not yet delivered
	AckPending     int    `json:"ackPending"` // delivered, not yet acknowledged
	Messages       int64  `json:"messages"`
	Chunks         int64  `json:"chunks"`
	Sessions       int64  `json:"sessions"`
	VectorsWaiting int64  `json:"vectorsWaiting"`
	// OldestWaitSeconds is how long the chunk waiting longest for a vector
	// has waited (0 when none waits).
	OldestWaitSeconds float64 `json:"oldestWaitSeconds"`
	// KeywordIndex says what ranks keyword searches: "memory" (the shard's
	// keyword index) or "fts5: " and why (loading at start, or dropped).
	// KeywordIndexBytes and VectorIndexBytes estimate the heap of the
	// shard's two in-memory indexes.
	KeywordIndex      string `json:"keywordIndex,omitempty"`
	KeywordIndexBytes int64  `json:"keywordIndexBytes,omitempty"`
	VectorIndexBytes  int64  `json:"vectorIndexBytes,omitempty"`
	// Checkpoints counts the WAL checkpoints run in the background since
	// the shard opened; CheckpointError is the last one's error.
	Checkpoints     int64  `json:"checkpoints,omitempty"`
	CheckpointError string `json:"checkpointError,omitempty"`
	// PageBytes is the SQLite page size of the shard file: 16,384 for a
	// file this version created, 4,096 for one created before (SQLite
	// fixes it when the file is created; a 4 KiB shard writes four times
	// the WAL frames a batch).
	PageBytes int `json:"pageBytes,omitempty"`
	// CommitWaiting says the partition's next batch is ready and waits for
	// one of the worker's commit slots (--commit-concurrency): more
	// partitions have batches to commit than the worker commits at once.
	CommitWaiting bool `json:"commitWaiting,omitempty"`
	// InflightWaiting says the partition's next batch waits for the
	// worker's other batches to give back event payload under its bound
	// (memory.inflightBytes, set by --memory-limit).
	InflightWaiting bool `json:"inflightWaiting,omitempty"`
	// Commits counts the batches the worker committed to the partition
	// since it took it: the events it applied over Commits is the mean
	// batch, which is what a commit's cost a message follows.
	Commits    uint64 `json:"commits,omitempty"`
	Namespaces int64  `json:"namespaces"`
	DLQ        uint64 `json:"dlq"`
	// RecordsMerged counts memory record upserts since start that updated a
	// near-duplicate record instead of adding one.
	RecordsMerged uint64 `json:"recordsMerged"`
	Error         string `json:"error,omitempty"`
	// VectorMode is how the shard keeps its vectors: VectorModeSqliteVec, or
	// VectorModeGoScan when sqlite-vec is missing, disabled or failing, with
	// VectorModeReason saying which. Vector search answers in both.
	VectorMode       string `json:"vectorMode,omitempty"`
	VectorModeReason string `json:"vectorModeReason,omitempty"`
	// Role is this worker's part in the partition: RoleOwner (the lease
	// holder of a dynamic group's slot 0, or a static owner), or
	// RoleReplica (a read copy). State is StateCatchingUp until the shard
	// has caught up with the stream, then StateReady: only a ready holder
	// answers the partition's searches.
	Role  string `json:"role,omitempty"`
	State string `json:"state,omitempty"`
	// LeaseValidSeconds is how long this worker's lease of the partition
	// stays valid without a renewal (dynamic groups only); LeaseRevision is
	// the lease key's revision in the group's bucket.
	LeaseValidSeconds float64 `json:"leaseValidSeconds,omitempty"`
	LeaseRevision     uint64  `json:"leaseRevision,omitempty"`
}

// Partition roles and states (PartitionStatus.Role, PartitionStatus.State).
const (
	RoleOwner       = "owner"
	RoleReplica     = "replica"
	StateCatchingUp = "catching up"
	StateReady      = "ready"
)

// Vector modes of a partition's shard (PartitionStatus.VectorMode).
const (
	VectorModeSqliteVec = "sqlite-vec"
	VectorModeGoScan    = "go-scan"
)

// Total sums the counts of every partition (OldestWaitSeconds is the
// largest; Partition is -1).
func (s StatusResponse) Total() PartitionStatus {
	t := PartitionStatus{Partition: -1}
	for _, p := range s.Partitions {
		t.Pending += p.Pending
		t.AckPending += p.AckPending
		t.Messages += p.Messages
		t.Chunks += p.Chunks
		t.Sessions += p.Sessions
		t.VectorsWaiting += p.VectorsWaiting
		t.OldestWaitSeconds = max(t.OldestWaitSeconds, p.OldestWaitSeconds)
		t.Namespaces += p.Namespaces
		t.DLQ += p.DLQ
		t.RecordsMerged += p.RecordsMerged
	}
	return t
}

// VectorFallback words the partitions whose shards keep their vectors
// without sqlite-vec, grouped by reason, e.g. "go-scan fallback: sqlite-vec
// disabled by configuration (partitions 0, 3)"; "" when there are none.
func (s StatusResponse) VectorFallback() string {
	byReason := map[string][]string{}
	var reasons []string
	for _, p := range s.Partitions {
		if p.VectorMode != VectorModeGoScan {
			continue
		}
		if _, ok := byReason[p.VectorModeReason]; !ok {
			reasons = append(reasons, p.VectorModeReason)
		}
		byReason[p.VectorModeReason] = append(byReason[p.VectorModeReason], strconv.Itoa(p.Partition))
	}
	out := make([]string, 0, len(reasons))
	for _, r := range reasons {
		ps := byReason[r]
		noun := "partition"
		if len(ps) > 1 {
			noun = "partitions"
		}
		out = append(out, fmt.Sprintf("go-scan fallback: %s (%s %s)", r, noun, strings.Join(ps, ", ")))
	}
	return strings.Join(out, "; ")
}
