package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc"
)

// The keyword index: an in-memory inverted index of the chunks' keyword
// columns, so that a keyword search ranks the top k by exactly the BM25
// that FTS5's rank computes over them without scoring every row that
// matches one of its terms.
//
// FTS5 stays the tokenizer of record: the index holds the tokens FTS5's own
// tokenizer makes of the chunks' stored column values (fts5tok.go), and the
// statistics FTS5's bm25() reads for a table over (fts_body, ns, fts_words,
// fts_ctx, sk) — chunks_fts as migration 0007 made it, which the tests
// build to compare with (contextFTS) — rows in the table, tokens in every
// column of every row, rows that hold a token in a searched column. Since
// migration 0011 chunks_fts itself indexes no context (fts_ctx): the
// context repeats each message's text in the next chunks and tripled what
// FTS5 wrote at every commit. chunks_fts, the durable index of the chunks'
// text, ranks the queries this index cannot (the fallback) without it.
// The index is loaded at Open from chunks and updated after every commit
// that changes chunks, in commit order (under writeMu, like the vector
// index). Snippets and chunk ids of the hits come from chunks, for the top
// k rows only.
//
// The ranking (FTS5's fts5Bm25Function, fts5_aux.c) for the MATCH that
// KeywordSearch builds — phrases p = the query's terms, in the columns
// {fts_body fts_words fts_ctx}, weights 1, 1 and 0.5 (migration 0007;
// chunks_fts has no fts_ctx since 0011):
//
//	idf(p)   = ln((N - n(p) + 0.5) / (n(p) + 0.5)), at least 1e-6
//	f(p,d)   = Σ over p's instances in d of its column's weight
//	score(d) = Σ_p idf(p) · f(p,d)·(k1+1) / (f(p,d) + k1·(1 - b + b·|d|/avgdl))
//
// with N the rows of the table, n(p) the rows that hold p in a searched
// column, |d| the tokens of every column of d (namespace and session key
// tokens included) and avgdl their mean; k1 = 1.2, b = 0.75. The speaker
// boost multiplies it (speakers.go). The ns and sk phrases KeywordSearch
// ANDs in weigh 0 and add nothing; the index confines a search by its maps
// instead.

// BM25 constants of FTS5's bm25().
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// maxF2 is the largest weighted frequency (in half units) a posting
// stores; a row with more instances of one token marks the token's
// posting inexact, and a query with that term is ranked by FTS5.
const maxF2 = math.MaxUint16

// kwIndex is the keyword index of one shard (see above), one space per
// namespace. (A space per namespace and session key would read only one
// conversation's postings, but a posting list per conversation and term
// doubled the index's heap on 1,000 conversations.)
type kwIndex struct {
	mu     sync.RWMutex
	terms  map[string]uint32 // token → term id
	df     []int32           // term id → rows holding it in a searched column
	rows   int64             // rows of chunks_fts
	tokens int64             // tokens of every column of every row
	byNS   map[string]*kwSpace
	spaces []*kwSpace      // byNS's spaces by number (kwSpace.num), never removed
	where  map[int64]kwLoc // rowid → its space and doc
	syms   *symtab         // the spaces' strings (symtab.go)
	// inexact term ids: some row holds one too many times for a posting.
	inexact map[uint32]bool
	// postAt is flushLocked's scratch, a counter a term id (kwpost.go).
	postAt []int32
	// The figures of stats, kept as the index changes so that a status
	// call does not walk it under its lock: term ids with a df above 0,
	// the dictionary's bytes (kwTermBytes and the token's), posting
	// entries (a dead doc's too, until compactLocked), the posting lists'
	// bytes (kwPostBytes and their arrays' capacity), and the spaces' row
	// bytes (their rowids' capacity times kwRowBytes).
	live, termBytes, postings, postBytes, rowBytes int64
}

// kwLoc is a row's place: its space's number (no pointer, so where's
// million entries are not the collector's to scan) and its doc.
type kwLoc struct {
	sp  uint32
	doc uint32
}

