package memindex

import (
	"fmt"
	"strings"
	"time"
)

// Search modes and fusion methods.
const (
	ModeHybrid  = "hybrid"
	ModeKeyword = "keyword"
	ModeVector  = "vector"

	FusionRRF      = "rrf"
	FusionWeighted = "weighted"
)

// Sources a hit can come from.
const (
	SourceSessions = "sessions"
	SourceFiles    = "files"
	SourceRecords  = "records"
)

// Search limits and defaults. MaxK and MaxQueryBytes are the defaults of
// Limits and the highest values it may set (limits.go).
const (
	DefaultK       = 10
	MaxK           = 200
	MaxQueryBytes  = 16 << 10
	MaxRequestSize = 64 << 10
	// MaxAround is the most neighbours a hit may carry on each side.
	MaxAround = 10
	// budgetK is the cap on hits of a request with a token budget and no k.
	budgetK = 50
)

// SearchRequest asks one namespace a hybrid question. Every field but
// Namespace and Query is optional; Namespace may come from the subject.
type SearchRequest struct {
	Type       string   `json:"type,omitempty"` // "search"; optional
	Namespace  string   `json:"namespace,omitempty"`
	Query      string   `json:"query"`
	K          int      `json:"k,omitempty"`
	MinScore   float64  `json:"minScore,omitempty"`
	SessionKey string   `json:"sessionKey,omitempty"`
	SessionID  string   `json:"sessionId,omitempty"`
	Sources    []string `json:"sources,omitempty"`
	DirPath    string   `json:"dirPath,omitempty"`
	After      string   `json:"after,omitempty"`
	Before     string   `json:"before,omitempty"`
	// UpdatedAfter keeps hits last written at or after this RFC 3339 time
	// (a record's or file's last upsert, a session chunk's last message);
	// with After, the later bound applies.
	UpdatedAfter string `json:"updatedAfter,omitempty"`
	Mode         string `json:"mode,omitempty"`
	Fusion       string `json:"fusion,omitempty"`
	Explain      bool   `json:"explain,omitempty"`
	// MMR re-ranks the hits by maximal marginal relevance with MMRLambda
	// (0: 0.7), trading relevance for fewer near-duplicate hits. Off by
	// default: on LoCoMo it lowered recall (BENCHMARKS.md).
	MMR       bool    `json:"mmr,omitempty"`
	MMRLambda float64 `json:"mmrLambda,omitempty"`
	// HalfLifeHours decays the score of older session and record hits by
	// half every so many hours (0: off; memory files never decay).
	HalfLifeHours float64 `json:"halfLifeHours,omitempty"`
	// Budget, when positive, is the most messages the response may hold as
	// hits: the best hits in rank order while they fit (a session hit is
	// one message; a memory file section or a record counts as one). K
	// stays the cap on hits; a request with Budget and no K gets
	// K = Budget.
	Budget int `json:"budget,omitempty"`
	// BudgetTokens, when positive, is the most estimated tokens the hits'
	// texts and their Around neighbours may take together: hits are taken
	// in rank order, and one that does not fit in what is left is passed
	// over for the next that does. A request with BudgetTokens and no K or
	// Budget gets K = 50 (or MaxK when lower).
	BudgetTokens int `json:"budgetTokens,omitempty"`
	// Around, when positive, attaches up to Around messages before and
	// after each session hit, from the same session (Hit.Context). They
	// are context, not hits: they never count towards K or Budget, and a
	// message that is a hit is not repeated as another hit's context.
	// At most MaxAround.
	Around int `json:"around,omitempty"`
}

// Normalize fills defaults (k, mode, fusion) and validates the request
// within DefaultLimits. The error is a *FieldError naming the field.
func (r *SearchRequest) Normalize() error { return DefaultLimits().NormalizeSearch(r) }

