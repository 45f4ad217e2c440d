package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"memindex"
)

// StatusInput is the arguments of memory_status.
type StatusInput struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the memory namespace to use; leave it out for the server's own (other namespaces only when the server allows them)"`
}

// StatusOutput is the result of memory_status: the health of the workers
// that hold the namespace's partition.
type StatusOutput struct {
	Namespace      string `json:"namespace"`
	Partition      int    `json:"partition" jsonschema:"the partition holding the namespace (-1 when the workers did not say how many there are)"`
	PartitionCount int    `json:"partitionCount"`
	// Health is the best of the holders' (a search needs one ready holder);
	// down when none holds the partition.
	Health   string   `json:"health" jsonschema:"ok, degraded or down: ok when a worker holding the namespace is healthy; down when none is ready (searches then fail)"`
	Problems []string `json:"problems" jsonschema:"what makes the health less than ok, in words"`
	Holders  []Holder `json:"holders" jsonschema:"the workers holding the namespace's partition"`
	Workers  int      `json:"workers" jsonschema:"how many workers answered"`
}

// Holder is one worker's copy of the namespace's partition.
type Holder struct {
	Worker   string `json:"worker"`
	Health   string `json:"health" jsonschema:"the worker's health: ok, degraded or down"`
	Embedder string `json:"embedder" jsonschema:"the embedding provider and model"`
	// Status is the partition's status at this worker; its counts are the
	// partition's, which other namespaces may share.
	Status memindex.PartitionStatus `json:"status" jsonschema:"the partition at this worker: appliedSeq, pending (events not yet applied), messages, chunks, sessions, vectorsWaiting, dlq, role, state; counts cover every namespace of the partition"`
}

func (s *Server) addStatus() {
	addTool(s, &mcp.Tool{
		Name:  "memory_status",
		Title: "Memory status",
		Description: "Say whether memory is up and up to date for the namespace: the health of the workers holding it (ok, degraded, down) and why, " +
			"and per worker the events applied and still pending, messages, chunks, sessions and vectors still to compute. " +
			"Call it when a search fails or seems to miss something just added.",
		InputSchema: inputSchema[StatusInput](nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, s.status)
}

// status answers memory_status from the workers' statuses, as `memindex
// status` gathers them.
func (s *Server) status(ctx context.Context, in StatusInput) (string, StatusOutput, error) {
	ns, err := s.namespace(in.Namespace)
	if err != nil {
		return "", StatusOutput{}, err
	}
	if err := memindex.CheckNamespace(ns); err != nil {
		return "", StatusOutput{}, err
	}
	ctx, cancel, err := s.begin(ctx)
	if err != nil {
		return "", StatusOutput{}, err
	}
	defer cancel()
	sts, err := s.c.Status(ctx, s.cfg.StatusWait)
	if err != nil {
		return "", StatusOutput{}, err
	}
	out := StatusOutput{Namespace: ns, Partition: -1, Workers: len(sts), Health: memindex.HealthDown, Problems: []string{}, Holders: []Holder{}}
	for _, st := range sts {
		out.PartitionCount = max(out.PartitionCount, st.PartitionCount)
	}
	if out.PartitionCount > 0 {
		out.Partition = memindex.Partition(ns, out.PartitionCount)
	}
	rank := map[string]int{memindex.HealthOK: 2, memindex.HealthDegraded: 1, memindex.HealthDown: 0}
	for _, st := range sts {
		for _, p := range st.Partitions {
			if p.Partition != out.Partition {
				continue
			}
			h := memindex.HealthOf(st)
			out.Holders = append(out.Holders, Holder{Worker: st.Worker, Health: h.Status, Embedder: st.Embedder.Provider + "/" + st.Embedder.Model, Status: p})
			if rank[h.Status] > rank[out.Health] {
				out.Health = h.Status
			}
			for _, pr := range h.Problems {
				out.Problems = append(out.Problems, st.Worker+": "+pr)
			}
		}
	}
	switch {
	case len(sts) == 0:
		out.Problems = append(out.Problems, fmt.Sprintf("no memindex worker answered within %s; start one with `memindex serve`", s.cfg.StatusWait))
	case len(out.Holders) == 0:
		out.Problems = append(out.Problems, fmt.Sprintf("no worker holds partition %d of namespace %s: its searches fail until one does", out.Partition, ns))
	}
	return statusText(out), out, nil
}

// statusText is a status as an agent reads it.
func statusText(o StatusOutput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Memory of namespace %s: %s (partition %d of %d, %d workers answered).\n", o.Namespace, o.Health, o.Partition, o.PartitionCount, o.Workers)
	for _, h := range o.Holders {
		p := h.Status
		fmt.Fprintf(&b, "- worker %s (%s, %s %s): applied seq %d, %d events pending, %d messages, %d chunks, %d sessions, %d vectors waiting, %d dead letters\n",
			h.Worker, h.Health, p.Role, p.State, p.AppliedSeq, p.Pending, p.Messages, p.Chunks, p.Sessions, p.VectorsWaiting, p.DLQ)
	}
	for _, p := range o.Problems {
		fmt.Fprintf(&b, "Problem: %s\n", p)
	}
	return b.String()
}
