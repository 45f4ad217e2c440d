package query

import (
	"fmt"

	"memindex"
	"memindex/store"
)

// explainer collects the stages of one search when the request asked to
// explain it; off, every method is a no-op.
type explainer struct {
	on     bool
	stages []memindex.Stage
}

func (x *explainer) add(stage string, in, out int, detail string) {
	if x.on {
		x.stages = append(x.stages, memindex.Stage{Stage: stage, In: in, Out: out, Detail: detail})
	}
}

// legs records what the keyword and vector legs did.
func (x *explainer) legs(req memindex.SearchRequest, vec, kw legResult) {
	if !x.on {
		return
	}
	if req.Mode != memindex.ModeVector {
		d := "no searchable word in the query"
		if m := store.BuildMatch(req.Query); m != "" {
			d = fmt.Sprintf("BM25 over chunk text (context words weigh less), FTS5 MATCH %s", m)
		}
		x.stages = append(x.stages, legStage("keyword", kw, d))
	}
	if req.Mode != memindex.ModeKeyword {
		x.stages = append(x.stages, legStage("vector", vec, "cosine similarity of the query embedding to every chunk vector of the namespace (exact scan)"))
	}
}

func legStage(name string, r legResult, detail string) memindex.Stage {
	switch {
	case !r.leg.Answered:
		detail = "did not answer: " + r.leg.Reason
	case r.leg.Reason != "":
		detail += "; answered in part: " + r.leg.Reason
	}
	st := memindex.Stage{Stage: name, Out: len(r.cands), Detail: detail, TookMs: r.leg.TookMs}
	if len(r.cands) > 0 {
		st.Detail += fmt.Sprintf("; best score %.3f", r.cands[0].Score)
	}
	return st
}

// fusion records how the legs' candidates were merged.
func (x *explainer) fusion(req memindex.SearchRequest, cfg EngineConfig, fusion string, in, out int) {
	if !x.on {
		return
	}
	p := FuseParams{RRFK: cfg.RRFK, VectorWeight: cfg.VectorWeight, KeywordWeight: cfg.KeywordWeight,
		RRFVectorWeight: cfg.RRFVectorWeight, RRFKeywordWeight: cfg.RRFKeywordWeight}.withDefaults()
	var d string
	switch fusion {
	case memindex.FusionRRF:
		d = fmt.Sprintf("reciprocal rank fusion: score = Σ weight/(%g + rank) over the legs that found candidates (vector weight %g, keyword weight %g), divided by its largest possible value",
			p.RRFK, p.RRFVectorWeight, p.RRFKeywordWeight)
	case memindex.FusionWeighted:
		d = fmt.Sprintf("weighted sum of the legs' scores: vector %g, keyword %g", p.VectorWeight, p.KeywordWeight)
	default:
		d = "one leg (" + req.Mode + " mode): its scores as they are"
	}
	x.add("fusion", in, out, d)
}
