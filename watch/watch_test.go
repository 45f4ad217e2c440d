package watch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
	"memindex/internal/natstest"
	"memindex/watch"
)

// TestWrittenFileIsSearchableAndDeletedOneIsGone: a file written into the
// watched folder is found by a search within 2 s, a deleted one is gone
// within 2 s, and a file in a directory made after the start is watched
// too. The times are logged (median of five), not asserted beyond 2 s.
func TestWrittenFileIsSearchableAndDeletedOneIsGone(t *testing.T) {
	w := newWorld(t)
	r := w.start(w.config())
	var found, gone []time.Duration
	for i := range 5 {
		rel := fmt.Sprintf("note%d.md", i)
		if i%2 == 1 {
			rel = fmt.Sprintf("new%d/deeper/note%d.md", i, i) // directories made while watched
		}
		word := fmt.Sprintf("zebra%dquokka", i)
		start := time.Now()
		w.write(rel, "# Note\n\nThe "+word+" lives here.\n")
		w.waitFound(doneWithin, word, rel, true)
		found = append(found, time.Since(start))
		start = time.Now()
		if err := os.Remove(w.path(rel)); err != nil {
			t.Fatal(err)
		}
		w.waitFound(doneWithin, word, rel, false)
		gone = append(gone, time.Since(start))
	}
	t.Logf("written → searchable: median %v of %v; deleted → gone: median %v of %v", median(found), found, median(gone), gone)
	r.noProblems()
	if s := r.stop(); s.Upserted != 5 || s.Deleted != 5 || s.Files != 0 {
		t.Errorf("summary %+v, want 5 upserted, 5 deleted, 0 files left", s)
	}
}

// TestEditorSaveIsOneUpdate: saves the way editors and atomic-save tools
// do them are one file.upserted each, and a search polled throughout
// finds the file at every moment until the new content is found.
func TestEditorSaveIsOneUpdate(t *testing.T) {
	saves := []struct {
		name string
		save func(w *world, rel, content string) error
	}{
		{"temp file renamed over", func(w *world, rel, content string) error {
			tmp := w.path(rel) + ".tmp"
			if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, w.path(rel))
		}},
		{"temp .md file renamed over", func(w *world, rel, content string) error {
			tmp := w.path(".~tmp-" + rel) // a memory file's name, briefly
			if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, w.path(rel))
		}},
		{"vim: rename to backup, write, remove backup", func(w *world, rel, content string) error {
			backup := w.path(rel) + "~"
			if err := os.Rename(w.path(rel), backup); err != nil {
				return err
			}
			if err := os.WriteFile(w.path(rel), []byte(content), 0o644); err != nil {
				return err
			}
			return os.Remove(backup)
		}},
		{"truncate and write in place", func(w *world, rel, content string) error {
			f, err := os.OpenFile(w.path(rel), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return err
			}
			for line := range strings.Lines(content) { // several writes
				if _, err := f.WriteString(line); err != nil {
					return err
				}
			}
			return f.Close()
		}},
	}
	w := newWorld(t)
	w.write("plan.md", "# Plan\n\nThe walrus0 meets the capybara.\n")
	r := w.start(w.config())
	w.waitFound(20*time.Second, "capybara", "plan.md", true)
	for i, s := range saves {
		t.Run(s.name, func(t *testing.T) {
			seq := w.lastSeq()
			var polls, misses atomic.Int64
			var missed atomic.Value
			stop := make(chan struct{})
			polled := make(chan struct{})
			go func() { // search throughout the save, until told to stop
				defer close(polled)
				for {
					select {
					case <-stop:
						return
					default:
					}
					polls.Add(1)
					if got, err := w.search("capybara"); err != nil || !slices.Contains(got, "plan.md") {
						misses.Add(1)
						missed.Store(fmt.Sprintf("found %q, error %v", got, err))
					}
				}
			}()
			word := fmt.Sprintf("walrus%d", i+1)
			if err := s.save(w, "plan.md", "# Plan\n\nThe "+word+" meets the capybara.\nMore lines.\n"); err != nil {
				t.Fatal(err)
			}
			w.waitFound(doneWithin, word, "plan.md", true)
			close(stop)
			<-polled
			if misses.Load() > 0 || polls.Load() < 3 {
				t.Errorf("%d of %d searches during the save missed plan.md (%v), want none (and at least 3 searches)", misses.Load(), polls.Load(), missed.Load())
			}
			evs := w.events(seq)
			if up, del := count(evs, memindex.TypeFileUpserted, "plan.md"), count(evs, memindex.TypeFileDeleted, "plan.md"); up != 1 || del != 0 || len(evs) != 1 {
				t.Errorf("the stream got %d events (%d upserts, %d deletes of plan.md): %+v; want exactly one file.upserted", len(evs), up, del, evs)
			}
		})
	}
	r.noProblems()
}

