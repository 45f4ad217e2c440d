package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/conc"

	"memindex"
	"memindex/embedder"
	"memindex/store"
)

// Engine defaults.
const (
	// DefaultCandidateFactor is how many candidates per wanted hit a leg fetches.
	DefaultCandidateFactor = 4
	// MinCandidates is the fewest candidates a leg fetches, whatever k is.
	MinCandidates = 20
	// DefaultQueryEmbedTimeout bounds embedding the query of one search.
	DefaultQueryEmbedTimeout = 2 * time.Second
	// snippetRunes is how much of a chunk's text a snippet shows when the
	// keyword leg gave none.
	snippetRunes = 200
)

// EngineConfig tunes an Engine. Zero fields take the defaults.
type EngineConfig struct {
	// CandidateFactor: each leg fetches k*CandidateFactor candidates, and at
	// least MinCandidates (default DefaultCandidateFactor).
	CandidateFactor int
	// QueryEmbedTimeout bounds embedding the query; past it the vector leg is
	// skipped and the response says so (default DefaultQueryEmbedTimeout).
	QueryEmbedTimeout time.Duration
	// RRFK is the k constant of reciprocal rank fusion (default DefaultRRFK).
	RRFK float64
	// VectorWeight and KeywordWeight weigh the legs in weighted fusion; they
	// must sum to 1 (default DefaultVectorWeight and DefaultKeywordWeight).
	VectorWeight, KeywordWeight float64
	// RRFVectorWeight and RRFKeywordWeight weigh the legs in RRF (zero
	// means 1). A weak vector leg, like the built-in embedder's, is
	// better trusted less than the keyword leg (see BENCHMARKS.md).
	RRFVectorWeight, RRFKeywordWeight float64
	// MMRLambda is the λ of a search that asks for MMR without one
	// (0: DefaultMMRLambda).
	MMRLambda float64
	// AbstainVectorScore is the vector score below which a search whose
	// keyword leg matched nothing abstains (0: DefaultAbstainVectorScore;
	// negative: never abstain).
	AbstainVectorScore float64
}

// Validate reports a setting that is out of range. Zero means default and is
// valid.
func (c EngineConfig) Validate() error {
	switch {
	case c.CandidateFactor < 0:
		return fmt.Errorf("engine config: candidate factor must not be negative, got %d", c.CandidateFactor)
	case c.QueryEmbedTimeout < 0:
		return fmt.Errorf("engine config: query embed timeout must not be negative, got %s", c.QueryEmbedTimeout)
	case c.RRFK < 0:
		return fmt.Errorf("engine config: RRF k must not be negative, got %g", c.RRFK)
	case c.VectorWeight < 0 || c.KeywordWeight < 0:
		return fmt.Errorf("engine config: weights must not be negative, got vector %g keyword %g", c.VectorWeight, c.KeywordWeight)
	case (c.VectorWeight != 0 || c.KeywordWeight != 0) && math.Abs(c.VectorWeight+c.KeywordWeight-1) > 1e-9:
		return fmt.Errorf("engine config: vector and keyword weights must sum to 1, got %g+%g", c.VectorWeight, c.KeywordWeight)
	}
	return nil
}

func (c EngineConfig) withDefaults() EngineConfig {
	if c.CandidateFactor <= 0 {
		c.CandidateFactor = DefaultCandidateFactor
	}
	if c.QueryEmbedTimeout <= 0 {
		c.QueryEmbedTimeout = DefaultQueryEmbedTimeout
	}
	p := FuseParams{RRFK: c.RRFK, VectorWeight: c.VectorWeight, KeywordWeight: c.KeywordWeight}.withDefaults()
	c.RRFK, c.VectorWeight, c.KeywordWeight = p.RRFK, p.VectorWeight, p.KeywordWeight
	return c
}

// Engine runs hybrid searches against the shard a Router names. It is safe
// for concurrent use.
type Engine struct {
	cfg    EngineConfig
	router Router
	emb    embedder.Embedder
}

// NewEngine returns an Engine that routes with r and embeds queries with emb.
// Zero or negative settings of cfg take their defaults (check them first with
// cfg.Validate). A nil emb makes the vector leg unavailable.
func NewEngine(cfg EngineConfig, r Router, emb embedder.Embedder) *Engine {
	return &Engine{cfg: cfg.withDefaults(), router: r, emb: emb}
}

