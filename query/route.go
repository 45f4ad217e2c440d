package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"memindex"
	"memindex/store"
)

// Routing between workers.
//
// Every worker receives memindex.search.<ns> and memindex.read.<ns> in one
// queue group, whoever holds ns's partition. With ServiceConfig.Partitions
// and Holds set, a worker answers a request itself only when it holds the
// partition and has caught up; otherwise it forwards the request, headers
// and all, to memindex.psearch.<p>.<ns> (or memindex.pread.<p>.<ns>), which
// the ready holders of p subscribe to in one queue group (Serve), and relays
// the answer. Nobody listening there, or nobody answering within the
// search timeout, is a 503 that names the partition. A request received on
// a per-partition subject is always answered here, never forwarded again.
//
// Forwarding never blocks micro's handler goroutine: the forwarded request
// carries a reply subject under the service's own relay inbox, and the
// relay's subscription passes each answer on to the original requester.

// relay forwards requests to per-partition subjects and passes the answers
// back.
type relay struct {
	s       *Service
	inbox   string
	sub     *nats.Subscription
	timeout time.Duration

	mu      sync.Mutex // guards seq, pending, closed
	seq     uint64
	pending map[string]*relayed
	closed  bool
}

// relayed is one forwarded request waiting for its answer.
type relayed struct {
	reply    string
	endpoint string
	p        int
	timer    *time.Timer
}

// relayTimeout bounds how long a forwarded request waits for the holder's
// answer before the caller gets a 503 "retry". A request that reaches a
// holder just as it drops the partition (a lease moving) is never
// answered; the caller should hear "retry" well before its own timeout,
// not a silent one. A search takes milliseconds, so 2 s only cuts a
// holder that is gone or badly overloaded.
const relayTimeout = 2 * time.Second

// startRouting subscribes the relay inbox when routing is configured.
func (s *Service) startRouting() error {
	if s.cfg.Partitions <= 0 || s.cfg.Holds == nil {
		return nil
	}
	rl := &relay{s: s, inbox: s.nc.NewInbox(), timeout: relayTimeout, pending: map[string]*relayed{}}
	sub, err := s.nc.Subscribe(rl.inbox+".*", rl.answer)
	if err != nil {
		return fmt.Errorf("subscribe relay inbox: %w", err)
	}
	rl.sub = sub
	s.relay = rl
	s.served = map[int][]*nats.Subscription{}
	return nil
}

// stopRouting ends every per-partition subscription and the relay; the
// requests still waiting for an answer get a 503.
func (s *Service) stopRouting() {
	if s.relay == nil {
		return
	}
	s.servedMu.Lock()
	for p, subs := range s.served {
		for _, sub := range subs {
			if err := sub.Drain(); err != nil { // answered "stopping; retry", not dropped
				_ = sub.Unsubscribe()
			}
		}
		delete(s.served, p)
	}
	s.servedMu.Unlock()
	rl := s.relay
	_ = rl.sub.Unsubscribe()
	rl.mu.Lock()
	rl.closed = true
	waiting := rl.pending
	rl.pending = map[string]*relayed{}
	rl.mu.Unlock()
	for _, f := range waiting {
		f.timer.Stop()
		s.relayError(f, wireErr(ErrNotReady, "worker %s is stopping; retry", s.cfg.Worker))
	}
}

// Serve makes this worker answer partition p's per-partition subjects (it
// holds p and has caught up). Serving a partition served already is a
// no-op. It does nothing when routing is off.
func (s *Service) Serve(p int) error {
	if s.relay == nil {
		return nil
	}
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	if _, ok := s.served[p]; ok {
		return nil
	}
	search, err := s.nc.QueueSubscribe(memindex.PartitionSearchPrefix+"."+strconv.Itoa(p)+".*", memindex.PartitionQueueGroup,
		func(m *nats.Msg) { s.handleSearch(msgRequest{m}) })
	if err != nil {
		return fmt.Errorf("serve partition %d: %w", p, err)
	}
	read, err := s.nc.QueueSubscribe(memindex.PartitionReadPrefix+"."+strconv.Itoa(p)+".*", memindex.PartitionQueueGroup,
		func(m *nats.Msg) { s.handleRead(msgRequest{m}) })
	if err != nil {
		_ = search.Unsubscribe()
		return fmt.Errorf("serve partition %d: %w", p, err)
	}
	s.served[p] = []*nats.Subscription{search, read}
	// The server has the interest before anyone is told we serve.
	if err := s.nc.Flush(); err != nil {
		return fmt.Errorf("serve partition %d: flush: %w", p, err)
	}
	return nil
}

// Unserve stops answering partition p's per-partition subjects. The
// subscriptions are drained, not cut: a request the server routed here
// before it saw the unsubscribe (or that waits in the subscription's
// queue) is still answered, by then with a 503 "not held; retry" as the
// partition is gone, instead of being dropped unanswered and left to the
// requester's timeout.
func (s *Service) Unserve(p int) {
	if s.relay == nil {
		return
	}
	s.servedMu.Lock()
	subs := s.served[p]
	delete(s.served, p)
	s.servedMu.Unlock()
	for _, sub := range subs {
		if err := sub.Drain(); err != nil {
			_ = sub.Unsubscribe()
		}
	}
}

// Serving returns the partitions this worker answers per-partition
// subjects of.
func (s *Service) Serving() []int {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	out := make([]int, 0, len(s.served))
	for p := range s.served {
		out = append(out, p)
	}
	return out
}

