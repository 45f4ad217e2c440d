package watch_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/internal/natstest"
	"memindex/node"
	"memindex/watch"
)

// ns is the namespace every test publishes to.
const ns = "proj"

// doneWithin is issue 15's bar: a change is searchable (or gone) within it.
const doneWithin = 2 * time.Second

// world is a real worker (embedded NATS + JetStream, SQLite shards in a
// temporary directory, the built-in embedder), a client on its own
// connection, and a memory folder with a state file beside it.
type world struct {
	t     *testing.T
	n     *node.Node
	nc    *nats.Conn
	c     *client.Client
	js    jetstream.JetStream
	dir   string
	state string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.Listen, cfg.Data, cfg.PartitionCount, cfg.Worker = "127.0.0.1:-1", t.TempDir(), 2, "test"
	cfg.Embedder.Dims, cfg.Batch, cfg.EmbedConcurrency, cfg.SearchPending = 384, 500, 2, 64
	cfg.HTTP, cfg.SnapshotInterval, cfg.CacheMaxBytes, cfg.ReadyLag = "off", 0, 0, 0
	n, err := node.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("node.Open: %v", err)
	}
	stop := n.Start(context.Background())
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("node Run: %v", err)
		}
	})
	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	w := &world{t: t, n: n, nc: nc, c: client.NewClient(nc), js: js, dir: filepath.Join(base, "memory"), state: filepath.Join(base, "state.json")}
	if err := os.Mkdir(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// write writes content to the folder's rel, making its directories.
func (w *world) write(rel, content string) {
	w.t.Helper()
	p := filepath.Join(w.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// path is rel's file system path.
func (w *world) path(rel string) string { return filepath.Join(w.dir, filepath.FromSlash(rel)) }

// config is a watch.Config of the folder.
func (w *world) config() watch.Config {
	return watch.Config{Dir: w.dir, Namespace: ns, StateFile: w.state}
}

// running is a watch.Run in progress.
type running struct {
	t       *testing.T
	cancel  context.CancelFunc
	done    chan struct{}
	sum     watch.Summary
	err     error
	synced  chan watch.Summary
	mu      sync.Mutex
	changes []watch.Change
	probs   []string
}

// start runs watch.Run with cfg (hooks added) until stop, and waits for
// its start sync.
func (w *world) start(cfg watch.Config) *running {
	w.t.Helper()
	r := w.launch(cfg)
	select {
	case <-r.synced:
	case <-r.done:
		w.t.Fatalf("watch.Run ended before its start sync: %v", r.err)
	case <-time.After(20 * time.Second):
		w.t.Fatal("no start sync within 20s")
	}
	return r
}

// launch runs watch.Run with cfg (hooks added) in its own goroutine.
func (w *world) launch(cfg watch.Config) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: w.t, cancel: cancel, done: make(chan struct{}), synced: make(chan watch.Summary, 1)}
	cfg.OnChange = func(c watch.Change) {
		r.mu.Lock()
		r.changes = append(r.changes, c)
		r.mu.Unlock()
	}
	cfg.OnProblem = func(path string, err error) {
		r.mu.Lock()
		r.probs = append(r.probs, path+": "+err.Error())
		r.mu.Unlock()
	}
	cfg.OnSynced = func(s watch.Summary) { r.synced <- s }
	go func() {
		defer close(r.done)
		r.sum, r.err = watch.Run(ctx, w.nc, cfg)
	}()
	w.t.Cleanup(func() { r.stop() })
	return r
}

// stop cancels the run and waits for it; it fails the test on an error.
func (r *running) stop() watch.Summary {
	r.t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		r.t.Fatal("watch.Run did not stop within 20s of its context's end")
	}
	if r.err != nil {
		r.t.Fatalf("watch.Run: %v", r.err)
	}
	return r.sum
}

// problems returns the problems reported so far.
func (r *running) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.probs)
}

// noProblems fails the test if a problem was reported.
func (r *running) noProblems() {
	r.t.Helper()
	if p := r.problems(); len(p) > 0 {
		r.t.Errorf("problems reported: %q", p)
	}
}

// hits returns the paths of the keyword hits on memory files for query
// (nil on an error: a search that fails finds nothing).
func (w *world) hits(query string) []string {
	out, _ := w.search(query)
	return out
}

// search returns the paths of the keyword hits on memory files for query.
func (w *world) search(query string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := w.c.Search(ctx, memindex.SearchRequest{Namespace: ns, Query: query, Mode: memindex.ModeKeyword,
		Sources: []string{memindex.SourceFiles}, K: 50})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range resp.Hits {
		if !slices.Contains(out, h.Path) {
			out = append(out, h.Path)
		}
	}
	sort.Strings(out)
	return out, nil
}

// found reports whether a keyword search for query finds path.
func (w *world) found(query, path string) bool { return slices.Contains(w.hits(query), path) }

// waitFound waits up to d for query to find path (or, with !want, not).
func (w *world) waitFound(d time.Duration, query, path string, want bool) time.Duration {
	w.t.Helper()
	start := time.Now()
	what := path + " to be found by " + query
	if !want {
		what = path + " to be gone from " + query
	}
	natstest.WaitUntil(w.t, d, what, func() bool { return w.found(query, path) == want })
	return time.Since(start)
}

// lastSeq is the event stream's last sequence.
func (w *world) lastSeq() uint64 {
	w.t.Helper()
	s, err := w.js.Stream(context.Background(), memindex.StreamEvents)
	if err != nil {
		w.t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	return info.State.LastSeq
}

// events returns the stream's events after seq after.
func (w *world) events(after uint64) []memindex.Event {
	w.t.Helper()
	ctx := context.Background()
	s, err := w.js.Stream(ctx, memindex.StreamEvents)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []memindex.Event
	for seq := after + 1; seq <= w.lastSeq(); seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			w.t.Fatal(err)
		}
		var ev memindex.Event
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// count is how many events of type typ for path evs hold.
func count(evs []memindex.Event, typ, path string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ && ev.Path == path {
			n++
		}
	}
	return n
}

// chunks is the worker's chunk count once it has applied the whole stream.
func (w *world) chunks() int64 {
	w.t.Helper()
	last := w.lastSeq()
	var st memindex.StatusResponse
	natstest.WaitUntil(w.t, 20*time.Second, "the worker to apply the stream", func() bool {
		st = w.n.Status(context.Background())
		var applied uint64
		for _, p := range st.Partitions {
			applied = max(applied, p.AppliedSeq)
		}
		return applied >= last
	})
	return st.Total().Chunks
}

// median is the middle of ds.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
