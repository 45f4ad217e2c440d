package consumer

import (
	"errors"
	"math"
	"time"

	"memindex/store"
)

// Planning the next batch while the one before commits. A batch's plan
// reads each session's stored tail; the next batch's sessions are mostly
// the same ones (a busy namespace's live conversations), whose stored tails
// the committing batch is changing. What that batch leaves of a session is
// known without the shard, though: its plan re-chunked the session from
// `from` on, so the session's chunks from there are the plan's, its
// messages from there are the stored ones merged with the batch's, and the
// ones just before `from` were read to give context. A next batch that only
// appends to such a session (its first new message comes after one of
// those chunks) is planned from that alone, exactly as it would be from the
// shard once the batch committed (TestPlanAfterEqualsPlanAfterCommit);
// sessions the batch did not touch are read from the shard, which that
// batch does not change. A batch that deletes sessions or changes files or
// records leaves nothing to plan after: the next waits for its commit.

// errNeedsCommit says a batch cannot be planned before the batch before it
// commits: a session's tail reaches back before what that batch re-chunked.
var errNeedsCommit = errors.New("plan needs the batch before committed")

// afterBatch is what a batch's plan leaves of the sessions it re-chunked.
type afterBatch struct {
	sessions map[store.SessionRef]*sessionAfter
}

// sessionAfter is one session once a batch applies: its chunks from the
// plan's from on, its messages from there, and the ones before from (up to
// ContextMessages).
type sessionAfter struct {
	chunks []store.ChunkSpan
	msgs   []store.Message
	before []store.Message
}

// session returns what a holds of ref; a nil a holds nothing.
func (a *afterBatch) session(ref store.SessionRef) (*sessionAfter, bool) {
	if a == nil {
		return nil, false
	}
	s, ok := a.sessions[ref]
	return s, ok
}

// newSessionAfter records what w's plan, whose chunks are sc, leaves.
func newSessionAfter(w *sessionWork, sc store.SessionChunks, before int) *sessionAfter {
	a := &sessionAfter{chunks: make([]store.ChunkSpan, len(sc.Chunks)), msgs: storedMessages(w.merged)}
	for i, c := range sc.Chunks {
		a.chunks[i] = store.ChunkSpan{ID: c.ID, SeqStart: c.SeqStart, SeqEnd: c.SeqEnd, Part: c.Part}
	}
	b := w.tail.Before
	a.before = storedMessages(b[max(0, len(b)-before):])
	return a
}

// tail sets w's spans, from and stored tail as the shard would give them
// once the batch that left a commits, and reports false when a does not
// hold them all: they are what SessionTailSpans and SessionTailMessages
// return, and they lie in a when one of its chunks starts before w's first
// new message (at a seq above 0).
func (a *sessionAfter) tail(w *sessionWork, before int) bool {
	minNew := w.news[0].Seq
	j := -1
	for i, c := range a.chunks {
		if c.SeqStart > 0 && c.SeqStart < minNew && (i == 0 || a.chunks[i-1].SeqStart != c.SeqStart) {
			j = i // the first piece of the last chunk starting before minNew
		}
	}
	if j < 0 {
		return false
	}
	w.spans = a.chunks[j:]
	w.from = rechunkFrom(w.spans, minNew)
	var prior []store.Message
	w.tail = store.SessionTail{}
	prior = append(prior, a.before...)
	for _, m := range a.msgs {
		if m.Seq < w.from {
			prior = append(prior, m)
		} else {
			w.tail.From = append(w.tail.From, m)
		}
	}
	if before > 0 && len(prior) > 0 {
		w.tail.Before = prior[max(0, len(prior)-before):]
	}
	return true
}

// storedMessages returns copies of ms with their times as the shard gives
// them back (UTC, nanoseconds, clamped to what it stores; zero when
// unknown), so a plan from memory equals one from the shard.
func storedMessages(ms []store.Message) []store.Message {
	out := make([]store.Message, len(ms))
	for i, m := range ms {
		m.Time = storedTime(m.Time)
		out[i] = m
	}
	return out
}

// storedTime is t as the shard stores and reads it back.
func storedTime(t time.Time) time.Time {
	switch {
	case t.IsZero():
		return time.Time{}
	case t.Before(time.Unix(0, math.MinInt64+1)):
		return time.Unix(0, math.MinInt64+1).UTC()
	case t.After(time.Unix(0, math.MaxInt64)):
		return time.Unix(0, math.MaxInt64).UTC()
	}
	return time.Unix(0, t.UnixNano()).UTC()
}
