package evalrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/pool"

	"memindex"
	"memindex/client"
	"memindex/internal/eval"
	"memindex/internal/evalcorpus"
	"memindex/internal/harness"
)

// SearchK is how many hits each question asks for.
const SearchK = 50

// Pass is how memindex indexes and searches in one pass: the values of
// `memindex eval`'s tunable flags.
type Pass struct {
	// ChunkTokens and ChunkContext are --chunk-tokens and --chunk-context
	// (0: no context).
	ChunkTokens, ChunkContext int
	// RRFVector, RRFKeyword and RRFK are the RRF flags (0: serve's default
	// for the built-in embedder); Fusion is rrf or weighted.
	RRFVector, RRFKeyword, RRFK float64
	Fusion                      string
}

// Config is what an evaluation runs.
type Config struct {
	// Modes are the search modes measured; the first one chooses under Tune.
	Modes []string
	// Split reports every system on halves A and B besides all (implied by
	// Tune); ByCategory per question category too.
	Split, ByCategory bool
	// Tune, when set, runs a pass per combination of its axes and chooses
	// on each half the best of the first mode, reported on the other.
	Tune []eval.Axis
	// Settings are the tunable settings as given, for the report.
	Settings []eval.Setting
	// Configure returns the Pass of the settings as given with combo's
	// applied (combo nil: as given).
	Configure func(combo []eval.Setting) (Pass, error)
	// SyntheticConversations and SyntheticSeed size a synthetic corpus
	// (0: the generator's defaults).
	SyntheticConversations int
	SyntheticSeed          uint64
	// Progress receives progress lines (nil: none).
	Progress io.Writer
	Hooks    harness.Hooks
}

// Validate reports a Config an evaluation cannot run.
func (c Config) Validate() error {
	if len(c.Modes) == 0 {
		return errors.New("eval: no search mode")
	}
	if c.Configure == nil {
		return errors.New("eval: no Configure")
	}
	return nil
}

// Run evaluates the corpus spec names: a folder with exactly one
// *.events.jsonl and one *.queries.jsonl, or synthetic-en / synthetic-zh.
func Run(ctx context.Context, cfg Config, spec string) (eval.CorpusReport, error) {
	if err := cfg.Validate(); err != nil {
		return eval.CorpusReport{}, err
	}
	var progress io.Writer = io.Discard
	if cfg.Progress != nil {
		progress = &lockedWriter{w: cfg.Progress} // searches report from several goroutines
	}
	split := cfg.Split || len(cfg.Tune) > 0
	tmp, err := os.MkdirTemp("", "memindex-eval-")
	if err != nil {
		return eval.CorpusReport{}, err
	}
	defer os.RemoveAll(tmp)
	dir := spec
	if spec == "synthetic-en" || spec == "synthetic-zh" {
		if dir, err = SyntheticDir(strings.TrimPrefix(spec, "synthetic-"), cfg.SyntheticConversations, cfg.SyntheticSeed, filepath.Join(tmp, "corpus")); err != nil {
			return eval.CorpusReport{}, err
		}
	}
	c, err := eval.Load(dir)
	if err != nil {
		return eval.CorpusReport{}, fmt.Errorf("eval: %w (the LoCoMo files live in ../shared/eval-data/locomo; set --data)", err)
	}
	fmt.Fprintf(progress, "%s: %d messages, %d questions with gold ids (%d without, skipped)\n", c.Name, len(c.Messages), len(c.Questions), c.Skipped)
	keys := c.SessionKeys()
	var halves map[string]eval.Half
	if split {
		halves = eval.Split(keys)
	}
	rep := eval.CorpusReport{Corpus: c.Name, Dir: dir, Date: time.Now().UTC().Format(time.RFC3339), Messages: len(c.Messages),
		Questions: len(c.Questions), Skipped: c.Skipped, Settings: cfg.Settings}
	if spec == "synthetic-en" || spec == "synthetic-zh" {
		rep.Dir = spec
	}
	rep.HalfA, rep.HalfB = eval.HalfKeys(halves, keys)

	base, err := baselineRun(ctx, c, filepath.Join(tmp, "baseline.db"))
	if err != nil {
		return eval.CorpusReport{}, err
	}
	fmt.Fprintf(progress, "%s: plain BM25 baseline done\n", c.Name)
	baseRep := eval.Summarize(base, halves, cfg.ByCategory)

	given, err := cfg.Configure(nil)
	if err != nil {
		return eval.CorpusReport{}, err
	}
	runs, chunks, err := runPass(ctx, cfg, given, c, progress)
	if err != nil {
		return eval.CorpusReport{}, err
	}
	rep.Chunks = chunks
	for _, r := range runs {
		rep.Systems = append(rep.Systems, eval.Summarize(r, halves, cfg.ByCategory))
	}
	rep.Systems = append(rep.Systems, baseRep)
	rep.Losses = eval.Losses(rep.Systems, eval.BaselineSystem)
	if len(cfg.Tune) == 0 {
		return rep, nil
	}

	tr := &eval.TuneReport{System: SystemName(cfg.Modes[0], given.Fusion)}
	for i, combo := range eval.Combinations(cfg.Tune) {
		fmt.Fprintf(progress, "%s: tune %d: %s\n", c.Name, i+1, FormatSettings(combo))
		pass, err := cfg.Configure(combo)
		if err != nil {
			return eval.CorpusReport{}, err
		}
		runs, _, err := runPass(ctx, cfg, pass, c, progress)
		if err != nil {
			return eval.CorpusReport{}, err
		}
		cand := eval.Candidate{Settings: combo}
		for _, r := range runs {
			cand.Systems = append(cand.Systems, eval.Summarize(r, halves, cfg.ByCategory))
		}
		cand.Systems = append(cand.Systems, baseRep)
		tr.Candidates = append(tr.Candidates, cand)
	}
	if tr.ChosenOnA, err = eval.Choose(tr.Candidates, tr.System, eval.HalfA); err != nil {
		return eval.CorpusReport{}, err
	}
	if tr.ChosenOnB, err = eval.Choose(tr.Candidates, tr.System, eval.HalfB); err != nil {
		return eval.CorpusReport{}, err
	}
	rep.Tune = tr
	return rep, nil
}

