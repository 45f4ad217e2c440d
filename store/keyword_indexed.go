package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// kwSyncRows is the largest shard whose keyword index Open builds before
// it returns (about 0.3 s of work); a larger one is built in the background
// while FTS5 ranks its keyword searches. Tests change it.
var kwSyncRows int64 = 20000

// kwLoad is a keyword index being built in the background from the
// snapshot of the shard Open returned; the batches committed meanwhile
// wait in pending and are applied, in order, before the index is used.
type kwLoad struct {
	mu      sync.Mutex
	loading bool
	pending []kwOp
	cancel  context.CancelFunc
	done    chan struct{}
	// gate, when set (tests only), is waited for before the load starts.
	gate chan struct{}
}

// loadKeywordIndex builds the keyword index (last thing Open does): at once
// for a shard of at most kwSyncRows chunks, else in the background from a
// read transaction begun now, so it sees exactly the shard as Open leaves
// it and every later commit reaches it through kwLoad.pending.
func (s *Shard) loadKeywordIndex(ctx context.Context) error {
	if s.sizes.shardTotal() <= kwSyncRows && kwLoadGate == nil {
		kw := newKWIndex()
		if err := kw.load(ctx, s.r); err != nil {
			return fmt.Errorf("load keyword index: %w", err)
		}
		s.kw.Store(kw)
		return nil
	}
	// The load outlives Open's ctx, and so must its transaction: database/sql
	// rolls a transaction back when the context it was begun with ends, and
	// a worker's Open context ends once its partitions are open (the load
	// then failed, "context canceled", and FTS5 ranked every search). Only
	// Close (stop) ends it.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	tx, err := s.r.BeginTx(lctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		cancel()
		return fmt.Errorf("load keyword index: %w", err)
	}
	var n int64 // the first read fixes the transaction's snapshot
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&n); err != nil {
		tx.Rollback()
		cancel()
		return fmt.Errorf("load keyword index: %w", err)
	}
	l := &kwLoad{loading: true, cancel: cancel, done: make(chan struct{}), gate: kwLoadGate}
	s.kwl = l
	go func() {
		defer close(l.done)
		defer tx.Rollback()
		if l.gate != nil {
			select {
			case <-l.gate:
			case <-lctx.Done():
			}
		}
		kw := newKWIndex()
		err := kw.load(lctx, tx)
		l.mu.Lock()
		defer l.mu.Unlock()
		if err == nil {
			err = kw.apply(l.pending)
		}
		l.loading, l.pending = false, nil
		if err != nil {
			s.kwDropped.Store("load: " + err.Error())
			return
		}
		s.kw.Store(kw)
	}()
	return nil
}

// kwLoadGate, when set (tests only), makes every keyword index load run in
// the background and wait for it to be closed.
var kwLoadGate chan struct{}

// loading reports whether the background load is still running.
func (l *kwLoad) isLoading() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loading
}

// stop ends a background load and waits for it (Close).
func (l *kwLoad) stop() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}

// applyKeywordIndex makes a committed batch's FTS changes in the keyword
// index (or queues them while it loads). Should that fail (the tokenizer
// out of memory), the index is dropped and FTS5 ranks every keyword search
// from then on: slower, never wrong; Stats says so with the reason.
//
// toks, when tokErr is nil and it holds a count for every op, are the ops'
// rows counted during the transaction (kwprep.go); otherwise the index
// tokenizes them itself.
func (s *Shard) applyKeywordIndex(ops []kwOp, toks []kwTokens, tokErr error) {
	if len(ops) == 0 {
		return
	}
	if l := s.kwl; l != nil {
		l.mu.Lock()
		if l.loading {
			l.pending = append(l.pending, ops...)
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
	kw := s.kw.Load()
	if kw == nil {
		return
	}
	var err error
	if tokErr == nil && len(toks) == len(ops) {
		err = kw.applyTokenized(ops, toks)
	} else {
		err = kw.apply(ops)
	}
	if err != nil {
		s.kwDropped.Store(err.Error())
		s.kw.Store(nil)
	}
}

// keywordIndexed is KeywordSearch ranked by the keyword index: every term
// kept, exactly FTS5's BM25 (kwindex.go, kwrank.go), and no row read (the
// snippets are cut for the hits returned: kwCandidates). It returns a
// kwUnsupported error when the index cannot rank the query exactly.
func (s *Shard) keywordIndexed(kw *kwIndex, ns string, terms, names []string, f Filter, limit int) ([]Candidate, error) {
	for _, n := range names {
		if len(n) > speakerHeadMax || strings.Contains(n, ": ") {
			return nil, kwUnsupported(fmt.Sprintf("the speaker name %q is longer than the index keeps, or holds \": \"", n))
		}
	}
	tok, err := getTokenizer()
	if err != nil {
		return nil, kwUnsupported(err.Error())
	}
	defer putTokenizer(tok)
	phrases, toks, err := kw.phrases(tok, terms)
	if err != nil {
		return nil, err
	}
	hits := kw.search(kwQuery{ns: ns, phrases: phrases, filter: f, speakers: names, limit: limit})
	if len(hits) == 0 {
		return nil, nil
	}
	return kwCandidates(hits, terms, toks), nil
}

// kwCandidates turns hits (best first) into candidates: their chunk
// ids are the index's, and their snippets are cut only for the hits a
// search returns (Candidate.SnippetFor), from the text it loads for them
// anyway, as FTS5's snippet() would cut them (ftsSnippet). A row deleted
// since the index ranked it is found missing when loaded (the engine asks
// its legs again).
func kwCandidates(hits []kwHit, terms, toks []string) []Candidate {
	snip := &kwSnipper{terms: terms, toks: toks, cjk: hasCJKTerm(terms)}
	out := make([]Candidate, len(hits))
	for i, h := range hits {
		out[i] = Candidate{ID: h.id, Row: h.rowid, Score: keywordScore(-h.score), Rank: i + 1, snip: snip}
	}
	return out
}

// kwSnipper cuts the snippets of one keyword search's hits.
type kwSnipper struct {
	terms, toks []string // the query's terms and their tokens (kwIndex.phrases)
	cjk         bool     // a term has CJK characters
}

// cut returns the snippet of the chunk whose text is text and whose
// index form is seg ("" when it is the text): FTS5's of the index form
// (fts_body), or for a CJK query and text cjkSnippet's; "" if the tokenizer
// fails (the hit then shows the start of its text).
func (k *kwSnipper) cut(text, seg string) string {
	sn := ""
	if !k.cjk || !hasCJK(text) { // else cjkSnippet cuts it from the text
		body := text
		if seg != "" {
			body = seg
		}
		tok, err := getTokenizer()
		if err != nil {
			return ""
		}
		defer putTokenizer(tok)
		var sc snippetScratch
		if sn, err = sc.snippet(tok, body, k.toks, snippetOpen, snippetClose, snippetEllips, snippetTokens); err != nil {
			return ""
		}
	}
	return finishSnippet(sn, text, k.cjk, k.terms)
}
