package consumer

import (
	"context"

	"memindex/store"
)

// Shard is what ingestion needs of one partition's SQLite file;
// *store.Shard satisfies it.
type Shard interface {
	Apply(ctx context.Context, b store.Batch) (store.ApplyStats, error)
	AppliedSeq(ctx context.Context) (uint64, error)
	SessionTailSpans(ctx context.Context, reqs []store.TailRequest) ([][]store.ChunkSpan, error)
	SessionTailMessages(ctx context.Context, reqs []store.TailRequest, before int) ([]store.SessionTail, error)
	PendingVectors(ctx context.Context, limit int) ([]store.PendingChunk, error)
	SetVectors(ctx context.Context, vs []store.ChunkVector) (int, error)
	Stats(ctx context.Context) (store.Stats, error)
	Checkpoints() (runs int64, lastErr string)
	FileHash(ctx context.Context, ns, path string) (string, bool, error)
	VectorSearch(ctx context.Context, ns string, vec []float32, f store.Filter, limit int) ([]store.Candidate, error)
	Chunks(ctx context.Context, refs []store.ChunkRef) (map[string]store.ChunkRecord, error)
}
