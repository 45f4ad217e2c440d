package watch

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
	"memindex/client"
)

// roundSize bounds the paths looked at together, and so the file contents
// held and the publishes in flight at once.
const roundSize = 256

// maxBackoff bounds the wait before a failed send is tried again.
const maxBackoff = 30 * time.Second

// attempt is one change to send: its event and the eventId it keeps while
// it is retried, so a retry whose first try did reach the stream is a
// duplicate there.
type attempt struct {
	ev    memindex.Event
	id    string
	tries int
}

// wireEvent is an event with the eventId its Nats-Msg-Id is made of
// (client.LineMsg: "<namespace>/<eventId>"). Workers ignore the field.
type wireEvent struct {
	memindex.Event
	EventID string `json:"eventId"`
}

// round looks at paths and sends what changed: deletes first (a rename's
// old path goes before its new one arrives), then upserts, all in flight
// at once; then it records what was acknowledged in the state file. The
// error is the state file's, or, during the start sync, that no stream
// takes the events.
func (w *watcher) round(paths []string) error {
	var acts []*attempt
	for _, rel := range paths {
		if a := w.decide(rel); a != nil {
			acts = append(acts, a)
		}
	}
	sort.SliceStable(acts, func(i, j int) bool {
		return acts[i].ev.Type == memindex.TypeFileDeleted && acts[j].ev.Type != memindex.TypeFileDeleted
	})
	type sent struct {
		a *attempt
		f jetstream.PubAckFuture
	}
	var inFlight []sent
	var fatal error
	for _, a := range acts {
		msg, err := w.msg(a)
		if err != nil {
			w.problem(a.ev.Path, fmt.Errorf("%w (not sent)", err)) // it can never be sent as it is
			continue
		}
		f, err := w.js.PublishMsgAsync(msg)
		if err != nil {
			fatal = firstErr(fatal, w.failed(a, err))
			continue
		}
		inFlight = append(inFlight, sent{a, f})
	}
	acked := false
	for _, s := range inFlight { // each settles within AckTimeout
		select {
		case ack := <-s.f.Ok():
			w.acked(s.a, ack)
			acked = true
		case err := <-s.f.Err():
			fatal = firstErr(fatal, w.failed(s.a, err))
		}
	}
	if acked {
		if err := w.st.save(w.cfg.StateFile); err != nil {
			return err
		}
	}
	return fatal
}

// firstErr keeps the first non-nil error.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// decide looks at rel and returns the change to send, or nil when the
// stream already holds what the file system has (or rel cannot be read:
// reported).
func (w *watcher) decide(rel string) *attempt {
	_, sent := w.st.Files[rel]
	gone := func() *attempt {
		if !sent {
			delete(w.retry, rel)
			return nil
		}
		return w.attemptFor(rel, memindex.Event{Type: memindex.TypeFileDeleted, Path: rel})
	}
	fi, err := os.Stat(w.abs(rel)) // a symbolic link to a file is read through, as by the one-shot walk
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return gone()
	case err != nil:
		w.problem(rel, err)
		return nil
	case !fi.Mode().IsRegular(), !client.IsMemoryFile(rel), w.excluded(rel):
		return gone()
	}
	ev, err := client.MemoryFileEvent(w.root, rel, w.cfg.DirPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return gone()
	case err != nil:
		w.problem(rel, err) // the index keeps what it has of the file
		return nil
	case sent && w.st.Files[rel] == ev.ContentHash:
		w.sum.Unchanged++
		delete(w.retry, rel)
		return nil
	}
	return w.attemptFor(rel, ev)
}

// attemptFor is the attempt to send ev: the failed one of the same change
// when there is one (keeping its eventId), else a new one.
func (w *watcher) attemptFor(rel string, ev memindex.Event) *attempt {
	if a := w.retry[rel]; a != nil && a.ev.Type == ev.Type && a.ev.ContentHash == ev.ContentHash {
		a.ev = ev
		return a
	}
	delete(w.retry, rel)
	return &attempt{ev: ev, id: "watch-" + rand.Text()}
}

// msg is a's validated message.
func (w *watcher) msg(a *attempt) (*nats.Msg, error) {
	ev := a.ev
	ev.Namespace = w.cfg.Namespace
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(wireEvent{ev, a.id})
	if err != nil {
		return nil, err
	}
	msg, err := client.LineMsg(data, w.cfg.Namespace, false)
	if err != nil {
		return nil, err
	}
	if w.cfg.Inject != nil {
		w.cfg.Inject(msg)
	}
	return msg, nil
}

// acked records a's acknowledgement.
func (w *watcher) acked(a *attempt, ack *jetstream.PubAck) {
	rel := a.ev.Path
	delete(w.retry, rel)
	if a.ev.Type == memindex.TypeFileDeleted {
		delete(w.st.Files, rel)
		w.sum.Deleted++
	} else {
		w.st.Files[rel] = a.ev.ContentHash
		w.sum.Upserted++
	}
	w.sum.LastSeq = max(w.sum.LastSeq, ack.Sequence)
	if w.cfg.OnChange != nil {
		w.cfg.OnChange(Change{Type: a.ev.Type, Path: rel, ContentHash: a.ev.ContentHash, Bytes: len(a.ev.Content),
			Seq: ack.Sequence, Duplicate: ack.Duplicate, Sync: w.syncing})
	}
}

// failed reports a's failed publish and schedules it again with back-off.
// During the start sync, a publish no stream takes ends Run: nothing
// serves the namespace.
func (w *watcher) failed(a *attempt, err error) error {
	w.sum.Failed++
	subject := memindex.EventSubject(w.cfg.Namespace)
	if w.syncing && (errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)) {
		return fmt.Errorf("publish to %s: no stream takes it: %w", subject, client.ErrNoWorker)
	}
	a.tries++
	wait := min(time.Second<<min(a.tries-1, 5), maxBackoff)
	w.problem(a.ev.Path, fmt.Errorf("send %s to %s: %w (trying again in %v)", a.ev.Type, subject, err, wait))
	w.retry[a.ev.Path] = a
	now := time.Now()
	w.pending[a.ev.Path] = &pending{first: now, due: now.Add(wait)}
	return nil
}
