package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"memindex"
	"memindex/client"
	"memindex/embedder"
	"memindex/internal/eval"
	"memindex/internal/harness"
)

// The locomo part: LoCoMo's questions, each within its conversation, asked
// of memindex over NATS and, in the same run over the same messages, of two
// floors in process: plain FTS5 bm25 (eval's baseline) and a plain exact
// float32 scan of the built-in embedder's vectors. The systems take turns
// question by question, so a change of load on the machine falls on all.

// locomoNamespace is the namespace the part publishes LoCoMo into.
const locomoNamespace = "bench-locomo-search"

// locomoWarmup is how many questions every system answers, untimed, before
// the timed pass over all of them.
const locomoWarmup = 20

// The systems of the locomo table that are not a memindex mode.
const (
	LocomoFTS5       = "FTS5 bm25"
	LocomoScanConv   = "float32 scan, conversation"
	LocomoScanAll    = "float32 scan, namespace"
	LocomoQueryEmbed = "query embedding (built-in)"
)

// LocomoConfig is what the locomo part measures.
type LocomoConfig struct {
	// Events is LoCoMo's events file; the queries file is the
	// .queries.jsonl beside it, the only other corpus file of its directory.
	Events string
	// Dir holds the node's data and the FTS5 floor's file.
	Dir   string
	Modes []string
	// Required makes absent files an error; otherwise the part is skipped.
	Required bool
	Log      func(string, ...any)
	Hooks    harness.Hooks
}

// LocomoReport is the locomo part's result.
type LocomoReport struct {
	Corpus        string `json:"corpus"`
	Messages      int    `json:"messages"`
	Chunks        int64  `json:"chunks"`
	Conversations int    `json:"conversations"`
	// Questions is how many were asked of every system; SkippedQuestions
	// those of the queries file without gold ids, which eval.Load leaves out.
	Questions        int `json:"questions"`
	SkippedQuestions int `json:"skippedQuestions"`
	K                int `json:"k"`
	// IndexSeconds is memindex from the first publish to the last vector;
	// BM25IndexSeconds the FTS5 floor's file built in one transaction;
	// ScanEmbedSeconds the built-in embedder over every message, one call.
	IndexSeconds     float64        `json:"indexSeconds"`
	BM25IndexSeconds float64        `json:"bm25IndexSeconds"`
	ScanEmbedSeconds float64        `json:"scanEmbedSeconds"`
	Systems          []LocomoFigure `json:"systems"`
}

// LocomoFigure is one system's latency over every question.
type LocomoFigure struct {
	System string `json:"system"`
	// Where is "NATS" (client side, one request at a time) or "in process".
	Where string `json:"where"`
	// MessagesSearched is the mean number of messages a question was asked
	// over (0 for the query embedding).
	MessagesSearched float64 `json:"messagesSearched"`
	Queries          int     `json:"queries"`
	P50Ms            float64 `json:"p50Ms"`
	P90Ms            float64 `json:"p90Ms"`
	P99Ms            float64 `json:"p99Ms"`
	MeanMs           float64 `json:"meanMs"`
	MaxMs            float64 `json:"maxMs"`
	// PerSecond is Queries over the summed latencies (one at a time).
	PerSecond float64 `json:"queriesPerSecond"`
	// HybridRatio is memindex hybrid's p50 over this system's p50 (0
	// without a hybrid figure).
	HybridRatio float64 `json:"hybridP50Ratio,omitempty"`
	// NoHit counts questions answered with no hit; Degraded responses
	// (memindex) that flagged a leg missing or partial.
	NoHit    int `json:"noHit"`
	Degraded int `json:"degraded"`
}

// locomoSystem is one system the part asks: ask answers q (its vector qv
// already embedded) and says how many hits it returned; searched is how
// many messages q is asked over.
type locomoSystem struct {
	name, where string
	searched    func(q eval.Question) int
	ask         func(ctx context.Context, q eval.Question, qv []float32) (hits int, degraded bool, err error)
	lat         []float64
	noHit       int
	degraded    int
	over        int
}