// legResult is what one leg brought back.
type legResult struct {
	leg   memindex.Leg
	cands []store.Candidate
	// skipped says the leg never reached the shard (the query embedding failed).
	skipped bool
	// closed says the leg met the shard closed (store.ErrClosed): its
	// partition was dropped while the search ran.
	closed bool
}

// Search answers req. It normalises req first; an invalid request is an
// error wrapping memindex.ErrInvalid or memindex.ErrTooLarge. Routing errors
// wrap ErrNotOwned or ErrNotReady. A failing leg degrades the response; when
// every leg that ran failed the error wraps ErrUnavailable.
func (e *Engine) Search(ctx context.Context, req memindex.SearchRequest) (memindex.SearchResponse, error) {
	start := time.Now()
	if err := req.Normalize(); err != nil {
		return memindex.SearchResponse{}, fmt.Errorf("invalid search request: %w", err)
	}
	shard, partition, err := e.router.Route(req.Namespace)
	if err != nil {
		return memindex.SearchResponse{}, fmt.Errorf("route namespace %s: %w", req.Namespace, err)
	}
	resp := memindex.SearchResponse{
		Type:      "search.result",
		Version:   1,
		Namespace: req.Namespace,
		Hits:      []memindex.Hit{},
		Partition: partition,
	}
	// Read the applied sequence first: the legs see at least this state.
	if resp.AppliedSeq, err = shard.AppliedSeq(ctx); err != nil {
		resp.Degraded = append(resp.Degraded, fmt.Sprintf("applied sequence unknown: %v", err))
	}

	// A candidate whose chunk is gone by the time it is loaded was replaced
	// by a commit between the legs and the load (a memory file's new
	// version, a session's re-chunked tail): the legs are asked again, so a
	// file being replaced is found in its old version or its new one, never
	// in neither.
	for try := 0; ; try++ {
		out, vanished, err := e.answer(ctx, shard, req, resp, start)
		if err != nil || vanished == 0 || try == vanishedRetries || ctx.Err() != nil {
			return out, err
		}
		if w, ok := shard.(indexWaiter); ok {
			w.WaitIndexed() // the commit that removed them is indexed before the legs run again
		}
	}
}

// indexWaiter is offered by a shard whose in-memory indexes follow its
// commits a moment later; *store.Shard does.
type indexWaiter interface {
	WaitIndexed()
}

// vanishedRetries bounds how often Search asks the legs again when
// candidates vanished before they were loaded.
const vanishedRetries = 2

