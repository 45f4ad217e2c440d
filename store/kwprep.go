package store

import (
	"fmt"
	"slices"
	"strings"
)

// Tokenizing the rows a batch adds to (and removes from) the keyword index
// is most of the index's cost after a commit, and the commit stage of a
// partition is its critical path. So Apply hands each row to a kwPrep as
// the transaction writes it, which tokenizes it on another goroutine while
// the transaction runs; after the commit the index only maps the counted
// tokens to term ids and posts them (applyTokenized), in commit order under
// writeMu as before. The tokens are the ones tokenize counts, from the same
// FTS5 tokenizer, so the index is the same either way
// (TestKeywordIndexRanksAsFTS5, TestPreparedTokensEqualTokenize).

// kwTokens is one row's tokens counted without the index: each distinct
// token of a weighted column with its weighted frequency in half units (as
// docTokens), and the row's length in tokens of every column.
type kwTokens struct {
	terms []kwTerm
	// text holds the terms' tokens (kwTerm.off, n); the index clones a
	// token when it interns it.
	text   string
	length uint32
	// ix is the index whose term ids the terms know (nil: none).
	ix *kwIndex
}

// kwTerm is a distinct token of a row and its weighted frequency. It holds
// no pointer (the token is text[off:off+n] of its kwTokens), so a batch's
// terms, about fifty a row, are 16 bytes each that the collector does not
// scan.
type kwTerm struct {
	off   uint32
	n     uint16 // FTS5 cuts a token at 32,768 bytes (mi_cb)
	known bool
	f2    uint32
	// id is the token's term id in the index the row was counted against
	// (kwTokens.ix), when known.
	id uint32
}

// token returns t's token, of kt.
func (kt *kwTokens) token(t *kwTerm) string { return kt.text[t.off : t.off+uint32(t.n)] }

// kwCounter counts rows' tokens; it reuses its buffers between rows and is
// not safe for concurrent use.
type kwCounter struct {
	buf   []byte
	spans []kwSpan
	at    map[string]int
	terms []kwTerm // a row's distinct tokens while they are counted
	// byID counts a row's tokens the index already holds by term id
	// (countKnown); ids are the ids counted, first seen first, and idAt
	// where each one's text is in buf. byID is all zeros between rows.
	byID []uint32
	ids  []uint32
	idAt []kwSpan
	// lines holds the tokens of the lines countKnown tokenized last, for
	// linesIx.
	lines   kwLineRing
	linesIx *kwIndex
}

// A chunk's context is the lines of the messages before it, so a line a
// batch counts as one row's text it counts again in the context of the
// next one or two rows of its session (the rows come session by session),
// and a context's date line in many. countKnown tokenizes the text and
// context columns a line at a time and keeps the tokens of the last
// kwLineSlots lines, which it replays instead of tokenizing a line again.
// FTS5's tokenizer never makes a token across a line break (unicode61
// separates at every character that is not a letter or a digit), so a
// column's tokens are its lines' tokens in order
// (TestLineTokensEqualTokenize).
const kwLineSlots = 8

// kwLineRing is the last lines tokenized, each with its tokens; next is
// the slot the next line takes.
type kwLineRing struct {
	slot [kwLineSlots]kwLine
	next int
	live bool // a slot has been taken since the last reset
}

// empty reports whether no line is kept.
func (r *kwLineRing) empty() bool { return !r.live }

// kwLine is one line and its tokens: their text in buf, and each one's
// term id when the index held it as the line was tokenized (an id stays
// valid; a token the index did not hold is looked up again when the line
// is replayed, since the index may hold it by then).
type kwLine struct {
	text string
	buf  []byte
	toks []kwLineTok
}

type kwLineTok struct {
	off, n uint32
	id     uint32
	known  bool
}

// find returns the slot holding text (never empty), or nil.
func (r *kwLineRing) find(text string) *kwLine {
	for i := range r.slot {
		if l := &r.slot[i]; l.text == text {
			return l
		}
	}
	return nil
}

// take empties the oldest slot and returns it for text.
func (r *kwLineRing) take(text string) *kwLine {
	l := &r.slot[r.next]
	r.next = (r.next + 1) % kwLineSlots
	r.live = true
	l.text, l.buf, l.toks = text, l.buf[:0], l.toks[:0]
	if l.buf == nil {
		l.buf = make([]byte, 0, 256)
	}
	return l
}