// TestRenameIsDeletedAndUpserted: a file renamed, and a directory renamed
// with files in it, become file.deleted of the old paths and file.upserted
// of the new ones.
func TestRenameIsDeletedAndUpserted(t *testing.T) {
	w := newWorld(t)
	w.write("old.md", "The pangolin sleeps.\n")
	w.write("dir/inner.md", "The axolotl swims.\n")
	w.write("dir/sub/deep.md", "The okapi hides.\n")
	r := w.start(w.config())
	w.waitFound(20*time.Second, "okapi", "dir/sub/deep.md", true)
	seq := w.lastSeq()
	if err := os.Rename(w.path("old.md"), w.path("new.md")); err != nil {
		t.Fatal(err)
	}
	w.waitFound(doneWithin, "pangolin", "new.md", true)
	w.waitFound(doneWithin, "pangolin", "old.md", false)
	if err := os.Rename(w.path("dir"), w.path("moved")); err != nil {
		t.Fatal(err)
	}
	w.waitFound(doneWithin, "okapi", "moved/sub/deep.md", true)
	w.waitFound(doneWithin, "axolotl", "moved/inner.md", true)
	w.waitFound(doneWithin, "okapi", "dir/sub/deep.md", false)
	w.waitFound(doneWithin, "axolotl", "dir/inner.md", false)
	evs := w.events(seq)
	for _, c := range []struct{ typ, path string }{
		{memindex.TypeFileDeleted, "old.md"}, {memindex.TypeFileUpserted, "new.md"},
		{memindex.TypeFileDeleted, "dir/inner.md"}, {memindex.TypeFileDeleted, "dir/sub/deep.md"},
		{memindex.TypeFileUpserted, "moved/inner.md"}, {memindex.TypeFileUpserted, "moved/sub/deep.md"},
	} {
		if n := count(evs, c.typ, c.path); n != 1 {
			t.Errorf("%d %s of %s, want 1 (events %+v)", n, c.typ, c.path, evs)
		}
	}
	if len(evs) != 6 {
		t.Errorf("%d events, want the 6 of the two renames: %+v", len(evs), evs)
	}
	// The moved directory is watched under its new name.
	w.write("moved/sub/later.md", "The tapir arrives.\n")
	w.waitFound(doneWithin, "tapir", "moved/sub/later.md", true)
	r.noProblems()
}

// TestExcludedFileIsNeverSent: --exclude globs leave paths out as the
// one-shot walk does (a matching directory whole, at the start and when
// made later), and so do files that are not .md.
func TestExcludedFileIsNeverSent(t *testing.T) {
	w := newWorld(t)
	w.write("keep.md", "The ibex climbs.\n")
	w.write("drafts/wip.md", "The secret ibex plan.\n")
	w.write(".hidden.md", "A hidden ibex.\n")
	w.write("notes.txt", "An ibex in plain text.\n")
	cfg := w.config()
	cfg.Excludes = []string{"drafts", ".*", "*/private.md"}
	start := w.lastSeq()
	r := w.start(cfg)
	w.waitFound(20*time.Second, "ibex", "keep.md", true)
	w.write("drafts/more/new.md", "More ibex drafts.\n") // under an excluded directory made later
	w.write(".git/config.md", "ibex in a dot directory\n")
	w.write("team/private.md", "ibex private\n")
	w.write("team/public.md", "ibex public\n")
	w.write("new.txt", "ibex text\n")
	w.waitFound(doneWithin, "ibex", "team/public.md", true)
	if got, want := w.hits("ibex"), []string{"keep.md", "team/public.md"}; !slices.Equal(got, want) {
		t.Errorf("search finds %q, want only %q", got, want)
	}
	for _, ev := range w.events(start) {
		if ev.Path != "keep.md" && ev.Path != "team/public.md" {
			t.Errorf("sent %s %s: excluded", ev.Type, ev.Path)
		}
	}
	one, err := client.MemoryFileEvents(w.dir, "", cfg.Excludes)
	if err != nil {
		t.Fatal(err)
	}
	var walked []string
	for _, ev := range one {
		walked = append(walked, ev.Path)
	}
	if want := []string{"keep.md", "team/public.md"}; !slices.Equal(walked, want) {
		t.Errorf("the one-shot walk sends %q, the watcher %q", walked, want)
	}
	r.noProblems()
}

