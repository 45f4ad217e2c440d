package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// kwVocab is a vocabulary with inflected forms (the porter stemmer makes
// one token of several) and words of every frequency.
var kwVocab = func() []string {
	words := strings.Fields(`run running runs ran walk walked walking walks cat cats dog dogs
		garden gardening apple apples paint painted painting paintings trip trips travel travelled
		museum camping hike hiking hiked guitar music concert friend friends family kids children
		school teacher book books read reading wrote write writing city beach mountain lake
		cook cooking cooked recipe pasta dinner birthday party gift flowers sunset photo photos
		café résumé naïve über straße`)
	for i := range 60 {
		words = append(words, fmt.Sprintf("rare%d", i))
	}
	return words
}()

// kwText draws n words, the first ones far more often (Zipf-like).
func kwText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		j := int(math.Floor(math.Pow(r.Float64(), 2.5) * float64(len(kwVocab))))
		w := kwVocab[min(j, len(kwVocab)-1)]
		if r.IntN(7) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		b.WriteString(w)
	}
	return b.String()
}

var kwSpeakers = []string{"Ana", "Bruno", "Chen Wei", "dana"}

// kwCorpus applies a generated corpus to s: namespaces n0..n2, session keys
// with several sessions, chunks with speakers, contexts and times, memory
// files in two projects and records; one chunk per message.
func kwCorpus(t *testing.T, s *Shard, r *rand.Rand, sessions int) {
	t.Helper()
	var b Batch
	for si := range sessions {
		ns := fmt.Sprintf("n%d", si%3)
		key := fmt.Sprintf("k%d", si%7)
		id := fmt.Sprintf("s%d", si)
		sc := SessionChunks{Session: SessionRef{Namespace: ns, SessionKey: key, SessionID: id}}
		n := 3 + r.IntN(20)
		for i := range n {
			sp := kwSpeakers[r.IntN(len(kwSpeakers))]
			text := sp + ": " + kwText(r, 3+r.IntN(40))
			ts := t0.Add(time.Duration(si*100+i) * time.Minute)
			c := Chunk{ID: fmt.Sprintf("c-%s-%d", id, i), Source: "sessions", SeqStart: int64(i), SeqEnd: int64(i),
				Text: text, TimeStart: ts, TimeEnd: ts}
			if r.IntN(3) > 0 {
				c.Context = "2026-01-01 " + kwText(r, 5+r.IntN(20))
			}
			if r.IntN(10) == 0 {
				c.TimeStart, c.TimeEnd = time.Time{}, time.Time{}
			}
			sc.Chunks = append(sc.Chunks, c)
		}
		b.Rechunk = append(b.Rechunk, sc)
	}
	for i := range 12 {
		ns := fmt.Sprintf("n%d", i%3)
		dir := []string{"", "/p/a", "/p/b"}[i%3]
		b.Files = append(b.Files, FileUpsert{Namespace: ns, Path: fmt.Sprintf("notes/%d.md", i), DirPath: dir,
			Chunks: []Chunk{{ID: fmt.Sprintf("f-%d-0", i), Text: kwText(r, 60)}, {ID: fmt.Sprintf("f-%d-1", i), Text: kwText(r, 30)}}})
	}
	for i := range 10 {
		ns := fmt.Sprintf("n%d", i%3)
		b.Records = append(b.Records, RecordUpsert{Chunk: Chunk{ID: fmt.Sprintf("r-%d", i), Namespace: ns,
			Path: fmt.Sprintf("rec-%d", i), Text: kwText(r, 12)}})
	}
	mustApply(t, s, b)
}

type kwCase struct {
	ns    string
	query string
	f     Filter
	limit int
}