// kwSpace holds the rows of one namespace. Docs are
// numbered in the order they were added, so every posting list is sorted;
// a removed row stays in the postings, marked dead, until compact.
type kwSpace struct {
	num        uint32 // its index in kwIndex.spaces
	rowids     []int64
	ids        []chunkID // chunks.id of each doc, so a search reads no row for them
	dlen       []uint32
	dead       []bool
	sessionKey []sym // of the index's symtab, as the next four
	sessionID  []sym
	source     []sym
	dirPath    []sym
	speaker    []sym   // text before its first ": " (session rows), "" when none
	tsStart    []int64 // unix ns, noTime when unknown
	tsEnd      []int64
	post       map[uint32]*kwPost
	ndead      int
	// norm caches kwLenNorm of every doc for one avgdl (kwrank.go); it is
	// reset when docs are renumbered. Searches fill it (8 bytes a doc, on
	// the first search with more postings than docs), so it is left out of
	// the index's bytes in Stats: two replicas of one shard report the
	// same index whatever searches each has served.
	norm atomic.Pointer[kwNorm]
}

// kwPost is one token's posting list in a space: docs (ascending) and the
// token's weighted frequency in each, in half units (2 per instance in
// fts_body or fts_words, 1 in fts_ctx), with bounds for pruning. A list of
// up to kwInline postings keeps them in the struct itself (docs and f2
// slice inDocs and inF2): most of a space's terms are that rare, and
// posting a batch reached such a list's struct and both its arrays, three
// cache misses and two allocations, where now it reaches one (BENCHMARKS.md,
// twenty-first session). Always used through a pointer: a copy's slices
// would still point into the original.
type kwPost struct {
	docs   []uint32
	f2     []uint16
	maxF2  uint16
	minD   uint32
	inDocs [kwInline]uint32
	inF2   [kwInline]uint16
}

// kwInline is how many postings a list keeps in its struct.
const kwInline = 4

// newKWPost returns an empty list whose first kwInline postings go in the
// struct.
func newKWPost() *kwPost {
	p := &kwPost{minD: math.MaxUint32}
	p.docs, p.f2 = p.inDocs[:0:kwInline], p.inF2[:0:kwInline]
	return p
}

// inline reports whether p's postings are in its struct.
func (p *kwPost) inline() bool {
	return cap(p.docs) > 0 && &p.docs[:1][0] == &p.inDocs[0]
}

// kwDoc is a row as the index takes it: the chunk's fields a search
// filters on and its keyword column values (chunks_fts indexes all but
// ctx).
type kwDoc struct {
	rowid                     int64
	id                        string // chunks.id (adds only)
	ns, sessionKey, sessionID string
	source, dirPath           string
	tsStart, tsEnd            int64
	head                      string // the start of chunks.text, for the speaker
	body, words, ctx          string // fts_body, fts_words, fts_ctx
}

// kwOp is one change to the index after a commit: add doc, or remove the
// row doc.rowid whose indexed values were doc.body, doc.words, doc.ctx.
type kwOp struct {
	add bool
	doc kwDoc
}

func newKWIndex() *kwIndex {
	return &kwIndex{terms: map[string]uint32{}, byNS: map[string]*kwSpace{},
		where: map[int64]kwLoc{}, syms: newSymtab(), inexact: map[uint32]bool{}}
}

// speakerHeadMax bounds the speaker part of a row's text the index keeps; a
// query naming a longer speaker is ranked by FTS5.
const speakerHeadMax = 64

// speakerHead returns the part of a session row's text before its first
// ": " when it is at most speakerHeadMax bytes long, else "".
func speakerHead(source, text string) string {
	if source != "sessions" {
		return ""
	}
	i := strings.Index(text[:min(len(text), speakerHeadMax+2)], ": ")
	if i <= 0 {
		return ""
	}
	return text[:i]
}

