package consumer

import (
	"fmt"
	"strings"
	"time"

	"memindex"
)

// decodeMsg turns one stored message into a validated event. subject is the
// stored subject memindex.events.<partition>.<namespace>; stored is the time
// the stream stored it, used when the event carries no timestamp; l caps its
// sizes and its session's length. The error says why the event can never
// apply.
func decodeMsg(l memindex.Limits, subject string, data []byte, stored time.Time) (memindex.Event, error) {
	ns := subject[strings.LastIndexByte(subject, '.')+1:]
	if !memindex.ValidNamespace(ns) {
		return memindex.Event{}, fmt.Errorf("subject namespace %q is not 1-64 characters of [A-Za-z0-9_-]: %w", ns, memindex.ErrInvalid)
	}
	e, err := l.DecodeEvent(data)
	if err != nil {
		return e, err
	}
	switch {
	case e.Namespace == "":
		e.Namespace = ns
	case e.Namespace != ns:
		return e, fmt.Errorf("field namespace: %q but published on the subject of namespace %q: %w", e.Namespace, ns, ErrWrongNamespace)
	}
	switch e.Type {
	case memindex.TypeMessage, memindex.TypeMessages, memindex.TypeSessionDeleted, memindex.TypeFileUpserted, memindex.TypeFileDeleted,
		memindex.TypeRecordUpserted, memindex.TypeRecordDeleted:
	default:
		return e, fmt.Errorf("event type %q is not handled by this worker version: %w", e.Type, memindex.ErrUnsupported)
	}
	var at string // the stored time, formatted once
	stamp := func(ts *string) {
		if *ts == "" {
			if at == "" {
				at = stored.UTC().Format(time.RFC3339Nano)
			}
			*ts = at
		}
	}
	switch e.Type {
	case memindex.TypeSessionDeleted:
	case memindex.TypeMessages:
		for i := range e.Messages {
			stamp(&e.Messages[i].Timestamp)
		}
	default:
		stamp(&e.Timestamp)
	}
	return e, nil
}
