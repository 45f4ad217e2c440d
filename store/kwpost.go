package store

import "slices"

// Posting a batch term by term. A row adds one entry to the posting list
// of each of its distinct terms (about 40 for a message with its context),
// and posting row by row looked each list up in its space's map and grew
// it at its tail once a row: two or three cache misses an entry, most of
// the keyword index's part of the commit stage. The rows of a batch share
// most of their terms, so the poster collects a batch's entries and posts
// them grouped by term: one lookup and one append a term and space. The
// postings are the same as row by row (each list still in ascending doc
// order: a counting sort by term keeps the order rows were added in),
// which TestPostingByTermEqualsRowByRow checks.

// kwEntry is one posting entry waiting to be posted: row doc of space
// number sp (kwIndex.spaces) holds term id with weighted frequency f2.
// Sixteen bytes and no pointer: a batch's entries are sorted by copying,
// and the collector does not scan them.
type kwEntry struct {
	sp  uint32
	id  uint32
	doc uint32
	f2  uint16
}

// kwPoster holds the entries of rows added since the last flush; its
// buffers are reused from flush to flush, and dropped with it (a hot
// batch's are about 2 MiB: allocating them a batch costs less than a
// microsecond a row, and nothing stays held between batches).
type kwPoster struct {
	pend, out []kwEntry
	ids       []uint32 // distinct term ids of pend, first seen first
}

// kwFlushAt is how many waiting entries make insertLocked post them
// (a bound on a poster's memory while an index loads).
const kwFlushAt = 1 << 18

// flushLocked posts ps's entries into x, term by term (see above). Caller
// holds x.mu for writing; deleteLocked calls it before a removal.
func (x *kwIndex) flushLocked(ps *kwPoster) {
	if len(ps.pend) == 0 {
		return
	}
	// x.postAt[id] counts term id's entries, then is its group's next
	// slot; it is all zeros between flushes.
	if len(x.postAt) < len(x.df) {
		x.postAt = slices.Grow(x.postAt, len(x.df)-len(x.postAt))[:len(x.df)]
	}
	at := x.postAt
	for i := range ps.pend {
		id := ps.pend[i].id
		if at[id] == 0 {
			ps.ids = append(ps.ids, id)
		}
		at[id]++
	}
	n := int32(0)
	for _, id := range ps.ids {
		n, at[id] = n+at[id], n
	}
	ps.out = slices.Grow(ps.out[:0], len(ps.pend))[:len(ps.pend)]
	for i := range ps.pend {
		e := &ps.pend[i]
		ps.out[at[e.id]] = *e
		at[e.id]++
	}
	start := int32(0)
	for _, id := range ps.ids {
		end := at[id]
		x.postGroup(id, ps.out[start:end])
		at[id] = 0
		start = end
	}
	ps.pend, ps.out, ps.ids = ps.pend[:0], ps.out[:0], ps.ids[:0]
}

// postGroup appends the entries of one term, in the order their rows were
// added, to the term's list in each entry's space.
func (x *kwIndex) postGroup(id uint32, es []kwEntry) {
	if x.df[id] == 0 {
		x.live++
	}
	x.df[id] += int32(len(es))
	x.postings += int64(len(es))
	for len(es) > 0 {
		num := es[0].sp
		run := 1
		for run < len(es) && es[run].sp == num {
			run++
		}
		sp := x.spaces[num]
		p := sp.post[id]
		if p == nil {
			p = newKWPost()
			sp.post[id] = p
		} else {
			x.postBytes -= p.bytes()
		}
		p.docs = slices.Grow(p.docs, run)
		p.f2 = slices.Grow(p.f2, run)
		for _, e := range es[:run] {
			p.docs = append(p.docs, e.doc)
			p.f2 = append(p.f2, e.f2)
			p.maxF2 = max(p.maxF2, e.f2)
			p.minD = min(p.minD, sp.dlen[e.doc])
		}
		x.postBytes += p.bytes()
		es = es[run:]
	}
}