// TestRestartResyncs: a restart sends only what changed while it was
// stopped (a file deleted meanwhile is deleted, a changed or new one is
// upserted, an unchanged one sends nothing), and a restart after no change
// sends nothing. Without its state, a restart sends every file again and
// the worker stores nothing new for the unchanged ones.
func TestRestartResyncs(t *testing.T) {
	w := newWorld(t)
	w.write("a.md", "The heron fishes.\n")
	w.write("b.md", "The heron sleeps.\n")
	w.write("sub/c.md", "The heron flies.\n")
	r := w.start(w.config())
	w.waitFound(20*time.Second, "heron", "sub/c.md", true)
	if s := r.stop(); s.Upserted != 3 || s.Files != 3 {
		t.Fatalf("first run %+v, want 3 upserted", s)
	}
	if err := os.Remove(w.path("b.md")); err != nil {
		t.Fatal(err)
	}
	w.write("sub/c.md", "The heron flies south.\n")
	w.write("d.md", "The heron returns.\n")
	seq := w.lastSeq()
	r = w.start(w.config())
	evs := w.events(seq)
	if len(evs) != 3 || count(evs, memindex.TypeFileDeleted, "b.md") != 1 || count(evs, memindex.TypeFileUpserted, "sub/c.md") != 1 ||
		count(evs, memindex.TypeFileUpserted, "d.md") != 1 {
		t.Errorf("restart sent %+v; want file.deleted b.md, file.upserted sub/c.md and d.md, nothing for a.md", evs)
	}
	// The worker may apply the delete (sent first) and the upserts in
	// different batches: each is waited for before the whole view is checked.
	w.waitFound(20*time.Second, "heron", "b.md", false)
	w.waitFound(20*time.Second, "returns", "d.md", true)
	w.waitFound(20*time.Second, "south", "sub/c.md", true)
	if got, want := w.hits("heron"), []string{"a.md", "d.md", "sub/c.md"}; !slices.Equal(got, want) {
		t.Errorf("after the restart a search finds %q, want %q", got, want)
	}
	if s := r.stop(); s.Upserted != 2 || s.Deleted != 1 || s.Unchanged != 1 || s.Files != 3 {
		t.Errorf("second run %+v, want 2 upserted, 1 deleted, 1 unchanged, 3 files", s)
	}
	seq = w.lastSeq()
	if s := w.start(w.config()).stop(); s.Upserted+s.Deleted != 0 || s.Unchanged != 3 || w.lastSeq() != seq {
		t.Errorf("a restart after no change: %+v, stream %d → %d; want nothing sent", s, seq, w.lastSeq())
	}
	chunks := w.chunks()
	cfg := w.config()
	cfg.StateFile += ".lost"
	if s := w.start(cfg).stop(); s.Upserted != 3 {
		t.Errorf("a restart without its state sent %+v, want the 3 files again", s)
	}
	if got := w.chunks(); got != chunks {
		t.Errorf("the worker holds %d chunks after the unchanged files came again, want %d: nothing new", got, chunks)
	}
}

// TestBadInput: a missing folder, a file given as the folder, no worker,
// a bad or foreign state file are errors naming the problem; a file that
// cannot be sent is reported while the others are sent.
func TestBadInput(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	cfg := w.config()
	cfg.Dir = w.path("nope")
	if _, err := watch.Run(ctx, w.nc, cfg); !errors.Is(err, watch.ErrNoDir) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Run on a missing folder = %v, want ErrNoDir naming it", err)
	}
	w.write("file.md", "x\n")
	cfg.Dir = w.path("file.md")
	if _, err := watch.Run(ctx, w.nc, cfg); !errors.Is(err, watch.ErrNotDir) {
		t.Errorf("Run on a file = %v, want ErrNotDir", err)
	}
	cfg = w.config()
	cfg.Excludes = []string{"["}
	if _, err := watch.Run(ctx, w.nc, cfg); !errors.Is(err, watch.ErrInvalid) || !strings.Contains(err.Error(), "bad glob") {
		t.Errorf("Run with a bad glob = %v, want ErrInvalid naming it", err)
	}
	cfg = w.config()
	cfg.StateFile = w.path("file.md")
	if _, err := watch.Run(ctx, w.nc, cfg); !errors.Is(err, watch.ErrState) || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Run with a state file that is no state = %v, want ErrState saying what to do", err)
	}
	other := w.config()
	other.DirPath = "/elsewhere"
	r := w.start(other) // writes the state of another dirPath
	r.stop()
	if _, err := watch.Run(ctx, w.nc, w.config()); !errors.Is(err, watch.ErrState) || !strings.Contains(err.Error(), "/elsewhere") {
		t.Errorf("Run with another folder's state = %v, want ErrState naming it", err)
	}

	// No stream takes the events: a bare JetStream server.
	bare := natstest.Connect(t, natstest.Server(t))
	cfg = w.config()
	cfg.StateFile += ".bare"
	if _, err := watch.Run(ctx, bare, cfg); !errors.Is(err, client.ErrNoWorker) {
		t.Errorf("Run with no worker = %v, want ErrNoWorker", err)
	}

	// A file too big for an event (and, when not root, one that cannot be
	// read) is reported; the others are sent.
	w.write("big.md", strings.Repeat("x", client.MaxMemoryFileBytes+1))
	w.write("ok.md", "The lemur is fine.\n")
	unreadable := os.Geteuid() != 0
	if unreadable {
		w.write("locked.md", "The lemur is locked away.\n")
		if err := os.Chmod(w.path("locked.md"), 0); err != nil {
			t.Fatal(err)
		}
	}
	cfg = w.config()
	cfg.StateFile += ".big"
	r = w.start(cfg)
	w.waitFound(20*time.Second, "lemur", "ok.md", true)
	probs := strings.Join(r.problems(), "\n")
	if !strings.Contains(probs, "big.md is") || (unreadable && !strings.Contains(probs, "permission denied")) {
		t.Errorf("problems %q, want big.md over the limit (and locked.md unreadable: %v)", probs, unreadable)
	}
	if s := r.stop(); s.Upserted != 2 || s.Problems < 1 {
		t.Errorf("summary %+v, want the 2 readable files sent (file.md, ok.md) and the problems counted", s)
	}
}

