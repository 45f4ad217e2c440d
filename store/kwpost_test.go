package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hotKWDocs returns n rows as a hot namespace's batches hand them to the
// keyword index: session rows of namespace ns over 1,000 interleaved
// sessions, a Zipf body of 12 to 35 words and the context of the two
// messages before it.
func hotKWDocs(r *rand.Rand, ns string, first int64, n int) []kwDoc {
	docs := make([]kwDoc, n)
	prev := map[int][2]string{}
	for i := range docs {
		si := (int(first) + i) % 1000
		body := kwSpeakers[i%4] + ": " + zipfText(r, 12+(i*7)%24)
		p := prev[si]
		docs[i] = kwDoc{rowid: first + int64(i), id: fmt.Sprintf("c%d", first+int64(i)), ns: ns,
			sessionKey: fmt.Sprintf("chat-%d", si), sessionID: "s1", source: "sessions", head: body,
			body: body, ctx: "2026-11-30\n" + p[0] + "\n" + p[1]}
		prev[si] = [2]string{p[1], body}
	}
	return docs
}

// countKW counts docs as a kwPrep does, against x.
func countKW(tb testing.TB, x *kwIndex, docs []kwDoc) []kwTokens {
	tb.Helper()
	tok, err := getTokenizer()
	if err != nil {
		tb.Fatal(err)
	}
	defer putTokenizer(tok)
	var c kwCounter
	out := make([]kwTokens, len(docs))
	for i := range docs {
		if out[i], err = c.countKnown(tok, &docs[i], x, i+1 == len(docs) || docs[i+1].sameSession(&docs[i])); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// heldKWIndex returns an index of held rows of one hot namespace
// (hotKWDocs), posted as commits post them.
func heldKWIndex(b *testing.B, r *rand.Rand, held int) *kwIndex {
	x := newKWIndex()
	for start := 0; start < held; start += 10_000 {
		docs := hotKWDocs(r, "hot", int64(start+1), 10_000)
		ops := make([]kwOp, len(docs))
		for i := range docs {
			ops[i] = kwOp{add: true, doc: docs[i]}
		}
		if err := x.applyTokenized(ops, countKW(b, x, docs)); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

// BenchmarkKeywordIndexPost is the keyword index's part of the commit
// stage (Shard.apply after the commit): posting a batch of 2,000 counted
// rows of one hot namespace (1,000 interleaved sessions, body and context)
// into an index that holds 100,000 rows of it. It reports ns a row.
func BenchmarkKeywordIndexPost(b *testing.B) {
	const held, batch = 100_000, 2_000
	r := rand.New(rand.NewPCG(7, 13))
	x := heldKWIndex(b, r, held)
	next := int64(held + 1)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		docs := hotKWDocs(r, "hot", next, batch)
		next += batch
		ops := make([]kwOp, len(docs))
		for i := range docs {
			ops[i] = kwOp{add: true, doc: docs[i]}
		}
		toks := countKW(b, x, docs)
		b.StartTimer()
		if err := x.applyTokenized(ops, toks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/row")
}

// TestPostingByTermEqualsRowByRow applies one sequence of changes to two
// indexes: in batches, as a commit posts them (the entries of a batch's
// rows grouped by term), and one row at a time (each batch of one row, so
// each term's group is one entry). Three namespaces share terms and rows
// alternate between them; rows are removed between adds, enough for a
// space to be compacted in the middle of a batch; one row holds a token
// more often than a posting counts. The two indexes must be the same.
func TestPostingByTermEqualsRowByRow(t *testing.T) {
	ops := churnKWOps()
	grouped, single := newKWIndex(), newKWIndex()
	adds := 0
	for start := 0; start < len(ops); start += 250 {
		batch := ops[start:min(start+250, len(ops))]
		if err := grouped.applyTokenized(batch, countKWOps(t, grouped, batch)); err != nil {
			t.Fatal(err)
		}
		for i := range batch {
			if err := single.applyTokenized(batch[i:i+1], countKWOps(t, nil, batch[i:i+1])); err != nil {
				t.Fatal(err)
			}
		}
		for _, op := range batch {
			if op.add {
				adds++
			}
		}
	}
	docsHeld := 0
	for _, sp := range grouped.byNS {
		docsHeld += len(sp.rowids)
	}
	if docsHeld == adds { // a removal compacts only inside applyTokenized, after the batch's adds before it

		t.Fatal("no space was compacted: the test does not cover a removal inside a batch")
	}
	if len(grouped.inexact) == 0 {
		t.Fatal("no inexact term: the test does not cover the cap of a posting")
	}
	if got, want := dumpKW(grouped), dumpKW(single); !reflect.DeepEqual(got, want) {
		t.Fatalf("posted by term:\n%.2000v\nrow by row:\n%.2000v", got, want)
	}
}

// removed reports whether ops removes rowid.
// churnKWOps returns the adds of 900 rows of three namespaces, shuffled,
// with a removal of an earlier row of the same namespace after two adds in
// three: in batches of 250, enough for a space to be compacted inside a
// batch. One row holds a token more often than a posting counts.
func churnKWOps() []kwOp {
	r := rand.New(rand.NewPCG(5, 8))
	var docs []kwDoc
	for i, ns := range []string{"a", "b", "c"} {
		docs = append(docs, hotKWDocs(r, ns, int64(i*1000+1), 300)...)
	}
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	docs[7].body = strings.Repeat("often ", maxF2/2+3) // more instances than a posting counts
	var ops []kwOp
	for i := range docs {
		ops = append(ops, kwOp{add: true, doc: docs[i]})
		if i%3 != 0 { // remove an earlier row of the same namespace
			for j := i - 1; j >= 0; j-- {
				if docs[j].ns == docs[i].ns && docs[j].rowid%2 == int64(i%2) && !removed(ops, docs[j].rowid) {
					ops = append(ops, kwOp{doc: docs[j]})
					break
				}
			}
		}
	}
	return ops
}

// TestKeywordStatsKeptEqualAWalk: the figures the index keeps as it
// changes (stats) equal those of a walk over it, after every batch of
// adds and removals (the spaces compacted among them), and after rows
// added and removed one at a time as addLocked and deleteLocked do.
func TestKeywordStatsKeptEqualAWalk(t *testing.T) {
	ops := churnKWOps()
	x := newKWIndex()
	if got, want := x.stats(), walkKWStats(x); got != want {
		t.Fatalf("empty: kept %+v, walked %+v", got, want)
	}
	for start := 0; start < len(ops); start += 250 {
		batch := ops[start:min(start+250, len(ops))]
		if err := x.applyTokenized(batch, countKWOps(t, x, batch)); err != nil {
			t.Fatal(err)
		}
		if got, want := x.stats(), walkKWStats(x); got != want {
			t.Fatalf("after %d changes: kept %+v, walked %+v", start+len(batch), got, want)
		}
	}
	held, adds := 0, 0
	for _, sp := range x.byNS {
		held += len(sp.rowids)
	}
	for _, op := range ops {
		if op.add {
			adds++
		}
	}
	if held == adds { // every doc ever added is still there, dead or not
		t.Fatal("no space was compacted: the test does not cover compactLocked")
	}
	tok, err := getTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer putTokenizer(tok)
	d := kwDoc{rowid: 9999, ns: "d", sessionKey: "k-new", sessionID: "s-new", source: "sessions", body: "Zed: brand new words here", head: "Zed: brand new words here"}
	ps := new(kwPoster)
	if err := x.addLocked(tok, &d, newKWScratch(), ps); err != nil {
		t.Fatal(err)
	}
	x.flushLocked(ps)
	if got, want := x.stats(), walkKWStats(x); got != want {
		t.Fatalf("after a row added alone: kept %+v, walked %+v", got, want)
	}
	dt, err := x.tokenize(tok, &d, false, newKWScratch())
	if err != nil {
		t.Fatal(err)
	}
	if err := x.deleteLocked(&d, dt, ps); err != nil {
		t.Fatal(err)
	}
	if got, want := x.stats(), walkKWStats(x); got != want {
		t.Fatalf("after a row removed alone: kept %+v, walked %+v", got, want)
	}
}

// walkKWStats is what stats keeps, counted by walking the index.
func walkKWStats(x *kwIndex) kwStats {
	st := kwStats{rows: x.rows, tokens: x.tokens}
	for _, df := range x.df {
		if df > 0 {
			st.terms++
		}
	}
	for t := range x.terms {
		st.bytes += kwTermBytes + int64(len(t))
	}
	st.bytes += int64(len(x.df)) * 4
	for s := range x.syms.ids {
		st.bytes += symBytes(s)
	}
	for _, sp := range x.byNS {
		st.bytes += int64(cap(sp.rowids)) * kwRowBytes
		for _, p := range sp.post {
			st.postings += int64(len(p.docs))
			st.bytes += p.bytes()
		}
	}
	return st
}

func removed(ops []kwOp, rowid int64) bool {
	return slices.ContainsFunc(ops, func(op kwOp) bool { return !op.add && op.doc.rowid == rowid })
}

// countKWOps counts ops' rows as a kwPrep does (noting x's term ids when x
// is not nil).
func countKWOps(tb testing.TB, x *kwIndex, ops []kwOp) []kwTokens {
	docs := make([]kwDoc, len(ops))
	for i := range ops {
		docs[i] = ops[i].doc
	}
	if x == nil {
		x = newKWIndex() // ids noted against another index are not used
	}
	return countKW(tb, x, docs)
}

// dumpKW is what x holds, by term and namespace rather than by term id
// and pointer, so two indexes built in different orders compare.
func dumpKW(x *kwIndex) map[string]any {
	byID := make([]string, len(x.df))
	for term, id := range x.terms {
		byID[id] = term
	}
	df, inexact := map[string]int32{}, map[string]bool{}
	for id, n := range x.df {
		df[byID[id]] = n
	}
	for id := range x.inexact {
		inexact[byID[id]] = true
	}
	spaces := map[string]any{}
	for ns, sp := range x.byNS {
		post := map[string][4]any{} // a list's postings and bounds, wherever they are kept
		for id, p := range sp.post {
			post[byID[id]] = [4]any{p.docs, p.f2, p.maxF2, p.minD}
		}
		spaces[ns] = []any{sp.rowids, chunkIDStrings(x.syms, sp.ids), sp.dlen, sp.dead, sp.ndead,
			symStrings(x.syms, sp.sessionKey), symStrings(x.syms, sp.speaker), sp.tsStart, post}
	}
	where := map[int64][2]any{}
	for rowid, loc := range x.where {
		where[rowid] = [2]any{x.spaces[loc.sp].rowids[loc.doc], loc.doc}
	}
	return map[string]any{"rows": x.rows, "tokens": x.tokens, "df": df, "inexact": inexact, "spaces": spaces, "where": where}
}

// BenchmarkKeywordIndexLoad is the keyword index's build at Open: every
// chunk of a 20,000-chunk chat shard (about 200 words a chunk) read,
// tokenized and posted. Set MEMINDEX_KW_BENCH_DIR to keep the shard for
// later runs.
func BenchmarkKeywordIndexLoad(b *testing.B) {
	s := kwChatShard(b, 20_000)
	for b.Loop() {
		if err := newKWIndex().load(context.Background(), s.r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeywordCount is a kwPrep's counting of a batch of 2,000 rows
// (body and a context of a date line and the two rows before in the
// session) against an index of 100,000 rows of their namespace: rows in
// session order, as a batch of events of ten messages of a session
// brings them (a context's lines were counted a row or two before), and
// interleaved over 1,000 sessions, as one message an event brings them
// (its lines were counted in an earlier batch). It reports ns a row.
func BenchmarkKeywordCount(b *testing.B) {
	const held, batch = 100_000, 2_000
	r := rand.New(rand.NewPCG(7, 13))
	x := heldKWIndex(b, r, held)
	// Past the first two rows of each session, every context is whole.
	interleaved := hotKWDocs(r, "hot", held+1, 12_000)[2_000:]
	bySession := slices.Clone(interleaved)
	slices.SortStableFunc(bySession, func(a, b kwDoc) int { return strings.Compare(a.sessionKey, b.sessionKey) })
	for _, c := range []struct {
		name string
		docs []kwDoc
	}{{"order=sessions", bySession}, {"order=interleaved", interleaved}} {
		b.Run(c.name, func(b *testing.B) {
			docs := c.docs[:batch]
			for b.Loop() {
				countKW(b, x, docs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/row")
		})
	}
}

// BenchmarkKeywordStats is a status call's part in the keyword index (the
// time it holds the index's read lock) at 100,000 rows of one namespace:
// the figures kept as the index changes (stats), and the walk that
// computed them before (walkKWStats).
func BenchmarkKeywordStats(b *testing.B) {
	x := heldKWIndex(b, rand.New(rand.NewPCG(7, 13)), 100_000)
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			x.stats()
		}
	})
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			x.mu.RLock()
			walkKWStats(x)
			x.mu.RUnlock()
		}
	})
}

// TestKWPostInlineThenHeap grows a posting list past the postings its
// struct holds, as postGroup does, and checks that its postings stay in
// order across the move to the heap, that two lists never share their
// inline arrays, and what bytes counts on each side of the move.
func TestKWPostInlineThenHeap(t *testing.T) {
	p, q := newKWPost(), newKWPost()
	if !p.inline() || p.bytes() != kwPostBytes {
		t.Fatalf("new list: inline %v, %d bytes; want inline, %d", p.inline(), p.bytes(), kwPostBytes)
	}
	var want []uint32
	for i := range 3 * kwInline {
		p.docs, p.f2 = slices.Grow(p.docs, 1), slices.Grow(p.f2, 1)
		p.docs, p.f2 = append(p.docs, uint32(10*i)), append(p.f2, uint16(i))
		want = append(want, uint32(10*i))
		if got := p.inline(); got != (i < kwInline) {
			t.Fatalf("after %d postings: inline %v", i+1, got)
		}
		if !slices.Equal(p.docs, want) || len(p.f2) != len(want) || p.f2[i] != uint16(i) || p.f2[0] != 0 {
			t.Fatalf("after %d postings: docs %v f2 %v", i+1, p.docs, p.f2)
		}
	}
	if got, w := p.bytes(), kwPostBytes+int64(cap(p.docs))*4+int64(cap(p.f2))*2; got != w {
		t.Fatalf("heap list: %d bytes, want %d", got, w)
	}
	q.docs = append(q.docs, 7)
	if &q.docs[0] == &p.inDocs[0] || q.docs[0] != 7 || p.inDocs[0] != 0 {
		t.Fatal("two lists share their inline postings")
	}
	q.docs = slices.Clip(q.docs) // as compaction leaves a list
	if !q.inline() || q.bytes() != kwPostBytes {
		t.Fatalf("clipped inline list: inline %v, %d bytes", q.inline(), q.bytes())
	}
}