// reset forgets every line (the ids they hold are another index's).
func (r *kwLineRing) reset() {
	for i := range r.slot {
		r.slot[i] = kwLine{}
	}
	r.next, r.live = 0, false
}

type kwSpan struct{ off, n, w uint32 }

// count tokenizes d with tok as tokenize does, without the index.
func (c *kwCounter) count(tok *ftsTokenizer, d *kwDoc) (kwTokens, error) {
	c.buf, c.spans = c.buf[:0], c.spans[:0]
	kt := kwTokens{length: kwTokenColumns}
	for _, col := range d.columns() {
		n, err := tok.tokens(col.text, tokenizeDocument, func(t []byte) {
			c.spans = append(c.spans, kwSpan{off: uint32(len(c.buf)), n: uint32(len(t)), w: col.w})
			c.buf = append(c.buf, t...)
		})
		if err != nil {
			return kwTokens{}, err
		}
		kt.length += uint32(n)
	}
	kt.text = string(c.buf)
	kt.terms = c.addSpans(kt.text, c.terms[:0])
	return kt, nil
}

// addSpans adds to terms the tokens of c.spans, whose text is in all, one
// term a distinct token, and returns a copy of them: the row's terms live
// until its batch is posted, and a copy of their size holds half as much
// as one of the spans' would (a context repeats most of them).
func (c *kwCounter) addSpans(all string, terms []kwTerm) []kwTerm {
	if c.at == nil {
		c.at = map[string]int{}
	}
	clear(c.at)
	for _, sp := range c.spans {
		t := all[sp.off : sp.off+sp.n]
		if i, ok := c.at[t]; ok {
			terms[i].f2 += sp.w
			continue
		}
		c.at[t] = len(terms)
		terms = append(terms, kwTerm{off: sp.off, n: uint16(sp.n), f2: sp.w})
	}
	c.terms = terms
	return slices.Clone(terms)
}

// countKnown counts d's tokens as count does, and notes the term ids x
// already holds (ids are never reassigned, so they stay valid for x; a
// term x does not hold yet is looked up again by resolveLocked: an
// earlier row of the batch may add it). A token x holds is counted by its id in
// a slice, not by its text in the row's map, and looked up once a token
// rather than once a distinct token afterwards (a tenth of the CPU of
// BenchmarkApplyHotNamespace). Each term keeps its text, as count's do,
// for an index other than x to resolve it (resolveLocked). It holds x's
// read lock while it counts the row. keep says whether to keep the row's
// lines for the rows after it (see kwLineSlots): when the next row is of
// the same session.
func (c *kwCounter) countKnown(tok *ftsTokenizer, d *kwDoc, x *kwIndex, keep bool) (kwTokens, error) {
	c.buf, c.spans = c.buf[:0], c.spans[:0]
	terms := c.terms[:0]
	kt := kwTokens{ix: x, length: kwTokenColumns}
	x.mu.RLock()
	if len(c.byID) < len(x.df) {
		c.byID = slices.Grow(c.byID, len(x.df)-len(c.byID))[:len(x.df)]
	}
	if c.linesIx != x {
		c.lines.reset()
		c.linesIx = x
	}
	for i, col := range d.columns() {
		var n int
		var err error
		if i == kwWordsColumn { // a CJK row's extra words: not lines of a context
			n, err = tok.tokens(col.text, tokenizeDocument, func(t []byte) {
				id, ok := x.terms[string(t)]
				c.addToken(t, id, ok, col.w)
			})
		} else {
			n, err = c.countLines(tok, col.text, col.w, x, keep)
		}
		if err != nil {
			x.mu.RUnlock()
			c.takeKnown(nil, false)
			return kwTokens{}, err
		}
		kt.length += uint32(n)
	}
	x.mu.RUnlock()
	kt.text = string(c.buf)
	kt.terms = c.addSpans(kt.text, c.takeKnown(terms, true))
	return kt, nil
}

