package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"

	"memindex"
	"memindex/client"
	"memindex/query"
)

func runSearch(ctx context.Context, args []string, stdout io.Writer) error {
	var conn connFlags
	fs := newFlagSet("search", `--namespace NS [flags] "question"`)
	conn.register(fs, nats.DefaultURL)
	var req memindex.SearchRequest
	fs.StringVar(&req.Namespace, "namespace", env("MEMINDEX_NAMESPACE", ""), "namespace to search (MEMINDEX_NAMESPACE)")
	fs.StringVar(&req.SessionKey, "session", "", "only this sessionKey")
	fs.StringVar(&req.SessionID, "session-id", "", "only this sessionId")
	fs.IntVar(&req.K, "k", 0, "most hits to return (0: 10, or the --budget)")
	fs.IntVar(&req.Budget, "budget", 0, "most messages to return: the best hits in rank order while they fit (a message, a file section or a record counts one)")
	fs.IntVar(&req.BudgetTokens, "budget-tokens", 0, "most estimated tokens of the hits and their --around context together")
	fs.IntVar(&req.Around, "around", 0, "attach up to N messages before and after each session hit, as context (not counted as hits; at most 10)")
	fs.Float64Var(&req.MinScore, "min-score", 0, "drop hits scoring below this (0..1)")
	fs.StringVar(&req.Mode, "mode", memindex.ModeHybrid, "hybrid, keyword or vector")
	fs.StringVar(&req.Fusion, "fusion", memindex.FusionRRF, "rrf or weighted")
	fs.StringVar(&req.After, "after", "", "only chunks at or after this RFC 3339 time")
	fs.StringVar(&req.Before, "before", "", "only chunks before this RFC 3339 time")
	fs.StringVar(&req.UpdatedAfter, "updated-after", "", "only hits last written at or after this RFC 3339 time (a record's or file's last upsert)")
	fs.BoolVar(&req.Explain, "explain", false, "show per-leg scores and ranks, and what each stage of the search did")
	fs.BoolVar(&req.MMR, "mmr", false, "re-rank by maximal marginal relevance (fewer near-duplicate hits)")
	fs.Float64Var(&req.MMRLambda, "mmr-lambda", 0, "with --mmr: relevance vs novelty, 0..1 (0: 0.7)")
	fs.Float64Var(&req.HalfLifeHours, "half-life", 0, "decay older session and record hits by half every so many hours (0: off)")
	fs.StringVar(&req.DirPath, "dir-path", "", "a project: its memory files and the global ones (other projects' files are left out)")
	fs.Func("source", "only this source: sessions or files (repeatable)", func(v string) error {
		req.Sources = append(req.Sources, v)
		return nil
	})
	asJSON := fs.Bool("json", false, "print the response as JSON")
	backend := fs.String("backend", env("MEMINDEX_BACKEND", client.BackendRemote), "where to search: remote (the workers over NATS), local (shard files, read-only), qmd or none (MEMINDEX_BACKEND)")
	localPath := fs.String("local", env("MEMINDEX_LOCAL", ""), "for --backend or --fallback local: a data directory or a shard file (MEMINDEX_LOCAL)")
	fallback := fs.String("fallback", env("MEMINDEX_FALLBACK", client.BackendNone), "backend that answers when --backend fails: local, qmd or none (MEMINDEX_FALLBACK)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	req.Query = strings.Join(pos, " ")
	if strings.TrimSpace(req.Query) == "" {
		fs.Usage()
		return errors.New("give the question to search for")
	}
	if err := req.Normalize(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	choice := client.Choice{Backend: *backend, Fallback: *fallback, LocalPath: *localPath, Opener: query.Local{},
		Connect: func() (*nats.Conn, error) { return conn.Connect("memindex search") }}
	resp, err := choice.Search(ctx, req)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp)
	}
	printSearch(stdout, resp, req.Explain)
	return nil
}