// NormalizeSearch fills r's defaults (k, mode, fusion) and validates it
// within l (zero fields: defaults). The error is a *FieldError naming the
// field; a query over MaxQueryBytes wraps ErrTooLarge.
func (l Limits) NormalizeSearch(r *SearchRequest) error {
	l = l.WithDefaults()
	if err := CheckNamespace(r.Namespace); err != nil {
		return err
	}
	if strings.TrimSpace(r.Query) == "" {
		return fieldErr("query", "is required and must not be blank")
	}
	if len(r.Query) > l.MaxQueryBytes {
		return tooLarge("query", len(r.Query), l.MaxQueryBytes)
	}
	if r.Budget < 0 {
		return fieldErr("budget", "must not be negative, got %d", r.Budget)
	}
	if r.BudgetTokens < 0 {
		return fieldErr("budgetTokens", "must not be negative, got %d", r.BudgetTokens)
	}
	if r.Around < 0 || r.Around > MaxAround {
		return fieldErr("around", "must be between 0 and %d, got %d", MaxAround, r.Around)
	}
	switch {
	case r.K == 0 && r.Budget > 0:
		r.K = min(r.Budget, l.MaxK)
	case r.K == 0 && r.BudgetTokens > 0:
		r.K = min(budgetK, l.MaxK)
	case r.K == 0:
		r.K = min(DefaultK, l.MaxK)
	case r.K < 0 || r.K > l.MaxK:
		return fieldErr("k", "must be between 1 and %d, got %d", l.MaxK, r.K)
	}
	if r.MinScore < 0 || r.MinScore > 1 {
		return fieldErr("minScore", "must be between 0 and 1, got %g", r.MinScore)
	}
	switch r.Mode {
	case "":
		r.Mode = ModeHybrid
	case ModeHybrid, ModeKeyword, ModeVector:
	default:
		return fieldErr("mode", "%q is not one of hybrid, keyword, vector", truncate(r.Mode, 40))
	}
	switch r.Fusion {
	case "":
		r.Fusion = FusionRRF
	case FusionRRF, FusionWeighted:
	default:
		return fieldErr("fusion", "%q is not one of rrf, weighted", truncate(r.Fusion, 40))
	}
	for _, s := range r.Sources {
		if s != SourceSessions && s != SourceFiles && s != SourceRecords {
			return fieldErr("sources", "%q is not one of sessions, files, records", truncate(s, 40))
		}
	}
	for _, f := range []struct{ name, v string }{{"after", r.After}, {"before", r.Before}, {"updatedAfter", r.UpdatedAfter}} {
		if f.v == "" {
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, f.v); err != nil {
			return fieldErr(f.name, "%q is not an RFC 3339 time like 2026-01-01T00:00:00Z", truncate(f.v, 60))
		}
	}
	if r.MMRLambda < 0 || r.MMRLambda > 1 {
		return fieldErr("mmrLambda", "must be between 0 and 1, got %g", r.MMRLambda)
	}
	if r.HalfLifeHours < 0 {
		return fieldErr("halfLifeHours", "must not be negative, got %g", r.HalfLifeHours)
	}
	if err := checkKey("sessionKey", r.SessionKey, false); err != nil {
		return err
	}
	return checkKey("sessionId", r.SessionID, false)
}

// TimeRange returns the parsed bounds: after is the later of After and
// UpdatedAfter (a hit's time range must end at or after it), before is
// Before; zero means unbounded. Call it after Normalize.
func (r *SearchRequest) TimeRange() (after, before time.Time) {
	after, _ = time.Parse(time.RFC3339Nano, r.After)
	if u, err := time.Parse(time.RFC3339Nano, r.UpdatedAfter); err == nil && u.After(after) {
		after = u
	}
	before, _ = time.Parse(time.RFC3339Nano, r.Before)
	return after, before
}

// SearchResponse answers a SearchRequest.
type SearchResponse struct {
	Type      string `json:"type"` // "search.result"
	Version   int    `json:"version"`
	Namespace string `json:"namespace"`
	Hits      []Hit  `json:"hits"`
	// Legs says which legs ran and answered.
	Legs Legs `json:"legs"`
	// Degraded lists, in words, why a leg did not answer or answered in part.
	Degraded []string `json:"degraded,omitempty"`
	// Abstained says why no hit is returned although chunks exist: neither
	// leg found a confident match.
	Abstained string `json:"abstained,omitempty"`
	// VectorFallback says, when the vector leg ran, that it ran as the
	// in-process Go scan over vectors kept without sqlite-vec and why, e.g.
	// "go-scan: sqlite-vec disabled by configuration" (empty: sqlite-vec).
	// The results are complete either way.
	VectorFallback string  `json:"vectorFallback,omitempty"`
	Partition      int     `json:"partition"`
	AppliedSeq     uint64  `json:"appliedSeq"`
	TookMs         float64 `json:"tookMs"`
	// Used says what the hits (and their context) cost, and which budget
	// stopped the response, if any.
	Used Usage `json:"used"`
	// Explain, when the request set explain, says what each stage did, in
	// order; each hit's Scores hold its per-leg ranks and scores.
	Explain []Stage `json:"explain,omitempty"`
	// Backend names the client backend that answered ("remote", "local",
	// "qmd"), set by the client (client.Manager), not by a worker.
	Backend string `json:"backend,omitempty"`
	// Fallback, when set, says that a fallback backend answered and why
	// the primary did not.
	Fallback *FallbackInfo `json:"fallback,omitempty"`
}

// FallbackInfo says which primary backend a fallback answered for, and
// why the primary did not answer (its error, or its open circuit breaker).
type FallbackInfo struct {
	From   string `json:"from"`
	Reason string `json:"reason"`
}