func kwCases(r *rand.Rand, n int) []kwCase {
	var out []kwCase
	for range n {
		q := kwText(r, 1+r.IntN(8))
		if r.IntN(4) == 0 { // a question naming a speaker
			q = "What did " + kwSpeakers[r.IntN(len(kwSpeakers))] + " say about " + q + "?"
		}
		c := kwCase{ns: fmt.Sprintf("n%d", r.IntN(3)), query: q, limit: []int{1, 5, 10, 50}[r.IntN(4)]}
		switch r.IntN(8) {
		case 0:
			c.f.SessionKey = fmt.Sprintf("k%d", r.IntN(7))
		case 1:
			c.f.SessionKey = fmt.Sprintf("k%d", r.IntN(7))
			c.f.SessionID = fmt.Sprintf("s%d", r.IntN(40))
		case 2:
			c.f.After = t0.Add(time.Duration(r.IntN(3000)) * time.Minute)
		case 3:
			c.f.Before = t0.Add(time.Duration(r.IntN(3000)) * time.Minute)
		case 4:
			c.f.Sources = []string{[]string{"sessions", "files", "records"}[r.IntN(3)]}
		case 5:
			c.f.DirPath = "/p/a"
		}
		out = append(out, c)
	}
	return out
}

// contextFTS makes chunks_fts, until restore is called, an FTS5 table over
// the chunks' keyword columns with their context (fts_ctx, at half weight)
// — chunks_fts as migration 0007 made it, whose ranking the keyword index
// computes — built from chunks, and ftsColumns the filter with the
// context; restore puts the shard's own table back. Nothing may be
// applied to the shard in between.
func contextFTS(t *testing.T, s *Shard) (restore func()) {
	t.Helper()
	execAll(t, s.w, `ALTER TABLE chunks_fts RENAME TO chunks_fts_own`,
		`CREATE VIRTUAL TABLE chunks_fts USING fts5(fts_body, ns, fts_words, sk, fts_ctx,
			content = 'chunks', content_rowid = 'rowid', tokenize = 'porter unicode61 remove_diacritics 2')`,
		`INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0, 1.0, 0.0, 0.5)')`,
		`INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')`)
	cols := ftsColumns
	ftsColumns = `{fts_body fts_words fts_ctx}`
	return func() {
		ftsColumns = cols
		execAll(t, s.w, `DROP TABLE chunks_fts`, `ALTER TABLE chunks_fts_own RENAME TO chunks_fts`)
	}
}

// compareWithFTS ranks every case with the keyword index and with FTS5
// over the same columns (contextFTS; nothing pruned) and fails on any
// difference: the same scores in the same order and the same chunks (rows
// of equal score may come in either order).
func compareWithFTS(t *testing.T, s *Shard, cases []kwCase) (indexed int) {
	t.Helper()
	ctx := context.Background()
	defer contextFTS(t, s)()
	s.df.budget = math.MaxInt64 / 16 // FTS5 ranks every matching row, as the index does
	kw := s.kw.Load()
	if kw == nil {
		t.Fatal("shard has no keyword index")
	}
	for i, c := range cases {
		terms := matchTerms(c.query)
		if len(terms) == 0 {
			continue
		}
		names := s.speakers.named(c.ns, c.query, terms)
		got, err := s.keywordIndexed(kw, c.ns, terms, names, c.f, c.limit)
		var why kwUnsupported
		if errors.As(err, &why) {
			continue
		}
		if err != nil {
			t.Fatalf("case %d %+v: index: %v", i, c, err)
		}
		want, err := s.keywordFTS(ctx, c.ns, terms, names, c.f, c.limit)
		if err != nil {
			t.Fatalf("case %d %+v: fts: %v", i, c, err)
		}
		indexed++
		if len(got) != len(want) {
			t.Fatalf("case %d %+v (terms %v, speakers %v): index gave %d hits, FTS5 %d\nindex %v\nfts   %v", i, c, terms, names, len(got), len(want), ids(got), ids(want))
		}
		for j := range got {
			if math.Abs(got[j].Score-want[j].Score) > 1e-12 {
				t.Fatalf("case %d %+v (terms %v): hit %d scores %.15f by the index, %.15f by FTS5\nindex %v\nfts   %v", i, c, terms, j, got[j].Score, want[j].Score, ids(got), ids(want))
			}
			if got[j].ID == want[j].ID {
				if sn := snippetOf(t, s, got[j]); sn != want[j].Snippet {
					t.Fatalf("case %d: hit %s: snippet %q by the index, %q by FTS5", i, got[j].ID, sn, want[j].Snippet)
				}
			}
		}
		// Same chunks, group by group of equal scores; the last group may
		// be cut at the limit differently, so only its size must agree.
		for lo := 0; lo < len(got); {
			hi := lo + 1
			for hi < len(got) && math.Abs(got[hi].Score-got[lo].Score) <= 1e-12 {
				hi++
			}
			if hi < len(got) {
				a, b := ids(got[lo:hi]), ids(want[lo:hi])
				slices.Sort(a)
				slices.Sort(b)
				if !slices.Equal(a, b) {
					t.Fatalf("case %d %+v: hits %d..%d (score %.6f) are %v by the index, %v by FTS5", i, c, lo, hi-1, got[lo].Score, a, b)
				}
			}
			lo = hi
		}
	}
	return indexed
}

