package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/sourcegraph/conc"
	"go.opentelemetry.io/otel/trace"

	"memindex"
)

// Service defaults and bounds.
const (
	// DefaultMaxPending is how many searches may wait for a pool worker
	// before the service answers 429.
	DefaultMaxPending = 256
	// searchTimeout bounds one search from the moment the service received it.
	searchTimeout = 10 * time.Second
	// statusTimeout bounds one call of the StatusFunc.
	statusTimeout = 5 * time.Second
	// searchRequestType is the optional "type" of a search request.
	searchRequestType = "search"
)

// ServiceConfig configures a Service. Zero fields take the defaults.
type ServiceConfig struct {
	// Version is the worker's semantic version, as micro requires (required).
	Version string
	// Workers is the number of searches run at once (default 2*GOMAXPROCS).
	Workers int
	// MaxPending is how many searches may wait for a worker; one more is
	// refused with 429 (default DefaultMaxPending).
	MaxPending int
	// Worker is this worker's name, reported in status and service metadata.
	Worker string
	// Metrics receives search timings and refusals (metrics.go); nil takes
	// none.
	Metrics Metrics
	// TracerProvider traces searches (trace.go); nil is off.
	TracerProvider trace.TracerProvider

	// Limits caps a search's query bytes and k (zero fields:
	// memindex.DefaultLimits); a query over the cap is answered 413, a k
	// over it 400, each naming the field and the limit.
	Limits memindex.Limits
	// RatePerNamespace is how many searches and reads a second one
	// namespace may run on this worker (token bucket, counted where the
	// request runs, not where it is forwarded from); one more is answered
	// 429 with a Retry-After header. 0: no limit.
	RatePerNamespace float64
	// RateBurst is the bucket size (default: RatePerNamespace rounded up).
	RateBurst int
	// MaxNamespaces bounds the namespaces whose buckets are kept; the least
	// recently used is dropped past it (default DefaultMaxNamespaces).
	MaxNamespaces int
	// Partitions is P, the stream's partition count. With Holds it turns
	// routing on (route.go): a request for a partition this worker does not
	// hold ready is forwarded to the partition's holders.
	Partitions int
	// Holds reports whether this worker holds partition p and has caught
	// up, so answers p's requests itself.
	Holds func(p int) bool
}

// Validate reports a setting that is out of range.
func (c ServiceConfig) Validate() error {
	switch {
	case c.Version == "":
		return errors.New("service config: version is required (semver, e.g. 1.2.3)")
	case c.Workers < 0:
		return fmt.Errorf("service config: workers must not be negative, got %d", c.Workers)
	case c.MaxPending < 0:
		return fmt.Errorf("service config: max pending must not be negative, got %d", c.MaxPending)
	case c.RatePerNamespace < 0 || math.IsNaN(c.RatePerNamespace) || math.IsInf(c.RatePerNamespace, 0):
		return fmt.Errorf("service config: rate per namespace must be a finite number >= 0 (0: no limit), got %g", c.RatePerNamespace)
	case c.RateBurst < 0:
		return fmt.Errorf("service config: rate burst must not be negative, got %d", c.RateBurst)
	case c.MaxNamespaces < 0:
		return fmt.Errorf("service config: max namespaces must not be negative, got %d", c.MaxNamespaces)
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("service config: %w", err)
	}
	return nil
}