// answer runs the legs against shard, fuses and loads the hits into resp.
// vanished counts candidates whose chunks were gone when loaded.
func (e *Engine) answer(ctx context.Context, shard Searcher, req memindex.SearchRequest, resp memindex.SearchResponse, start time.Time) (_ memindex.SearchResponse, vanished int, _ error) {
	after, before := req.TimeRange()
	filter := store.Filter{SessionKey: req.SessionKey, SessionID: req.SessionID, After: after, Before: before,
		Sources: req.Sources, DirPath: req.DirPath}
	limit := max(req.K*e.cfg.CandidateFactor, MinCandidates)
	lambda := e.lambda(req)
	hitsWanted := hitPool(req, lambda) // the fused hits loaded, in order

	vec := legResult{leg: memindex.Leg{Reason: "not run in " + req.Mode + " mode"}}
	kw := vec
	var wg conc.WaitGroup
	if req.Mode != memindex.ModeKeyword {
		wg.Go(func() { vec = e.vectorLeg(ctx, shard, req, filter, limit, hitsWanted) })
	}
	if req.Mode != memindex.ModeVector {
		wg.Go(func() { kw = e.keywordLeg(ctx, shard, req, filter, limit) })
	}
	wg.Wait()
	resp.Legs = memindex.Legs{Vector: vec.leg, Keyword: kw.leg}
	if vec.leg.Ran {
		resp.VectorFallback = vectorFallback(shard)
	}

	switch {
	case !vec.leg.Answered && !kw.leg.Answered:
		if err := ctx.Err(); err != nil {
			return memindex.SearchResponse{}, 0, fmt.Errorf("search %s: %w", req.Namespace, err)
		}
		if vec.closed || kw.closed { // a hand-over: the caller retries (handedOver)
			return memindex.SearchResponse{}, 0, fmt.Errorf("search %s: %w: %w (%s)", req.Namespace, ErrUnavailable, store.ErrClosed, legReasons(vec.leg, kw.leg))
		}
		return memindex.SearchResponse{}, 0, fmt.Errorf("search %s: %w: %s", req.Namespace, ErrUnavailable, legReasons(vec.leg, kw.leg))
	case vec.leg.Ran && !vec.leg.Answered:
		resp.Degraded = append(resp.Degraded, degradedReason("vector", vec, "keyword"))
	case kw.leg.Ran && !kw.leg.Answered:
		resp.Degraded = append(resp.Degraded, degradedReason("keyword", kw, "vector"))
	}
	if kw.leg.Answered && kw.leg.Reason != "" {
		resp.Degraded = append(resp.Degraded, "keyword leg answered in part: "+kw.leg.Reason)
	}
	if vec.leg.Answered && vec.leg.Reason != "" {
		resp.Degraded = append(resp.Degraded, "vector leg answered in part: "+vec.leg.Reason)
	}

	var xs explainer
	if req.Explain {
		xs = explainer{on: true}
		xs.legs(req, vec, kw)
	}
	var fused []Fused
	fusion := req.Fusion
	switch req.Mode {
	case memindex.ModeKeyword:
		fused, fusion = single(kw.cands, false), "none"
	case memindex.ModeVector:
		fused, fusion = single(vec.cands, true), "none"
	default:
		fused = Fuse(req.Fusion, vec.cands, kw.cands, FuseParams{RRFK: e.cfg.RRFK, VectorWeight: e.cfg.VectorWeight, KeywordWeight: e.cfg.KeywordWeight,
			RRFVectorWeight: e.cfg.RRFVectorWeight, RRFKeywordWeight: e.cfg.RRFKeywordWeight})
	}
	xs.fusion(req, e.cfg, fusion, len(vec.cands)+len(kw.cands), len(fused))
	n := 0
	for _, f := range fused {
		if f.Score >= req.MinScore {
			fused[n] = f
			n++
		}
	}
	xs.add("minScore", len(fused), n, fmt.Sprintf("kept hits scoring at least %g", req.MinScore))
	fused = fused[:n]

	snippets := make(map[string]store.Candidate, len(kw.cands)) // the keyword leg's, cut for the hits returned
	for _, c := range kw.cands {
		if _, ok := snippets[c.ID]; !ok {
			snippets[c.ID] = c
		}
	}
	if why := abstention(kw, vec, e.abstainAt()); why != "" && req.Mode != memindex.ModeKeyword {
		resp.Abstained = why
		xs.add("abstention", len(fused), 0, "abstained: "+why)
		fused = nil
	} else if req.Mode != memindex.ModeKeyword {
		xs.add("abstention", len(fused), len(fused), fmt.Sprintf("answered: keyword candidates %d, or a vector score of at least %.2f", len(kw.cands), e.abstainAt()))
	}
	pool := req
	pool.K = hitsWanted
	hits, dropped, vanished, err := e.hydrate(ctx, shard, pool, fused, snippets, fusion)
	if err != nil {
		return memindex.SearchResponse{}, 0, fmt.Errorf("search %s: %w", req.Namespace, err)
	}
	xs.add("hydrate", len(fused), len(hits), fmt.Sprintf("loaded up to %d chunks in fused order, skipping those outside sources %v; %d failed the namespace check", pool.K, req.Sources, dropped))
	if req.HalfLifeHours > 0 {
		applyDecay(hits, time.Duration(req.HalfLifeHours*float64(time.Hour)), time.Now())
		xs.add("decay", len(hits), len(hits), fmt.Sprintf("scores of session and record hits halved every %gh of age (files never decay), then re-sorted", req.HalfLifeHours))
	}
	in := len(hits)
	hits = mmr(hits, req.K, lambda)
	if lambda < 1 {
		xs.add("mmr", in, len(hits), fmt.Sprintf("chose %d by maximal marginal relevance, lambda %g (word-set similarity between hits)", len(hits), lambda))
	} else if in > len(hits) {
		xs.add("top-k", in, len(hits), fmt.Sprintf("kept the first %d", req.K))
	}
	if hits, err = e.fit(ctx, shard, req, hits, &resp.Used, &xs); err != nil {
		return memindex.SearchResponse{}, 0, fmt.Errorf("search %s: %w", req.Namespace, err)
	}
	if dropped > 0 {
		// Not degraded in the sense of a leg, but visible: a Searcher that
		// answers with another namespace's chunks is a bug worth seeing.
		resp.Degraded = append(resp.Degraded, fmt.Sprintf("%d results failed the namespace check and were dropped (a shard bug; please report it)", dropped))
	}
	resp.Hits = hits
	resp.Explain = xs.stages
	resp.TookMs = millis(time.Since(start))
	return resp, vanished, nil
}