// locomoVectors is the float32 floor's data: vectors of messages, flat.
type locomoVectors struct {
	data []float32
	n    int
}

// RunLocomoSuite runs the locomo part; nil when its files are absent and
// not Required.
func RunLocomoSuite(ctx context.Context, cfg LocomoConfig) (*LocomoReport, error) {
	queries := strings.TrimSuffix(cfg.Events, ".events.jsonl") + ".queries.jsonl"
	for _, p := range []string{cfg.Events, queries} {
		if _, err := os.Stat(p); err != nil {
			if cfg.Required {
				return nil, fmt.Errorf("locomo: %w (set --locomo to LoCoMo's events file)", err)
			}
			cfg.Log("locomo: skipped (%v)", err)
			return nil, nil
		}
	}
	c, err := eval.Load(filepath.Dir(cfg.Events))
	if err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	if want := strings.TrimSuffix(filepath.Base(cfg.Events), ".events.jsonl"); c.Name != want {
		return nil, fmt.Errorf("locomo: %s holds corpus %q, want %q", c.Dir, c.Name, want)
	}
	if len(c.Questions) == 0 || len(c.Messages) == 0 {
		return nil, fmt.Errorf("locomo: %s: no messages or no questions with gold ids", c.Dir)
	}
	if len(cfg.Modes) == 0 {
		return nil, errors.New("locomo: --modes names no mode")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	rep := &LocomoReport{Corpus: c.Name, Messages: len(c.Messages), Conversations: len(c.SessionKeys()),
		Questions: len(c.Questions), SkippedQuestions: c.Skipped, K: vecK}

	// memindex: a node, LoCoMo published into one namespace, every message
	// indexed and every vector written.
	n, stop, err := cfg.Hooks.Start(ctx, nodeSpec(filepath.Join(cfg.Dir, "node"), "bench"))
	if err != nil {
		return nil, err
	}
	defer stop() //nolint:errcheck // the figures are taken; a shutdown error changes none
	cfg.Log("locomo: indexing %d messages into %s …", len(c.Messages), locomoNamespace)
	t0 := time.Now()
	if _, err := cfg.Hooks.Ingest(ctx, n, c.Events, locomoNamespace); err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	if err := harness.WaitVectors(ctx, n, int64(len(c.Messages))); err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	rep.IndexSeconds = time.Since(t0).Seconds()
	rep.Chunks = harness.Count(ctx, n).Chunks

	// The floors over the same messages, "Speaker: text" each.
	t0 = time.Now()
	bm25, err := eval.OpenBaseline(ctx, filepath.Join(cfg.Dir, "bm25.db"), c.Messages)
	if err != nil {
		return nil, fmt.Errorf("locomo: %w", err)
	}
	defer bm25.Close()
	rep.BM25IndexSeconds = time.Since(t0).Seconds()
	emb, err := embedder.NewBuiltin(embedder.BuiltinConfig{Dims: vecDims})
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(c.Messages))
	for i, m := range c.Messages {
		texts[i] = m.Text
		if m.Speaker != "" {
			texts[i] = m.Speaker + ": " + m.Text
		}
	}
	t0 = time.Now()
	vecs, err := emb.Embed(ctx, embedder.Request{Texts: texts, Kind: embedder.KindDocument})
	if err != nil {
		return nil, err
	}
	rep.ScanEmbedSeconds = time.Since(t0).Seconds()
	all := locomoVectors{data: make([]float32, 0, len(vecs)*vecDims)}
	conv := map[string]*locomoVectors{}
	for i, m := range c.Messages {
		all.data, all.n = append(all.data, vecs[i]...), all.n+1
		cv := conv[m.SessionKey]
		if cv == nil {
			cv = &locomoVectors{}
			conv[m.SessionKey] = cv
		}
		cv.data, cv.n = append(cv.data, vecs[i]...), cv.n+1
	}
	convSize := func(q eval.Question) int {
		if cv := conv[q.SessionKey]; cv != nil {
			return cv.n
		}
		return 0
	}

	cl := client.NewClient(n.Conn())
	var systems []*locomoSystem
	for _, mode := range cfg.Modes {
		systems = append(systems, &locomoSystem{name: "memindex " + mode, where: "NATS", searched: convSize,
			ask: func(ctx context.Context, q eval.Question, _ []float32) (int, bool, error) {
				qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				resp, err := cl.Search(qctx, memindex.SearchRequest{Namespace: locomoNamespace, Query: q.Text, K: vecK, SessionKey: q.SessionKey, Mode: mode})
				if err != nil {
					return 0, false, fmt.Errorf("memindex %s, question %s: %w", mode, q.ID, err)
				}
				return len(resp.Hits), len(resp.Degraded) > 0, nil
			}})
	}
	systems = append(systems,
		&locomoSystem{name: LocomoFTS5, where: "in process", searched: convSize,
			ask: func(ctx context.Context, q eval.Question, _ []float32) (int, bool, error) {
				hits, err := bm25.Search(ctx, q.SessionKey, q.Text, vecK)
				return len(hits), false, err
			}},
		&locomoSystem{name: LocomoScanConv, where: "in process", searched: convSize,
			ask: func(_ context.Context, q eval.Question, qv []float32) (int, bool, error) {
				cv := conv[q.SessionKey]
				if cv == nil {
					return 0, false, nil
				}
				t := scanFloat32(qv, cv.data)
				return t.n, false, nil
			}},
		&locomoSystem{name: LocomoScanAll, where: "in process", searched: func(eval.Question) int { return all.n },
			ask: func(_ context.Context, q eval.Question, qv []float32) (int, bool, error) {
				t := scanFloat32(qv, all.data)
				return t.n, false, nil
			}},
	)
	embedQ := &locomoSystem{name: LocomoQueryEmbed, where: "in process", searched: func(eval.Question) int { return 0 }}

	// One question at a time: embed it (timed on its own), then every system
	// in turn, starting with a different one each question.
	pass := func(qs []eval.Question, timed bool) error {
		for i, q := range qs {
			t0 := time.Now()
			qv, err := emb.Embed(ctx, embedder.Request{Texts: []string{q.Text}, Kind: embedder.KindQuery})
			el := time.Since(t0)
			if err != nil {
				return err
			}
			if timed {
				embedQ.lat = append(embedQ.lat, durMs(el))
			}
			for j := range systems {
				s := systems[(i+j)%len(systems)]
				t0 := time.Now()
				hits, degraded, err := s.ask(ctx, q, qv[0])
				el := time.Since(t0)
				if err != nil {
					return fmt.Errorf("locomo: %w", err)
				}
				if !timed {
					continue
				}
				s.lat = append(s.lat, durMs(el))
				s.over += s.searched(q)
				if hits == 0 {
					s.noHit++
				}
				if degraded {
					s.degraded++
				}
			}
			if timed && (i+1)%500 == 0 {
				cfg.Log("locomo: %d/%d questions", i+1, len(qs))
			}
		}
		return nil
	}
	cfg.Log("locomo: %d questions (%d warm-up), %d systems taking turns …", len(c.Questions), min(locomoWarmup, len(c.Questions)), len(systems))
	if err := pass(c.Questions[:min(locomoWarmup, len(c.Questions))], false); err != nil {
		return nil, err
	}
	if err := pass(c.Questions, true); err != nil {
		return nil, err
	}

	for _, s := range append(systems, embedQ) {
		rep.Systems = append(rep.Systems, s.figure())
	}
	if i := slices.IndexFunc(rep.Systems, func(f LocomoFigure) bool { return f.System == "memindex hybrid" }); i >= 0 {
		for j := range rep.Systems {
			if p := rep.Systems[j].P50Ms; p > 0 && rep.Systems[j].MessagesSearched > 0 {
				rep.Systems[j].HybridRatio = rep.Systems[i].P50Ms / p
			}
		}
	}
	for _, f := range rep.Systems {
		cfg.Log("  %s (%s): p50 %s ms, p90 %s, p99 %s, mean %s, %s q/s", f.System, f.Where, benchMs(f.P50Ms), benchMs(f.P90Ms), benchMs(f.P99Ms), benchMs(f.MeanMs), benchThousands(int(f.PerSecond)))
	}
	return rep, nil
}

