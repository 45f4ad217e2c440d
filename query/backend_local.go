package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"memindex"
	"memindex/client"
	"memindex/embedder"
	"memindex/store"
)

// Local opens the local backend of client.Open (set it as
// client.LocalConfig.Opener): an Engine over shard files opened read-only
// (store.Config.ReadOnly: it never writes a shard). Namespaces route by
// memindex.Partition over the p<N>.db files found.
type Local struct {
	// Embedder embeds queries; it must be of the vector space the shards
	// record. Nil: the built-in embedder when the shards were built with
	// it, else searches run keyword-only and say so.
	Embedder embedder.Embedder
}

var _ client.LocalOpener = Local{}

// OpenLocal opens the shard files cfg names.
func (l Local) OpenLocal(ctx context.Context, cfg client.LocalConfig) (client.Manager, error) {
	m, err := openLocal(ctx, cfg, l.Embedder)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// String names the embedder, so that client.CacheKey tells two Locals of
// different embedders apart and two of the same one alike.
func (l Local) String() string {
	if l.Embedder == nil {
		return "query.Local{}"
	}
	return fmt.Sprintf("query.Local{%T %s}", l.Embedder, spaceOf(l.Embedder.Info()))
}

// local is the local backend: an Engine over shard files opened read-only.
// Namespaces route by memindex.Partition over the p<N>.db files found (a
// single file answers every namespace). The shards are opened at Open and
// reopened by Sync; searches hold mu's read lock, so a reopen never closes
// a shard under a search.
type local struct {
	cfg   client.LocalConfig
	given embedder.Embedder // Local.Embedder
	files map[int]string    // partition -> shard file
	parts int               // partitions routed over; 0: one file takes all
	space string
	dims  int
	emb   embedder.Embedder
	// noVec says why queries are not embedded ("" when they are).
	noVec string

	mu     sync.RWMutex
	shards map[int]*store.Shard
	eng    *Engine
	closed bool
}

var _ client.Manager = (*local)(nil)

var shardFileRE = regexp.MustCompile(`^p(\d+)\.db$`)

// findShards resolves a local path to its shard files: a file is one
// shard; a directory holding shards/ is a data directory (its ACTIVE
// generation is used); otherwise the directory's p<N>.db files.
func findShards(path string) (files map[int]string, parts int, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("local backend: local.path: %w", err)
	}
	if !fi.IsDir() {
		p := 0
		if m := shardFileRE.FindStringSubmatch(filepath.Base(path)); m != nil {
			p, _ = strconv.Atoi(m[1])
		}
		return map[int]string{p: path}, 0, nil
	}
	dir := path
	if fi, err := os.Stat(filepath.Join(dir, "shards")); err == nil && fi.IsDir() {
		dir = filepath.Join(dir, "shards")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ACTIVE")); err == nil {
		if g := strings.TrimSpace(string(b)); g != "" && g != "." {
			dir = filepath.Join(dir, g)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("local backend: %w", err)
	}
	files = map[int]string{}
	for _, e := range ents {
		if m := shardFileRE.FindStringSubmatch(e.Name()); m != nil && !e.IsDir() {
			p, _ := strconv.Atoi(m[1])
			files[p] = filepath.Join(dir, e.Name())
			parts = max(parts, p+1)
		}
	}
	if len(files) == 0 {
		return nil, 0, fmt.Errorf("local backend: no shard files p<N>.db in %s: give local.path a data directory, a shards directory or a shard file", dir)
	}
	return files, parts, nil
}

func openLocal(ctx context.Context, cfg client.LocalConfig, emb embedder.Embedder) (*local, error) {
	files, parts, err := findShards(cfg.Path)
	if err != nil {
		return nil, err
	}
	l := &local{cfg: cfg, given: emb, files: files, parts: parts}
	for _, f := range files {
		sp, dims, err := store.ReadSpace(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("local backend: %w", err)
		}
		if dims == 0 {
			continue
		}
		if l.dims != 0 && (dims != l.dims || sp != l.space) {
			return nil, fmt.Errorf("local backend: %s holds vectors of %s/%d, other shards %s/%d: point local.path at one generation", f, sp, dims, l.space, l.dims)
		}
		l.space, l.dims = sp, dims
	}
	if l.dims == 0 {
		return nil, fmt.Errorf("local backend: %s: no shard records its vector dimension; was it written by `memindex serve`?", cfg.Path)
	}
	if err := l.chooseEmbedder(); err != nil {
		return nil, err
	}
	if err := l.reopen(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// chooseEmbedder picks the query embedder: the configured one, which must
// be of the shards' space; or the built-in one when the shards were built
// with it; or none (keyword-only, with the reason kept in noVec).
func (l *local) chooseEmbedder() error {
	switch {
	case l.cfg.KeywordOnly:
		l.noVec = "keyword-only by configuration (local.keywordOnly)"
	case l.given != nil:
		if sp := spaceOf(l.given.Info()); l.space != "" && sp != l.space {
			return fmt.Errorf("local backend: query.Local.Embedder is %s, the shards hold vectors of %s: give the embedder they were built with, or keywordOnly", sp, l.space)
		}
		l.emb = l.given
	case strings.HasPrefix(l.space, "builtin/"):
		b, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: l.dims})
		if err != nil {
			return fmt.Errorf("local backend: %w", err)
		}
		if sp := spaceOf(b.Info()); sp != l.space {
			l.noVec = fmt.Sprintf("the shards hold vectors of %s, this binary's built-in embedder is %s: keyword-only", l.space, sp)
			return nil
		}
		l.emb = b
	default:
		space := l.space
		if space == "" {
			space = fmt.Sprintf("an unrecorded space of %d dims", l.dims)
		}
		l.noVec = fmt.Sprintf("the shards hold vectors of %s and no query embedder for it was given: keyword-only", space)
	}
	return nil
}

// spaceOf names a vector space as `memindex serve` records it in a shard.
func spaceOf(info embedder.Info) string {
	s := info.Provider + "/" + info.Model + "/" + strconv.Itoa(info.Dims)
	if info.BaseURL != "" && info.Provider != "builtin" {
		s += "@" + info.BaseURL
	}
	return s
}

// reopen opens every shard file read-only and swaps them in, then closes
// the previous ones.
func (l *local) reopen(ctx context.Context) error {
	shards := make(map[int]*store.Shard, len(l.files))
	for p, f := range l.files {
		sh, err := store.Open(ctx, f, store.Config{Dims: l.dims, Space: l.space, NoSqliteVec: l.cfg.NoSqliteVec, ReadOnly: true})
		if err != nil {
			for _, s := range shards {
				s.Close(ctx) //nolint:errcheck // the open error says more
			}
			return fmt.Errorf("local backend: %w", err)
		}
		shards[p] = sh
	}
	l.mu.Lock()
	old := l.shards
	l.shards = shards
	l.eng = NewEngine(EngineConfig{}, RouterFunc(l.route), l.emb)
	l.mu.Unlock()
	var errs []error
	for _, s := range old {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}

// route runs under l.mu's read lock (held by the caller).
func (l *local) route(ns string) (Searcher, int, error) {
	if l.parts == 0 {
		for p, s := range l.shards {
			return s, p, nil
		}
	}
	p := memindex.Partition(ns, l.parts)
	s, ok := l.shards[p]
	if !ok {
		return nil, p, fmt.Errorf("namespace %s is in partition %d and %s has no p%d.db: %w", ns, p, l.cfg.Path, p, ErrNotOwned)
	}
	return s, p, nil
}

// engine returns the engine under the read lock; call the returned
// release when done.
func (l *local) engine() (*Engine, func(), error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, nil, fmt.Errorf("local backend closed: %w", client.ErrNoBackend)
	}
	return l.eng, l.mu.RUnlock, nil
}

func (l *local) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	e, release, err := l.engine()
	if err != nil {
		return memindex.SearchResponse{}, err
	}
	defer release()
	if l.noVec != "" && (req.Mode == "" || req.Mode == memindex.ModeHybrid) {
		req.Mode = memindex.ModeKeyword
	}
	if l.noVec != "" && req.Mode == memindex.ModeVector {
		return memindex.SearchResponse{}, fmt.Errorf("search %s: vector mode: %s: %w", req.Namespace, l.noVec, ErrUnavailable)
	}
	resp, err := e.Search(ctx, req)
	if err != nil {
		return resp, err
	}
	if l.noVec != "" {
		resp.Legs.Vector.Reason = l.noVec
		resp.Degraded = append(resp.Degraded, "vector leg not run: "+l.noVec)
	}
	resp.Backend = client.BackendLocal
	return resp, nil
}