func ids(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestKeywordIndexRanksAsFTS5(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(ctx) }()
	r := rand.New(rand.NewPCG(7, 8))
	kwCorpus(t, s, r, 40)
	cases := kwCases(r, 400)
	if n := compareWithFTS(t, s, cases); n < 350 {
		t.Fatalf("only %d of %d cases ranked by the index", n, len(cases))
	}

	// Deletes, re-chunked tails, replaced files and records: the index
	// follows every commit.
	var b Batch
	b.DeleteSessions = []SessionRef{{Namespace: "n0", SessionKey: "k3", SessionID: "s3"}, {Namespace: "n1", SessionKey: "k1"}}
	b.Rechunk = []SessionChunks{{Session: SessionRef{Namespace: "n2", SessionKey: "k2", SessionID: "s2"}, From: 1,
		Chunks: []Chunk{{ID: "c-s2-new", Source: "sessions", SeqStart: 1, SeqEnd: 1, Text: "Ana: " + kwText(r, 30), TimeStart: t0, TimeEnd: t0}}}}
	b.DeleteFiles = []FileRef{{Namespace: "n0", Path: "notes/0.md"}}
	b.Files = []FileUpsert{{Namespace: "n1", Path: "notes/1.md", DirPath: "/p/a", Chunks: []Chunk{{ID: "f-1-new", Text: kwText(r, 40)}}}}
	b.DeleteRecords = []FileRef{{Namespace: "n2", Path: "rec-2"}}
	mustApply(t, s, b)
	compareWithFTS(t, s, cases)
	// Enough deletes in one space to compact it.
	for si := 0; si < 40; si += 3 {
		mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "n0", SessionKey: fmt.Sprintf("k%d", si%7), SessionID: fmt.Sprintf("s%d", si)}}})
	}
	if sp := s.kw.Load().byNS["n0"]; sp == nil || len(sp.rowids) > 40 {
		t.Fatalf("namespace n0 after deleting every session: %d docs held, %d dead; want it compacted", len(sp.rowids), sp.ndead)
	}
	compareWithFTS(t, s, cases)
	kwCorpus(t, s, rand.New(rand.NewPCG(9, 10)), 20)
	compareWithFTS(t, s, cases)
	before := s.kw.Load().stats()

	// Loaded at Open from the shard file: the same index.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, Config{Dims: testDims}); err != nil {
		t.Fatal(err)
	}
	if after := s.kw.Load().stats(); after.rows != before.rows || after.tokens != before.tokens || after.terms > before.terms {
		t.Fatalf("reloaded index %+v, before the reopen %+v", after, before)
	}
	compareWithFTS(t, s, cases)
}

