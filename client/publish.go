package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"memindex"
)

// PublishAck is the stream's answer to Publish.
type PublishAck struct {
	// Seq is the event's stream sequence: Manager.Sync with SyncRequest{Seq}
	// waits until the workers have applied it.
	Seq uint64
	// Duplicate is true when the stream already held an event with this
	// MsgID (within its duplicate window): nothing was stored again.
	Duplicate bool
}

// Publish validates ev within the default limits (an event the workers
// would dead-letter is refused here with a *memindex.FieldError), sets its
// Type to message when it is empty, and publishes it through JetStream on
// its namespace's event subject with the Nats-Msg-Id header MsgID gives, so
// publishing the same event again stores nothing: the ack says Duplicate.
// ev.Namespace is required. When no stream takes the subject (no worker
// has ever started) the error wraps ErrNoWorker. Without a deadline on ctx,
// DefaultRequestTimeout applies.
func (c *Client) Publish(ctx context.Context, ev memindex.Event) (PublishAck, error) {
	if ev.Type == "" {
		ev.Type = memindex.TypeMessage
	}
	if ev.Namespace == "" {
		return PublishAck{}, fmt.Errorf("publish: %w", &memindex.FieldError{Field: "namespace", Reason: "is required", Err: memindex.ErrInvalid})
	}
	if err := ev.Validate(); err != nil {
		return PublishAck{}, fmt.Errorf("publish %s: %w", ev.Namespace, err)
	}
	data, err := canonicalJSON(ev)
	if err != nil {
		return PublishAck{}, fmt.Errorf("publish %s: encode event: %w", ev.Namespace, err)
	}
	js, err := c.jetStream()
	if err != nil {
		return PublishAck{}, fmt.Errorf("publish %s: %w", ev.Namespace, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRequestTimeout)
		defer cancel()
	}
	msg := nats.NewMsg(memindex.EventSubject(ev.Namespace))
	msg.Data = data
	msg.Header.Set(nats.MsgIdHdr, MsgID(ev, data))
	ack, err := js.PublishMsg(ctx, msg)
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return PublishAck{}, fmt.Errorf("publish %s: no stream takes %s: %w", ev.Namespace, msg.Subject, ErrNoWorker)
	case err != nil:
		return PublishAck{}, fmt.Errorf("publish %s: %w", ev.Namespace, err)
	}
	return PublishAck{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// jetStream returns the client's JetStream context, made on first use.
func (c *Client) jetStream() (jetstream.JetStream, error) {
	c.jsOnce.Do(func() { c.js, c.jsErr = jetstream.New(c.nc) })
	return c.js, c.jsErr
}

// MsgID returns the de-duplication id (the Nats-Msg-Id header) of ev, whose
// JSON payload is data, by the rule `memindex publish` follows: a message
// is "<namespace>/<sessionKey>/<sessionId>/<seq>", so its session position
// is stored once however often it is sent; any other event (a messages
// event too) is "<namespace>/" and the first 16 bytes, in hex, of the
// sha256 of data.
// Publish sends as data the event's fields with keys sorted, as `memindex
// publish` does a JSONL line holding the same fields.
func MsgID(ev memindex.Event, data []byte) string {
	if (ev.Type == "" || ev.Type == memindex.TypeMessage) && ev.SessionKey != "" && ev.Seq != 0 {
		return ev.Namespace + "/" + ev.SessionKey + "/" + ev.SessionID + "/" + strconv.FormatInt(ev.Seq, 10)
	}
	h := sha256.Sum256(data)
	return ev.Namespace + "/" + hex.EncodeToString(h[:16])
}

// canonicalJSON is ev's JSON with its keys sorted: the bytes `memindex
// publish` sends for a line of the same fields.
func canonicalJSON(ev memindex.Event) ([]byte, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	return json.Marshal(obj) // encoding/json sorts map keys
}
