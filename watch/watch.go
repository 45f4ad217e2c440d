package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex/client"
)

// Change is one event the stream acknowledged (`memindex publish --watch
// --json` prints one a line).
type Change struct {
	// Type is memindex.TypeFileUpserted or memindex.TypeFileDeleted.
	Type        string `json:"type"`
	Path        string `json:"path"`
	ContentHash string `json:"contentHash,omitempty"`
	Bytes       int    `json:"bytes,omitempty"`
	// Seq is the event's stream sequence; Duplicate says the stream held
	// it already (a retry of a publish whose first ack was lost).
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate,omitempty"`
	// Sync is set for what the start sync sent (and a re-sync after the
	// kernel's event queue overflowed), unset for a change seen live.
	Sync bool `json:"sync,omitempty"`
}

// Summary counts what Run did.
type Summary struct {
	// Files is how many memory files the index holds from the folder, as
	// far as the stream acknowledged.
	Files    int   `json:"files"`
	Upserted int64 `json:"upserted"`
	Deleted  int64 `json:"deleted"`
	// Unchanged counts paths looked at whose content the stream already
	// held (nothing sent).
	Unchanged int64 `json:"unchanged"`
	// Failed counts publishes that failed (each is tried again later);
	// Problems the paths that could not be read or sent.
	Failed   int64   `json:"failed"`
	Problems int64   `json:"problems"`
	LastSeq  uint64  `json:"lastSeq"`
	Seconds  float64 `json:"seconds"`
}

// Run syncs cfg.Dir to the index and then keeps it in sync until ctx ends.
//
// The start sync sends file.upserted for every memory file (client's rule:
// .md, not excluded) whose content the state file does not record as
// acknowledged, and file.deleted for every file it records that is gone or
// now excluded; then every change is sent as it settles. A path that cannot
// be read is reported to OnProblem and the others go on; a publish that
// fails is tried again with back-off. Run returns the summary when ctx
// ends (the round in flight finishes first, within AckTimeout, so the
// state file says what the stream holds), and an error when the folder is
// missing, is no directory, is removed while watched (ErrNoDir), when the
// state file is unusable (ErrState), or when no stream takes the events
// at the start (client.ErrNoWorker).
func Run(ctx context.Context, nc *nats.Conn, cfg Config) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	cfg = cfg.withDefaults()
	root, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return Summary{}, fmt.Errorf("memory folder %s: %w", cfg.Dir, err)
	}
	switch fi, err := os.Stat(root); {
	case errors.Is(err, fs.ErrNotExist):
		return Summary{}, fmt.Errorf("%s: %w", cfg.Dir, ErrNoDir)
	case err != nil:
		return Summary{}, fmt.Errorf("memory folder %s: %w", cfg.Dir, err)
	case !fi.IsDir():
		return Summary{}, fmt.Errorf("memory folder %s: %w", cfg.Dir, ErrNotDir)
	}
	st, err := loadState(cfg.StateFile, state{Namespace: cfg.Namespace, Dir: root, DirPath: cfg.DirPath})
	if err != nil {
		return Summary{}, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*roundSize), jetstream.WithPublishAsyncTimeout(cfg.AckTimeout))
	if err != nil {
		return Summary{}, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return Summary{}, fmt.Errorf("start the file watcher: %w", err)
	}
	defer fw.Close()
	w := &watcher{cfg: cfg, root: root, js: js, fw: fw, st: st, start: time.Now(), syncing: true,
		dirs: map[string]bool{}, pending: map[string]*pending{}, retry: map[string]*attempt{}}
	// Watches first, then the look at every path: a change made while
	// the sync runs is seen.
	w.addTree(".", true)
	for p := range st.Files {
		w.schedule(p)
	}
	if err := w.flush(ctx, true); err != nil {
		return w.summary(), err
	}
	w.syncing = false
	if cfg.OnSynced != nil {
		cfg.OnSynced(w.summary())
	}
	if ctx.Err() != nil {
		return w.summary(), nil
	}
	return w.loop(ctx)
}

// watcher is Run's state; only Run's goroutine touches it.
type watcher struct {
	cfg     Config
	root    string
	js      jetstream.JetStream
	fw      *fsnotify.Watcher
	st      *state
	dirs    map[string]bool     // directories watched, relative slash paths
	pending map[string]*pending // paths to look at, and when
	retry   map[string]*attempt // sends that failed, to try again
	sum     Summary
	start   time.Time
	syncing bool
}

// pending is a path waiting for its events to settle.
type pending struct{ first, due time.Time }

// loop follows the file system until ctx ends.
func (w *watcher) loop(ctx context.Context) (Summary, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if d, ok := w.next(); ok {
			timer.Reset(d)
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			return w.summary(), nil
		case ev, ok := <-w.fw.Events:
			if !ok {
				return w.summary(), errors.New("the file watcher stopped")
			}
			if gone := w.handle(ev); gone {
				if err := w.flush(ctx, true); err != nil {
					return w.summary(), err
				}
				return w.summary(), fmt.Errorf("memory folder %s was removed or moved away: %w", w.cfg.Dir, ErrNoDir)
			}
		case err, ok := <-w.fw.Errors:
			if !ok {
				return w.summary(), errors.New("the file watcher stopped")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.problem(".", fmt.Errorf("%w: looking at the whole folder again", err))
				w.addTree(".", true)
				for p := range w.st.Files {
					w.schedule(p)
				}
				continue
			}
			w.problem(".", fmt.Errorf("file watcher: %w", err))
		case <-timer.C:
			if err := w.flush(ctx, false); err != nil {
				return w.summary(), err
			}
		}
	}
}

