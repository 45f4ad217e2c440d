package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
	"memindex/node"
)

// evalSearchK is how many hits each question asks for.
const evalSearchK = 50

// evalNotTunable are eval flags --tune may not vary: they choose what is
// measured, not how memindex searches.
var evalNotTunable = map[string]bool{"data": true, "locomo": true, "tune": true, "json": true, "split": true,
	"by-category": true, "mode": true, "synthetic-conversations": true, "synthetic-seed": true}

// tuneFlag collects --tune specs.
type tuneFlag []eval.Axis

func (t *tuneFlag) String() string { return fmt.Sprint(*t) }

func (t *tuneFlag) Set(s string) error {
	a, err := eval.ParseAxis(s)
	if err != nil {
		return err
	}
	*t = append(*t, a)
	return nil
}

// evalOptions are the parsed eval flags; fs.Set changes them between the
// passes of --tune.
type evalOptions struct {
	fs                          *flag.FlagSet
	modes                       []string
	fusion                      *string
	chunkTokens, ctxs           *int
	rrfVector, rrfKeyword, rrfK *float64
	split, byCategory, asJSON   bool
	tune                        tuneFlag
	synthConvs                  int
	synthSeed                   uint64
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "[flags]")
	fs.SetOutput(stderr)
	var data string
	defData := env("MEMINDEX_LOCOMO_DIR", "../shared/eval-data/locomo")
	fs.StringVar(&data, "data", defData, "corpora, comma separated: a folder with exactly one *.events.jsonl and one *.queries.jsonl in LoCoMo's format, or synthetic-en / synthetic-zh (generated); default: env MEMINDEX_LOCOMO_DIR or ../shared/eval-data/locomo")
	fs.StringVar(&data, "locomo", defData, "alias of --data")
	o := &evalOptions{fs: fs}
	mode := fs.String("mode", "keyword,vector,hybrid", "search modes to measure, comma separated: keyword, vector, hybrid; the first one chooses under --tune")
	o.fusion = fs.String("fusion", memindex.FusionRRF, "hybrid fusion: rrf or weighted")
	d := node.DefaultConfig() // serve's defaults
	o.chunkTokens = fs.Int("chunk-tokens", d.ChunkTokens, "most tokens of one indexed chunk (a longer message is indexed in pieces)")
	o.ctxs = fs.Int("chunk-context", d.ChunkContext, "messages before a chunk indexed as its context; 0: none")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	o.rrfVector = fs.Float64("rrf-vector-weight", d.RRFVectorWeight, "weight of the vector leg in RRF; 0: the serve default for the embedder")
	o.rrfKeyword = fs.Float64("rrf-keyword-weight", d.RRFKeywordWeight, "weight of the keyword leg in RRF")
	o.rrfK = fs.Float64("rrf-k", d.RRFK, "the k of RRF; 0: the serve default")
	fs.BoolVar(&o.split, "split", false, "split the conversations (sorted) alternately into halves A and B and report every system on A, on B and on all")
	fs.BoolVar(&o.byCategory, "by-category", false, "report every system per question category too")
	fs.Var(&o.tune, "tune", "FLAG=v1,v2,...: run the eval once per combination (repeat for several flags), choose on each half the best rec@5+rec@10 of the first mode and report it on the other half (implies --split)")
	fs.IntVar(&o.synthConvs, "synthetic-conversations", 0, "conversations of a synthetic-en / synthetic-zh corpus; 0: the generator's default")
	fs.Uint64Var(&o.synthSeed, "synthetic-seed", 0, "seed of a synthetic corpus; 0: the generator's default")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	for _, m := range strings.Split(*mode, ",") {
		if m = strings.TrimSpace(m); m != "" {
			o.modes = append(o.modes, m)
		}
	}
	if len(o.modes) == 0 {
		return errors.New("eval: --mode names no mode")
	}
	if err := checkTune(fs, o.tune); err != nil {
		return err
	}
	o.split = o.split || len(o.tune) > 0
	var progress io.Writer = &lockedWriter{w: stderr} // searches report from several goroutines
	if o.asJSON {
		progress = io.Discard
	}
	var reps []eval.CorpusReport
	for _, spec := range strings.Split(data, ",") {
		rep, err := evalCorpus(ctx, o, strings.TrimSpace(spec), progress)
		if err != nil {
			return err
		}
		if !o.asJSON {
			printCorpus(stdout, rep, o.byCategory)
		}
		reps = append(reps, rep)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reps)
	}
	return nil
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