// vectorLeg embeds the query within QueryEmbedTimeout, then runs VectorSearch.
func (e *Engine) vectorLeg(ctx context.Context, s Searcher, req memindex.SearchRequest, f store.Filter, limit, exact int) (r legResult) {
	start := time.Now()
	r.leg.Ran = true
	defer func() { r.leg.TookMs = millis(time.Since(start)) }()
	emb := e.emb
	if qe, ok := s.(QueryEmbedderer); ok {
		emb = qe.QueryEmbedder()
	}
	vec, err := e.embedQuery(ctx, emb, req.Query)
	if err != nil {
		r.leg.Reason, r.skipped = err.Error(), true
		return r
	}
	var cands []store.Candidate
	if ts, ok := s.(topSearcher); ok {
		cands, err = ts.VectorSearchTop(ctx, req.Namespace, vec, f, limit, exact)
	} else {
		cands, err = s.VectorSearch(ctx, req.Namespace, vec, f, limit)
	}
	if err != nil {
		r.leg.Reason, r.closed = fmt.Sprintf("search failed: %v", err), errors.Is(err, store.ErrClosed)
		return r
	}
	r.leg.Answered, r.leg.Hits, r.cands = true, len(cands), cands
	if cov, ok := s.(coverageReporter); ok {
		if vecs, chunks := cov.VectorCoverage(req.Namespace); vecs < chunks {
			r.leg.Reason = fmt.Sprintf("covers %d of %d chunks: %d wait for vectors (the embedding provider is behind or down) and are found by keywords only",
				vecs, chunks, chunks-vecs)
		}
	}
	return r
}

// topSearcher is a Searcher that can rank a vector search's first exact
// candidates exactly and the rest up to limit by its quantized
// approximation, for less work; *store.Shard is one (VectorSearchTop). The
// vector leg asks for its candidates so, exact for as many as the answer
// can take in the vector leg's order (hitPool): past those, fusion takes
// them by rank.
type topSearcher interface {
	VectorSearchTop(ctx context.Context, ns string, vec []float32, f store.Filter, limit, exact int) ([]store.Candidate, error)
}

// lambda is the MMR λ of req: 1 (off) unless it asks for MMR.
func (e *Engine) lambda(req memindex.SearchRequest) float64 {
	if !req.MMR {
		return 1
	}
	if req.MMRLambda != 0 {
		return req.MMRLambda
	}
	return e.mmrLambda()
}

// hitPool is how many fused hits the answer to req loads and chooses its
// K from: K, or mmrPool times K when MMR (lambda < 1) or decay re-ranks
// them.
func hitPool(req memindex.SearchRequest, lambda float64) int {
	if lambda < 1 || req.HalfLifeHours > 0 {
		return min(req.K*mmrPool, memindex.MaxK)
	}
	return req.K
}

// coverageReporter is what a shard that knows how many of a namespace's
// chunks have vectors offers; *store.Shard does.
type coverageReporter interface {
	VectorCoverage(ns string) (vectors, chunks int64)
}

// QueryEmbedderer is offered by a Searcher whose vectors come from another
// embedder than the engine's (a shard still serving the previous model while
// a new vector set is built): its queries are embedded with QueryEmbedder,
// which may be nil when that embedder is not available (vector leg skipped).
type QueryEmbedderer interface {
	QueryEmbedder() embedder.Embedder
}