// addToken counts token t of weight w: by its id when the index holds it
// (known), else by its text.
func (c *kwCounter) addToken(t []byte, id uint32, known bool, w uint32) {
	if known {
		if c.byID[id] == 0 {
			c.ids = append(c.ids, id)
			c.idAt = append(c.idAt, kwSpan{off: uint32(len(c.buf)), n: uint32(len(t))})
			c.buf = append(c.buf, t...)
		}
		c.byID[id] += w
		return
	}
	c.spans = append(c.spans, kwSpan{off: uint32(len(c.buf)), n: uint32(len(t)), w: w})
	c.buf = append(c.buf, t...)
}

// countLines counts the tokens of text, of weight w, a line at a time:
// a line among the last ones kept is replayed from c.lines; the lines
// between two such are tokenized in one call (a call into C costs about
// what a short line's tokens do), and kept there when keep. It returns the
// number of tokens. Caller holds x.mu for reading.
func (c *kwCounter) countLines(tok *ftsTokenizer, text string, w uint32, x *kwIndex, keep bool) (int, error) {
	if c.lines.empty() {
		return c.countRun(tok, text, w, x, keep)
	}
	n := 0
	for text != "" {
		// text[:miss] is the lines up to the first one kept (hit), with
		// their line breaks.
		miss, hit := 0, ""
		for miss < len(text) {
			end := strings.IndexByte(text[miss:], '\n')
			if end < 0 {
				end = len(text) - miss
			}
			if line := text[miss : miss+end]; line != "" && c.lines.find(line) != nil {
				hit = line
				break
			}
			miss += end + 1
		}
		miss = min(miss, len(text))
		if miss > 0 {
			k, err := c.countRun(tok, text[:miss], w, x, keep)
			if err != nil {
				return 0, err
			}
			n += k
		}
		if hit == "" {
			break
		}
		text = text[min(miss+len(hit)+1, len(text)):]
		l := c.lines.find(hit)
		if l == nil { // the run took its slot
			k, err := c.countRun(tok, hit, w, x, keep)
			if err != nil {
				return 0, err
			}
			n += k
			continue
		}
		for _, lt := range l.toks {
			t := l.buf[lt.off : lt.off+lt.n]
			id, ok := lt.id, lt.known
			if !ok { // the index may hold it since: looked up as tokenizing does
				id, ok = x.terms[string(t)]
			}
			c.addToken(t, id, ok, w)
		}
		n += len(l.toks)
	}
	return n, nil
}

// countRun counts the tokens of run, lines of weight w, as they are
// tokenized, and when keep keeps each line that has tokens in c.lines. It
// returns the number of tokens.
func (c *kwCounter) countRun(tok *ftsTokenizer, run string, w uint32, x *kwIndex, keep bool) (int, error) {
	if !keep {
		return tok.tokens(run, tokenizeDocument, func(t []byte) {
			id, ok := x.terms[string(t)]
			c.addToken(t, id, ok, w)
		})
	}
	var l *kwLine   // the slot of the line of the last token,
	ls, le := 0, -1 // run[ls:le], le at its line break or the end of run
	k, err := tok.tokenSpans(run, tokenizeDocument, func(t []byte, start, _ int) {
		if start > le { // the token starts a line after the last token's
			for start > le {
				ls = le + 1
				if i := strings.IndexByte(run[ls:], '\n'); i >= 0 {
					le = ls + i
				} else {
					le = len(run)
				}
			}
			l = c.lines.take(run[ls:le])
		}
		id, ok := x.terms[string(t)]
		l.toks = append(l.toks, kwLineTok{off: uint32(len(l.buf)), n: uint32(len(t)), id: id, known: ok})
		l.buf = append(l.buf, t...)
		c.addToken(t, id, ok, w)
	})
	if err != nil {
		if l != nil {
			l.text = ""
		}
		return 0, err
	}
	return k, nil
}

// takeKnown appends to terms (when keep) the known terms countKnown
// counted, their text in c.buf, and leaves byID all zeros and ids empty for
// the next row (not keep: it only clears them, after an error).
func (c *kwCounter) takeKnown(terms []kwTerm, keep bool) []kwTerm {
	for i, id := range c.ids {
		if keep {
			sp := c.idAt[i]
			terms = append(terms, kwTerm{off: sp.off, n: uint16(sp.n), f2: c.byID[id], id: id, known: true})
		}
		c.byID[id] = 0
	}
	c.ids, c.idAt = c.ids[:0], c.idAt[:0]
	return terms
}