func printSearch(w io.Writer, r memindex.SearchResponse, explain bool) {
	fmt.Fprintf(w, "%d hits in %s (partition %d, applied seq %d, %.1f ms)\n", len(r.Hits), r.Namespace, r.Partition, r.AppliedSeq, r.TookMs)
	if u := r.Used; u.Budget > 0 || u.BudgetTokens > 0 || u.ContextMessages > 0 {
		fmt.Fprintf(w, "used: %d messages, about %d tokens, %d context messages", u.Messages, u.Tokens, u.ContextMessages)
		if u.Stopped != "" {
			fmt.Fprintf(w, " (stopped by %s)", u.Stopped)
		}
		fmt.Fprintln(w)
	}
	if r.Backend != "" {
		fmt.Fprintf(w, "backend: %s\n", r.Backend)
	}
	if r.Fallback != nil {
		fmt.Fprintf(w, "fallback: %s did not answer: %s\n", r.Fallback.From, r.Fallback.Reason)
	}
	for _, d := range r.Degraded {
		fmt.Fprintf(w, "degraded: %s\n", d)
	}
	if r.Abstained != "" {
		fmt.Fprintf(w, "abstained: %s\n", r.Abstained)
	}
	if r.VectorFallback != "" {
		fmt.Fprintf(w, "vector leg: %s\n", r.VectorFallback)
	}
	if explain && len(r.Explain) > 0 {
		fmt.Fprintln(w, "stages:")
		for _, st := range r.Explain {
			fmt.Fprintf(w, "  %-10s %4d -> %-4d %s", st.Stage, st.In, st.Out, st.Detail)
			if st.TookMs > 0 {
				fmt.Fprintf(w, " (%.1f ms)", st.TookMs)
			}
			fmt.Fprintln(w)
		}
	}
	for i, h := range r.Hits {
		where := h.SessionKey + "/" + h.SessionID
		if h.SeqStart == h.SeqEnd {
			where += fmt.Sprintf(" #%d", h.SeqStart)
		} else {
			where += fmt.Sprintf(" #%d-%d", h.SeqStart, h.SeqEnd)
		}
		if h.Path != "" {
			where = fmt.Sprintf("%s:%d-%d", h.Path, h.LineStart, h.LineEnd)
		}
		fmt.Fprintf(w, "\n%2d. %.3f  %s  %s\n", i+1, h.Score, where, h.Timestamp)
		if explain && h.Scores != nil {
			tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
			fmt.Fprintf(tw, "    vector %.3f (rank %d)\tkeyword %.3f (rank %d)\t%s", h.Scores.Vector, h.Scores.VectorRank, h.Scores.Keyword, h.Scores.KeywordRank, h.Scores.Fusion)
			if h.Scores.Decay > 0 {
				fmt.Fprintf(tw, "\tdecay ×%.3f", h.Scores.Decay)
			}
			if h.Scores.MMRRank > 0 {
				fmt.Fprintf(tw, "\tmmr #%d", h.Scores.MMRRank)
			}
			fmt.Fprintln(tw)
			tw.Flush()
		}
		for _, c := range h.Context {
			if c.Seq < h.Seq {
				fmt.Fprintf(w, "      #%d %s: %s\n", c.Seq, c.Speaker, c.Text)
			}
		}
		fmt.Fprintf(w, "    %s\n", strings.ReplaceAll(h.Snippet, "\n", "\n    ")) // a session snippet starts "Speaker: "
		for _, c := range h.Context {
			if c.Seq > h.Seq {
				fmt.Fprintf(w, "      #%d %s: %s\n", c.Seq, c.Speaker, c.Text)
			}
		}
	}
}

