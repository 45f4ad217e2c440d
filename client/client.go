package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"memindex"
)

// DefaultRequestTimeout bounds a Client search, read or publish whose
// context has no deadline.
const DefaultRequestTimeout = 10 * time.Second

// Client calls the memindex service over NATS. It is safe for concurrent use.
type Client struct {
	nc *nats.Conn
	// partitions is P when known (UsePartitions, or learnt from Status):
	// requests then go straight to the holders of the namespace's partition.
	partitions atomic.Int64

	jsOnce sync.Once // makes js for Publish
	js     jetstream.JetStream
	jsErr  error
}

// UsePartitions tells the client the stream's partition count p (memindex
// status shows it; Status learns it), so that Search and Read send straight
// to memindex.psearch.<partition>.<ns> / memindex.pread.<partition>.<ns>,
// which the ready holders of the partition answer, skipping the hop through
// whichever worker receives memindex.search.<ns>. 0 turns it off.
func (c *Client) UsePartitions(p int) { c.partitions.Store(int64(max(p, 0))) }

// request sends data on the namespace's partition subject when P is known,
// and on the routed subject otherwise, or when no holder answers there (the
// routed subject then answers why: a 503 naming the partition), or when
// the direct attempt gets no answer within half of ctx's time.
//
// A direct request can be lost without a trace: while a partition moves,
// a NATS server of a cluster may still route it to the server of a holder
// that has just left, which drops it (interest spreads between servers
// asynchronously). A routed request never waits silently: the worker that
// relays it answers 503 "retry" when the holder does not answer in time.
// Searches and reads change nothing, so asking again is safe.
func (c *Client) request(ctx context.Context, ns string, direct func(p int, ns string) string, routed string, data []byte) (*nats.Msg, error) {
	if p := int(c.partitions.Load()); p > 0 {
		actx, cancel := halfContext(ctx)
		msg, err := c.nc.RequestWithContext(actx, direct(memindex.Partition(ns, p), ns), data)
		cancel()
		switch {
		case err == nil:
			return msg, nil
		case errors.Is(err, nats.ErrNoResponders):
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		default:
			return nil, err
		}
	}
	return c.nc.RequestWithContext(ctx, routed, data)
}

// halfContext returns a context ending at half of ctx's remaining time (ctx
// itself when it has no deadline).
func halfContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(deadline)/2)
}

// NewClient returns a Client that sends its requests on nc.
func NewClient(nc *nats.Conn) *Client { return &Client{nc: nc} }

// Search sends req to the worker that serves req.Namespace and returns its
// answer. An error reply of the service is a *RemoteError (errors.Is matches
// memindex.ErrInvalid for 400, memindex.ErrTooLarge for 413, memindex.ErrOverloaded
// for 429 with RetryAfter set, and the other sentinels its Unwrap names);
// with no worker serving the error wraps
// ErrNoWorker. Without a deadline on ctx, DefaultRequestTimeout applies.
func (c *Client) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	var resp memindex.SearchResponse
	if err := memindex.CheckNamespace(req.Namespace); err != nil {
		return resp, fmt.Errorf("search: %w", err)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("search %s: encode request: %w", req.Namespace, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRequestTimeout)
		defer cancel()
	}
	msg, err := c.request(ctx, req.Namespace, memindex.PartitionSearchSubject, memindex.SearchSubject(req.Namespace), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return resp, fmt.Errorf("search %s: %w", req.Namespace, ErrNoWorker)
	case err != nil:
		return resp, fmt.Errorf("search %s: %w", req.Namespace, err)
	}
	if rerr := remoteError(msg); rerr != nil {
		return resp, rerr
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return resp, fmt.Errorf("search %s: decode response: %w", req.Namespace, err)
	}
	if resp.Hits == nil {
		resp.Hits = []memindex.Hit{}
	}
	return resp, nil
}

// Status asks every worker for its status and gathers the replies that
// arrive until wait passes or ctx ends, sorted by worker name. With no worker
// serving the error wraps ErrNoWorker; when ctx ends first, the replies so
// far come with the context's error.
func (c *Client) Status(ctx context.Context, wait time.Duration) ([]memindex.StatusResponse, error) {
	out, err := gather[memindex.StatusResponse](ctx, c.nc, memindex.StatusSubject, wait)
	slices.SortFunc(out, func(a, b memindex.StatusResponse) int { return strings.Compare(a.Worker, b.Worker) })
	for _, st := range out {
		if st.PartitionCount > 0 && c.partitions.Load() == 0 {
			c.partitions.Store(int64(st.PartitionCount))
		}
	}
	if err != nil {
		return out, fmt.Errorf("status: %w", err)
	}
	return out, nil
}

// Health asks every worker for its health probe answer and gathers the
// replies as Status does, sorted by worker name.
func (c *Client) Health(ctx context.Context, wait time.Duration) ([]memindex.HealthResponse, error) {
	out, err := gather[memindex.HealthResponse](ctx, c.nc, memindex.HealthSubject, wait)
	slices.SortFunc(out, func(a, b memindex.HealthResponse) int { return strings.Compare(a.Worker, b.Worker) })
	if err != nil {
		return out, fmt.Errorf("health: %w", err)
	}
	return out, nil
}

// gather sends one request on subject and decodes every reply that arrives
// until wait passes or ctx ends.
func gather[T any](ctx context.Context, nc *nats.Conn, subject string, wait time.Duration) ([]T, error) {
	// A plain inbox, not one under the request mux's wildcard: the server
	// addresses its no-responders notice to one subscription matching it.
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // nothing to do about it
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []T
	var errs []error
	for {
		msg, err := sub.NextMsgWithContext(wctx)
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, ErrNoWorker
		}
		if err != nil {
			break
		}
		if rerr := remoteError(msg); rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		var v T
		if err := json.Unmarshal(msg.Data, &v); err != nil {
			errs = append(errs, fmt.Errorf("decode reply: %w", err))
			continue
		}
		out = append(out, v)
	}
	if err := ctx.Err(); err != nil {
		return out, err
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// remoteError returns the *RemoteError an error reply carries, or nil.
func remoteError(msg *nats.Msg) error {
	code := msg.Header.Get(micro.ErrorCodeHeader)
	if code == "" {
		return nil
	}
	e := &RemoteError{Code: code, Message: msg.Header.Get(micro.ErrorHeader)}
	if secs, err := strconv.Atoi(msg.Header.Get(memindex.RetryAfterHeader)); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	var body memindex.ErrorBody
	if json.Unmarshal(msg.Data, &body) == nil && body.Message != "" {
		e.Message = body.Message
	}
	return e
}

// Read asks the worker that owns req.Namespace for a session's messages
// from req.From on (see memindex.ReadRequest). Errors are as for Search.
func (c *Client) Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	var resp memindex.ReadResponse
	if err := memindex.CheckNamespace(req.Namespace); err != nil {
		return resp, fmt.Errorf("read: %w", err)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("read %s: encode request: %w", req.Namespace, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRequestTimeout)
		defer cancel()
	}
	msg, err := c.request(ctx, req.Namespace, memindex.PartitionReadSubject, memindex.ReadSubject(req.Namespace), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return resp, fmt.Errorf("read %s: %w", req.Namespace, ErrNoWorker)
	case err != nil:
		return resp, fmt.Errorf("read %s: %w", req.Namespace, err)
	}
	if rerr := remoteError(msg); rerr != nil {
		return resp, rerr
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return resp, fmt.Errorf("read %s: decode response: %w", req.Namespace, err)
	}
	return resp, nil
}