func (e *Engine) embedQuery(ctx context.Context, emb embedder.Embedder, query string) ([]float32, error) {
	if emb == nil {
		return nil, errors.New("no embedder configured")
	}
	ectx, cancel := context.WithTimeout(ctx, e.cfg.QueryEmbedTimeout)
	defer cancel()
	vecs, err := emb.Embed(ectx, embedder.Request{Texts: []string{query}, Kind: embedder.KindQuery})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("query embedding stopped: %v", ctx.Err())
	case err != nil && ectx.Err() != nil:
		return nil, fmt.Errorf("query embedding timed out after %s", e.cfg.QueryEmbedTimeout)
	case err != nil:
		return nil, fmt.Errorf("query embedding failed: %v", err)
	case len(vecs) != 1 || len(vecs[0]) == 0:
		return nil, fmt.Errorf("query embedding failed: embedder returned %d vectors for 1 text", len(vecs))
	}
	return vecs[0], nil
}

func (e *Engine) keywordLeg(ctx context.Context, s Searcher, req memindex.SearchRequest, f store.Filter, limit int) legResult {
	start := time.Now()
	r := legResult{leg: memindex.Leg{Ran: true}}
	cands, err := s.KeywordSearch(ctx, req.Namespace, req.Query, f, limit)
	r.leg.TookMs = millis(time.Since(start))
	var partial interface{ Partial() string }
	if errors.As(err, &partial) {
		// Answered over part of the matches; the results stand, flagged.
		r.leg.Answered, r.leg.Hits, r.cands = true, len(cands), cands
		r.leg.Reason = partial.Partial()
		return r
	}
	if err != nil {
		r.leg.Reason, r.closed = fmt.Sprintf("search failed: %v", err), errors.Is(err, store.ErrClosed)
		return r
	}
	r.leg.Answered, r.leg.Hits, r.cands = true, len(cands), cands
	return r
}

// degradedReason words why leg did not answer, e.g. "vector leg skipped:
// query embedding timed out after 2s; results are keyword-only".
func degradedReason(name string, r legResult, other string) string {
	verb := "failed"
	if r.skipped {
		verb = "skipped"
	}
	return fmt.Sprintf("%s leg %s: %s; results are %s-only", name, verb, r.leg.Reason, other)
}

func legReasons(vec, kw memindex.Leg) string {
	var parts []string
	if vec.Ran {
		parts = append(parts, "vector leg: "+vec.Reason)
	}
	if kw.Ran {
		parts = append(parts, "keyword leg: "+kw.Reason)
	}
	return strings.Join(parts, "; ")
}

// single scores the candidates of a single-leg search by the leg's own score.
func single(cands []store.Candidate, vector bool) []Fused {
	out := make([]Fused, 0, len(cands))
	seen := make(map[string]bool, len(cands))
	for i, c := range cands {
		if seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		f := Fused{ID: c.ID, Row: c.Row, Score: c.Score}
		if vector {
			f.VectorScore, f.VectorRank = c.Score, rankOf(c, i)
		} else {
			f.KeywordScore, f.KeywordRank = c.Score, rankOf(c, i)
		}
		out = append(out, f)
	}
	return out
}

// hydrate turns the best fused candidates into at most req.K hits, fetching
// chunks a round at a time. A hit is a unit, never repeated: the message of
// a session chunk (the best-ranked of its pieces stands for a split
// message), a file section, a record. A chunk that vanished since the leg
// ran, that is of a source the request excludes, or (a Searcher bug) of
// another namespace is dropped; dropped counts the last kind, vanished the
// first.
func (e *Engine) hydrate(ctx context.Context, s Searcher, req memindex.SearchRequest, fused []Fused, snippets map[string]store.Candidate, fusion string) (hits []memindex.Hit, dropped, vanished int, err error) {
	hits = make([]memindex.Hit, 0, min(req.K, len(fused)))
	seen := make(map[string]bool, min(req.K, len(fused)))
	for len(fused) > 0 && len(hits) < req.K {
		batch := fused[:min(req.K-len(hits), len(fused))]
		fused = fused[len(batch):]
		refs := make([]store.ChunkRef, len(batch))
		for i, f := range batch {
			refs[i] = f.Ref()
		}
		recs, err := s.Chunks(ctx, refs)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("load chunks: %w", err)
		}
		for _, f := range batch {
			rec, ok := recs[f.ID]
			switch {
			case !ok || rec.ID != f.ID:
				vanished++
				continue
			case rec.Namespace != req.Namespace:
				dropped++
				continue
			case !wantSource(req.Sources, sourceOf(rec)):
				continue
			}
			key := unitKey(rec)
			if seen[key] { // a batch holds at most K-len(hits) candidates
				continue
			}
			seen[key] = true
			hits = append(hits, hit(rec, f, snippets[f.ID].SnippetFor(rec), req.Explain, fusion))
		}
	}
	return hits, dropped, vanished, nil
}