// SyntheticDir generates the synthetic corpus of lang (en or zh) into dir
// and returns dir.
func SyntheticDir(lang string, conversations int, seed uint64, dir string) (string, error) {
	c, err := evalcorpus.Generate(evalcorpus.Config{Lang: lang, Conversations: conversations, Seed: seed})
	if err != nil {
		return "", fmt.Errorf("eval: generate synthetic-%s: %w", lang, err)
	}
	if err := c.WriteDir(dir); err != nil {
		return "", fmt.Errorf("eval: %w", err)
	}
	return dir, nil
}

// baselineRun asks the plain BM25 baseline every question of c.
func baselineRun(ctx context.Context, c eval.Corpus, path string) (eval.Run, error) {
	b, err := eval.OpenBaseline(ctx, path, c.Messages)
	if err != nil {
		return eval.Run{}, err
	}
	defer b.Close()
	run := eval.Run{System: eval.BaselineSystem, Results: make([]eval.Result, len(c.Questions))}
	for i, q := range c.Questions {
		hits, err := b.Search(ctx, q.SessionKey, q.Text, SearchK)
		if err != nil {
			return eval.Run{}, fmt.Errorf("baseline, question %s: %w", q.ID, err)
		}
		run.Results[i] = eval.Result{Question: q, Score: strictScore(c, q, hits)}
	}
	return run, nil
}

// strictScore scores a response's hits by the strict rule (eval.Score),
// naming a hit's messages by its sequence range when it lists none.
func strictScore(c eval.Corpus, q eval.Question, hits []memindex.Hit) eval.QuestionScore {
	resolve := func(sessionKey, sessionID string, seq int64) string {
		if sessionKey == "" {
			sessionKey = q.SessionKey
		}
		return c.MessageAt(sessionKey, sessionID, seq)
	}
	return eval.Score(eval.Units(hits, resolve), q.Gold)
}

// runPass starts a fresh node configured by pass, indexes c, waits for
// every vector, and asks every question in every mode.
func runPass(ctx context.Context, cfg Config, pass Pass, c eval.Corpus, progress io.Writer) ([]eval.Run, int64, error) {
	tmp, err := os.MkdirTemp("", "memindex-eval-node-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(tmp)
	n, stop, err := cfg.Hooks.Start(ctx, harness.NodeSpec{Dir: tmp, Worker: "eval", Partitions: memindex.DefaultPartitions, Batch: 1000,
		ChunkTokens: pass.ChunkTokens, ContextMessages: pass.ChunkContext, RRFVector: pass.RRFVector, RRFKeyword: pass.RRFKeyword, RRFK: pass.RRFK})
	if err != nil {
		return nil, 0, err
	}
	defer stop() //nolint:errcheck // the runs are scored; a shutdown error changes none

	const ns = "eval"
	fmt.Fprintf(progress, "%s: indexing %d messages …\n", c.Name, len(c.Messages))
	if _, err := cfg.Hooks.Ingest(ctx, n, c.Events, ns); err != nil {
		return nil, 0, err
	}
	if err := harness.WaitVectors(ctx, n, int64(len(c.Messages))); err != nil {
		return nil, 0, err
	}
	chunks := harness.Count(ctx, n).Chunks
	cl := client.NewClient(n.Conn())
	var runs []eval.Run
	for _, mode := range cfg.Modes {
		run := eval.Run{System: SystemName(mode, pass.Fusion), Results: make([]eval.Result, len(c.Questions))}
		var done atomic.Int64
		p := pool.New().WithErrors().WithContext(ctx).WithFirstError().WithMaxGoroutines(8)
		for i, q := range c.Questions {
			p.Go(func(ctx context.Context) error {
				qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				resp, err := cl.Search(qctx, memindex.SearchRequest{Namespace: ns, Query: q.Text, K: SearchK, SessionKey: q.SessionKey, Mode: mode, Fusion: pass.Fusion})
				if err != nil {
					return fmt.Errorf("question %s (%s): %w", q.ID, mode, err)
				}
				run.Results[i] = eval.Result{Question: q, Score: strictScore(c, q, resp.Hits)}
				if d := done.Add(1); d%500 == 0 {
					fmt.Fprintf(progress, "%s: %s: %d/%d questions\n", c.Name, run.System, d, len(c.Questions))
				}
				return nil
			})
		}
		if err := p.Wait(); err != nil {
			return nil, 0, err
		}
		fmt.Fprintf(progress, "%s: %s: %d questions done\n", c.Name, run.System, len(c.Questions))
		runs = append(runs, run)
	}
	return runs, chunks, nil
}

// SystemName names memindex in a mode in the report.
func SystemName(mode, fusion string) string {
	if mode == memindex.ModeHybrid {
		return "memindex " + mode + " (" + fusion + ")"
	}
	return "memindex " + mode
}

// FormatSettings is ss as FLAG=VALUE words.
func FormatSettings(ss []eval.Setting) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, s.Flag+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