func (l *local) Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	e, release, err := l.engine()
	if err != nil {
		return memindex.ReadResponse{}, err
	}
	defer release()
	return e.Read(ctx, req)
}

// Status reports the shards as one status, worker "local:<path>".
func (l *local) Status(ctx context.Context) ([]memindex.StatusResponse, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, fmt.Errorf("status: local backend closed: %w", client.ErrNoBackend)
	}
	st := memindex.StatusResponse{Type: "status", Version: 1, Worker: "local:" + l.cfg.Path, Ready: true, Backend: client.BackendLocal}
	if l.emb != nil {
		info := l.emb.Info()
		st.Embedder = memindex.EmbedderStatus{Provider: info.Provider, Model: info.Model, Dims: info.Dims}
	}
	ps := make([]int, 0, len(l.shards))
	for p := range l.shards {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	for _, p := range ps {
		sh := l.shards[p]
		ps := memindex.PartitionStatus{Partition: p}
		stats, err := sh.Stats(ctx)
		if err != nil {
			ps.Error = err.Error()
		} else {
			ps.AppliedSeq, ps.Messages, ps.Chunks, ps.Sessions = stats.AppliedSeq, stats.Messages, stats.Chunks, stats.Sessions
			ps.VectorsWaiting, ps.Namespaces = stats.VectorsWaiting, stats.Namespaces
		}
		ps.VectorMode, ps.VectorModeReason = sh.VectorMode()
		st.Partitions = append(st.Partitions, ps)
	}
	return []memindex.StatusResponse{st}, nil
}

// Sync reopens the shard files: a read-only shard loads its vectors at
// open, so this is how writes made since are seen.
func (l *local) Sync(ctx context.Context, _ client.SyncRequest) error {
	if err := l.reopen(ctx); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

func (l *local) ProbeEmbeddings(ctx context.Context) error {
	if l.emb == nil {
		return fmt.Errorf("probe embeddings: %s: %w", l.noVec, ErrUnavailable)
	}
	if _, err := l.emb.Embed(ctx, embedder.Request{Texts: []string{"probe"}, Kind: embedder.KindQuery}); err != nil {
		return fmt.Errorf("probe embeddings: %w", err)
	}
	return nil
}

func (l *local) ProbeVectors(context.Context) error {
	if l.emb == nil {
		return fmt.Errorf("probe vectors: %s: %w", l.noVec, ErrUnavailable)
	}
	return nil
}

func (l *local) Close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for _, s := range l.shards {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}
