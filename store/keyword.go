package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Snippet markers around matched terms, and the snippet size in tokens.
const (
	snippetOpen   = "«"
	snippetClose  = "»"
	snippetEllips = "…"
	snippetTokens = 16
)

// ftsColumns is the FTS5 column filter a keyword query ranked by FTS5
// searches: the text as the index sees it (fts_body: chunks.text, or its
// segmented form for CJK) and the extra CJK index words (fts_words), see
// indexForm. chunks_fts has no context column since migration 0011; the
// keyword index ranks with it (kwindex.go). Tests set it to a filter with
// the context to compare the index with FTS5 (contextFTS).
var ftsColumns = `{fts_body fts_words}`

// KeywordSearch returns the top limit chunks of namespace ns matching text by
// BM25 as FTS5 computes it (over the text, its extra words and, at half
// weight, its context: the keyword index, kwindex.go; over the text and its
// words only when FTS5 ranks a query the index cannot), best first. The
// text is turned into a query by BuildMatch (no searchable term: no
// result, no error). Filters apply in the index or in SQL. Isolation
// is exact: the MATCH is confined to the namespace's FTS token and every row
// is checked against chunks.namespace. Score is keywordScore(rank), in
// [0,1) (see keywordScore); the snippet (Candidate.SnippetFor) marks
// matched terms with « » around a passage of about 16 tokens, with … where
// it was cut; it is always cut from the chunk's own text (for a query with
// Chinese, Japanese or Korean terms, by cjkSnippet). Ranked by the keyword
// index, a candidate's snippet is cut when SnippetFor asks for it; ranked
// by FTS5, it comes in Snippet.
// A query made only of stop words of those languages has no term: no
// result, no error.
//
// An answer FTS5 ranks (the index cannot rank the query, is loading at
// start or was dropped) comes with a *PartialError that says so and why:
// FTS5 ranks it without the context. When every query term is then so
// common that ranking all its matches would exceed the row budget, only
// the newest matching chunks are ranked, and the reason says that too.
func (s *Shard) KeywordSearch(ctx context.Context, ns, text string, f Filter, limit int) ([]Candidate, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	if hasHan(text) { // cutting it may need the dictionary still loading
		if err := waitHanForQuery(ctx); err != nil {
			return nil, fmt.Errorf("keyword search: %w", err)
		}
	}
	terms := matchTerms(text)
	if len(terms) == 0 || limit <= 0 {
		return nil, nil
	}
	// The speakers the query names, before pruning drops their names as
	// common terms (a speaker is on half of a chat's lines).
	names := s.speakers.named(ns, text, terms)
	var why string // why FTS5 ranks it
	if kw := s.kw.Load(); kw != nil {
		out, err := s.keywordIndexed(kw, ns, terms, names, f, limit)
		var no kwUnsupported
		if !errors.As(err, &no) {
			return out, err
		}
		why = string(no)
	} else {
		why = s.kwAbsent()
	}
	out, err := s.keywordFTS(ctx, ns, terms, names, f, limit)
	return out, rankedByFTS(err, why)
}

// kwAbsent says why the shard has no keyword index: it is loading, or it
// was dropped and why.
func (s *Shard) kwAbsent() string {
	if s.kwl.isLoading() {
		return "keyword index loading"
	}
	if why, _ := s.kwDropped.Load().(string); why != "" {
		return "keyword index dropped: " + why
	}
	return "no keyword index"
}

// rankedByFTS flags an answer FTS5 ranked instead of the keyword index
// (why: the reason) as partial: chunks_fts holds no context (migration
// 0011), so the context weighs nothing in it and a chunk that matches only
// by its context is not found. err is keywordFTS's: a *PartialError
// gets the reason added, another error stands as it is.
func rankedByFTS(err error, why string) error {
	reason := "ranked by FTS5, without the chunks' context (" + why + ")"
	var p *PartialError
	switch {
	case err == nil:
		return &PartialError{Reason: reason}
	case errors.As(err, &p):
		return &PartialError{Reason: reason + "; " + p.Reason}
	}
	return err
}

