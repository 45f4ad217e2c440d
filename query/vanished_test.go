package query

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"memindex"
	"memindex/store"
)

// replacedBetween is a real shard that commits batch the first time a
// search loads its chunks: after the legs ran, before the hits load, as a
// memory file's new version can land.
type replacedBetween struct {
	*store.Shard
	batch *store.Batch
}

func (r *replacedBetween) Chunks(ctx context.Context, refs []store.ChunkRef) (map[string]store.ChunkRecord, error) {
	if b := r.batch; b != nil {
		r.batch = nil
		if _, err := r.Apply(ctx, *b); err != nil {
			return nil, err
		}
	}
	return r.Shard.Chunks(ctx, refs)
}

// TestFileReplacedDuringASearchIsFound: a memory file whose new version
// commits between the legs and the load of the hits is found in its new
// version, not lost (the legs are asked again when candidates vanished).
func TestFileReplacedDuringASearchIsFound(t *testing.T) {
	ctx := context.Background()
	sh := planShard(t)
	if _, err := sh.Apply(ctx, version(1, "h1", "c-old", "The capybara plan, first draft.")); err != nil {
		t.Fatal(err)
	}
	next := version(2, "h2", "c-new", "The capybara plan, second draft.")
	r := &replacedBetween{Shard: sh, batch: &next}
	e := NewEngine(EngineConfig{}, routeTo(r), nil)
	resp, err := e.Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "capybara", Mode: memindex.ModeKeyword})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(resp.Hits); !slices.Equal(got, []string{"c-new"}) {
		t.Fatalf("hits %v while plan.md was replaced, want its new version c-new", got)
	}
}

// indexLagging is a real shard whose keyword leg answers from before the
// last commit (the candidates of the memory file's old version) until
// WaitIndexed is called, as the keyword index does between a commit and
// its update.
type indexLagging struct {
	*store.Shard
	stale  []store.Candidate
	waited int
}

func (l *indexLagging) KeywordSearch(ctx context.Context, ns, text string, f store.Filter, limit int) ([]store.Candidate, error) {
	if l.waited == 0 {
		return l.stale, nil
	}
	return l.Shard.KeywordSearch(ctx, ns, text, f, limit)
}

func (l *indexLagging) WaitIndexed() {
	l.waited++
	l.Shard.WaitIndexed()
}

// TestSearchWaitsForTheIndexesBeforeAskingAgain: a search whose keyword
// leg named chunks a commit removed, before the index followed it, waits
// for the indexes before it asks its legs again, and finds the new
// version; asking again at once would find the same stale candidates on
// every try.
func TestSearchWaitsForTheIndexesBeforeAskingAgain(t *testing.T) {
	ctx := context.Background()
	sh := planShard(t)
	if _, err := sh.Apply(ctx, version(1, "h1", "c-old", "The capybara plan, first draft.")); err != nil {
		t.Fatal(err)
	}
	stale, err := sh.KeywordSearch(ctx, "agent-7", "capybara", store.Filter{}, 10)
	if err != nil || len(stale) != 1 {
		t.Fatalf("KeywordSearch() = %v, %v, want the old version", stale, err)
	}
	if _, err := sh.Apply(ctx, version(2, "h2", "c-new", "The capybara plan, second draft.")); err != nil {
		t.Fatal(err)
	}
	l := &indexLagging{Shard: sh, stale: stale}
	resp, err := NewEngine(EngineConfig{}, routeTo(l), nil).Search(ctx, memindex.SearchRequest{Namespace: "agent-7", Query: "capybara", Mode: memindex.ModeKeyword})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(resp.Hits); !slices.Equal(got, []string{"c-new"}) || l.waited != 1 {
		t.Fatalf("hits %v after %d waits for the indexes, want the new version c-new after one", got, l.waited)
	}
}

// planShard opens a shard for the memory file plan.md of agent-7.
func planShard(t *testing.T) *store.Shard {
	t.Helper()
	sh, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "p0.db"), store.Config{Dims: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close(context.Background()) })
	return sh
}

// version is a batch that stores text as version hash of plan.md, one
// chunk of id.
func version(seq uint64, hash, id, text string) store.Batch {
	return store.Batch{Seq: seq, Files: []store.FileUpsert{{Namespace: "agent-7", Path: "plan.md", Hash: hash, Content: text,
		Chunks: []store.Chunk{{ID: id, Namespace: "agent-7", Source: memindex.SourceFiles, Path: "plan.md", SeqStart: 1, SeqEnd: 1, Text: text}}}}}
}