// kwColumn is a value of a row that chunks_fts indexes and its weight in
// half units.
type kwColumn struct {
	text string
	w    uint32
}

// columns are d's values in the weighted columns of chunks_fts.
func (d *kwDoc) columns() [3]kwColumn {
	return [...]kwColumn{{d.body, 2}, {d.words, 2}, {d.ctx, 1}}
}

// kwWordsColumn is the index of fts_words in columns.
const kwWordsColumn = 1

// sameSession reports whether d and e are rows of the same session.
func (d *kwDoc) sameSession(e *kwDoc) bool {
	return d.sessionID == e.sessionID && d.sessionKey == e.sessionKey && d.ns == e.ns
}

// kwTokenColumns is the tokens a row's namespace and session key columns
// (nsToken, skToken) add to its length: they weigh nothing, and each is
// one token whatever the name (a letter, hex digits and a 0, which FTS5
// cuts, if ever that long, but never splits: TestHexTokensAreOneToken),
// so they are counted, not tokenized.
const kwTokenColumns = 2

// docTokens is the tokenized form of one row.
type docTokens struct {
	terms  []kwIDF // its distinct term ids, in no order
	length uint32  // tokens of every column
}

// kwIDF is a term id and its weighted frequency in a row (half units).
type kwIDF struct{ id, f2 uint32 }

// kwScratch is the buffers of tokenize, reused row after row.
type kwScratch struct {
	f2    map[uint32]uint32
	terms []kwIDF
}

func newKWScratch() *kwScratch { return &kwScratch{f2: map[uint32]uint32{}} }

// tokenize counts doc's tokens with tok; intern adds unseen tokens to the
// dictionary (for an add) or not (for a remove: a token that was never
// seen cannot be in the index). Caller holds x.mu for writing when intern.
// The result lives in scratch until its next use.
func (x *kwIndex) tokenize(tok *ftsTokenizer, d *kwDoc, intern bool, scratch *kwScratch) (docTokens, error) {
	clear(scratch.f2)
	var dt docTokens
	dt.length = kwTokenColumns
	for _, c := range d.columns() {
		n, err := tok.tokens(c.text, tokenizeDocument, func(t []byte) {
			id, ok := x.terms[string(t)]
			if !ok {
				if !intern {
					return
				}
				id = uint32(len(x.df))
				x.terms[string(t)] = id
				x.df = append(x.df, 0)
				x.termBytes += kwTermBytes + int64(len(t))
			}
			scratch.f2[id] += c.w
		})
		if err != nil {
			return docTokens{}, err
		}
		dt.length += uint32(n)
	}
	dt.terms = scratch.terms[:0]
	for id, f2 := range scratch.f2 {
		dt.terms = append(dt.terms, kwIDF{id, f2})
	}
	scratch.terms = dt.terms
	return dt, nil
}