// keywordFTS is KeywordSearch ranked by FTS5 (the keyword index cannot
// rank the query exactly, or it is off): common terms are pruned to the
// row budget (prune.go), and the chunks' context weighs nothing, for
// chunks_fts does not hold it (migration 0011).
func (s *Shard) keywordFTS(ctx context.Context, ns string, terms, names []string, f Filter, limit int) ([]Candidate, error) {
	boost, boostArgs := speakerCase(names)
	terms, matching, err := s.df.prune(ctx, s.r, terms, s.sizes.shardTotal())
	if err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	// Terms so common that even the rarest matches more rows than the budget:
	// rank only the newest budget matches of the namespace, and say so.
	var minRowid int64
	var partial error
	if matching > s.df.budget {
		if minRowid, err = s.newestWindow(ctx, ns, joinTerms(terms), f, s.df.budget); err != nil {
			return nil, fmt.Errorf("keyword search: %w", err)
		}
	}
	if minRowid > 0 {
		about := fmt.Sprintf("about %d", matching)
		if matching >= s.df.cap() {
			about = fmt.Sprintf("more than %d", s.df.cap())
		}
		partial = &PartialError{Reason: fmt.Sprintf("ranked only the newest %d matching chunks: the query's terms (%s) match %s chunks of this shard; add a rarer word for a complete answer",
			s.df.budget, strings.Join(terms, ", "), about)}
	}
	m := joinTerms(terms)
	// A query with CJK terms cuts its snippets from the chunk's text (see
	// cjkSnippet); FTS5's snippet is the fallback.
	cjk := hasCJKTerm(terms)
	q, args := keywordQuery(ns, m, s.sizes.useNSToken(ns), f, limit, minRowid, cjk, boost, boostArgs)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	defer rows.Close()
	var out []Candidate
	for rows.Next() {
		var c Candidate
		var rank float64
		var text string
		dst := []any{&c.ID, &c.Row, &rank, &c.Snippet}
		if cjk {
			dst = append(dst, &text)
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("keyword search: %w", err)
		}
		c.Snippet = finishSnippet(c.Snippet, text, cjk, terms)
		c.Score = keywordScore(rank)
		c.Rank = len(out) + 1
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	return out, partial
}

// finishSnippet returns the snippet of a hit: for a query with CJK terms
// and a chunk with CJK text, cut from the text by cjkSnippet; else FTS5's,
// without the CJK word separators of the index form.
func finishSnippet(fts, text string, cjk bool, terms []string) string {
	if cjk && hasCJK(text) {
		if sn := cjkSnippet(text, terms); sn != "" {
			return sn
		}
	}
	if strings.Contains(fts, wordSep) {
		return strings.ReplaceAll(fts, wordSep, "")
	}
	return fts
}

// newestWindow returns the rowid of the n-th newest chunk of namespace ns
// matching match and passing f, so that a search bounded below by it ranks the newest n
// matches only. FTS5 walks a doclist backwards by rowid without ranking, so
// this costs a fraction of ranking the matches. It returns 0 (no bound) when
// the namespace has at most n matches.
func (s *Shard) newestWindow(ctx context.Context, ns, match string, f Filter, n int64) (int64, error) {
	expr := matchExpr(ns, match, s.sizes.useNSToken(ns), f)
	var b strings.Builder
	b.WriteString(`SELECT chunks_fts.rowid FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? AND c.namespace = ?`)
	args := appendFilter(&b, []any{expr, ns}, f)
	b.WriteString(` ORDER BY chunks_fts.rowid DESC LIMIT 1 OFFSET ?`)
	var rowid int64
	err := s.r.QueryRowContext(ctx, b.String(), append(args, n-1)...).Scan(&rowid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return rowid, err
}

// appendFilter adds the SQL conditions of f on chunks c to b and their
// arguments to args.
func appendFilter(b *strings.Builder, args []any, f Filter) []any {
	if f.SessionKey != "" {
		b.WriteString(` AND c.session_key = ?`)
		args = append(args, f.SessionKey)
	}
	if f.SessionID != "" {
		b.WriteString(` AND c.session_id = ?`)
		args = append(args, f.SessionID)
	}
	if !f.After.IsZero() {
		b.WriteString(` AND c.ts_end >= ?`)
		args = append(args, nanos(f.After))
	}
	if !f.Before.IsZero() {
		b.WriteString(` AND c.ts_start < ?`)
		args = append(args, nanos(f.Before))
	}
	if len(f.Sources) > 0 {
		b.WriteString(` AND c.source IN (` + placeholders(len(f.Sources)) + `)`)
		for _, src := range f.Sources {
			args = append(args, src)
		}
	}
	if f.DirPath != "" {
		b.WriteString(` AND (c.source <> 'files' OR c.dir_path IN ('', ?))`)
		args = append(args, f.DirPath)
	}
	return args
}

// keywordQuery builds the SQL of a keyword search; only the filters in use
// appear, so each shape gets its own cached plan. withText also selects the
// chunk's text (for cjkSnippet). boost, when set, is a SQL factor of the
// BM25 rank (speakerCase) with its arguments. nsToken adds the
// namespace's FTS token to the MATCH (see useNSToken); chunks.namespace is
// checked exactly either way.
func keywordQuery(ns, match string, nsTok bool, f Filter, limit int, minRowid int64, withText bool, boost string, boostArgs []any) (string, []any) {
	var b strings.Builder
	rank := `chunks_fts.rank`
	if boost != "" {
		rank += ` * ` + boost
	}
	b.WriteString(`SELECT c.id, c.rowid, ` + rank + ` AS r, snippet(chunks_fts, 0, '` + snippetOpen + `', '` + snippetClose +
		`', '` + snippetEllips + `', ` + fmt.Sprint(snippetTokens) + `)`)
	if withText {
		b.WriteString(`, c.text`)
	}
	b.WriteString(`
		FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? AND c.namespace = ?`)
	expr := matchExpr(ns, match, nsTok, f)
	args := append(append([]any{}, boostArgs...), expr, ns)
	if minRowid > 0 {
		b.WriteString(` AND chunks_fts.rowid >= ?`)
		args = append(args, minRowid)
	}
	args = appendFilter(&b, args, f)
	if boost != "" {
		b.WriteString(` ORDER BY r LIMIT ?`)
	} else {
		b.WriteString(` ORDER BY chunks_fts.rank LIMIT ?`)
	}
	args = append(args, limit)
	return b.String(), args
}

// matchExpr confines match (terms joined by OR) to the searched columns,
// to the namespace's FTS token when nsTok, and to the session key's token
// when f names one (migration 0007): FTS5 then ranks only the rows of that
// conversation, with the same scores.
func matchExpr(ns, match string, nsTok bool, f Filter) string {
	expr := ftsColumns + ` : (` + match + `)`
	if f.SessionKey != "" {
		expr = `sk : "` + skToken(f.SessionKey) + `" AND ` + expr
	}
	if nsTok {
		expr = `ns : "` + nsToken(ns) + `" AND ` + expr
	}
	return expr
}

// keywordScore maps an FTS5 BM25 rank (<= 0, lower is better) to a score in
// [0,1): with x = -rank, score = x/(1+x). The map is strictly increasing in
// x, so it keeps the BM25 order; a rank of -1 scores 0.5, -3 scores 0.75,
// -9 scores 0.9. A positive rank (not produced by bm25) scores 0.
func keywordScore(rank float64) float64 {
	x := -rank
	if !(x > 0) { // also NaN
		return 0
	}
	return x / (1 + x)
}

// nsSizes counts the chunks of each namespace of a shard, to choose how a
// keyword search confines itself to one namespace.
type nsSizes struct {
	mu    sync.RWMutex
	n     map[string]int64
	total int64
}

func (z *nsSizes) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT namespace, count(*) FROM chunks GROUP BY namespace`)
	if err != nil {
		return err
	}
	defer rows.Close()
	z.mu.Lock()
	defer z.mu.Unlock()
	z.n, z.total = map[string]int64{}, 0
	for rows.Next() {
		var ns string
		var n int64
		if err := rows.Scan(&ns, &n); err != nil {
			return err
		}
		z.n[ns] = n
		z.total += n
	}
	return rows.Err()
}

func (z *nsSizes) add(delta map[string]int64) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for ns, d := range delta {
		if d == 0 {
			continue
		}
		z.n[ns] += d
		z.total += d
		if z.n[ns] <= 0 {
			delete(z.n, ns)
		}
	}
}

// shardTotal returns the number of chunks in the shard.
func (z *nsSizes) shardTotal() int64 {
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.total
}

// useNSToken reports whether a keyword search in ns should AND the
// namespace's FTS token into its MATCH. The token confines the match to the
// namespace, but FTS5's bm25 then walks the token's whole doclist (to count
// it for IDF), which costs more than it saves when the namespace holds a
// large part of the shard; then the exact chunks.namespace check alone
// filters the ranked rows. The token is used when the namespace holds less
// than a quarter of the shard's chunks.
func (z *nsSizes) useNSToken(ns string) bool {
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.n[ns]*4 < z.total
}
