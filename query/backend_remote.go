package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
)

// remote is the remote backend: a Client over NATS.
type remote struct {
	nc    *nats.Conn
	owned bool // nc was made by openRemote: Close closes it
	c     *Client
	wait  time.Duration
	poll  time.Duration
}

var _ Manager = (*remote)(nil)

func openRemote(cfg RemoteConfig) (*remote, error) {
	r := &remote{nc: cfg.Conn, wait: cfg.StatusWait, poll: cfg.SyncPoll}
	if r.wait == 0 {
		r.wait = 500 * time.Millisecond
	}
	if r.poll == 0 {
		r.poll = 100 * time.Millisecond
	}
	if r.nc == nil {
		// Keep trying in the background: a fallback serves meanwhile.
		nc, err := nats.Connect(cfg.URL, nats.Name("memindex client"), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1))
		if err != nil {
			return nil, fmt.Errorf("remote backend: connect to %s: %w", cfg.URL, err)
		}
		r.nc, r.owned = nc, true
	}
	r.c = NewClient(r.nc)
	return r, nil
}

// connected fails fast, wrapping ErrUnavailable, when the connection is
// not up: a request would wait for the reconnect or its timeout.
func (r *remote) connected(op string) error {
	if r.nc.IsConnected() {
		return nil
	}
	return fmt.Errorf("%s: nats connection is %s: %w", op, strings.ToLower(r.nc.Status().String()), ErrUnavailable)
}

func (r *remote) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	if err := r.connected("search"); err != nil {
		return memindex.SearchResponse{}, err
	}
	resp, err := r.c.Search(ctx, req)
	if err != nil {
		return resp, err
	}
	resp.Backend = BackendRemote
	return resp, nil
}

func (r *remote) Read(ctx context.Context, req memindex.ReadRequest) (memindex.ReadResponse, error) {
	if err := r.connected("read"); err != nil {
		return memindex.ReadResponse{}, err
	}
	return r.c.Read(ctx, req)
}

// Status gathers the workers' statuses; none answering is ErrNoWorker.
func (r *remote) Status(ctx context.Context) ([]memindex.StatusResponse, error) {
	if err := r.connected("status"); err != nil {
		return nil, err
	}
	sts, err := r.c.Status(ctx, r.wait)
	if err != nil {
		return nil, err
	}
	if len(sts) == 0 {
		return nil, fmt.Errorf("status: %w", ErrNoWorker)
	}
	return withBackend(sts, BackendRemote), nil
}

// Sync polls the workers' statuses until every partition they report has
// nothing pending or unacknowledged, or has applied req.Seq. Nothing
// pending means everything published before the status was taken is
// applied; a partition that does not own req.Seq's event reaches that
// too. It needs at least one worker to answer.
func (r *remote) Sync(ctx context.Context, req SyncRequest) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("sync: %w (last: %v)", ctx.Err(), last)
			}
			return fmt.Errorf("sync: %w", ctx.Err())
		case <-t.C:
		}
		last = r.synced(ctx, req.Seq)
		if last == nil {
			return nil
		}
		t.Reset(r.poll)
	}
}

func (r *remote) synced(ctx context.Context, seq uint64) error {
	sts, err := r.Status(ctx)
	if err != nil {
		return err
	}
	for _, st := range sts {
		for _, p := range st.Partitions {
			if p.Pending == 0 && p.AckPending == 0 || seq > 0 && p.AppliedSeq >= seq {
				continue
			}
			return fmt.Errorf("worker %s partition %d: applied %d, %d pending, %d unacknowledged", st.Worker, p.Partition, p.AppliedSeq, p.Pending, p.AckPending)
		}
	}
	return nil
}

// health gathers the workers' health answers, ready ones only.
func (r *remote) health(ctx context.Context) ([]memindex.HealthResponse, error) {
	if err := r.connected("health"); err != nil {
		return nil, err
	}
	hs, err := r.c.Health(ctx, r.wait)
	if err != nil {
		return nil, err
	}
	var ready []memindex.HealthResponse
	for _, h := range hs {
		if h.Ready {
			ready = append(ready, h)
		}
	}
	if len(ready) == 0 {
		return nil, fmt.Errorf("no ready worker answered within %s: %w", r.wait, ErrNoWorker)
	}
	return ready, nil
}

// ProbeEmbeddings is nil when a ready worker reports its embeddings ok.
func (r *remote) ProbeEmbeddings(ctx context.Context) error {
	hs, err := r.health(ctx)
	if err != nil {
		return fmt.Errorf("probe embeddings: %w", err)
	}
	var why []string
	for _, h := range hs {
		if h.Embeddings == memindex.HealthOK {
			return nil
		}
		why = append(why, h.Worker+": "+h.Embeddings)
	}
	return fmt.Errorf("probe embeddings: %s: %w", strings.Join(why, "; "), ErrUnavailable)
}

// ProbeVectors is nil when a ready worker answers: its vector search
// answers even degraded (go-scan, vectors waiting).
func (r *remote) ProbeVectors(ctx context.Context) error {
	if _, err := r.health(ctx); err != nil {
		return fmt.Errorf("probe vectors: %w", err)
	}
	return nil
}

func (r *remote) Close(context.Context) error {
	if r.owned {
		r.nc.Close()
	}
	return nil
}