func (c ServiceConfig) withDefaults() ServiceConfig {
	if c.Workers <= 0 {
		c.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.Metrics == nil {
		c.Metrics = MetricsFuncs{}
	}
	c.Limits = c.Limits.WithDefaults()
	if c.RateBurst == 0 {
		c.RateBurst = int(math.Ceil(c.RatePerNamespace))
	}
	if c.MaxNamespaces == 0 {
		c.MaxNamespaces = DefaultMaxNamespaces
	}
	return c
}

// StatusFunc reports this worker's status for the status endpoint. The
// service fills Type, Version and Worker when it leaves them empty.
type StatusFunc func(ctx context.Context) memindex.StatusResponse

// Service is the NATS micro service "memindex" of one worker: the search
// endpoint on memindex.search.<namespace> (one queue group: any worker may
// receive a search) and the status endpoint on memindex.StatusSubject (no
// queue group: every worker answers). Searches run on a bounded pool; when
// MaxPending searches wait, the next is refused with 429 at once.
type Service struct {
	nc     *nats.Conn
	cfg    ServiceConfig
	eng    *Engine
	status StatusFunc
	svc    micro.Service
	trace  tracing
	// limiter is the per-namespace rate limit (ratelimit.go); nil: none.
	limiter *namespaceLimiter

	// ctx is the parent of every search; cancel ends them when Stop gives up.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.RWMutex // guards closed and sends on jobs
	closed bool
	jobs   chan job

	workers conc.WaitGroup
	done    chan struct{} // closed when every pool worker has returned

	// Routing (route.go): nil relay when off; served holds the
	// per-partition subscriptions.
	relay    *relay
	servedMu sync.Mutex
	served   map[int][]*nats.Subscription
	stopOnce sync.Once
	stopErr  error
}

// job is one accepted search waiting for a pool worker. It keeps the reply
// subject, not the micro.Request: micro reads the request's state once the
// handler returns, so a pool worker must not respond through it.
type job struct {
	reply    string
	req      memindex.SearchRequest
	received time.Time
	span     trace.Span // the search span; a no-op when tracing is off
}

// NewService registers the memindex micro service on nc and starts its
// search pool. status may be nil (status then reports only the worker name).
// Stop ends what NewService started.
func NewService(nc *nats.Conn, cfg ServiceConfig, e *Engine, status StatusFunc) (_ *Service, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if e == nil {
		return nil, errors.New("new service: engine is nil")
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{
		nc:     nc,
		cfg:    cfg,
		eng:    e,
		status: status,
		trace:  newTracing(cfg.TracerProvider),
		ctx:    ctx,
		cancel: cancel,
		jobs:   make(chan job, cfg.MaxPending),
		done:   make(chan struct{}),

		limiter: newNamespaceLimiter(cfg.RatePerNamespace, cfg.RateBurst, cfg.MaxNamespaces),
	}
	if err := s.startRouting(); err != nil {
		cancel()
		return nil, err
	}
	defer func() {
		if err != nil {
			s.stopRouting()
		}
	}()
	mcfg := micro.Config{
		Name:        memindex.ServiceName,
		Version:     cfg.Version,
		Description: "memindex hybrid search (vector + BM25) over agent memories",
	}
	if cfg.Worker != "" {
		mcfg.Metadata = map[string]string{"worker": cfg.Worker}
	}
	svc, err := micro.AddService(nc, mcfg)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("add micro service: %w", err)
	}
	s.svc = svc
	if err := svc.AddEndpoint("search", micro.HandlerFunc(s.handleSearch),
		micro.WithEndpointSubject(memindex.SearchSubjectPrefix+".*")); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("add search endpoint: %w", err), svc.Stop())
	}
	if err := svc.AddEndpoint("read", micro.HandlerFunc(s.handleRead),
		micro.WithEndpointSubject(memindex.ReadSubjectPrefix+".*")); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("add read endpoint: %w", err), svc.Stop())
	}
	if err := svc.AddEndpoint("health", micro.HandlerFunc(s.handleHealth),
		micro.WithEndpointSubject(memindex.HealthSubject), micro.WithEndpointQueueGroupDisabled()); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("add health endpoint: %w", err), svc.Stop())
	}
	if err := svc.AddEndpoint("status", micro.HandlerFunc(s.handleStatus),
		micro.WithEndpointSubject(memindex.StatusSubject), micro.WithEndpointQueueGroupDisabled()); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("add status endpoint: %w", err), svc.Stop())
	}
	// Make sure the server has the subscriptions before saying we serve.
	if err := nc.Flush(); err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("flush service subscriptions: %w", err), svc.Stop())
	}
	for range cfg.Workers {
		s.workers.Go(s.work)
	}
	go func() { // owned by Stop, which waits on done
		defer close(s.done)
		s.workers.Wait()
	}()
	return s, nil
}

