package store

import (
	"math/bits"
	"strings"
)

// snippetScratch is the working memory of ftsSnippet, reused from one row
// to the next of a search.
type snippetScratch struct {
	spans  []snippetSpan
	insts  []snippetInst
	firsts []int
	seen   []bool
}

type snippetSpan struct{ start, end int32 }

// snippetInst is an instance of phrase ip at token position io.
type snippetInst struct{ ip, io int }

// ftsSnippet returns what FTS5's snippet(chunks_fts, 0, open, close,
// ellips, nToken) returns for a row whose first column (fts_body) holds
// text, for a query whose phrases are the single tokens toks, one per query
// term in query order ("" for a term of no token): the algorithm of
// fts5SnippetFunction and fts5HighlightCb (fts5_aux.c), on the tokens FTS5's
// tokenizer makes of text. The keyword index uses it so that a search needs
// no FTS5 query at all; a test compares it with FTS5's snippet().
func ftsSnippet(tok *ftsTokenizer, text string, toks []string, open, close, ellips string, nToken int) (string, error) {
	return new(snippetScratch).snippet(tok, text, toks, open, close, ellips, nToken)
}

// snippet is ftsSnippet with sc's memory.
func (sc *snippetScratch) snippet(tok *ftsTokenizer, text string, toks []string, open, close, ellips string, nToken int) (string, error) {
	nToken = min(max(nToken, 0), 64)
	type span = snippetSpan
	type inst = snippetInst
	spans, insts, firsts := sc.spans[:0], sc.insts[:0], sc.firsts[:0] // firsts: sentence starts (fts5SentenceFinderCb)
	defer func() { sc.spans, sc.insts, sc.firsts = spans, insts, firsts }()
	// byFirst[c]: the phrases whose token starts with byte c (a token
	// matches none of the others); all of them for more than 64 phrases.
	var byFirst [256]uint64
	for ip, q := range toks {
		if q != "" && ip < 64 {
			byFirst[q[0]] |= 1 << ip
		}
	}
	many := len(toks) > 64
	_, err := tok.tokenSpans(text, tokenizeDocument, func(t []byte, start, end int) {
		pos := len(spans)
		spans = append(spans, span{int32(start), int32(end)})
		if many {
			for ip, q := range toks {
				if q != "" && string(t) == q {
					insts = append(insts, inst{ip, pos})
				}
			}
		} else if len(t) > 0 {
			for m := byFirst[t[0]]; m != 0; m &= m - 1 {
				if ip := bits.TrailingZeros64(m); string(t) == toks[ip] {
					insts = append(insts, inst{ip, pos})
				}
			}
		}
		if pos == 0 {
			firsts = append(firsts, 0)
			return
		}
		i := start - 1
		var c byte
		for ; i >= 0; i-- {
			c = text[i]
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				break
			}
		}
		if i != start-1 && (c == '.' || c == ':') {
			firsts = append(firsts, pos)
		}
	})
	if err != nil {
		return "", err
	}
	nDoc := len(spans)
	if cap(sc.seen) < len(toks) {
		sc.seen = make([]bool, len(toks))
	}
	seen := sc.seen[:len(toks)]
	score := func(iPos int) (nScore, iAdj int) {
		clear(seen)
		iEnd := iPos + nToken
		iFirst, iLast := -1, 0
		for _, in := range insts {
			if in.io >= iPos && in.io < iEnd {
				if seen[in.ip] {
					nScore++
				} else {
					nScore += 1000
				}
				seen[in.ip] = true
				if iFirst < 0 {
					iFirst = in.io
				}
				iLast = in.io + 1
			}
		}
		iAdj = iFirst - (nToken-(iLast-iFirst))/2
		if iAdj+nToken > nDoc {
			iAdj = nDoc - nToken
		}
		return nScore, max(iAdj, 0)
	}
	best, bestStart := 0, 0
	for _, in := range insts {
		io := in.io
		if s, adj := score(io); s > best {
			best, bestStart = s, adj
		}
		if len(firsts) > 0 && nDoc > nToken {
			jj := 0
			for ; jj < len(firsts)-1; jj++ {
				if firsts[jj+1] > io {
					break
				}
			}
			if firsts[jj] < io {
				s, _ := score(firsts[jj])
				if firsts[jj] == 0 {
					s += 120
				} else {
					s += 100
				}
				if s > best {
					best, bestStart = s, firsts[jj]
				}
			}
		}
	}

	// The highlight (fts5HighlightCb over the chosen range), with the
	// coalesced instance iterator (fts5CInstIterNext): phrases of one
	// token, so an instance coalesces only with one at the same position.
	next := 0
	iterStart, iterEnd := -1, -1
	advance := func() {
		iterStart, iterEnd = -1, -1
		for next < len(insts) {
			io := insts[next].io
			if iterStart < 0 {
				iterStart, iterEnd = io, io
			} else if io > iterEnd {
				break
			}
			next++
		}
	}
	advance()
	rangeStart, rangeEnd := bestStart, bestStart+nToken-1
	var b strings.Builder
	if bestStart > 0 {
		b.WriteString(ellips)
	}
	for iterStart >= 0 && iterStart < bestStart {
		advance()
	}
	off, isOpen := 0, false
	add := func(to int) {
		if to > off {
			b.WriteString(text[off:to])
		}
	}
	for pos, sp32 := range spans {
		if pos < rangeStart || pos > rangeEnd {
			continue
		}
		sp := struct{ start, end int }{int(sp32.start), int(sp32.end)}
		if rangeStart != 0 && pos == rangeStart {
			off = sp.start
		}
		if isOpen && (pos <= iterStart || iterStart < 0) && sp.start > off {
			b.WriteString(close)
			isOpen = false
		}
		if pos == iterStart && !isOpen {
			add(sp.start)
			b.WriteString(open)
			off, isOpen = sp.start, true
		}
		if pos == iterEnd {
			if !isOpen {
				b.WriteString(open)
				isOpen = true
			}
			add(sp.end)
			off = max(off, sp.end)
			advance()
		}
		if pos == rangeEnd {
			if isOpen {
				if iterStart >= 0 && pos >= iterStart {
					add(sp.end)
					off = max(off, sp.end)
				}
				b.WriteString(close)
				isOpen = false
			}
			add(sp.end)
			off = max(off, sp.end)
		}
	}
	if isOpen {
		b.WriteString(close)
	}
	if rangeEnd >= nDoc-1 {
		add(len(text))
	} else {
		b.WriteString(ellips)
	}
	return b.String(), nil
}
