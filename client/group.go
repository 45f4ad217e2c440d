package client

import (
	"errors"

	"memindex"
)

// DefaultGroupMessages is how many messages `memindex publish` and
// `memindex import` put in one messages event by default.
const DefaultGroupMessages = 100

// maxGroupText bounds the text (and ids, speakers, captions) of the
// messages one grouped event carries: JSON escapes a byte to at most 6
// (\u003c), so the event stays under memindex.MaxEventBytes.
const maxGroupText = 128 << 10

// Grouper turns message events, in the order they are to be published,
// into the events to send: messages of one session, each seq above the
// one before, at most max of them and 128 KiB of their text, go out as one
// messages event, which the stream and the workers take in for about the
// cost of one message; a run of one goes out as the message event it is
// (whose Nats-Msg-Id is its session position).
//
// Runs of several sessions are open at once, so that interleaved sessions
// (a history in time order, where no two consecutive messages are of one
// session) still make full events: a run goes out when it is full, when
// its session's next seq does not follow, and, oldest first, when the open
// runs hold more than groupWindow messages or groupWindowText bytes of
// text. Each session's messages go out in their order; messages of
// different sessions may be reordered, which nothing downstream can tell.
// Flush sends every open run, oldest first: call it before anything that
// is not such a message (a reset, a deletion, a record, a line a worker
// would refuse) so that it keeps its place after the messages before it.
// The runs depend only on the input, so the same messages make the same
// events. T is what the caller keeps of each message (where it came
// from); emit gets the first one's of each event.
type Grouper[T any] struct {
	max  int
	runs map[groupSession]*groupRun[T]
	// open holds the runs in the order they were opened; a run sent
	// because it filled stays in it, marked sent, until it is at the head.
	open       []*groupRun[T]
	held, text int // messages and text bytes of the open runs
	emit       func(ev memindex.Event, first T, n int) error
}

// groupWindow and groupWindowText bound what the open runs of a Grouper
// hold: with 1,000 interleaved sessions, events of about 16 messages.
const (
	groupWindow     = 16 << 10
	groupWindowText = 16 << 20
)

type groupSession struct{ namespace, key, id string }

type groupRun[T any] struct {
	session groupSession
	events  []memindex.Event
	tags    []T
	text    int
	sent    bool
}

// NewGrouper returns a Grouper of at most max messages an event (0:
// DefaultGroupMessages; 1: every message alone) that sends each event to
// emit with the first message's tag and how many messages it holds.
func NewGrouper[T any](max int, emit func(ev memindex.Event, first T, n int) error) *Grouper[T] {
	if max <= 0 {
		max = DefaultGroupMessages
	}
	return &Grouper[T]{max: max, runs: map[groupSession]*groupRun[T]{}, emit: emit}
}

// Add takes the next message event e (valid, of type message), tagged t;
// it sends what e ends: its session's run when e cannot join it, e's run
// when e fills it, the oldest runs when the open ones hold too much; it
// returns those emits' errors, joined (e is taken all the same).
func (g *Grouper[T]) Add(e memindex.Event, t T) error {
	size := len(e.Text) + len(e.ImageCaption) + len(e.ID) + len(e.Speaker)
	k := groupSession{e.Namespace, e.SessionKey, e.SessionID}
	var err error
	r := g.runs[k]
	if r != nil && (r.text+size > maxGroupText || e.Seq <= r.events[len(r.events)-1].Seq) {
		err = g.send(r)
		r = nil
	}
	if r == nil {
		r = &groupRun[T]{session: k}
		g.runs[k] = r
		g.open = append(g.open, r)
	}
	r.events, r.tags = append(r.events, e), append(r.tags, t)
	r.text += size
	g.held, g.text = g.held+1, g.text+size
	if len(r.events) >= g.max {
		err = errors.Join(err, g.send(r))
	}
	for g.held > groupWindow || g.text > groupWindowText {
		err = errors.Join(err, g.sendOldest())
	}
	g.trim()
	return err
}

// Flush sends every open run, oldest first.
func (g *Grouper[T]) Flush() error {
	var err error
	for g.held > 0 {
		err = errors.Join(err, g.sendOldest())
	}
	g.trim()
	return err
}

// sendOldest sends the oldest run not yet sent.
func (g *Grouper[T]) sendOldest() error {
	g.trim()
	return g.send(g.open[0])
}

// trim drops the sent runs at the head of open, and lets go of its array
// once it holds more dropped slots than runs.
func (g *Grouper[T]) trim() {
	i := 0
	for i < len(g.open) && g.open[i].sent {
		g.open[i] = nil
		i++
	}
	g.open = g.open[i:]
	if cap(g.open) > 64 && len(g.open) < cap(g.open)/4 {
		g.open = append([]*groupRun[T](nil), g.open...)
	}
}

// send emits run r as one event and closes it.
func (g *Grouper[T]) send(r *groupRun[T]) error {
	r.sent = true
	delete(g.runs, r.session)
	g.held, g.text = g.held-len(r.events), g.text-r.text
	ev := r.events[0]
	if len(r.events) > 1 {
		ev = memindex.Event{Type: memindex.TypeMessages, Namespace: ev.Namespace, SessionKey: ev.SessionKey, SessionID: ev.SessionID,
			Messages: make([]memindex.Message, len(r.events))}
		for i, e := range r.events {
			ev.Messages[i] = memindex.Message{Seq: e.Seq, ID: e.ID, Role: e.Role, Speaker: e.Speaker, Text: e.Text, ImageCaption: e.ImageCaption, Timestamp: e.Timestamp}
		}
	}
	err := g.emit(ev, r.tags[0], len(r.events))
	r.events, r.tags = nil, nil
	return err
}
