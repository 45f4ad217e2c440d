package client

import "memindex"

// DefaultGroupMessages is how many messages `memindex publish` and
// `memindex import` put in one messages event by default.
const DefaultGroupMessages = 100

// maxGroupText bounds the text (and ids, speakers, captions) of the
// messages one grouped event carries: JSON escapes a byte to at most 6
// (\u003c), so the event stays under memindex.MaxEventBytes.
const maxGroupText = 128 << 10

// Grouper turns message events, in the order they are to be published,
// into the events to send: a run of consecutive messages of one session,
// each seq above the one before, at most max of them and 128 KiB of their
// text, goes out as one messages event, which the stream and the workers
// take in for about the cost of one message; a run of one goes out as the
// message event it is (whose Nats-Msg-Id is its session position). The
// runs depend only on the input, so the same messages make the same
// events. T is what the caller keeps of each message (where it came
// from); emit gets the first one's of each event.
type Grouper[T any] struct {
	max  int
	run  []memindex.Event
	tags []T
	text int
	emit func(ev memindex.Event, first T, n int) error
}

// NewGrouper returns a Grouper of at most max messages an event (0:
// DefaultGroupMessages; 1: every message alone) that sends each event to
// emit with the first message's tag and how many messages it holds.
func NewGrouper[T any](max int, emit func(ev memindex.Event, first T, n int) error) *Grouper[T] {
	if max <= 0 {
		max = DefaultGroupMessages
	}
	return &Grouper[T]{max: max, emit: emit}
}

// Add takes the next message event e (valid, of type message), tagged t;
// it sends the run before when e cannot join it.
func (g *Grouper[T]) Add(e memindex.Event, t T) error {
	size := len(e.Text) + len(e.ImageCaption) + len(e.ID) + len(e.Speaker)
	if n := len(g.run); n > 0 {
		last := &g.run[n-1]
		if n >= g.max || g.text+size > maxGroupText || e.Namespace != last.Namespace || e.SessionKey != last.SessionKey ||
			e.SessionID != last.SessionID || e.Seq <= last.Seq {
			if err := g.Flush(); err != nil {
				return err
			}
		}
	}
	g.run, g.tags = append(g.run, e), append(g.tags, t)
	g.text += size
	return nil
}

// Flush sends the run taken so far, if any.
func (g *Grouper[T]) Flush() error {
	if len(g.run) == 0 {
		return nil
	}
	ev := g.run[0]
	if len(g.run) > 1 {
		ev = memindex.Event{Type: memindex.TypeMessages, Namespace: ev.Namespace, SessionKey: ev.SessionKey, SessionID: ev.SessionID,
			Messages: make([]memindex.Message, len(g.run))}
		for i, e := range g.run {
			ev.Messages[i] = memindex.Message{Seq: e.Seq, ID: e.ID, Role: e.Role, Speaker: e.Speaker, Text: e.Text, ImageCaption: e.ImageCaption, Timestamp: e.Timestamp}
		}
	}
	err := g.emit(ev, g.tags[0], len(g.run))
	clear(g.run)
	clear(g.tags)
	g.run, g.tags, g.text = g.run[:0], g.tags[:0], 0
	return err
}
