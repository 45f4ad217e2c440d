package query

import (
	"context"

	"memindex/store"
)

// Searcher is what one shard offers a search; *store.Shard satisfies it.
// Candidates come best first with 1-based ranks and scores in [0,1].
type Searcher interface {
	// KeywordSearch runs a BM25 full-text search of text within namespace ns.
	KeywordSearch(ctx context.Context, ns, text string, f store.Filter, limit int) ([]store.Candidate, error)
	// VectorSearch returns the nearest chunks of namespace ns to vec.
	VectorSearch(ctx context.Context, ns string, vec []float32, f store.Filter, limit int) ([]store.Candidate, error)
	// Chunks returns the stored chunks of refs (a candidate's id and rowid:
	// Candidate.Ref) by id; a chunk no longer stored is absent.
	Chunks(ctx context.Context, refs []store.ChunkRef) (map[string]store.ChunkRecord, error)
	// AppliedSeq returns the last stream sequence the shard has applied.
	AppliedSeq(ctx context.Context) (uint64, error)
}

// Router finds the shard that owns a namespace.
type Router interface {
	// Route returns the Searcher of the shard that owns ns and its partition,
	// or an error wrapping ErrNotOwned or ErrNotReady.
	Route(ns string) (s Searcher, partition int, err error)
}

// RouterFunc adapts a function to Router.
type RouterFunc func(ns string) (Searcher, int, error)

// Route calls f(ns).
func (f RouterFunc) Route(ns string) (Searcher, int, error) { return f(ns) }