// Stage is one step of answering a search, for explain: how many candidates
// came in and went out, and what it did, in words.
type Stage struct {
	Stage  string  `json:"stage"` // keyword, vector, fusion, minScore, abstention, hydrate, decay, mmr
	In     int     `json:"in"`
	Out    int     `json:"out"`
	Detail string  `json:"detail"`
	TookMs float64 `json:"tookMs,omitempty"`
}

// Legs reports the vector and keyword legs of one search.
type Legs struct {
	Vector  Leg `json:"vector"`
	Keyword Leg `json:"keyword"`
}

// Leg reports one retrieval leg.
type Leg struct {
	Ran      bool    `json:"ran"`
	Answered bool    `json:"answered"`
	Hits     int     `json:"hits"`
	Reason   string  `json:"reason,omitempty"`
	TookMs   float64 `json:"tookMs"`
}

// Usage is what one response's hits cost an agent that pastes them.
type Usage struct {
	// Hits is the number of hits; Messages the messages they hold (a
	// session hit is one message, a file section or record counts one).
	Hits     int `json:"hits"`
	Messages int `json:"messages"`
	// Tokens estimates the tokens of the hits' texts and their context
	// messages together.
	Tokens int `json:"tokens"`
	// ContextMessages counts the Around neighbours attached to the hits.
	ContextMessages int `json:"contextMessages,omitempty"`
	// Budget and BudgetTokens echo the request's budgets (0: none).
	Budget       int `json:"budget,omitempty"`
	BudgetTokens int `json:"budgetTokens,omitempty"`
	// Stopped names the budget that left hits out: "budget" or
	// "budgetTokens"; empty when none did (K may still have).
	Stopped string `json:"stopped,omitempty"`
}

// Hit is one result with its provenance. For sessions a hit is one whole
// message (Seq, MessageID, Speaker, Role, Text as sent), never repeated
// within a response; for memory files a section (Path, LineStart..LineEnd);
// for records a record (RecordID).
type Hit struct {
	// ID identifies the hit's unit: for a message, the id of its indexed
	// chunk (the first piece of a split message); for a file section or
	// record, its chunk id.
	ID         string  `json:"id"`
	Source     string  `json:"source"`
	Text       string  `json:"text"`
	Snippet    string  `json:"snippet"`
	Score      float64 `json:"score"`
	SessionKey string  `json:"sessionKey,omitempty"`
	SessionID  string  `json:"sessionId,omitempty"`
	// Seq, MessageID, Speaker and Role describe a session hit's message.
	Seq       int64  `json:"seq,omitempty"`
	MessageID string `json:"messageId,omitempty"`
	Speaker   string `json:"speaker,omitempty"`
	Role      string `json:"role,omitempty"`
	// SeqStart and SeqEnd are the seq range of the messages the hit holds
	// (both Seq for a message hit).
	SeqStart int64 `json:"seqStart,omitempty"`
	SeqEnd   int64 `json:"seqEnd,omitempty"`
	// MessageIDs lists the non-empty ids of the messages the hit holds.
	MessageIDs []string `json:"messageIds,omitempty"`
	Path       string   `json:"path,omitempty"`
	RecordID   string   `json:"recordId,omitempty"`
	LineStart  int      `json:"lineStart,omitempty"`
	LineEnd    int      `json:"lineEnd,omitempty"`
	Timestamp  string   `json:"timestamp,omitempty"`
	// Context holds the Around neighbours of a session hit, in seq order:
	// context, not hits.
	Context []ContextMessage `json:"context,omitempty"`
	// Scores holds the per-leg scores and ranks when the request set explain.
	Scores *HitScores `json:"scores,omitempty"`
}

// ContextMessage is a neighbour of a session hit, attached by Around.
type ContextMessage struct {
	Seq       int64  `json:"seq"`
	MessageID string `json:"messageId,omitempty"`
	Speaker   string `json:"speaker,omitempty"`
	Role      string `json:"role,omitempty"`
	Text      string `json:"text"`
	Timestamp string `json:"timestamp,omitempty"`
	// Context is always true: the message is context, not a hit.
	Context bool `json:"context"`
}

// HitScores explains a fused score. A leg that did not find the hit has rank 0.
type HitScores struct {
	Vector      float64 `json:"vector"`
	VectorRank  int     `json:"vectorRank"`
	Keyword     float64 `json:"keyword"`
	KeywordRank int     `json:"keywordRank"`
	Fusion      string  `json:"fusion"`
	// Decay is the recency factor applied (1 or absent: none).
	Decay float64 `json:"decay,omitempty"`
	// MMRRank is the hit's place after MMR re-ranking (0: MMR off).
	MMRRank int `json:"mmrRank,omitempty"`
}

// ErrorBody is the JSON body of an error reply, next to micro's error headers.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"error"`
}

// Error returns "<code>: <message>".
func (e ErrorBody) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }
