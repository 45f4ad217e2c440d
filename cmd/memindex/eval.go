package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"memindex"
	"memindex/query"
)

// evalQuestion is one line of locomo10.queries.jsonl.
type evalQuestion struct {
	QueryID        string   `json:"queryId"`
	SessionKey     string   `json:"sessionKey"`
	Question       string   `json:"question"`
	Category       int      `json:"category"`
	CategoryName   string   `json:"categoryName"`
	GoldMessageIDs []string `json:"goldMessageIds"`
}

// evalScores are retrieval metrics averaged over questions.
type evalScores struct {
	Questions int                `json:"questions"`
	Recall    map[string]float64 `json:"recall"` // rec@k, message budget
	Hit       map[string]float64 `json:"hit"`    // hit@k, message budget
	MRR       float64            `json:"mrr"`    // of the first gold message, message ranks
	NDCG10    float64            `json:"ndcg10"` // binary gain over the first 10 messages
}

type evalReport struct {
	Date       string                `json:"date"`
	Dataset    string                `json:"dataset"`
	Mode       string                `json:"mode"`
	Fusion     string                `json:"fusion"`
	ChunkTok   int                   `json:"chunkTokens"`
	Messages   int                   `json:"messages"`
	Chunks     int64                 `json:"chunks"`
	Overall    evalScores            `json:"overall"`
	ByCategory map[string]evalScores `json:"byCategory"`
}

var evalKs = []int{5, 10, 25, 50}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "[flags]")
	dir := fs.String("locomo", env("MEMINDEX_LOCOMO_DIR", "../shared/eval-data/locomo"), "folder with locomo10.events.jsonl and locomo10.queries.jsonl")
	mode := fs.String("mode", "keyword,vector,hybrid", "search modes to measure, comma separated: keyword, vector, hybrid")
	fusion := fs.String("fusion", memindex.FusionRRF, "hybrid fusion: rrf or weighted")
	chunkTokens := fs.Int("chunk-tokens", defaultChunkTokens, "session window budget in tokens")
	overlap := fs.Int("chunk-overlap", defaultChunkOverlap, "window overlap in tokens")
	contextMsgs := fs.Int("chunk-context", 2, "messages before a chunk indexed as its context; 0: none")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	rrfVector := fs.Float64("rrf-vector-weight", 0, "weight of the vector leg in RRF; 0: the serve default for the embedder")
	rrfKeyword := fs.Float64("rrf-keyword-weight", 1, "weight of the keyword leg in RRF")
	rrfK := fs.Float64("rrf-k", 0, "the k of RRF; 0: the serve default")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	events, err := readJSONL(filepath.Join(*dir, "locomo10.events.jsonl"))
	if err != nil {
		return err
	}
	qlines, err := readJSONL(filepath.Join(*dir, "locomo10.queries.jsonl"))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "memindex-eval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg := serveConfig{listen: "127.0.0.1:-1", data: tmp, partitions: memindex.DefaultPartitions, provider: providerFlags{name: "builtin"},
		batch: 1000, embedBatch: 64, embedConc: 4, chunkTokens: *chunkTokens, overlap: *overlap, contextMsgs: contextMessages(*contextMsgs), worker: "eval", maxPending: 1024,
		rrfVector: *rrfVector, rrfKeyword: *rrfKeyword, rrfK: *rrfK}
	n, err := startNode(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.run(rctx) }()
	defer func() { stop(); <-done }()

	const ns = "locomo"
	if !*asJSON {
		fmt.Fprintf(stderr, "indexing %d LoCoMo messages …\n", len(events))
	}
	if _, err := benchIngest(ctx, n, "locomo", events, ns); err != nil {
		return err
	}
	for { // wait for every vector
		if t := totals(ctx, n); t.messages >= int64(len(events)) && t.waiting == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	cl := query.NewClient(n.nc)
	chunks := totals(ctx, n).chunks
	var reps []evalReport
	for _, mode := range strings.Split(*mode, ",") {
		mode = strings.TrimSpace(mode)
		rep := evalReport{Date: time.Now().UTC().Format(time.RFC3339), Dataset: *dir, Mode: mode, Fusion: *fusion, ChunkTok: *chunkTokens,
			Messages: len(events), Chunks: chunks, ByCategory: map[string]evalScores{}}
		var all []perQuestion
		for i, l := range qlines {
			var q evalQuestion
			if err := json.Unmarshal(l, &q); err != nil {
				return fmt.Errorf("queries line %d: %w", i+1, err)
			}
			if len(q.GoldMessageIDs) == 0 {
				continue
			}
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			resp, err := cl.Search(qctx, memindex.SearchRequest{Namespace: ns, Query: q.Question, K: 50, SessionKey: q.SessionKey, Mode: mode, Fusion: *fusion})
			cancel()
			if err != nil {
				return fmt.Errorf("question %s (%s): %w", q.QueryID, mode, err)
			}
			all = append(all, scoreQuestion(q, resp.Hits))
		}
		rep.Overall = aggregate(all)
		cats := map[string][]perQuestion{}
		for _, pq := range all {
			cats[pq.category] = append(cats[pq.category], pq)
		}
		for c, pqs := range cats {
			rep.ByCategory[c] = aggregate(pqs)
		}
		reps = append(reps, rep)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reps)
	}
	for _, rep := range reps {
		printEval(stdout, rep)
	}
	return nil
}

func printEval(stdout io.Writer, rep evalReport) {
	fmt.Fprintf(stdout, "LoCoMo retrieval, %s mode (%s), %d-token windows: %d messages in %d chunks, %d questions with evidence (%s)\n",
		rep.Mode, rep.Fusion, rep.ChunkTok, rep.Messages, rep.Chunks, rep.Overall.Questions, rep.Date)
	fmt.Fprintf(stdout, "%-12s %5s %7s %7s %7s %7s %7s %7s %7s\n", "category", "n", "rec@5", "rec@10", "rec@25", "rec@50", "hit@5", "MRR", "nDCG10")
	names := []string{"overall"}
	for c := range rep.ByCategory {
		names = append(names, c)
	}
	sort.Strings(names[1:])
	for _, c := range names {
		s := rep.Overall
		if c != "overall" {
			s = rep.ByCategory[c]
		}
		fmt.Fprintf(stdout, "%-12s %5d %7.1f %7.1f %7.1f %7.1f %7.1f %7.3f %7.3f\n", c, s.Questions,
			100*s.Recall["5"], 100*s.Recall["10"], 100*s.Recall["25"], 100*s.Recall["50"], 100*s.Hit["5"], s.MRR, s.NDCG10)
	}
	fmt.Fprintln(stdout)
}

type perQuestion struct {
	category string
	recall   map[int]float64
	hit      map[int]bool
	rr       float64
	ndcg10   float64
}

// scoreQuestion counts the retrieval budget in messages: the hits' messages
// in rank order, a chunk of w messages using w of the k (the LoCoMo README's
// rule for multi-message units), each message counted once.
func scoreQuestion(q evalQuestion, hits []memindex.Hit) perQuestion {
	gold := map[string]bool{}
	for _, g := range q.GoldMessageIDs {
		gold[g] = true
	}
	var ranked []string
	seen := map[string]bool{}
	for _, h := range hits {
		for _, id := range h.MessageIDs {
			if !seen[id] {
				seen[id] = true
				ranked = append(ranked, id)
			}
		}
	}
	pq := perQuestion{category: q.CategoryName, recall: map[int]float64{}, hit: map[int]bool{}}
	for i, id := range ranked {
		if gold[id] {
			pq.rr = 1 / float64(i+1)
			break
		}
	}
	var dcg, ideal float64
	for i := 0; i < 10; i++ {
		if i < len(ranked) && gold[ranked[i]] {
			dcg += 1 / math.Log2(float64(i+2))
		}
		if i < len(gold) {
			ideal += 1 / math.Log2(float64(i+2))
		}
	}
	if ideal > 0 {
		pq.ndcg10 = dcg / ideal
	}
	for _, k := range evalKs {
		found := 0
		for _, id := range ranked[:min(k, len(ranked))] {
			if gold[id] {
				found++
			}
		}
		pq.recall[k] = float64(found) / float64(len(gold))
		pq.hit[k] = found > 0
	}
	return pq
}

func aggregate(pqs []perQuestion) evalScores {
	s := evalScores{Questions: len(pqs), Recall: map[string]float64{}, Hit: map[string]float64{}}
	if len(pqs) == 0 {
		return s
	}
	for _, pq := range pqs {
		for _, k := range evalKs {
			key := fmt.Sprint(k)
			s.Recall[key] += pq.recall[k] / float64(len(pqs))
			if pq.hit[k] {
				s.Hit[key] += 1 / float64(len(pqs))
			}
		}
		s.MRR += pq.rr / float64(len(pqs))
		s.NDCG10 += pq.ndcg10 / float64(len(pqs))
	}
	return s
}

func readJSONL(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (the LoCoMo files live in ../shared/eval-data/locomo; set --locomo)", err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out, sc.Err()
}