// checkTune refuses a --tune of an unknown or untunable flag, or a value
// the flag does not take, leaving every flag as it was.
func checkTune(fs *flag.FlagSet, axes []eval.Axis) error {
	for _, a := range axes {
		f := fs.Lookup(a.Flag)
		if f == nil || evalNotTunable[a.Flag] {
			return fmt.Errorf("eval: --tune %s: not a tunable eval flag", a.Flag)
		}
		was := f.Value.String()
		for _, v := range a.Values {
			if err := fs.Set(a.Flag, v); err != nil {
				return fmt.Errorf("eval: --tune %s=%s: %w", a.Flag, v, err)
			}
		}
		if err := fs.Set(a.Flag, was); err != nil {
			return err
		}
	}
	return nil
}

// evalCorpus loads one corpus, runs the baseline and memindex (once with
// the flags as given, and once per --tune combination) and reports.
func evalCorpus(ctx context.Context, o *evalOptions, spec string, progress io.Writer) (eval.CorpusReport, error) {
	tmp, err := os.MkdirTemp("", "memindex-eval-")
	if err != nil {
		return eval.CorpusReport{}, err
	}
	defer os.RemoveAll(tmp)
	dir, err := corpusDir(spec, o, tmp)
	if err != nil {
		return eval.CorpusReport{}, err
	}
	c, err := eval.Load(dir)
	if err != nil {
		return eval.CorpusReport{}, fmt.Errorf("eval: %w (the LoCoMo files live in ../shared/eval-data/locomo; set --data)", err)
	}
	fmt.Fprintf(progress, "%s: %d messages, %d questions with gold ids (%d without, skipped)\n", c.Name, len(c.Messages), len(c.Questions), c.Skipped)
	keys := c.SessionKeys()
	var halves map[string]eval.Half
	if o.split {
		halves = eval.Split(keys)
	}
	rep := eval.CorpusReport{Corpus: c.Name, Dir: dir, Date: time.Now().UTC().Format(time.RFC3339), Messages: len(c.Messages),
		Questions: len(c.Questions), Skipped: c.Skipped, Settings: flagSettings(o.fs)}
	if spec == "synthetic-en" || spec == "synthetic-zh" {
		rep.Dir = spec
	}
	rep.HalfA, rep.HalfB = eval.HalfKeys(halves, keys)

	base, err := baselineRun(ctx, c, filepath.Join(tmp, "baseline.db"))
	if err != nil {
		return eval.CorpusReport{}, err
	}
	fmt.Fprintf(progress, "%s: plain BM25 baseline done\n", c.Name)
	baseRep := eval.Summarize(base, halves, o.byCategory)

	runs, chunks, err := evalPass(ctx, o, c, progress)
	if err != nil {
		return eval.CorpusReport{}, err
	}
	rep.Chunks = chunks
	for _, r := range runs {
		rep.Systems = append(rep.Systems, eval.Summarize(r, halves, o.byCategory))
	}
	rep.Systems = append(rep.Systems, baseRep)
	rep.Losses = eval.Losses(rep.Systems, eval.BaselineSystem)
	if len(o.tune) == 0 {
		return rep, nil
	}

	tr := &eval.TuneReport{System: systemName(o.modes[0], *o.fusion)}
	for i, combo := range eval.Combinations(o.tune) {
		fmt.Fprintf(progress, "%s: tune %d: %s\n", c.Name, i+1, settingsString(combo))
		runs, err := withSettings(o.fs, combo, func() ([]eval.Run, error) {
			runs, _, err := evalPass(ctx, o, c, progress)
			return runs, err
		})
		if err != nil {
			return eval.CorpusReport{}, err
		}
		cand := eval.Candidate{Settings: combo}
		for _, r := range runs {
			cand.Systems = append(cand.Systems, eval.Summarize(r, halves, o.byCategory))
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

// withSettings runs fn with the flags of combo set, then sets them back.
func withSettings[T any](fs *flag.FlagSet, combo []eval.Setting, fn func() (T, error)) (T, error) {
	var zero T
	was := map[string]string{}
	for _, s := range combo {
		was[s.Flag] = fs.Lookup(s.Flag).Value.String()
	}
	defer func() {
		for f, v := range was {
			_ = fs.Set(f, v) // checkTune set it before
		}
	}()
	for _, s := range combo {
		if err := fs.Set(s.Flag, s.Value); err != nil {
			return zero, err
		}
	}
	return fn()
}

// corpusDir returns the folder of a --data entry: a folder as is, or a
// synthetic corpus generated into tmp.
func corpusDir(spec string, o *evalOptions, tmp string) (string, error) {
	switch spec {
	case "synthetic-en", "synthetic-zh":
		return syntheticDir(strings.TrimPrefix(spec, "synthetic-"), o.synthConvs, o.synthSeed, filepath.Join(tmp, "corpus"))
	}
	return spec, nil
}

// syntheticDir generates the synthetic corpus of lang into dir.
func syntheticDir(lang string, conversations int, seed uint64, dir string) (string, error) {
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
		hits, err := b.Search(ctx, q.SessionKey, q.Text, evalSearchK)
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

// evalPass starts a fresh node with the flags' current values, indexes c,
// waits for every vector, and asks every question in every mode.
func evalPass(ctx context.Context, o *evalOptions, c eval.Corpus, progress io.Writer) ([]eval.Run, int64, error) {
	tmp, err := os.MkdirTemp("", "memindex-eval-node-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(tmp)
	cfg := benchNodeConfig(tmp)
	cfg.Embedder.Dims, cfg.Worker = 0, "eval"
	cfg.ChunkTokens, cfg.ChunkContext = *o.chunkTokens, *o.ctxs
	cfg.RRFVectorWeight, cfg.RRFKeywordWeight, cfg.RRFK = *o.rrfVector, *o.rrfKeyword, *o.rrfK
	n, err := node.Open(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, 0, err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx) }()
	defer func() { stop(); <-done }()

	const ns = "eval"
	fmt.Fprintf(progress, "%s: indexing %d messages …\n", c.Name, len(c.Messages))
	if _, err := benchIngest(ctx, n, c.Name, c.Events, ns); err != nil {
		return nil, 0, err
	}
	for { // wait for every vector
		if t := totals(ctx, n); t.messages >= int64(len(c.Messages)) && t.waiting == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	chunks := totals(ctx, n).chunks
	cl := client.NewClient(n.Conn())
	var runs []eval.Run
	for _, mode := range o.modes {
		run := eval.Run{System: systemName(mode, *o.fusion), Results: make([]eval.Result, len(c.Questions))}
		var done atomic.Int64
		p := pool.New().WithErrors().WithContext(ctx).WithFirstError().WithMaxGoroutines(8)
		for i, q := range c.Questions {
			p.Go(func(ctx context.Context) error {
				qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				resp, err := cl.Search(qctx, memindex.SearchRequest{Namespace: ns, Query: q.Text, K: evalSearchK, SessionKey: q.SessionKey, Mode: mode, Fusion: *o.fusion})
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

// systemName names memindex in a mode in the report.
func systemName(mode, fusion string) string {
	if mode == memindex.ModeHybrid {
		return "memindex " + mode + " (" + fusion + ")"
	}
	return "memindex " + mode
}

// flagSettings returns the eval flags that shape a run, as set now.
func flagSettings(fs *flag.FlagSet) []eval.Setting {
	var out []eval.Setting
	fs.VisitAll(func(f *flag.Flag) {
		if !evalNotTunable[f.Name] && f.Name != "config" {
			out = append(out, eval.Setting{Flag: f.Name, Value: f.Value.String()})
		}
	})
	return out
}

func settingsString(ss []eval.Setting) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, s.Flag+"="+s.Value)
	}
	return strings.Join(parts, " ")
}

const evalHeader = "%-24s %-4s %5s %6s %6s %6s %6s %6s %6s %7s %7s %7s %7s\n"

func printCorpus(w io.Writer, rep eval.CorpusReport, byCategory bool) {
	fmt.Fprintf(w, "%s (%s): %d messages in %d chunks, %d questions with gold ids (%d without, skipped), %s\n",
		rep.Corpus, rep.Dir, rep.Messages, rep.Chunks, rep.Questions, rep.Skipped, rep.Date)
	fmt.Fprintf(w, "settings: %s\n", settingsString(rep.Settings))
	fmt.Fprintln(w, "strict budget: whole hits in rank order while the messages paid fit, repeats paid again; recall/hit/repeats in %")
	halves := []eval.Half{eval.All}
	if len(rep.HalfA)+len(rep.HalfB) > 0 {
		fmt.Fprintf(w, "half A: %s\nhalf B: %s\n", strings.Join(rep.HalfA, " "), strings.Join(rep.HalfB, " "))
		halves = []eval.Half{eval.HalfA, eval.HalfB, eval.All}
	}
	printTable(w, rep.Systems, halves, byCategory, "")
	printLosses(w, rep.Losses)
	if rep.Tune != nil {
		printTune(w, rep)
	}
	fmt.Fprintln(w)
}

func printTable(w io.Writer, systems []eval.SystemReport, halves []eval.Half, byCategory bool, indent string) {
	fmt.Fprintf(w, indent+evalHeader, "system", "half", "n", "rec@5", "rec@10", "rec@25", "rec@50", "hit@5", "MRR", "nDCG@10", "hits@10", "msgs@10", "repeats")
	for _, h := range halves {
		for _, s := range systems {
			sl := s.Slice(h)
			if sl == nil {
				continue
			}
			printRow(w, indent, s.System, h, sl.Scores)
			if byCategory {
				for _, c := range sl.Categories() {
					printRow(w, indent, "  "+c, h, sl.ByCategory[c])
				}
			}
		}
	}
}

func printRow(w io.Writer, indent, name string, h eval.Half, s eval.Scores) {
	fmt.Fprintf(w, indent+"%-24s %-4s %5d %6.1f %6.1f %6.1f %6.1f %6.1f %6.3f %7.3f %7.1f %7.1f %7.1f\n", name, h, s.Questions,
		100*s.Rec(5), 100*s.Rec(10), 100*s.Rec(25), 100*s.Rec(50), 100*s.HitAt(5), s.MRR, s.NDCG10, s.AvgHits10, s.AvgMessages10, 100*s.Repeats)
}

func printLosses(w io.Writer, losses []eval.Loss) {
	if len(losses) == 0 {
		fmt.Fprintln(w, "every memindex system beats the plain BM25 baseline on rec@5+rec@10 (on each half with a split)")
		return
	}
	for _, l := range losses {
		fmt.Fprintf(w, "!!! LOSES TO THE BASELINE: %s on %s: rec@5+rec@10 = %.1f, plain BM25 / message %.1f\n", l.System, halfName(l.Half), 100*l.Objective, 100*l.Baseline)
	}
}

func printTune(w io.Writer, rep eval.CorpusReport) {
	tr := rep.Tune
	fmt.Fprintf(w, "\ntuning: %d combinations, chosen by %s's rec@5+rec@10 on one half, reported on the other\n", len(tr.Candidates), tr.System)
	for _, c := range tr.Candidates {
		fmt.Fprintf(w, "  %s\n", settingsString(c.Settings))
		printTable(w, c.Systems, []eval.Half{eval.HalfA, eval.HalfB}, false, "    ")
	}
	var defaults *eval.SystemReport
	for i := range rep.Systems {
		if rep.Systems[i].System == tr.System {
			defaults = &rep.Systems[i]
		}
	}
	base := rep.Systems[len(rep.Systems)-1]
	for _, ch := range []eval.Choice{tr.ChosenOnA, tr.ChosenOnB} {
		held := ch.TunedOn.Other()
		fmt.Fprintf(w, "chosen on %s: %s (%s rec@5 %.1f rec@10 %.1f) -> on %s: rec@5 %.1f rec@10 %.1f",
			halfName(ch.TunedOn), settingsString(ch.Settings), ch.TunedOn, 100*ch.Tuned.Rec(5), 100*ch.Tuned.Rec(10), halfName(held), 100*ch.HeldOut.Rec(5), 100*ch.HeldOut.Rec(10))
		if defaults != nil {
			d := defaults.Slice(held)
			fmt.Fprintf(w, "; defaults there %.1f %.1f", 100*d.Rec(5), 100*d.Rec(10))
		}
		b := base.Slice(held)
		fmt.Fprintf(w, "; baseline there %.1f %.1f\n", 100*b.Rec(5), 100*b.Rec(10))
	}
	lost := false
	for _, l := range rep.Losses {
		if l.System == tr.System {
			lost = true
		}
	}
	if lost {
		fmt.Fprintf(w, "!!! THE DEFAULTS LOSE TO THE PLAIN BM25 BASELINE (%s, rec@5+rec@10) on at least one half: see above\n", tr.System)
	} else {
		fmt.Fprintf(w, "the defaults (%s) beat the plain BM25 baseline on both halves (rec@5+rec@10)\n", tr.System)
	}
}

func halfName(h eval.Half) string {
	if h == eval.All {
		return "all"
	}
	return "half " + string(h)
}
