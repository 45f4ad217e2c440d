package main

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"memindex/consumer"
	"memindex/embedder"
	"memindex/internal/harness"
	"memindex/store"
)

// The adapter between bench/eval (internal/harness) and today's in-process
// node (serve.go's startNode). Once the node is a package it becomes a
// mapping of harness.NodeSpec onto node.Config and node.Open.

// benchHooks start nodes and servers for `memindex bench` and `memindex eval`.
var benchHooks = harness.Hooks{
	StartNode: startHarnessNode,
	StartServer: func(dir string) (*server.Server, error) {
		return startEmbedded("127.0.0.1:-1", dir, nil)
	},
	EventMsg: func(line []byte, ns string) (*nats.Msg, error) { return eventMsg(line, ns, false) },
}

// startHarnessNode starts a node as spec says, with the built-in embedder
// and logs discarded.
func startHarnessNode(ctx context.Context, spec harness.NodeSpec) (harness.Node, error) {
	c := serveConfig{listen: "127.0.0.1:-1", data: spec.Dir, partitions: spec.Partitions,
		provider: providerFlags{name: "builtin", dims: spec.Dims}, batch: spec.Batch, embedBatch: 64, embedConc: 4,
		chunkTokens: spec.ChunkTokens, contextMsgs: contextMessages(spec.ContextMessages), worker: spec.Worker, maxPending: 1024,
		rrfVector: spec.RRFVector, rrfKeyword: spec.RRFKeyword, rrfK: spec.RRFK,
		owned: spec.Owned, group: spec.Group, leaseTTL: spec.LeaseTTL, readyLag: spec.ReadyLag}
	c.conn.server = spec.Server
	if spec.Group != "" {
		c.replicas = 1
	}
	n, err := startNode(ctx, c, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return harnessNode{n}, nil
}

// harnessNode is a *node seen as a harness.Node.
type harnessNode struct{ n *node }

var _ harness.Node = harnessNode{}

func (h harnessNode) URL() string                   { return h.n.url }
func (h harnessNode) Conn() *nats.Conn              { return h.n.nc }
func (h harnessNode) Partitions() int               { return h.n.cfg.partitions }
func (h harnessNode) Shards() map[int]*store.Shard  { return h.n.shardsNow() }
func (h harnessNode) Embedder() embedder.Embedder   { return h.n.cached }
func (h harnessNode) Holds(p int) bool              { return h.n.holds(p) }
func (h harnessNode) Run(ctx context.Context) error { return h.n.run(ctx) }
func (h harnessNode) Close(context.Context) error   { h.n.close(); return nil }

func (h harnessNode) Applied(p int) uint64 {
	h.n.genMu.RLock()
	defer h.n.genMu.RUnlock()
	a, _ := h.n.newest().worker.Applied(p)
	return a
}

func (h harnessNode) Readiness(ctx context.Context) []consumer.PartitionReadiness {
	h.n.genMu.RLock()
	w := h.n.serving.worker
	h.n.genMu.RUnlock()
	return w.Readiness(ctx)
}