// Stop stops the micro service (its subscriptions drain; a search that
// arrives meanwhile is answered 503) and waits for the searches in flight
// and pending to finish. When ctx ends first, Stop cancels them and returns
// the context's error. Calling Stop again waits again.
func (s *Service) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.stopErr = s.svc.Stop()
		s.stopRouting()
		s.mu.Lock()
		s.closed = true
		close(s.jobs)
		s.mu.Unlock()
	})
	select {
	case <-s.done:
		s.cancel()
		if s.stopErr != nil {
			return fmt.Errorf("stop service: %w", s.stopErr)
		}
		return nil
	case <-ctx.Done():
		s.cancel()
		return fmt.Errorf("stop service: searches still running: %w", ctx.Err())
	}
}

// handleSearch runs on micro's one goroutine of the search subscription: it
// only decodes, validates and hands the search to the pool.
func (s *Service) handleSearch(r micro.Request) {
	if r.Reply() == "" {
		return // a plain publish: nobody to answer
	}
	received := time.Now()
	span := s.trace.start(r, received)
	req, err := decodeSearch(s.cfg.Limits, r.Subject(), r.Data())
	if err != nil {
		s.rejectSearch(r, span, err)
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.rejectSearch(r, span, wireErr(ErrNotReady, "worker %s is stopping; retry", s.cfg.Worker))
		return
	}
	if subject, p, ok := s.forwardTo(r.Subject(), req.Namespace, memindex.PartitionSearchPrefix); ok {
		s.trace.endSearch(span, nil, nil, "")
		s.forward(r, EndpointSearch, subject, p)
		return
	}
	if err := s.allow(req.Namespace, received); err != nil {
		s.rejectSearch(r, span, err)
		return
	}
	select {
	case s.jobs <- job{reply: r.Reply(), req: req, received: received, span: span}:
	default:
		s.rejectSearch(r, span, &retryAfterError{after: time.Second,
			error: wireErr(ErrOverloaded, "worker %s has %d searches pending; retry shortly", s.cfg.Worker, s.cfg.MaxPending)})
	}
}

// allow takes a token of namespace ns at now, or returns the 429 to answer.
// An invalid namespace is let through: validation rejects it without a
// bucket kept for it.
func (s *Service) allow(ns string, now time.Time) error {
	if s.limiter == nil || !memindex.ValidNamespace(ns) {
		return nil
	}
	ok, wait := s.limiter.allow(ns, now)
	if ok {
		return nil
	}
	secs := retrySeconds(wait)
	return &retryAfterError{after: time.Duration(secs) * time.Second,
		error: wireErr(ErrOverloaded, "namespace %s is over its limit of %g searches and reads a second on worker %s; retry after %ds",
			ns, s.cfg.RatePerNamespace, s.cfg.Worker, secs)}
}

