package harness

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"memindex/client"
	"memindex/node"
)

// Nodes are the hooks of `memindex bench` and `memindex eval`: nodes of
// package node, bare servers as node starts its embedded one, and event
// messages by `memindex publish`'s rule (client.LineMsg).
var Nodes = Hooks{
	StartNode:   startNode,
	StartServer: func(dir string) (*server.Server, error) { return node.StartEmbedded("127.0.0.1:-1", dir) },
	EventMsg:    func(line []byte, ns string) (*nats.Msg, error) { return client.LineMsg(line, ns, false) },
}

// NodeConfig is the node.Config spec describes: serve's defaults
// (node.DefaultConfig) with the built-in embedder, an embedded server on a
// free loopback port unless spec names one, HTTP endpoints and snapshots
// off, no bound on the embedding cache, and what spec sets.
func NodeConfig(spec NodeSpec) node.Config {
	c := node.DefaultConfig()
	c.Listen, c.Data, c.Worker, c.NATS.Server = "127.0.0.1:-1", spec.Dir, spec.Worker, spec.Server
	c.Embedder.Name, c.Embedder.Dims = "builtin", spec.Dims
	c.HTTP, c.SnapshotInterval, c.CacheMaxBytes = "off", 0, 0
	c.EmbedBatch, c.EmbedConcurrency, c.SearchPending = 64, 4, 1024
	if spec.Partitions > 0 {
		c.PartitionCount = spec.Partitions
	}
	if spec.Batch > 0 {
		c.Batch = spec.Batch
	}
	if spec.ChunkTokens > 0 {
		c.ChunkTokens = spec.ChunkTokens
	}
	c.ChunkContext = spec.ContextMessages
	c.RRFVectorWeight, c.RRFKeywordWeight, c.RRFK = spec.RRFVector, spec.RRFKeyword, spec.RRFK
	c.Partitions, c.Group, c.LeaseTTL, c.ReadyLag = spec.Owned, spec.Group, spec.LeaseTTL, spec.ReadyLag
	if spec.Group != "" {
		c.Replicas = 1
	}
	return c
}

// startNode opens a node.Node as spec says, its logs discarded.
func startNode(ctx context.Context, spec NodeSpec) (Node, error) {
	n, err := node.Open(ctx, NodeConfig(spec), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return nodeNode{n}, nil
}

// nodeNode is a *node.Node seen as a Node.
type nodeNode struct{ *node.Node }

var _ Node = nodeNode{}

func (n nodeNode) Applied(p int) uint64 {
	a, _ := n.IngestWorker().Applied(p)
	return a
}