// figure summarizes s's timed answers.
func (s *locomoSystem) figure() LocomoFigure {
	lat := slices.Clone(s.lat)
	slices.Sort(lat)
	var sum float64
	for _, v := range lat {
		sum += v
	}
	f := LocomoFigure{System: s.name, Where: s.where, Queries: len(lat), NoHit: s.noHit, Degraded: s.degraded,
		P50Ms: benchPercentile(lat, 0.50), P90Ms: benchPercentile(lat, 0.90), P99Ms: benchPercentile(lat, 0.99)}
	if len(lat) > 0 {
		f.MaxMs, f.MeanMs, f.MessagesSearched = lat[len(lat)-1], sum/float64(len(lat)), float64(s.over)/float64(len(lat))
	}
	if sum > 0 {
		f.PerSecond = float64(len(lat)) / (sum / 1000)
	}
	return f
}

// scanFloat32 is the plain floor: the vecK best of the vecDims-wide
// vectors in data by dot product with q (the built-in embedder's vectors
// are unit length, so this is cosine), one goroutine, a plain Go loop.
func scanFloat32(q, data []float32) topN {
	var t topN
	q = q[:vecDims]
	for i := 0; (i+1)*vecDims <= len(data); i++ {
		v := data[i*vecDims : (i+1)*vecDims]
		var s float32
		for j, x := range q {
			s += x * v[j]
		}
		t.push(int64(i), s)
	}
	return t
}