// TestKeywordIndexStatisticsAreFTS5s checks the figures BM25 reads against
// FTS5's own over the same columns (contextFTS): rows, tokens of every
// column (chunks_fts_docsize) and rows holding a token (fts5vocab).
func TestKeywordIndexStatisticsAreFTS5s(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(11, 12))
	kwCorpus(t, s, r, 25)
	mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "n1", SessionKey: "k1"}}})
	defer contextFTS(t, s)()
	kw := s.kw.Load()
	var rows int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if kw.rows != rows {
		t.Fatalf("index holds %d rows, chunks %d", kw.rows, rows)
	}
	// FTS5's total token count is in its averages record; sum the docsize
	// blobs (one varint per column) instead.
	var total int64
	sz, err := s.r.QueryContext(ctx, `SELECT sz FROM chunks_fts_docsize`)
	if err != nil {
		t.Fatal(err)
	}
	for sz.Next() {
		var blob []byte
		if err := sz.Scan(&blob); err != nil {
			sz.Close()
			t.Fatal(err)
		}
		for len(blob) > 0 {
			v, n := uvarintFTS(blob)
			total += int64(v)
			blob = blob[n:]
		}
	}
	sz.Close()
	if kw.tokens != total {
		t.Fatalf("index counts %d tokens, FTS5 %d", kw.tokens, total)
	}
	if _, err := s.w.ExecContext(ctx, `CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, 'instance')`); err != nil {
		t.Fatal(err)
	}
	vr, err := s.w.QueryContext(ctx, `SELECT term, count(DISTINCT doc) FROM temp.v WHERE col IN ('fts_body', 'fts_words', 'fts_ctx') GROUP BY term`)
	if err != nil {
		t.Fatal(err)
	}
	// Read every row before checking: the writer's one connection must be
	// free again before a failure closes the shard.
	vocab := map[string]int32{}
	for vr.Next() {
		var term string
		var df int32
		if err := vr.Scan(&term, &df); err != nil {
			vr.Close()
			t.Fatal(err)
		}
		vocab[term] = df
	}
	if err := errors.Join(vr.Err(), vr.Close()); err != nil {
		t.Fatal(err)
	}
	n := len(vocab)
	for term, df := range vocab {
		id, ok := kw.terms[term]
		if !ok || kw.df[id] != df {
			t.Fatalf("token %q: FTS5 finds it in %d rows, the index in %d (known %v)", term, df, kw.df[id], ok)
		}
	}
	live := 0
	for _, df := range kw.df {
		if df > 0 {
			live++
		}
	}
	if n < 50 || live != n {
		t.Fatalf("FTS5 has %d tokens, the index %d in some row", n, live)
	}
}

// uvarintFTS decodes an SQLite varint (big-endian groups of 7 bits).
func uvarintFTS(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return v, len(b)
}

func TestKeywordIndexSaysWhenItCannotRank(t *testing.T) {
	s := openTest(t, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s"},
		Chunks: []Chunk{{ID: "a", Text: "wi-fi router"}}}}})
	tok, err := getTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer putTokenizer(tok)
	_, _, err = s.kw.Load().phrases(tok, []string{"router", "wi-fi"})
	var why kwUnsupported
	if !errors.As(err, &why) || !strings.Contains(err.Error(), `"wi-fi" is 2 tokens`) {
		t.Fatalf("phrases of a two-token term: %v", err)
	}
	// KeywordSearch still answers it (FTS5 ranks it).
	got, err := s.KeywordSearch(context.Background(), "n", "router", Filter{}, 5)
	if err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("KeywordSearch = %v, %v", got, err)
	}
}

// TestFTSSnippetIsFTS5s compares ftsSnippet with FTS5's snippet() on
// generated rows: sentences ended by '.' or ':', line breaks, rows shorter
// and longer than the snippet, terms repeated, two terms of one token.
func TestFTSSnippetIsFTS5s(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(21, 22))
	var chunks []Chunk
	for i := range 300 {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(kwText(r, 1+r.IntN(14)))
			b.WriteString([]string{". ", ": ", "\n", " - ", ".\n", "  ", ", ", ".", ":", " :x "}[r.IntN(10)])
		}
		chunks = append(chunks, Chunk{ID: fmt.Sprint("c", i), SeqStart: int64(i), SeqEnd: int64(i), Text: b.String()})
	}
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s"}, Chunks: chunks}}})
	tok, err := getTokenizer()
	if err != nil {
		t.Fatal(err)
	}
	defer putTokenizer(tok)
	compared := 0
	for range 300 {
		terms := matchTerms(kwText(r, 1+r.IntN(5)) + " " + []string{"", "run running", "cats cat"}[r.IntN(3)])
		_, toks, err := s.kw.Load().phrases(tok, terms)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT c.fts_body, snippet(chunks_fts, 0, '`+snippetOpen+`', '`+snippetClose+`', '`+snippetEllips+`', 16)
			FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? LIMIT 20`, ftsColumns+` : (`+joinTerms(terms)+`)`)
		if err != nil {
			t.Fatal(err)
		}
		type row struct{ body, want string }
		var got []row
		for rows.Next() {
			var rw row
			if err := rows.Scan(&rw.body, &rw.want); err != nil {
				rows.Close()
				t.Fatal(err)
			}
			got = append(got, rw)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			t.Fatal(err)
		}
		for _, rw := range got {
			sn, err := ftsSnippet(tok, rw.body, toks, snippetOpen, snippetClose, snippetEllips, 16)
			if err != nil {
				t.Fatal(err)
			}
			if sn != rw.want {
				t.Fatalf("terms %q, text %q:\nftsSnippet %q\nFTS5       %q", terms, rw.body, sn, rw.want)
			}
			compared++
		}
	}
	if compared < 1000 {
		t.Fatalf("compared %d snippets, want at least 1000", compared)
	}
}

// TestKeywordIndexDroppedFallsBackToFTS5: an index that fails to follow a
// commit is dropped, Stats says why, and FTS5 answers keyword searches.
func TestKeywordIndexDroppedFallsBackToFTS5(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s"},
		Chunks: []Chunk{{ID: "a", Text: "the garden party"}}}}})
	if st, err := s.Stats(ctx); err != nil || st.KeywordIndex != "memory" || st.KeywordIndexBytes <= 0 {
		t.Fatalf("Stats = %+v, %v; want the keyword index in memory", st, err)
	}
	s.applyKeywordIndex([]kwOp{{doc: kwDoc{rowid: 12345, ns: "n", body: "x"}}}, nil, nil) // a row it does not hold
	st, err := s.Stats(ctx)
	if err != nil || !strings.HasPrefix(st.KeywordIndex, "fts5: keyword index dropped: ") || !strings.Contains(st.KeywordIndex, "12345") {
		t.Fatalf("Stats.KeywordIndex = %q, %v; want fts5 and the reason", st.KeywordIndex, err)
	}
	got, err := s.KeywordSearch(ctx, "n", "garden", Filter{}, 5)
	if !rankedByFTSFor(err, "keyword index dropped: ") || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("KeywordSearch after the drop = %v, %v; want a, flagged as ranked by FTS5", got, err)
	}
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "n", SessionKey: "k", SessionID: "s2"},
		Chunks: []Chunk{{ID: "b", Text: "another garden"}}}}})
	if got, err = s.KeywordSearch(ctx, "n", "garden", Filter{}, 5); !rankedByFTSFor(err, "keyword index dropped: ") || len(got) != 2 {
		t.Fatalf("KeywordSearch after a later commit = %v, %v; want both", got, err)
	}
}

// rankedByFTSFor reports whether err flags an answer as ranked by FTS5
// for a reason that starts with why, and as nothing else.
func rankedByFTSFor(err error, why string) bool {
	var p *PartialError
	return errors.As(err, &p) && errors.Is(err, ErrPartial) &&
		strings.HasPrefix(p.Reason, "ranked by FTS5, without the chunks' context ("+why) && !strings.Contains(p.Reason, "; ")
}

// The background load outlives the context Open was given: a worker's
// ends once its partitions are open, and the load's read transaction,
// begun with it, was rolled back then ("load: context canceled"), so FTS5
// ranked every search of a large shard after every restart.
func TestKeywordIndexLoadOutlivesOpensContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(context.Background(), path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	kwCorpus(t, s, rand.New(rand.NewPCG(41, 42)), 10)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	kwLoadGate = gate
	defer func() { kwLoadGate = nil }()
	ctx, cancel := context.WithCancel(context.Background())
	if s, err = Open(ctx, path, Config{Dims: testDims}); err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(context.Background()) }()
	cancel() // Open has returned: its context may end
	close(gate)
	deadline := time.Now().Add(30 * time.Second)
	for s.kw.Load() == nil {
		if why, _ := s.kwDropped.Load().(string); why != "" {
			t.Fatalf("keyword index dropped: %s", why)
		}
		if time.Now().After(deadline) {
			t.Fatal("keyword index not loaded within 30 s")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if got, err := s.KeywordSearch(context.Background(), "n0", "garden", Filter{}, 5); err != nil || len(got) == 0 {
		t.Fatalf("KeywordSearch after the load = %v, %v; want hits ranked by the index", got, err)
	}
}

// TestKeywordIndexLoadsInTheBackground: a large shard's index is built
// after Open returns; until then FTS5 answers and commits queue; then the
// index holds exactly what FTS5 holds, commits made during the load
// included. Closing a shard whose index is still loading stops the load.
func TestKeywordIndexLoadsInTheBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(31, 32))
	kwCorpus(t, s, r, 30)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	kwLoadGate = gate
	defer func() { kwLoadGate = nil }()
	if s, err = Open(ctx, path, Config{Dims: testDims}); err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(ctx) }()
	if st, err := s.Stats(ctx); err != nil || st.KeywordIndex != "fts5: keyword index loading" {
		t.Fatalf("Stats.KeywordIndex while loading = %q, %v", st.KeywordIndex, err)
	}
	if got, err := s.KeywordSearch(ctx, "n0", "garden", Filter{}, 5); !rankedByFTSFor(err, "keyword index loading)") || len(got) == 0 {
		t.Fatalf("KeywordSearch while loading = %v, %v; want FTS5's hits, flagged", got, err)
	}
	// Commits during the load: new sessions, a deleted one, a re-chunked tail.
	kwCorpus(t, s, rand.New(rand.NewPCG(33, 34)), 10)
	mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "n1", SessionKey: "k1", SessionID: "s1"}}})
	close(gate)
	deadline := time.Now().Add(30 * time.Second)
	for s.kw.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("keyword index not loaded within 30 s")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if st, err := s.Stats(ctx); err != nil || st.KeywordIndex != "memory" {
		t.Fatalf("Stats.KeywordIndex after the load = %q, %v", st.KeywordIndex, err)
	}
	compareWithFTS(t, s, kwCases(r, 300))
	loaded := s.kw.Load().stats()
	fresh := newKWIndex()
	if err := fresh.load(ctx, s.r); err != nil {
		t.Fatal(err)
	}
	if f := fresh.stats(); f.rows != loaded.rows || f.tokens != loaded.tokens || f.postings > loaded.postings {
		t.Fatalf("index loaded in the background %+v, built from the file now %+v", loaded, f)
	}

	// Close while the load waits: it returns.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	kwLoadGate = make(chan struct{})
	if s, err = Open(ctx, path, Config{Dims: testDims}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return while the keyword index was loading")
	}
}

// TestKeywordIndexLoadMatchesAddingInTurn checks load, which counts rows on
// several goroutines and posts them in batches, against adding the same
// rows one by one in rowid order: the same index, term ids included; and
// that a cancelled load returns its context's error.
func TestKeywordIndexLoadMatchesAddingInTurn(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(51, 52))
	kwCorpus(t, s, r, 150) // about 1,900 chunks: several load batches, the last one partial
	rows, err := s.r.QueryContext(ctx, `SELECT rowid, id, namespace, session_key, session_id, source, dir_path,
		ts_start, ts_end, substr(text, 1, ?), fts_body, coalesce(fts_words, ''), fts_ctx FROM chunks ORDER BY rowid`, speakerHeadMax+2)
	if err != nil {
		t.Fatal(err)
	}
	var ops []kwOp
	for rows.Next() {
		var d kwDoc
		var ts0, ts1 sql.NullInt64
		if err := rows.Scan(&d.rowid, &d.id, &d.ns, &d.sessionKey, &d.sessionID, &d.source, &d.dirPath,
			&ts0, &ts1, &d.head, &d.body, &d.words, &d.ctx); err != nil {
			t.Fatal(err)
		}
		d.tsStart, d.tsEnd = nullNanos(ts0), nullNanos(ts1)
		ops = append(ops, kwOp{add: true, doc: d})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ops) <= 2*kwLoadBatch || len(ops)%kwLoadBatch == 0 {
		t.Fatalf("%d rows: the test needs several load batches and a partial last one", len(ops))
	}
	inTurn := newKWIndex()
	for i := range ops {
		if err := inTurn.apply(ops[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	loaded := newKWIndex()
	if err := loaded.load(ctx, s.r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded.terms, inTurn.terms) {
		t.Errorf("term ids differ: %d terms loaded, %d added in turn", len(loaded.terms), len(inTurn.terms))
	}
	if got, want := dumpKW(loaded), dumpKW(inTurn); !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded:\n%.2000v\nadded in turn:\n%.2000v", got, want)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := newKWIndex().load(cctx, s.r); !errors.Is(err, context.Canceled) {
		t.Fatalf("load with a cancelled context = %v, want context.Canceled", err)
	}
}