func runStatus(ctx context.Context, args []string, stdout io.Writer) error {
	var conn connFlags
	fs := newFlagSet("status", "[flags]")
	conn.register(fs, nats.DefaultURL)
	wait := fs.Duration("wait", 500*time.Millisecond, "how long to gather answers from workers")
	asJSON := fs.Bool("json", false, "print the answers as JSON")
	all := fs.Bool("all", false, "show empty partitions too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	nc, err := conn.Connect("memindex status")
	if err != nil {
		return err
	}
	defer nc.Close()
	sts, err := client.NewClient(nc).Status(ctx, *wait)
	if err != nil {
		return err
	}
	if len(sts) == 0 {
		return errors.New("no memindex worker answered; start one with `memindex serve`")
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sts)
	}
	for _, s := range sts {
		ready := "ready"
		if !s.Ready {
			ready = "NOT READY"
		}
		e := s.Embedder
		fmt.Fprintf(stdout, "worker %s: %s; embedder %s/%s (%d dims); %d dead letters\n", s.Worker, ready, e.Provider, e.Model, e.Dims, s.DLQ)
		if sw := s.Switch; sw != nil {
			fmt.Fprintf(stdout, "embedder change in progress: %s -> %s, %d of %d partitions switched, new vectors built for %.0f%% of the stream\n",
				sw.From, sw.To, sw.Switched, sw.Partitions, 100*sw.Progress)
		}
		if e.Breaker != "" {
			fmt.Fprintf(stdout, "provider circuit breaker: %s (opened %d times) %s\n", e.Breaker, e.BreakerOpens, e.BreakerOpenUntil)
		}
		fmt.Fprintf(stdout, "embedding cache: %d hits / %d misses (%.0f%% hits), %d entries, %.1f of %.1f MiB, %d evicted\n",
			e.CacheHits, e.CacheMisses, 100*float64(e.CacheHits)/max(1, float64(e.CacheHits+e.CacheMisses)), e.CacheEntries,
			float64(e.CacheBytes)/(1<<20), float64(e.CacheMaxBytes)/(1<<20), e.CacheEvictions)
		if m := s.Memory; m != nil {
			fmt.Fprintln(stdout, memoryLine(m))
		}
		var waiting []string
		for _, p := range s.Partitions {
			if p.InflightWaiting {
				waiting = append(waiting, strconv.Itoa(p.Partition))
			}
		}
		if len(waiting) > 0 {
			fmt.Fprintf(stdout, "partitions waiting for other batches to commit (in-flight bound): %s\n", strings.Join(waiting, ", "))
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "partition\tapplied\tpending\tmessages\tchunks\tsessions\tvec-waiting\toldest-wait\tdlq\t")
		sum := s.Total()
		hidden := 0
		for _, p := range s.Partitions {
			if !*all && p.AppliedSeq == 0 && p.Pending == 0 && p.Chunks == 0 && p.Error == "" {
				hidden++
				continue
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0fs\t%d\t%s\n", p.Partition, p.AppliedSeq, p.Pending, p.Messages, p.Chunks, p.Sessions, p.VectorsWaiting, p.OldestWaitSeconds, p.DLQ, p.Error)
		}
		fmt.Fprintf(tw, "all\t\t%d\t%d\t%d\t%d\t%d\t\t%d\t\n", sum.Pending, sum.Messages, sum.Chunks, sum.Sessions, sum.VectorsWaiting, sum.DLQ)
		tw.Flush()
		if fb := s.VectorFallback(); fb != "" {
			fmt.Fprintf(stdout, "vectors: %s; vector search runs as the in-process Go scan\n", fb)
		}
		if hidden > 0 {
			fmt.Fprintf(stdout, "(%d empty partitions not shown; --all shows them)\n", hidden)
		}
	}
	if len(sts) > 1 || sts[0].Group != "" {
		printCluster(stdout, sts) // owners, replicas, lag, leases
	}
	return nil
}

// memoryLine is status's line on a worker's memory: what it uses and the
// bounds --memory-limit sets.
func memoryLine(m *memindex.MemoryStatus) string {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	var b strings.Builder
	if m.LimitBytes > 0 {
		fmt.Fprintf(&b, "memory: RSS %s of a %s limit; Go heap %s in use (soft limit %s, GOGC %d)", mib(m.RSSBytes), mib(m.LimitBytes), mib(m.HeapBytes), mib(m.GoLimitBytes), m.GCPercent)
	} else {
		fmt.Fprintf(&b, "memory: RSS %s, no --memory-limit; Go heap %s in use", mib(m.RSSBytes), mib(m.HeapBytes))
	}
	fmt.Fprintf(&b, ", indexes about %s; SQLite caches up to %s, pull buffers up to %s", mib(m.IndexBytes), mib(m.SQLiteCacheBytes), mib(m.PullBufferBytes))
	if m.InflightBytes > 0 {
		fmt.Fprintf(&b, ", batches up to %s of events", mib(m.InflightBytes))
	}
	return b.String()
}

// printCluster prints the cluster view of every worker's status
// (client.Cluster): for each partition its owner, its replicas with their
// state, and the lag.
func printCluster(w io.Writer, sts []memindex.StatusResponse) {
	parts := client.Cluster(sts)
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(w, "cluster: %d partitions, %d workers\n", len(parts), len(sts))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "partition\towner\treplicas\tlag\tlease\t")
	desc := func(h client.Holder) string {
		if h.State != "" && h.State != memindex.StateReady {
			return h.Worker + " (" + h.State + ")"
		}
		return h.Worker
	}
	for _, v := range parts {
		owner, lease := "-", ""
		if v.Owner != nil {
			owner = desc(*v.Owner)
			if v.Owner.LeaseValidSeconds > 0 {
				lease = fmt.Sprintf("%.1fs", v.Owner.LeaseValidSeconds)
			}
		}
		if len(v.Holders) == 0 {
			owner = "NONE (no worker holds it: its searches fail with 503)"
		}
		var replicas, lag []string
		for _, h := range v.Replicas {
			replicas = append(replicas, desc(h))
		}
		for _, h := range v.Holders {
			lag = append(lag, strconv.FormatUint(h.Pending, 10))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t\n", v.Partition, owner, strings.Join(replicas, ", "), strings.Join(lag, " "), lease)
	}
	tw.Flush()
}
