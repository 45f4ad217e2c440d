package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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

// connected fails fast, wrapping memindex.ErrUnavailable, when the connection is
// not up: a request would wait for the reconnect or its timeout.
func (r *remote) connected(op string) error {
	if r.nc.IsConnected() {
		return nil
	}
	return fmt.Errorf("%s: nats connection is %s: %w", op, strings.ToLower(r.nc.Status().String()), memindex.ErrUnavailable)
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

// Sync polls the workers' statuses until every partition has nothing
// pending or unacknowledged at each worker that holds it (replicas too), or
// has applied req.Seq. Nothing pending means everything published before
// the status was taken is applied; a partition that does not own req.Seq's
// event reaches that too. A partition no worker reports (nobody holds it,
// or its holder did not answer within StatusWait) is not synced, and one
// whose status carries an error must read as caught up on two polls in a
// row: a worker that cannot read its consumer's counts (it recreates the
// consumer after an error) reports nothing pending. Sync fails at once,
// wrapping ErrNoWorker or memindex.ErrUnavailable, when nothing subscribes to the
// status subject or the connection is down, as Search does: polling would
// only hide it until the deadline. When ctx ends first the error wraps
// ctx's and says what was still behind.
func (r *remote) Sync(ctx context.Context, req SyncRequest) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	var doubtful map[string]bool
	for {
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("sync: %w (last: %w)", ctx.Err(), last)
			}
			return fmt.Errorf("sync: %w", ctx.Err())
		case <-t.C:
		}
		var err error
		doubtful, err = r.synced(ctx, req.Seq, doubtful)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil: // the status was cut short; keep the last reason
		case errors.Is(err, ErrNoWorker), errors.Is(err, memindex.ErrUnavailable):
			return fmt.Errorf("sync: %w", err)
		default:
			last = err
		}
		t.Reset(r.poll)
	}
}

// synced reports why the workers' statuses do not show every partition
// applied up to seq (see Sync), or nil. doubtful holds the partitions
// ("worker/partition") whose status had an error but showed nothing pending
// at the previous poll; it returns those of this one.
func (r *remote) synced(ctx context.Context, seq uint64, doubtful map[string]bool) (map[string]bool, error) {
	if err := r.connected("status"); err != nil {
		return nil, err
	}
	// Not r.Status: no status within the wait (a worker slow to answer)
	// is a reason to ask again, not ErrNoWorker; only no responders is.
	sts, err := r.c.Status(ctx, r.wait)
	if err != nil {
		return nil, err
	}
	if len(sts) == 0 {
		return nil, fmt.Errorf("no worker answered its status within %s", r.wait)
	}
	count := 0
	reported := map[int]bool{}
	now := map[string]bool{}
	var behind error
	for _, st := range sts {
		count = max(count, st.PartitionCount)
		for _, p := range st.Partitions {
			reported[p.Partition] = true
			key := st.Worker + "/" + strconv.Itoa(p.Partition)
			switch {
			case seq > 0 && p.AppliedSeq >= seq, p.Pending == 0 && p.AckPending == 0 && p.Error == "":
			case p.Pending == 0 && p.AckPending == 0:
				now[key] = true
				if !doubtful[key] && behind == nil {
					behind = fmt.Errorf("worker %s partition %d: applied %d, nothing pending, but its status says %q; asking again", st.Worker, p.Partition, p.AppliedSeq, p.Error)
				}
			case behind == nil:
				behind = fmt.Errorf("worker %s partition %d: applied %d, %d pending, %d unacknowledged", st.Worker, p.Partition, p.AppliedSeq, p.Pending, p.AckPending)
			}
		}
	}
	if behind != nil {
		return now, behind
	}
	for p := range count {
		if !reported[p] {
			return now, fmt.Errorf("partition %d: no worker reported it within %s (nobody holds it, or it is moving between workers)", p, r.wait)
		}
	}
	return now, nil
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
	return fmt.Errorf("probe embeddings: %s: %w", strings.Join(why, "; "), memindex.ErrUnavailable)
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