// decodeSearch parses and validates a search request received on subject
// within limits. The namespace comes from the subject when the body names
// none.
func decodeSearch(limits memindex.Limits, subject string, data []byte) (memindex.SearchRequest, error) {
	var req memindex.SearchRequest
	if len(data) > memindex.MaxRequestSize {
		return req, wireErr(memindex.ErrTooLarge, "search request is %d bytes, over the limit of %d", len(data), memindex.MaxRequestSize)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return req, wireErr(memindex.ErrInvalid, `search request is empty; send a JSON object like {"query":"what did Ana say?"}`)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return req, wireErr(memindex.ErrInvalid, "search request is not a JSON search object: %v", err)
	}
	if req.Type != "" && req.Type != searchRequestType {
		return req, fmt.Errorf("invalid search request: %w", &memindex.FieldError{Field: "type", Reason: fmt.Sprintf("%q is not %q", req.Type, searchRequestType), Err: memindex.ErrInvalid})
	}
	ns := subjectNamespace(subject)
	switch {
	case req.Namespace == "":
		req.Namespace = ns
	case req.Namespace != ns:
		return req, fmt.Errorf("invalid search request: %w", &memindex.FieldError{Field: "namespace", Reason: fmt.Sprintf("%q differs from the subject's namespace %q", req.Namespace, ns), Err: memindex.ErrInvalid})
	}
	if err := limits.NormalizeSearch(&req); err != nil {
		return req, fmt.Errorf("invalid search request: %w", err)
	}
	return req, nil
}

// work is one pool worker: it runs searches until Stop closes jobs.
func (s *Service) work() {
	for j := range s.jobs {
		s.run(j)
	}
}

func (s *Service) run(j job) {
	ctx, cancel := context.WithDeadline(s.trace.context(s.ctx, j.span), j.received.Add(searchTimeout))
	defer cancel()
	resp, err := s.search(ctx, j.req)
	if err == nil {
		var data []byte
		if data, err = json.Marshal(resp); err == nil {
			s.cfg.Metrics.Searched(&resp, time.Since(j.received), nil)
			_ = s.nc.Publish(j.reply, data) // a lost reply is the requester's timeout
			s.trace.endSearch(j.span, &resp, nil, "")
			return
		}
		err = fmt.Errorf("encode search response: %w", err)
	}
	s.cfg.Metrics.Searched(nil, time.Since(j.received), err)
	s.trace.endSearch(j.span, nil, err, codeFor(err))
	s.cfg.Metrics.Rejected(EndpointSearch, ReasonOf(codeFor(err)))
	code, msg, body := errorReply(err)
	_ = s.nc.PublishMsg(&nats.Msg{
		Subject: j.reply,
		Header:  nats.Header{micro.ErrorHeader: {msg}, micro.ErrorCodeHeader: {code}},
		Data:    body,
	})
}

// search runs one search and turns a panic into an error, so one bad request
// cannot take the worker down.
func (s *Service) search(ctx context.Context, req memindex.SearchRequest) (resp memindex.SearchResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("search %s panicked: %v", req.Namespace, p)
		}
	}()
	resp, err = s.eng.Search(ctx, req)
	return resp, handedOver("search", req.Namespace, err)
}

// handleRead answers a read request inline: it is one indexed SQLite
// range read, bounded by memindex.MaxReadCount messages.
func (s *Service) handleRead(r micro.Request) {
	if r.Reply() == "" {
		return
	}
	var req memindex.ReadRequest
	data := r.Data()
	switch {
	case len(data) > memindex.MaxRequestSize:
		s.rejectRead(r, wireErr(memindex.ErrTooLarge, "read request is %d bytes, over the limit of %d", len(data), memindex.MaxRequestSize))
		return
	case json.Unmarshal(data, &req) != nil:
		s.rejectRead(r, wireErr(memindex.ErrInvalid, `read request is not a JSON object like {"sessionKey":"chat","sessionId":"s1","from":1,"count":20}`))
		return
	}
	ns := subjectNamespace(r.Subject())
	switch {
	case req.Namespace == "":
		req.Namespace = ns
	case req.Namespace != ns:
		s.rejectRead(r, fmt.Errorf("invalid read request: %w", &memindex.FieldError{Field: "namespace", Reason: fmt.Sprintf("%q differs from the subject's namespace %q", req.Namespace, ns), Err: memindex.ErrInvalid}))
		return
	}
	if subject, p, ok := s.forwardTo(r.Subject(), req.Namespace, memindex.PartitionReadPrefix); ok {
		s.forward(r, EndpointRead, subject, p)
		return
	}
	if err := s.allow(req.Namespace, time.Now()); err != nil {
		s.rejectRead(r, err)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, searchTimeout)
	defer cancel()
	resp, err := s.eng.Read(ctx, req)
	if err != nil {
		s.rejectRead(r, handedOver("read", req.Namespace, err))
		return
	}
	_ = r.RespondJSON(resp)
}

