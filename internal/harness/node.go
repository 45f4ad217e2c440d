package harness

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"memindex/consumer"
	"memindex/embedder"
	"memindex/store"
)

// Node is an in-process worker as `memindex serve` starts it, seen from a
// benchmark or an evaluation.
type Node interface {
	// URL is the client URL of the NATS server the node is connected to.
	URL() string
	// Conn is the node's own NATS connection.
	Conn() *nats.Conn
	// Partitions is P, the stream's partition count.
	Partitions() int
	// Applied is the last stream sequence the ingesting generation has
	// applied to partition p (0 when it does not hold p).
	Applied(p int) uint64
	// Shards are the shards of the partitions the node holds now.
	Shards() map[int]*store.Shard
	// Embedder is the node's embedder stack (cache included).
	Embedder() embedder.Embedder
	// Holds reports whether the node serves partition p.
	Holds(p int) bool
	// Readiness is each held partition's consumer state.
	Readiness(ctx context.Context) []consumer.PartitionReadiness
	// Run consumes and serves until ctx ends, then shuts the node down.
	Run(ctx context.Context) error
	// Close undoes the start of a node that did not run; after Run it
	// does nothing.
	Close(ctx context.Context) error
}

// NodeSpec is what bench and eval choose about a node; the adapter fills
// in the rest as `memindex serve`'s defaults would, with the built-in
// embedder.
type NodeSpec struct {
	// Dir is the data directory (shards, embedding cache, the embedded
	// NATS server's store).
	Dir string
	// Worker names the node in status and in the micro service's metadata.
	Worker string
	// Server is the NATS URL to connect to; empty starts an embedded
	// server on a free loopback port.
	Server string
	// Partitions is P of a new stream (0: the existing stream's, or 16).
	Partitions int
	// Owned is a static partition set in --partitions syntax (empty: all);
	// Group, when set, makes the node a member of that dynamic group with
	// leases of LeaseTTL instead.
	Owned    string
	Group    string
	LeaseTTL time.Duration
	// Dims of the built-in embedder's vectors (0: its default).
	Dims int
	// Batch is the most events applied in one transaction.
	Batch int
	// ChunkTokens and ContextMessages are --chunk-tokens and
	// --chunk-context (0: no context).
	ChunkTokens     int
	ContextMessages int
	// RRFVector, RRFKeyword and RRFK are the fusion flags (0: serve's
	// default for the embedder).
	RRFVector, RRFKeyword, RRFK float64
	// ReadyLag is --ready-lag: events a gained partition may lag and serve.
	ReadyLag int
}

// Hooks are what the binary hands bench and eval: how to start a node and
// a bare NATS server, and how `memindex publish` turns a line into an
// event message.
type Hooks struct {
	// StartNode starts a node; the caller runs it (Start) and stops it.
	StartNode func(ctx context.Context, spec NodeSpec) (Node, error)
	// StartServer starts a NATS server with JetStream storing under dir,
	// on a free loopback port.
	StartServer func(dir string) (*server.Server, error)
	// EventMsg turns one JSONL line into a message on its namespace's
	// event subject (namespace when the line names none) with its
	// Nats-Msg-Id.
	EventMsg func(line []byte, namespace string) (*nats.Msg, error)
}

// ErrNoHooks is returned when a run needs a hook the binary did not give.
var ErrNoHooks = errors.New("harness: hook not set")

// Start starts a node by h.StartNode and runs it; stop ends the run and
// waits for its shutdown.
func (h Hooks) Start(ctx context.Context, spec NodeSpec) (n Node, stop func() error, err error) {
	if h.StartNode == nil || h.EventMsg == nil {
		return nil, nil, ErrNoHooks
	}
	if n, err = h.StartNode(ctx, spec); err != nil {
		return nil, nil, err
	}
	return n, Run(ctx, n), nil
}

// Run runs a started node until the returned stop is called, which waits
// for the shutdown and returns Run's error.
func Run(ctx context.Context, n Node) (stop func() error) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }() // waited for by stop
	return func() error {
		cancel()
		err := <-done
		return errors.Join(err, n.Close(context.Background()))
	}
}