// resolveLocked returns kt as tokenize would have counted it: term ids,
// unseen tokens interned when intern (an add) and skipped otherwise (a
// remove: a token never seen is in no posting). Caller holds x.mu for
// writing.
//
// The terms of kt are distinct tokens, so their ids are distinct: dt holds
// each once. Its terms live in buf's array until buf's next use.
func (x *kwIndex) resolveLocked(kt kwTokens, intern bool, buf []kwIDF) docTokens {
	dt := docTokens{terms: buf[:0], length: kt.length}
	pre := kt.ix == x
	for i := range kt.terms {
		t := &kt.terms[i]
		id, ok := t.id, pre && t.known
		if !ok {
			id, ok = x.terms[kt.token(t)]
		}
		if !ok {
			if !intern {
				continue
			}
			id = uint32(len(x.df))
			tok := strings.Clone(kt.token(t))
			x.terms[tok] = id
			x.df = append(x.df, 0)
			x.termBytes += kwTermBytes + int64(len(tok))
		}
		dt.terms = append(dt.terms, kwIDF{id, t.f2})
	}
	return dt
}

// applyTokenized is apply for ops whose rows are already counted: toks[i]
// is ops[i]'s.
func (x *kwIndex) applyTokenized(ops []kwOp, toks []kwTokens) error {
	if len(toks) != len(ops) {
		return fmt.Errorf("keyword index: %d rows counted for %d changes", len(toks), len(ops))
	}
	var buf []kwIDF
	n := 0
	for i := range toks {
		n += len(toks[i].terms)
	}
	ps := &kwPoster{pend: make([]kwEntry, 0, min(n, kwFlushAt))}
	x.mu.Lock()
	defer x.mu.Unlock()
	defer x.flushLocked(ps) // also after an error: the rows added are in where
	for i := range ops {
		dt := x.resolveLocked(toks[i], ops[i].add, buf)
		buf = dt.terms
		var err error
		if ops[i].add {
			err = x.insertLocked(&ops[i].doc, dt, ps)
		} else {
			err = x.deleteLocked(&ops[i].doc, dt, ps)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// kwPrepBatch is how many rows the writer hands a kwPrep at a time.
const kwPrepBatch = 32

// kwPrep counts the tokens of the rows a write transaction hands it, in
// order, on a goroutine of its own that wait ends; its owner is the write
// transaction's Apply.
type kwPrep struct {
	in   chan []kwDoc
	done chan struct{}
	pend []kwDoc
	// toks and err are the goroutine's until done is closed.
	toks []kwTokens
	err  error
}

// startKWPrep starts a kwPrep that also notes the term ids ix holds (nil:
// none).
func startKWPrep(ix *kwIndex) *kwPrep {
	p := &kwPrep{in: make(chan []kwDoc, 8), done: make(chan struct{})}
	go p.run(p.in, ix)
	return p
}

func (p *kwPrep) run(in <-chan []kwDoc, ix *kwIndex) {
	defer close(p.done)
	tok, err := getTokenizer()
	if err != nil {
		p.err = err
		for range in { // drain: the writer keeps sending until wait
		}
		return
	}
	defer putTokenizer(tok)
	var c kwCounter
	for docs := range in {
		for i := range docs {
			if p.err != nil {
				continue
			}
			var kt kwTokens
			var err error
			if ix != nil {
				// The last row of docs keeps its lines: the next may be
				// of its session.
				keep := i+1 == len(docs) || docs[i+1].sameSession(&docs[i])
				kt, err = c.countKnown(tok, &docs[i], ix, keep)
			} else {
				kt, err = c.count(tok, &docs[i])
			}
			if err != nil {
				p.err = err
				continue
			}
			p.toks = append(p.toks, kt)
		}
	}
}

// add hands the goroutine a row (a copy of d).
func (p *kwPrep) add(d kwDoc) {
	p.pend = append(p.pend, d)
	if len(p.pend) == kwPrepBatch {
		p.in <- p.pend
		p.pend = make([]kwDoc, 0, kwPrepBatch)
	}
}

// wait ends the goroutine and returns the rows' tokens in the order they
// were added; later calls return the same.
func (p *kwPrep) wait() ([]kwTokens, error) {
	if p.in != nil {
		if len(p.pend) > 0 {
			p.in <- p.pend
			p.pend = nil
		}
		close(p.in)
		p.in = nil
		<-p.done
	}
	return p.toks, p.err
}