// handleHealth answers a probe with this worker's condensed status.
func (s *Service) handleHealth(r micro.Request) {
	st := memindex.StatusResponse{Worker: s.cfg.Worker, Ready: true}
	if s.status != nil {
		ctx, cancel := context.WithTimeout(s.ctx, statusTimeout)
		st = s.status(ctx)
		cancel()
	}
	if st.Worker == "" {
		st.Worker = s.cfg.Worker
	}
	_ = r.RespondJSON(memindex.HealthOf(st))
}

func (s *Service) handleStatus(r micro.Request) {
	st := memindex.StatusResponse{}
	if s.status != nil {
		ctx, cancel := context.WithTimeout(s.ctx, statusTimeout)
		st = s.status(ctx)
		cancel()
	}
	if st.Type == "" {
		st.Type = "status"
	}
	if st.Version == 0 {
		st.Version = 1
	}
	if st.Worker == "" {
		st.Worker = s.cfg.Worker
	}
	if err := r.RespondJSON(st); err != nil {
		respondError(r, fmt.Errorf("encode status: %w", err))
	}
}

// rejectSearch answers a search that will not run with err, and counts it.
func (s *Service) rejectSearch(r micro.Request, span trace.Span, err error) {
	code := codeFor(err)
	s.cfg.Metrics.Rejected(EndpointSearch, ReasonOf(code))
	s.trace.endSearch(span, nil, err, code)
	respondError(r, err)
}

// rejectRead answers a read request with err, and counts it.
func (s *Service) rejectRead(r micro.Request, err error) {
	s.cfg.Metrics.Rejected(EndpointRead, ReasonOf(codeFor(err)))
	respondError(r, err)
}

// retryAfterError is a refusal (429) that says when to retry: the
// memindex.RetryAfterHeader of the reply, in whole seconds.
type retryAfterError struct {
	error
	after time.Duration
}

func (e *retryAfterError) Unwrap() error { return e.error }

// wireError is an error whose message is meant for the requester as it is,
// without the sentinel's text appended.
type wireError struct {
	msg string
	err error
}

func wireErr(sentinel error, format string, args ...any) error {
	return &wireError{msg: fmt.Sprintf(format, args...), err: sentinel}
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) Unwrap() error { return e.err }

// respondError answers r with a micro error: the wire code of err in the
// Nats-Service-Error-Code header, its message in Nats-Service-Error, and a
// JSON memindex.ErrorBody. A failed reply cannot be reported to anyone; micro
// counts it in the endpoint's stats.
func respondError(r micro.Request, err error) {
	code, msg, body := errorReply(err)
	var opts []micro.RespondOpt
	if ra := (*retryAfterError)(nil); errors.As(err, &ra) {
		opts = append(opts, micro.WithHeaders(micro.Headers{memindex.RetryAfterHeader: {strconv.Itoa(retrySeconds(ra.after))}}))
	}
	_ = r.Error(code, msg, body, opts...)
}

// errorReply returns the wire code of err, its message fit for a header and
// the JSON memindex.ErrorBody.
func errorReply(err error) (code, msg string, body []byte) {
	code, msg = codeFor(err), headerSafe(err.Error())
	body, _ = json.Marshal(memindex.ErrorBody{Code: code, Message: msg}) // two strings: cannot fail
	return code, msg, body
}

// headerSafe makes msg a valid, non-empty NATS header value.
func headerSafe(msg string) string {
	msg = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, msg)
	if msg == "" {
		return "error"
	}
	return msg
}
