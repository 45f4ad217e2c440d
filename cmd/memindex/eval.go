package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"memindex"
	"memindex/internal/eval"
	"memindex/internal/evalrun"
	"memindex/internal/harness"
	"memindex/node"
)

// evalNotTunable are eval flags --tune may not vary: they choose what is
// measured, not how memindex searches.
var evalNotTunable = map[string]bool{"data": true, "locomo": true, "tune": true, "json": true, "split": true,
	"by-category": true, "mode": true, "synthetic-conversations": true, "synthetic-seed": true}

// evalOptions are the eval flags that shape a pass; pass reads them
// (evalrun.Tunable sets a --tune combination's values first and sets them
// back after).
type evalOptions struct {
	fusion                      *string
	chunkTokens, ctxs           *int
	rrfVector, rrfKeyword, rrfK *float64
}

// runEval parses `memindex eval`'s flags, runs internal/evalrun on each
// corpus with the nodes of harness.Nodes, and prints the reports.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval", "[flags]")
	fs.SetOutput(stderr)
	var data string
	defData := env("MEMINDEX_LOCOMO_DIR", "../shared/eval-data/locomo")
	fs.StringVar(&data, "data", defData, "corpora, comma separated: a folder with exactly one *.events.jsonl and one *.queries.jsonl in LoCoMo's format, or synthetic-en / synthetic-zh (generated); default: env MEMINDEX_LOCOMO_DIR or ../shared/eval-data/locomo")
	fs.StringVar(&data, "locomo", defData, "alias of --data")
	o := &evalOptions{}
	var cfg evalrun.Config
	var tune evalrun.TuneFlag
	var asJSON bool
	mode := fs.String("mode", "keyword,vector,hybrid", "search modes to measure, comma separated: keyword, vector, hybrid; the first one chooses under --tune")
	o.fusion = fs.String("fusion", memindex.FusionRRF, "hybrid fusion: rrf or weighted")
	d := node.DefaultConfig() // serve's defaults
	o.chunkTokens = fs.Int("chunk-tokens", d.ChunkTokens, "most tokens of one indexed chunk (a longer message is indexed in pieces)")
	o.ctxs = fs.Int("chunk-context", d.ChunkContext, "messages before a chunk indexed as its context; 0: none")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	o.rrfVector = fs.Float64("rrf-vector-weight", d.RRFVectorWeight, "weight of the vector leg in RRF; 0: the serve default for the embedder")
	o.rrfKeyword = fs.Float64("rrf-keyword-weight", d.RRFKeywordWeight, "weight of the keyword leg in RRF")
	o.rrfK = fs.Float64("rrf-k", d.RRFK, "the k of RRF; 0: the serve default")
	fs.BoolVar(&cfg.Split, "split", false, "split the conversations (sorted) alternately into halves A and B and report every system on A, on B and on all")
	fs.BoolVar(&cfg.ByCategory, "by-category", false, "report every system per question category too")
	fs.Var(&tune, "tune", "FLAG=v1,v2,...: run the eval once per combination (repeat for several flags), choose on each half the best rec@5+rec@10 of the first mode and report it on the other half (implies --split)")
	fs.IntVar(&cfg.SyntheticConversations, "synthetic-conversations", 0, "conversations of a synthetic-en / synthetic-zh corpus; 0: the generator's default")
	fs.Uint64Var(&cfg.SyntheticSeed, "synthetic-seed", 0, "seed of a synthetic corpus; 0: the generator's default")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if cfg.Modes = splitList(*mode); len(cfg.Modes) == 0 {
		return errors.New("eval: --mode names no mode")
	}
	tunable := evalrun.Tunable{Flags: fs, Fixed: evalNotTunable}
	if err := tunable.Check(tune); err != nil {
		return err
	}
	cfg.Tune, cfg.Settings, cfg.Configure, cfg.Hooks = tune, tunable.Settings(), tunable.Configure(o.pass), harness.Nodes
	if !asJSON {
		cfg.Progress = stderr
	}
	var reps []eval.CorpusReport
	for _, spec := range strings.Split(data, ",") {
		rep, err := evalrun.Run(ctx, cfg, strings.TrimSpace(spec))
		if err != nil {
			return err
		}
		if !asJSON {
			printCorpus(stdout, rep, cfg.ByCategory)
		}
		reps = append(reps, rep)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reps)
	}
	return nil
}

// pass returns the flags' values as a pass.
func (o *evalOptions) pass() evalrun.Pass {
	return evalrun.Pass{ChunkTokens: *o.chunkTokens, ChunkContext: *o.ctxs, RRFVector: *o.rrfVector,
		RRFKeyword: *o.rrfKeyword, RRFK: *o.rrfK, Fusion: *o.fusion}
}

const evalHeader = "%-24s %-4s %5s %6s %6s %6s %6s %6s %6s %7s %7s %7s %7s\n"

func printCorpus(w io.Writer, rep eval.CorpusReport, byCategory bool) {
	fmt.Fprintf(w, "%s (%s): %d messages in %d chunks, %d questions with gold ids (%d without, skipped), %s\n",
		rep.Corpus, rep.Dir, rep.Messages, rep.Chunks, rep.Questions, rep.Skipped, rep.Date)
	fmt.Fprintf(w, "settings: %s\n", evalrun.FormatSettings(rep.Settings))
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
		fmt.Fprintf(w, "  %s\n", evalrun.FormatSettings(c.Settings))
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
			halfName(ch.TunedOn), evalrun.FormatSettings(ch.Settings), ch.TunedOn, 100*ch.Tuned.Rec(5), 100*ch.Tuned.Rec(10), halfName(held), 100*ch.HeldOut.Rec(5), 100*ch.HeldOut.Rec(10))
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