// next returns how long until the first pending path is due.
func (w *watcher) next() (time.Duration, bool) {
	var first time.Time
	for _, p := range w.pending {
		if first.IsZero() || p.due.Before(first) {
			first = p.due
		}
	}
	return max(time.Until(first), 0), !first.IsZero()
}

// handle schedules what ev may have changed; it reports whether the
// folder itself went away.
func (w *watcher) handle(ev fsnotify.Event) (rootGone bool) {
	rel, ok := w.rel(ev.Name)
	if !ok {
		return false
	}
	if rel == "." {
		return ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		// A directory removed or moved away takes its files with it, and
		// its subdirectories' watches (which would report stale paths).
		w.dropTree(rel)
		for p := range w.st.Files {
			if strings.HasPrefix(p, rel+"/") {
				w.schedule(p)
			}
		}
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			w.addTree(rel, true) // its files may be there before its watch is
		}
	}
	w.schedule(rel)
	return false
}

// rel is name relative to the folder, slash-separated.
func (w *watcher) rel(name string) (string, bool) {
	rel, err := filepath.Rel(w.root, name)
	if err != nil {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	return rel, rel != ".." && !strings.HasPrefix(rel, "../")
}

// abs is the file system path of rel.
func (w *watcher) abs(rel string) string { return filepath.Join(w.root, filepath.FromSlash(rel)) }

// excluded reports whether rel is left out by cfg.Excludes.
func (w *watcher) excluded(rel string) bool { return client.ExcludedPath(rel, w.cfg.Excludes) }

// schedule makes rel due a debounce from now (at most MaxDelay after its
// first unsettled event), if it is or was a memory file to send.
func (w *watcher) schedule(rel string) {
	_, sent := w.st.Files[rel]
	if !sent && (!client.IsMemoryFile(rel) || w.excluded(rel)) {
		return
	}
	now := time.Now()
	p := w.pending[rel]
	if p == nil {
		p = &pending{first: now}
		w.pending[rel] = p
	}
	p.due = now.Add(w.cfg.Debounce)
	if limit := p.first.Add(w.cfg.MaxDelay); p.due.After(limit) {
		p.due = limit
	}
}

// addTree watches directory rel and every directory below it that is not
// excluded (symbolic links are not followed, as in the one-shot walk) and,
// with files, schedules the memory files in them.
func (w *watcher) addTree(rel string, files bool) {
	_ = filepath.WalkDir(w.abs(rel), func(path string, d fs.DirEntry, err error) error {
		r, ok := w.rel(path)
		if !ok {
			return nil
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone while walked: its events say so
			}
			w.problem(r, err)
			return nil
		}
		if !d.IsDir() {
			if files {
				w.schedule(r)
			}
			return nil
		}
		if r != "." && w.excluded(r) {
			return filepath.SkipDir
		}
		if !w.dirs[r] {
			if err := w.fw.Add(path); err != nil {
				w.problem(r, fmt.Errorf("watch directory (on Linux, fs.inotify.max_user_watches bounds how many): %w", err))
				return nil
			}
			w.dirs[r] = true
		}
		return nil
	})
}

// dropTree stops watching directory rel and the directories below it.
func (w *watcher) dropTree(rel string) {
	for d := range w.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			_ = w.fw.Remove(w.abs(d)) // already gone when the kernel dropped it
			delete(w.dirs, d)
		}
	}
}

// flush looks at the pending paths that are due (all of them with all)
// and sends what changed, in rounds of at most roundSize paths; between
// rounds it stops when ctx ends.
func (w *watcher) flush(ctx context.Context, all bool) error {
	now := time.Now()
	var due []string
	for rel, p := range w.pending {
		if all || !p.due.After(now) {
			due = append(due, rel)
			delete(w.pending, rel)
		}
	}
	sort.Strings(due)
	for len(due) > 0 && ctx.Err() == nil {
		n := min(len(due), roundSize)
		if err := w.round(due[:n]); err != nil {
			return err
		}
		due = due[n:]
	}
	for _, rel := range due { // left when ctx ended: the next start looks again
		w.schedule(rel)
	}
	return nil
}

// problem reports a path that could not be read or sent.
func (w *watcher) problem(rel string, err error) {
	w.sum.Problems++
	if w.cfg.OnProblem != nil {
		w.cfg.OnProblem(rel, err)
	}
}

// summary is the summary so far.
func (w *watcher) summary() Summary {
	s := w.sum
	s.Files = len(w.st.Files)
	s.Seconds = time.Since(w.start).Seconds()
	return s
}