// forwardTo returns the per-partition subject a request received on subject
// for namespace ns must go to, or false when this worker answers it.
func (s *Service) forwardTo(subject, ns string, prefix string) (string, int, bool) {
	if s.relay == nil || strings.HasPrefix(subject, memindex.PartitionSearchPrefix+".") ||
		strings.HasPrefix(subject, memindex.PartitionReadPrefix+".") {
		return "", 0, false
	}
	p := memindex.Partition(ns, s.cfg.Partitions)
	if s.cfg.Holds(p) {
		return "", 0, false
	}
	return prefix + "." + strconv.Itoa(p) + "." + ns, p, true
}

// forward sends r on to subject, the per-partition subject of partition p;
// the answer is relayed to r's reply subject.
func (s *Service) forward(r micro.Request, endpoint, subject string, p int) {
	rl := s.relay
	rl.mu.Lock()
	if rl.closed {
		rl.mu.Unlock()
		s.rejectForward(r, endpoint, wireErr(ErrNotReady, "worker %s is stopping; retry", s.cfg.Worker))
		return
	}
	if len(rl.pending) >= s.cfg.MaxPending {
		rl.mu.Unlock()
		s.rejectForward(r, endpoint, wireErr(ErrOverloaded, "worker %s has %d forwarded requests pending; retry shortly", s.cfg.Worker, s.cfg.MaxPending))
		return
	}
	rl.seq++
	token := strconv.FormatUint(rl.seq, 36)
	f := &relayed{reply: r.Reply(), endpoint: endpoint, p: p}
	rl.pending[token] = f
	f.timer = time.AfterFunc(rl.timeout, func() {
		if rl.take(token) != nil {
			s.relayError(f, wireErr(ErrNotReady, "partition %d: its holder did not answer within %s; retry", p, rl.timeout))
		}
	})
	rl.mu.Unlock()
	msg := &nats.Msg{Subject: subject, Reply: rl.inbox + "." + token, Data: r.Data(), Header: nats.Header(r.Headers())}
	if err := s.nc.PublishMsg(msg); err != nil {
		if rl.take(token) != nil {
			f.timer.Stop()
			s.relayError(f, wireErr(ErrNotReady, "partition %d: forward to its holder: %v; retry", p, err))
		}
	}
}

// take removes and returns the pending request of token, or nil when it
// was answered or timed out already.
func (rl *relay) take(token string) *relayed {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	f := rl.pending[token]
	delete(rl.pending, token)
	return f
}

// answer passes a holder's answer on to the original requester; the
// server's no-responders notice becomes a 503 that names the partition.
func (rl *relay) answer(m *nats.Msg) {
	token := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	f := rl.take(token)
	if f == nil {
		return // timed out already
	}
	f.timer.Stop()
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		rl.s.relayError(f, wireErr(ErrNotReady, "partition %d: no worker holds it ready (it is moving between workers or catching up); retry shortly", f.p))
		return
	}
	h := m.Header
	if h == nil {
		h = nats.Header{}
	}
	h.Set(memindex.HeaderForwardedBy, rl.s.cfg.Worker)
	_ = rl.s.nc.PublishMsg(&nats.Msg{Subject: f.reply, Data: m.Data, Header: h})
}

// relayError answers a forwarded request with err.
func (s *Service) relayError(f *relayed, err error) {
	s.cfg.Metrics.Rejected(f.endpoint, ReasonOf(codeFor(err)))
	code, msg, body := errorReply(err)
	_ = s.nc.PublishMsg(&nats.Msg{
		Subject: f.reply,
		Header:  nats.Header{micro.ErrorHeader: {msg}, micro.ErrorCodeHeader: {code}},
		Data:    body,
	})
}

func (s *Service) rejectForward(r micro.Request, endpoint string, err error) {
	s.cfg.Metrics.Rejected(endpoint, ReasonOf(codeFor(err)))
	respondError(r, err)
}

// subjectNamespace is the namespace token of a request subject: the last
// token of memindex.search.<ns> and memindex.psearch.<p>.<ns> alike.
func subjectNamespace(subject string) string {
	return subject[strings.LastIndexByte(subject, '.')+1:]
}

// msgRequest is a micro.Request over a plain subscription's message, so the
// per-partition subjects share the endpoints' handlers.
type msgRequest struct{ m *nats.Msg }

func (r msgRequest) Respond(data []byte, opts ...micro.RespondOpt) error {
	resp := &nats.Msg{Data: data, Header: nats.Header{}}
	for _, o := range opts {
		o(resp)
	}
	return r.m.RespondMsg(resp)
}

func (r msgRequest) RespondJSON(v any, opts ...micro.RespondOpt) error {
	data, err := json.Marshal(v)
	if err != nil {
		return micro.ErrMarshalResponse
	}
	return r.Respond(data, opts...)
}

func (r msgRequest) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	resp := &nats.Msg{Header: nats.Header{micro.ErrorHeader: {description}, micro.ErrorCodeHeader: {code}}, Data: data}
	for _, o := range opts {
		o(resp)
	}
	return r.m.RespondMsg(resp)
}

func (r msgRequest) Data() []byte           { return r.m.Data }
func (r msgRequest) Headers() micro.Headers { return micro.Headers(r.m.Header) }
func (r msgRequest) Subject() string        { return r.m.Subject }
func (r msgRequest) Reply() string          { return r.m.Reply }

// handedOver turns the error of a search or read that met its shard
// closed (its partition was dropped while it ran: a hand-over) into a 503
// to retry.
func handedOver(what, ns string, err error) error {
	if errors.Is(err, store.ErrClosed) {
		return wireErr(ErrNotReady, "%s %s: its partition moved to another worker while the %s ran; retry", what, ns, what)
	}
	return err
}