// TestFailedSendIsRetried: while no stream takes the events, a change is
// reported and tried again with back-off; once a stream is back, the
// retry lands, once.
func TestFailedSendIsRetried(t *testing.T) {
	ctx := context.Background()
	nc, js := natstest.ConnectJetStream(t, natstest.Server(t))
	stream := jetstream.StreamConfig{Name: memindex.StreamEvents, Subjects: []string{memindex.EventSubjectPrefix + ".>"}}
	if _, err := js.CreateStream(ctx, stream); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := watch.Config{Dir: dir, Namespace: ns, StateFile: filepath.Join(t.TempDir(), "state.json")}
	w := &world{t: t, nc: nc, js: js, dir: dir}
	r := w.start(cfg)
	if err := js.DeleteStream(ctx, memindex.StreamEvents); err != nil {
		t.Fatal(err)
	}
	w.write("late.md", "The vole waits.\n")
	natstest.WaitUntil(t, 10*time.Second, "the failed send to be reported", func() bool {
		return strings.Contains(strings.Join(r.problems(), "\n"), "trying again in")
	})
	if _, err := js.CreateStream(ctx, stream); err != nil {
		t.Fatal(err)
	}
	natstest.WaitUntil(t, 10*time.Second, "the retry to land", func() bool { return w.lastSeq() > 0 })
	s := r.stop()
	if evs := w.events(0); len(evs) != 1 || evs[0].Path != "late.md" || s.Upserted != 1 || s.Failed < 1 {
		t.Errorf("stream %+v, summary %+v; want late.md upserted once after at least one failure", evs, s)
	}
}

// TestFolderRemovedWhileWatched: removing the folder deletes the files it
// held from the index, then Run ends with ErrNoDir.
func TestFolderRemovedWhileWatched(t *testing.T) {
	w := newWorld(t)
	w.write("a.md", "The stoat runs.\n")
	w.write("sub/b.md", "The stoat hides.\n")
	r := w.launch(w.config())
	<-r.synced
	w.waitFound(20*time.Second, "stoat", "sub/b.md", true)
	if err := os.RemoveAll(w.dir); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("watch.Run went on after its folder was removed")
	}
	if !errors.Is(r.err, watch.ErrNoDir) {
		t.Errorf("Run = %v, want ErrNoDir", r.err)
	}
	r.err = nil // stop, at cleanup, expects none
	w.waitFound(doneWithin, "stoat", "a.md", false)
	w.waitFound(doneWithin, "stoat", "sub/b.md", false)
}

// TestNewlyExcludedFileIsDeleted: a file sent by an earlier run and
// excluded by this one's --exclude is deleted at the start.
func TestNewlyExcludedFileIsDeleted(t *testing.T) {
	w := newWorld(t)
	w.write("keep.md", "The bison grazes.\n")
	w.write("old/gone.md", "The bison leaves.\n")
	w.start(w.config()).stop()
	cfg := w.config()
	cfg.Excludes = []string{"old"}
	seq := w.lastSeq()
	r := w.start(cfg)
	if evs := w.events(seq); len(evs) != 1 || count(evs, "file.deleted", "old/gone.md") != 1 {
		t.Errorf("restart with old/ excluded sent %+v, want file.deleted old/gone.md only", evs)
	}
	w.waitFound(doneWithin, "bison", "old/gone.md", false)
	r.noProblems()
}