// apply makes ops (in commit order) in the index.
func (x *kwIndex) apply(ops []kwOp) error {
	if len(ops) == 0 {
		return nil
	}
	tok, err := getTokenizer()
	if err != nil {
		return err
	}
	defer putTokenizer(tok)
	scratch := newKWScratch()
	ps := new(kwPoster)
	x.mu.Lock()
	defer x.mu.Unlock()
	defer x.flushLocked(ps) // also after an error: the rows added are in where
	for i := range ops {
		if ops[i].add {
			err = x.addLocked(tok, &ops[i].doc, scratch, ps)
		} else {
			err = x.removeLocked(tok, &ops[i].doc, scratch, ps)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *kwIndex) space(ns string) *kwSpace {
	sp := x.byNS[ns]
	if sp == nil {
		sp = &kwSpace{num: uint32(len(x.spaces)), post: map[uint32]*kwPost{}}
		x.byNS[ns] = sp
		x.spaces = append(x.spaces, sp)
	}
	return sp
}

// addLocked adds d; its postings wait in ps.
func (x *kwIndex) addLocked(tok *ftsTokenizer, d *kwDoc, scratch *kwScratch, ps *kwPoster) error {
	if _, ok := x.where[d.rowid]; ok { // before tokenizing: nothing to intern
		return fmt.Errorf("keyword index: row %d added twice", d.rowid)
	}
	dt, err := x.tokenize(tok, d, true, scratch)
	if err != nil {
		return err
	}
	return x.insertLocked(d, dt, ps)
}

// insertLocked adds d, whose tokens are dt, to its namespace's space; its
// postings wait in ps until ps is flushed (kwpost.go), which the caller
// does before it removes a row or lets go of x.mu.
func (x *kwIndex) insertLocked(d *kwDoc, dt docTokens, ps *kwPoster) error {
	if _, ok := x.where[d.rowid]; ok { // replaced in place: drop the old row first
		return fmt.Errorf("keyword index: row %d added twice", d.rowid)
	}
	sp := x.space(d.ns)
	doc := uint32(len(sp.rowids))
	c0 := cap(sp.rowids)
	sp.rowids = append(sp.rowids, d.rowid)
	x.rowBytes += int64(cap(sp.rowids)-c0) * kwRowBytes
	sp.ids = append(sp.ids, makeChunkID(x.syms, d.id))
	sp.dlen = append(sp.dlen, dt.length)
	sp.dead = append(sp.dead, false)
	sp.sessionKey = append(sp.sessionKey, x.syms.ref(d.sessionKey))
	sp.sessionID = append(sp.sessionID, x.syms.ref(d.sessionID))
	sp.source = append(sp.source, x.syms.ref(d.source))
	sp.dirPath = append(sp.dirPath, x.syms.ref(d.dirPath))
	sp.speaker = append(sp.speaker, x.syms.ref(speakerHead(d.source, d.head)))
	sp.tsStart = append(sp.tsStart, d.tsStart)
	sp.tsEnd = append(sp.tsEnd, d.tsEnd)
	for _, t := range dt.terms {
		f2 := t.f2
		if f2 > maxF2 {
			f2 = maxF2
			x.inexact[t.id] = true
		}
		ps.pend = append(ps.pend, kwEntry{sp: sp.num, id: t.id, doc: doc, f2: uint16(f2)})
	}
	x.where[d.rowid] = kwLoc{sp: sp.num, doc: doc}
	x.rows++
	x.tokens += int64(dt.length)
	if len(ps.pend) >= kwFlushAt {
		x.flushLocked(ps)
	}
	return nil
}

func (x *kwIndex) removeLocked(tok *ftsTokenizer, d *kwDoc, scratch *kwScratch, ps *kwPoster) error {
	if _, ok := x.where[d.rowid]; !ok {
		return fmt.Errorf("keyword index: row %d removed but not held", d.rowid)
	}
	dt, err := x.tokenize(tok, d, false, scratch)
	if err != nil {
		return err
	}
	return x.deleteLocked(d, dt, ps)
}

// deleteLocked removes the row d.rowid, whose tokens are dt. It posts the
// entries waiting in ps first: a removal can renumber a space's docs
// (compactLocked).
func (x *kwIndex) deleteLocked(d *kwDoc, dt docTokens, ps *kwPoster) error {
	x.flushLocked(ps)
	loc, ok := x.where[d.rowid]
	if !ok {
		return fmt.Errorf("keyword index: row %d removed but not held", d.rowid)
	}
	for _, t := range dt.terms {
		if x.df[t.id]--; x.df[t.id] == 0 {
			x.live--
		}
	}
	sp := x.spaces[loc.sp]
	x.tokens -= int64(sp.dlen[loc.doc])
	x.rows--
	sp.dead[loc.doc] = true
	sp.release(loc.doc, x.syms) // a dead doc's strings are never read
	sp.ndead++
	delete(x.where, d.rowid)
	if sp.ndead >= 64 && sp.ndead*2 > len(sp.rowids) {
		x.compactLocked(sp)
	}
	return nil
}

// release drops the symbols of doc i's strings.
func (sp *kwSpace) release(i uint32, syms *symtab) {
	sp.ids[i].release(syms)
	for _, col := range [...][]sym{sp.sessionKey, sp.sessionID, sp.source, sp.dirPath, sp.speaker} {
		syms.unref(col[i])
	}
}

// compactLocked drops sp's dead docs and renumbers the rest (in order, so
// postings stay sorted).
func (x *kwIndex) compactLocked(sp *kwSpace) {
	remap := make([]uint32, len(sp.rowids))
	n := uint32(0)
	for i := range sp.rowids {
		if sp.dead[i] {
			remap[i] = math.MaxUint32
			continue
		}
		remap[i] = n
		sp.rowids[n], sp.ids[n], sp.dlen[n], sp.dead[n] = sp.rowids[i], sp.ids[i], sp.dlen[i], false
		sp.sessionKey[n], sp.sessionID[n], sp.source[n], sp.dirPath[n], sp.speaker[n] = sp.sessionKey[i], sp.sessionID[i], sp.source[i], sp.dirPath[i], sp.speaker[i]
		sp.tsStart[n], sp.tsEnd[n] = sp.tsStart[i], sp.tsEnd[i]
		x.where[sp.rowids[n]] = kwLoc{sp: sp.num, doc: n}
		n++
	}
	c0 := cap(sp.rowids)
	sp.rowids, sp.dlen, sp.dead = slices.Clip(sp.rowids[:n]), slices.Clip(sp.dlen[:n]), slices.Clip(sp.dead[:n])
	x.rowBytes += int64(cap(sp.rowids)-c0) * kwRowBytes
	sp.ids = slices.Clip(sp.ids[:n])
	sp.sessionKey, sp.sessionID, sp.source, sp.dirPath, sp.speaker = sp.sessionKey[:n], sp.sessionID[:n], sp.source[:n], sp.dirPath[:n], sp.speaker[:n]
	sp.tsStart, sp.tsEnd = sp.tsStart[:n], sp.tsEnd[:n]
	sp.ndead = 0
	sp.norm.Store(nil)
	for id, p := range sp.post {
		k := 0
		x.postings -= int64(len(p.docs))
		x.postBytes -= p.bytes()
		p.maxF2, p.minD = 0, math.MaxUint32
		for j, d := range p.docs {
			if nd := remap[d]; nd != math.MaxUint32 {
				p.docs[k], p.f2[k] = nd, p.f2[j]
				p.maxF2 = max(p.maxF2, p.f2[j])
				p.minD = min(p.minD, sp.dlen[nd])
				k++
			}
		}
		if k == 0 {
			delete(sp.post, id)
			continue
		}
		p.docs, p.f2 = slices.Clip(p.docs[:k]), slices.Clip(p.f2[:k])
		x.postings += int64(k)
		x.postBytes += p.bytes()
	}
}

// kwLoadBatch is how many rows load hands a counter at a time.
const kwLoadBatch = 256

// load fills the index from the shard behind db (a pool at Open, before
// any write, or a read transaction of the shard). One goroutine reads the
// rows in rowid order, GOMAXPROCS others count their tokens a batch at a
// time (kwCounter, as Apply's kwPrep does), and this one looks their terms
// up and posts the batches in read order, so the index (term ids included)
// is the one adding the rows in turn makes. (The counters noting known
// term ids, as kwPrep does, made them wait on the index's lock while a
// batch was posted: loads about 15 % faster than on one goroutine, against
// 25–50 % without, BENCHMARKS.md.)
// At most 4·GOMAXPROCS+1 batches are in flight.
func (x *kwIndex) load(ctx context.Context, db queryer) error {
	rows, err := db.QueryContext(ctx, `SELECT rowid, id, namespace, session_key, session_id, source, dir_path,
		ts_start, ts_end, substr(text, 1, ?), fts_body, coalesce(fts_words, ''), fts_ctx FROM chunks ORDER BY rowid`, speakerHeadMax+2)
	if err != nil {
		return err
	}
	defer rows.Close()
	type batch struct {
		docs []kwDoc
		toks []kwTokens
		err  error
		done chan struct{} // closed once counted
	}
	workers := runtime.GOMAXPROCS(0)
	jobs, order := make(chan *batch, 2*workers), make(chan *batch, 2*workers+1)
	ctx, cancel := context.WithCancel(ctx)
	var wg conc.WaitGroup
	defer wg.Wait() // before rows.Close: the reader uses rows
	defer cancel()
	for range workers {
		wg.Go(func() {
			tok, err := getTokenizer()
			if err == nil {
				defer putTokenizer(tok)
			}
			var c kwCounter
			for b := range jobs {
				b.err = err
				b.toks = make([]kwTokens, len(b.docs))
				for i := 0; i < len(b.docs) && b.err == nil; i++ {
					b.toks[i], b.err = c.count(tok, &b.docs[i])
				}
				close(b.done)
			}
		})
	}
	var readErr error
	wg.Go(func() {
		defer close(order)
		defer close(jobs)
		for full := true; full; {
			b := &batch{docs: make([]kwDoc, 0, kwLoadBatch), done: make(chan struct{})}
			for len(b.docs) < kwLoadBatch && rows.Next() {
				var d kwDoc
				var ts0, ts1 sql.NullInt64
				if err := rows.Scan(&d.rowid, &d.id, &d.ns, &d.sessionKey, &d.sessionID, &d.source, &d.dirPath,
					&ts0, &ts1, &d.head, &d.body, &d.words, &d.ctx); err != nil {
					readErr = err
					return
				}
				d.tsStart, d.tsEnd = nullNanos(ts0), nullNanos(ts1)
				b.docs = append(b.docs, d)
			}
			if full = len(b.docs) == kwLoadBatch; len(b.docs) == 0 {
				break
			}
			for _, ch := range []chan *batch{jobs, order} {
				select {
				case ch <- b:
				case <-ctx.Done():
					return
				}
			}
		}
		readErr = rows.Err()
	})
	var buf []kwIDF
	ps := new(kwPoster)
	post := func(b *batch) error {
		x.mu.Lock()
		defer x.mu.Unlock()
		defer x.flushLocked(ps)
		for i := range b.docs {
			dt := x.resolveLocked(b.toks[i], true, buf)
			buf = dt.terms
			if err := x.insertLocked(&b.docs[i], dt, ps); err != nil {
				return err
			}
		}
		return nil
	}
	for b := range order {
		<-b.done
		err := b.err
		if err == nil {
			err = post(b)
		}
		if err != nil {
			cancel()
			for range order { // the reader stops at the cancel
			}
			return err
		}
	}
	if readErr != nil { // the reader closed order before it was set
		return readErr
	}
	return ctx.Err()
}

// kwPhrase is one term of a query as the index ranks it: its token, how
// many of the query's terms are that token (each is a phrase of its own to
// FTS5), and its idf.
type kwPhrase struct {
	id  uint32
	n   int
	idf float64
}

// kwHit is a row the index ranked, with its BM25 score (boost applied);
// search fills in its chunk id.
type kwHit struct {
	rowid int64
	score float64
	id    string
}

// kwUnsupported says why the index cannot rank a query exactly; FTS5
// ranks it instead.
type kwUnsupported string

func (e kwUnsupported) Error() string { return "keyword index: " + string(e) }

// phrases turns query terms into the index's phrases, and returns each
// term's token ("" for a term of none, which matches nothing), or says why
// the index cannot rank them (a term FTS5 reads as several tokens is a
// phrase query; a term with an inexact posting).
func (x *kwIndex) phrases(tok *ftsTokenizer, terms []string) ([]kwPhrase, []string, error) {
	var out []kwPhrase
	toks := make([]string, len(terms))
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := float64(x.rows)
	for ti, t := range terms {
		var first []byte
		cnt, err := tok.tokens(t, tokenizeQuery, func(b []byte) {
			if first == nil {
				first = append([]byte{}, b...)
			}
		})
		if err != nil {
			return nil, nil, err
		}
		if cnt == 0 {
			continue // an empty phrase matches nothing
		}
		if cnt > 1 {
			return nil, nil, kwUnsupported(fmt.Sprintf("term %q is %d tokens", t, cnt))
		}
		toks[ti] = string(first)
		id, ok := x.terms[string(first)]
		if !ok || x.df[id] <= 0 {
			continue // in no row: matches nothing, scores nothing
		}
		if x.inexact[id] {
			return nil, nil, kwUnsupported(fmt.Sprintf("term %q has more instances in a row than a posting counts", t))
		}
		if i := slices.IndexFunc(out, func(p kwPhrase) bool { return p.id == id }); i >= 0 {
			out[i].n++
			continue
		}
		hits := float64(x.df[id])
		idf := math.Log((n - hits + 0.5) / (hits + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		out = append(out, kwPhrase{id: id, n: 1, idf: idf})
	}
	return out, toks, nil
}

// kwQuery is one ranking request to the index.
type kwQuery struct {
	ns       string
	phrases  []kwPhrase
	filter   Filter
	speakers []string // the speakers the query names (boosted)
	limit    int
}

// search returns the top q.limit rows of q.ns by BM25 (boost applied),
// best first; equal scores in rowid order.
func (x *kwIndex) search(q kwQuery) []kwHit {
	if q.limit <= 0 || len(q.phrases) == 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	sp := x.byNS[q.ns]
	if sp == nil || x.rows == 0 {
		return nil
	}
	avgdl := float64(x.tokens) / float64(x.rows)
	sel := newKWSelect(q, avgdl, x.syms)
	sel.scan(sp)
	hits := sel.result()
	for i := range hits {
		hits[i].id = sp.ids[x.where[hits[i].rowid].doc].string(x.syms)
	}
	return hits
}

// kwSelect ranks the spaces of one search into one top-k.
type kwSelect struct {
	q        kwQuery
	avgdl    float64
	filter   symFilter
	syms     *symtab
	speakers []string
	bmax     float64
	top      kwTop
	terms    []kwRankTerm // scan's, kept for its next space
	rem      []float64    // scan's
}

// newKWSelect returns the selection of q; syms is the index's table, read
// under its lock.
func newKWSelect(q kwQuery, avgdl float64, syms *symtab) *kwSelect {
	s := &kwSelect{q: q, avgdl: avgdl, filter: bindFilter(q.filter, syms), syms: syms, speakers: q.speakers, bmax: 1, top: kwTop{k: q.limit}}
	if len(s.speakers) > 0 {
		s.bmax = speakerBoost
	}
	return s
}

// tf is FTS5's per-phrase BM25 term for a weighted frequency f2/2 in a row
// of dlen tokens.
func (s *kwSelect) tf(f2 uint16, dlen uint32) float64 {
	return kwTF(f2, kwLenNorm(dlen, s.avgdl))
}

// kwLenNorm is the length part of FTS5's BM25 for a row of dlen tokens:
// k1·(1 - b + b·dlen/avgdl).
func kwLenNorm(dlen uint32, avgdl float64) float64 {
	return bm25K1 * (1 - bm25B + bm25B*float64(dlen)/avgdl)
}

// kwTF is FTS5's per-phrase BM25 term for a weighted frequency f2/2 in a
// row whose kwLenNorm is norm.
func kwTF(f2 uint16, norm float64) float64 {
	f := float64(f2) / 2
	return (f * (bm25K1 + 1.0)) / (f + norm)
}

// boost returns the speaker factor of doc i of sp.
func (s *kwSelect) boost(sp *kwSpace, i uint32) float64 {
	if len(s.speakers) == 0 {
		return 1
	}
	h := sp.speaker[i]
	if h == 0 { // ""
		return 1
	}
	for _, n := range s.speakers {
		if asciiEqualFold(s.syms.str(h), n) {
			return speakerBoost
		}
	}
	return 1
}

// asciiEqualFold is SQLite LIKE's comparison without wildcards: ASCII
// letters match either case, every other byte only itself.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}

// slack widens upper bounds against rounding, so a bound never prunes a
// row whose computed score reaches the threshold.
const slack = 1 + 1e-9

func (s *kwSelect) result() []kwHit { return s.top.sorted() }

// passes reports whether doc i passes f.
func (sp *kwSpace) passes(f *symFilter, i uint32) bool {
	return f.pass(sp.sessionKey[i], sp.sessionID[i], sp.source[i], sp.dirPath[i], sp.tsStart[i], sp.tsEnd[i])
}

// kwTop keeps the best k hits: a min-heap on (score, then larger rowid
// worse).
type kwTop struct {
	k int
	h []kwHit
}

func kwWorse(a, b kwHit) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.rowid > b.rowid
}

// threshold returns the k-th best score and whether k hits are held.
func (t *kwTop) threshold() (float64, bool) {
	if len(t.h) < t.k {
		return 0, false
	}
	return t.h[0].score, true
}

// push adds it when it is among the best k; it reports whether the held
// set changed once full (so the threshold may have risen).
func (t *kwTop) push(it kwHit) bool {
	if len(t.h) < t.k {
		t.h = append(t.h, it)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !kwWorse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return len(t.h) == t.k
	}
	if !kwWorse(t.h[0], it) {
		return false
	}
	t.h[0] = it
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && kwWorse(t.h[l], t.h[m]) {
			m = l
		}
		if r < len(t.h) && kwWorse(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
	return true
}

// sorted returns the held hits best first.
func (t *kwTop) sorted() []kwHit {
	out := slices.Clone(t.h)
	slices.SortFunc(out, kwBestFirst)
	return out
}

// kwBestFirst orders hits best first (the order of kwWorse, reversed).
func kwBestFirst(a, b kwHit) int {
	switch {
	case kwWorse(b, a):
		return -1
	case kwWorse(a, b):
		return 1
	}
	return 0
}

// kwStats are the index's figures (tests, status).
type kwStats struct {
	rows, tokens int64
	terms        int
	postings     int64
	bytes        int64 // estimated heap
}

// Heap estimates of the index's parts: a row's fields in its space (rowid,
// chunk id, length, dead flag, five symbols, two times; the symbols'
// strings are counted apart) and its entry in where; a dictionary entry
// (string header and map slot, plus the bytes); a posting list's header
// and map slot.
const (
	kwRowBytes  = 8 + 20 + 4 + 1 + 5*4 + 2*8 + 24
	kwTermBytes = 16 + 4 + 4 + 40
	kwPostBytes = 80 + 48
)

// stats returns the index's figures, kept as it changes (kwIndex.live
// and the rest; TestKeywordStatsKeptEqualAWalk): a status call holds the
// index's read lock for no time, however many rows it holds.
func (x *kwIndex) stats() kwStats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	// flushLocked's counters grow to one a term (by its capacity it would
	// depend on the batches that grew it: two replicas of one shard report
	// the same bytes).
	return kwStats{rows: x.rows, tokens: x.tokens, terms: int(x.live), postings: x.postings,
		bytes: x.termBytes + int64(len(x.df))*4 + x.syms.bytes() + x.rowBytes + x.postBytes}
}

// bytes is a posting list's heap estimate: kwPostBytes and its arrays
// when they are not in the struct.
func (p *kwPost) bytes() int64 {
	if p.inline() {
		return kwPostBytes
	}
	return kwPostBytes + int64(cap(p.docs))*4 + int64(cap(p.f2))*2
}