func durMs(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// writeLocomoTable prints the locomo part's table; nothing without one.
func writeLocomoTable(w io.Writer, r *LocomoReport) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "LoCoMo search (%s), each question within its conversation: %s questions over %s messages (%s chunks) in %d conversations, k = %d; "+
		"every system answers %d warm-up questions, then all of them, taking turns question by question. "+
		"memindex: over NATS, client side, one request at a time. Floors, in process over the same messages (\"Speaker: text\" each): "+
		"%s = eval's plain BM25 baseline, one FTS5 row a message (porter unicode61), the question's words ORed, restricted to its conversation, top %d by bm25(); "+
		"float32 scan = an exact dot-product (cosine: unit vectors) scan in a plain Go loop, one goroutine, of the built-in embedder's %d-dim vectors, "+
		"over the question's conversation or over all %s messages, top %d, the query's embedding excluded (its own row). "+
		"Built: memindex %.2f s (publish to last vector), FTS5 %.2f s, embedding for the scan %.2f s.\n\n",
		r.Corpus, benchThousands(r.Questions), benchThousands(r.Messages), benchThousands(int(r.Chunks)), r.Conversations, r.K,
		locomoWarmup, LocomoFTS5, r.K, vecDims, benchThousands(r.Messages), r.K, r.IndexSeconds, r.BM25IndexSeconds, r.ScanEmbedSeconds)
	fmt.Fprintln(w, "| system | where | messages searched | queries | p50 ms | p90 ms | p99 ms | mean ms | q/s | hybrid p50 ÷ p50 | no hit | degraded |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, f := range r.Systems {
		searched, ratio := "—", "—"
		if f.MessagesSearched > 0 {
			searched = benchThousands(int(f.MessagesSearched + 0.5))
		}
		if f.HybridRatio > 0 {
			ratio = fmt.Sprintf("%.2f×", f.HybridRatio)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %d | %d |\n", f.System, f.Where, searched, f.Queries,
			benchMs(f.P50Ms), benchMs(f.P90Ms), benchMs(f.P99Ms), benchMs(f.MeanMs), benchThousands(int(f.PerSecond)), ratio, f.NoHit, f.Degraded)
	}
	fmt.Fprintln(w)
}