// unitKey names the unit a chunk's hit returns: its message for a session
// chunk of one message, else the chunk's unit id.
func unitKey(rec store.ChunkRecord) string {
	if m := rec.Message; m != nil {
		return "m\x00" + msgKey(rec.SessionKey, rec.SessionID, m.Seq)
	}
	if rec.UnitID != "" {
		return "c\x00" + rec.UnitID
	}
	return "c\x00" + rec.ID
}

func sourceOf(rec store.ChunkRecord) string {
	if rec.Source == "" {
		return memindex.SourceSessions
	}
	return rec.Source
}

func wantSource(sources []string, src string) bool {
	if len(sources) == 0 {
		return true
	}
	for _, s := range sources {
		if s == src {
			return true
		}
	}
	return false
}

func hit(rec store.ChunkRecord, f Fused, snippet string, explain bool, fusion string) memindex.Hit {
	if snippet == "" {
		snippet = cut(rec.Text, snippetRunes)
	}
	id := rec.ID
	if rec.UnitID != "" {
		id = rec.UnitID
	}
	h := memindex.Hit{
		ID:         id,
		Source:     sourceOf(rec),
		Text:       rec.Text,
		Snippet:    snippet,
		Score:      f.Score,
		SessionKey: rec.SessionKey,
		SessionID:  rec.SessionID,
		SeqStart:   rec.SeqStart,
		SeqEnd:     rec.SeqEnd,
		MessageIDs: rec.MessageIDs,
	}
	if m := rec.Message; m != nil && h.Source == memindex.SourceSessions {
		// One whole message, however it was cut for indexing.
		h.Text, h.Seq, h.MessageID, h.Speaker, h.Role = m.Text, m.Seq, m.ID, m.Speaker, m.Role
		if !m.Time.IsZero() {
			rec.TimeEnd = m.Time
		}
	}
	if h.Source == memindex.SourceRecords {
		h.RecordID, h.SeqStart, h.SeqEnd = rec.Path, 0, 0
	}
	if h.Source == memindex.SourceFiles {
		// A file section: its lines, not message seqs.
		h.Path, h.LineStart, h.LineEnd = rec.Path, int(rec.SeqStart), int(rec.SeqEnd)
		h.SeqStart, h.SeqEnd = 0, 0
	}
	if !rec.TimeEnd.IsZero() {
		h.Timestamp = rec.TimeEnd.UTC().Format(time.RFC3339)
	}
	if explain {
		h.Scores = &memindex.HitScores{
			Vector:      f.VectorScore,
			VectorRank:  f.VectorRank,
			Keyword:     f.KeywordScore,
			KeywordRank: f.KeywordRank,
			Fusion:      fusion,
		}
	}
	return h
}

// cut returns the first n runes of s, with "…" when it cut anything.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return strings.TrimRight(s[:i], " \t\n") + "…"
}

// millis returns d in milliseconds, rounded to the microsecond.
func millis(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

func (e *Engine) mmrLambda() float64 {
	if e.cfg.MMRLambda == 0 {
		return DefaultMMRLambda
	}
	return e.cfg.MMRLambda
}

func (e *Engine) abstainAt() float64 {
	switch {
	case e.cfg.AbstainVectorScore == 0:
		return DefaultAbstainVectorScore
	case e.cfg.AbstainVectorScore < 0:
		return 0
	}
	return e.cfg.AbstainVectorScore
}

// vectorModer is offered by a shard that may keep its vectors without
// sqlite-vec; *store.Shard does.
type vectorModer interface {
	VectorMode() (mode, reason string)
}

// vectorFallback words a shard in go-scan mode for
// SearchResponse.VectorFallback ("" in sqlite-vec mode).
func vectorFallback(s Searcher) string {
	if vm, ok := s.(vectorModer); ok {
		if mode, why := vm.VectorMode(); mode == memindex.VectorModeGoScan {
			return "go-scan: " + why
		}
	}
	return ""
}
