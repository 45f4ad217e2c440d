package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"
)

func TestVectorIndexAgreesWithVec0(t *testing.T) {
	ctx := context.Background()
	const dims = 32
	s := openTest(t, dims)
	r := rand.New(rand.NewPCG(9, 10))
	var b Batch
	for i, ns := range []string{"a", "b"} {
		for j := 0; j < 4; j++ {
			_, sc := session(ns, "k"+fmt.Sprint(j%2), fmt.Sprint(j), 100+50*i, r, dims)
			b.Rechunk = append(b.Rechunk, sc)
		}
	}
	mustApply(t, s, b)
	// Deletions swap-remove inside the index: delete one session first.
	mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "a", SessionKey: "k0", SessionID: "0"}}})
	filters := []Filter{
		{},
		{SessionKey: "k1"},
		{SessionKey: "k0", SessionID: "2"},
		{After: t0.Add(30 * time.Minute), Before: t0.Add(60 * time.Minute)},
	}
	for q := 0; q < 10; q++ {
		vec := randVec(r, dims)
		for _, ns := range []string{"a", "b"} {
			for fi, f := range filters {
				got, err := s.VectorSearch(ctx, ns, vec, f, 10)
				if err != nil {
					t.Fatal(err)
				}
				want, err := s.vec0Search(ctx, ns, vec, f, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) || len(got) == 0 {
					t.Fatalf("ns %s filter %d: %d results, vec0 %d", ns, fi, len(got), len(want))
				}
				for i := range got {
					if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-5 || got[i].Rank != i+1 {
						t.Errorf("ns %s filter %d rank %d: memory %+v, vec0 %+v", ns, fi, i+1, got[i], want[i])
					}
				}
			}
		}
	}
}

// indexSnapshot lists the index per namespace, ordered by rowid.
func indexSnapshot(x *vectorIndex) map[string][]string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := map[string][]string{}
	for ns, sp := range x.spaces {
		var rows []string
		for i, rowid := range sp.rowids {
			rows = append(rows, fmt.Sprintf("%d %s %s %s %d %d %v", rowid, sp.ids[i].string(x.syms), x.syms.str(sp.sessionKeys[i]),
				x.syms.str(sp.sessionIDs[i]), sp.tsStart[i], sp.tsEnd[i], sp.vec(i, x.dims)))
		}
		sort.Strings(rows)
		out[ns] = rows
	}
	return out
}

func TestIndexReloadedAfterReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shard.db")
	s, err := Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	for i, ns := range []string{"a", "b", "c"} {
		m, sc := session(ns, "k", "s", 20+i, r, testDims)
		sc.Chunks[0].TimeStart, sc.Chunks[0].TimeEnd = time.Time{}, time.Time{}
		sc.Chunks[1].Vector = nil
		mustApply(t, s, Batch{Seq: uint64(i + 1), Messages: m, Rechunk: []SessionChunks{sc}})
	}
	mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "c", SessionKey: "k"}}})
	if _, err := setVectorsByID(t, s, []ChunkVector{{ID: "c-a-k-s-1", Vector: randVec(r, testDims)}}); err != nil {
		t.Fatal(err)
	}
	before := indexSnapshot(s.index)
	if len(before) != 2 || len(before["a"]) != 20 || len(before["b"]) != 20 {
		t.Fatalf("index before reopen: %d namespaces, a %d, b %d", len(before), len(before["a"]), len(before["b"]))
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Config{Dims: testDims})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if after := indexSnapshot(s.index); !reflect.DeepEqual(after, before) {
		t.Errorf("index after reopen differs:\n%v\nbefore:\n%v", after, before)
	}
}

func TestNamespaceIsolation(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(13, 14))
	namespaces := []string{"a", "a-b", "ab", "a_b", "A", "b"}
	vec := randVec(r, testDims)
	var b Batch
	for _, ns := range namespaces {
		b.Rechunk = append(b.Rechunk, SessionChunks{Session: SessionRef{Namespace: ns, SessionKey: "k", SessionID: "s"},
			Chunks: []Chunk{{ID: "chunk-" + ns, Text: "shared words a b ab " + ns, Vector: vec}}})
	}
	// "a" holds most of the shard, so its keyword searches go without the
	// namespace token; the others use it. Both must isolate exactly.
	for i := 0; i < 30; i++ {
		b.Rechunk[0].Chunks = append(b.Rechunk[0].Chunks, Chunk{ID: fmt.Sprintf("chunk-a-%d", i), Text: "filler a"})
	}
	mustApply(t, s, b)
	if s.sizes.useNSToken("a") || !s.sizes.useNSToken("a-b") {
		t.Fatalf("useNSToken(a, a-b) = %v, %v, want false, true", s.sizes.useNSToken("a"), s.sizes.useNSToken("a-b"))
	}
	for _, ns := range append(namespaces, "c", "") {
		want := []string{}
		if slices.Contains(namespaces, ns) {
			want = []string{"chunk-" + ns}
		}
		kw, err := s.KeywordSearch(ctx, ns, "shared words a b ab a-b", Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := s.VectorSearch(ctx, ns, vec, Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		for leg, got := range map[string][]Candidate{"keyword": kw, "vector": vs} {
			ids := []string{}
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			if !reflect.DeepEqual(ids, want) {
				t.Errorf("%s search in %q = %v, want %v", leg, ns, ids, want)
			}
		}
	}
}

func TestNSToken(t *testing.T) {
	for _, tc := range []struct{ ns, want string }{
		{"a", "n610"},
		{"a-b", "n612d620"},
		{"", "n0"},
	} {
		if got := nsToken(tc.ns); got != tc.want {
			t.Errorf("nsToken(%q) = %q, want %q", tc.ns, got, tc.want)
		}
		var gen string
		if err := openTestDB(t).QueryRow(`SELECT 'n' || lower(hex(?)) || '0'`, tc.ns).Scan(&gen); err != nil || gen != tc.want {
			t.Errorf("generated column for %q = %q, %v, want %q", tc.ns, gen, err, tc.want)
		}
	}
}

func TestFilters(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(15, 16))
	// Three sessions of 6 chunks, one a minute from t0; every text has "apple".
	var b Batch
	for _, ref := range []SessionRef{{"n", "k1", "s1"}, {"n", "k1", "s2"}, {"n", "k2", "s1"}} {
		_, sc := session(ref.Namespace, ref.SessionKey, ref.SessionID, 6, r, testDims)
		for i := range sc.Chunks {
			sc.Chunks[i].Text += " apple"
		}
		b.Rechunk = append(b.Rechunk, sc)
	}
	// A chunk without a time fails any time bound.
	b.Rechunk = append(b.Rechunk, SessionChunks{Session: SessionRef{"n", "k3", "s1"},
		Chunks: []Chunk{{ID: "timeless", Text: "apple", Vector: randVec(r, testDims)}}})
	mustApply(t, s, b)
	for _, tc := range []struct {
		name string
		f    Filter
		want []string
	}{
		{"none", Filter{}, nil},
		{"session key", Filter{SessionKey: "k1"}, []string{"c-n-k1-s1-0", "c-n-k1-s1-1", "c-n-k1-s1-2", "c-n-k1-s1-3", "c-n-k1-s1-4", "c-n-k1-s1-5",
			"c-n-k1-s2-0", "c-n-k1-s2-1", "c-n-k1-s2-2", "c-n-k1-s2-3", "c-n-k1-s2-4", "c-n-k1-s2-5"}},
		{"session id", Filter{SessionID: "s2"}, []string{"c-n-k1-s2-0", "c-n-k1-s2-1", "c-n-k1-s2-2", "c-n-k1-s2-3", "c-n-k1-s2-4", "c-n-k1-s2-5"}},
		{"key and id", Filter{SessionKey: "k2", SessionID: "s1"}, []string{"c-n-k2-s1-0", "c-n-k2-s1-1", "c-n-k2-s1-2", "c-n-k2-s1-3", "c-n-k2-s1-4", "c-n-k2-s1-5"}},
		{"after (inclusive)", Filter{SessionKey: "k1", SessionID: "s1", After: t0.Add(4 * time.Minute)}, []string{"c-n-k1-s1-4", "c-n-k1-s1-5"}},
		{"before (exclusive)", Filter{SessionKey: "k1", SessionID: "s1", Before: t0.Add(2 * time.Minute)}, []string{"c-n-k1-s1-0", "c-n-k1-s1-1"}},
		{"after and before", Filter{SessionID: "s2", After: t0.Add(2 * time.Minute), Before: t0.Add(4 * time.Minute)}, []string{"c-n-k1-s2-2", "c-n-k1-s2-3"}},
		{"timeless only without bounds", Filter{SessionKey: "k3"}, []string{"timeless"}},
		{"timeless fails after", Filter{SessionKey: "k3", After: t0.Add(-time.Hour)}, []string{}},
		{"timeless fails before", Filter{SessionKey: "k3", Before: t0.Add(time.Hour)}, []string{}},
		{"nothing matches", Filter{SessionKey: "zz"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kw, err := s.KeywordSearch(ctx, "n", "apple", tc.f, 100)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := s.VectorSearch(ctx, "n", randVec(r, testDims), tc.f, 100)
			if err != nil {
				t.Fatal(err)
			}
			for leg, got := range map[string][]Candidate{"keyword": kw, "vector": vs} {
				ids := []string{}
				for _, c := range got {
					ids = append(ids, c.ID)
				}
				sort.Strings(ids)
				if tc.want == nil {
					if len(ids) != 19 {
						t.Errorf("%s: %d results, want 19", leg, len(ids))
					}
					continue
				}
				if !reflect.DeepEqual(ids, tc.want) {
					t.Errorf("%s: got %v, want %v", leg, ids, tc.want)
				}
			}
		})
	}
}

func TestKeywordSearchRanking(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: SessionRef{"n", "k", "s"}, Chunks: []Chunk{
		{ID: "both", Text: "Ana is moving to Lisbon next spring"},
		{ID: "one", Text: "Lisbon has trams and tiles and a lot of other things worth seeing"},
		{ID: "none", Text: "nothing relevant here"},
		{ID: "stem", Text: "she moved twice already"},
	}}}})
	got, err := s.KeywordSearch(ctx, "n", `What did "Ana" say about the move to Lisbon?`, Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, c := range got {
		ids = append(ids, c.ID)
		if c.Rank != i+1 || c.Score <= 0 || c.Score >= 1 || (i > 0 && c.Score > got[i-1].Score) {
			t.Errorf("hit %d = %+v: want rank %d, score in (0,1), non-increasing", i, c, i+1)
		}
	}
	if want := []string{"both", "stem", "one"}; !reflect.DeepEqual(ids, want) && !reflect.DeepEqual(ids, []string{"both", "one", "stem"}) {
		t.Errorf("KeywordSearch() ids = %v, want both first, then one and stem", ids)
	}
	if sn := snippetOf(t, s, got[0]); sn != "«Ana» is «moving» to «Lisbon» next spring" {
		t.Errorf("snippet = %q", sn)
	}
	for _, q := range []string{"", "   ", `"*()^:-`, "zzz"} {
		if got, err := s.KeywordSearch(ctx, "n", q, Filter{}, 10); err != nil || len(got) != 0 {
			t.Errorf("KeywordSearch(%q) = %v, %v, want none", q, got, err)
		}
	}
}

func TestKeywordScore(t *testing.T) {
	for _, tc := range []struct {
		rank, want float64
	}{
		{0, 0},
		{-1, 0.5},
		{-3, 0.75},
		{-9, 0.9},
		{-0.25, 0.2},
		{2, 0},
		{math.NaN(), 0},
		{math.Inf(-1), math.NaN()}, // inf/inf: see below
	} {
		got := keywordScore(tc.rank)
		if math.IsInf(tc.rank, -1) {
			continue
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("keywordScore(%v) = %v, want %v", tc.rank, got, tc.want)
		}
	}
	// Monotonic and below 1.
	prev := -1.0
	for x := 0.0; x < 1e6; x = x*1.5 + 0.01 {
		got := keywordScore(-x)
		if got < prev || got >= 1 {
			t.Fatalf("keywordScore(%v) = %v after %v: not monotonic in [0,1)", -x, got, prev)
		}
		prev = got
	}
}

func TestPendingAndSetVectors(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(17, 18))
	_, sc := session("n", "k", "s", 5, nil, testDims)
	sc.Chunks[2].Vector = randVec(r, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})

	p, err := s.PendingVectors(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	pending := func(i int) PendingChunk {
		c := sc.Chunks[i]
		return PendingChunk{ID: c.ID, Row: rowOf(t, s, c.ID), Text: c.Text, Context: c.Context}
	}
	want := []PendingChunk{pending(0), pending(1), pending(3)}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("PendingVectors(3) = %+v, want %+v", p, want)
	}
	if _, err := s.SetVectors(ctx, []ChunkVector{{ID: p[0].ID, Row: p[0].Row, Vector: []float32{1}}}); !errorsIs(err, ErrDims) {
		t.Errorf("SetVectors(short vector) error = %v, want ErrDims", err)
	}
	// Chunk 4 is rechunked away before its vector arrives: skipped.
	row4 := rowOf(t, s, sc.Chunks[4].ID)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: sc.Session, From: 4}}})
	vs := []ChunkVector{
		{p[0].ID, p[0].Row, randVec(r, testDims)},
		{p[1].ID, p[1].Row, randVec(r, testDims)},
		{sc.Chunks[4].ID, row4, randVec(r, testDims)},
		{sc.Chunks[2].ID, rowOf(t, s, sc.Chunks[2].ID), randVec(r, testDims)}, // replaces its vector
	}
	n, err := s.SetVectors(ctx, vs)
	if err != nil || n != 3 {
		t.Fatalf("SetVectors() = %d, %v, want 3", n, err)
	}
	p, _ = s.PendingVectors(ctx, 10)
	if want := []PendingChunk{pending(3)}; !reflect.DeepEqual(p, want) {
		t.Errorf("PendingVectors() after SetVectors = %+v, want %+v", p, want)
	}
	st, _ := s.Stats(ctx)
	if st.VectorsWaiting != 1 || st.Chunks != 4 {
		t.Errorf("Stats() = %+v, want 4 chunks, 1 waiting", st)
	}
	for _, v := range []ChunkVector{vs[0], vs[1], vs[3]} {
		got, _ := s.VectorSearch(ctx, "n", v.Vector, Filter{}, 1)
		ref, _ := s.vec0Search(ctx, "n", v.Vector, Filter{}, 1)
		if len(got) != 1 || got[0].ID != v.ID || len(ref) != 1 || ref[0].ID != v.ID {
			t.Errorf("nearest to %s's vector: memory %+v, vec0 %+v", v.ID, got, ref)
		}
	}
	if got := counts(t, s, "n"); got != (rowCounts{chunks: 4, fts: 4, vec: 3}) {
		t.Errorf("row counts = %+v", got)
	}
}

// A chunk is named by its id and the rowid a search or PendingVectors read
// (ChunkRef). When it is deleted and a newer chunk takes its rowid (SQLite
// gives the next row the largest rowid + 1, so the last row's rowid comes
// back), the old name finds nothing: Chunks leaves it out and SetVectors
// writes no vector for it, while the newer chunk is found by its own.
func TestARowTakenByANewerChunkIsNotTheOldOne(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	_, sc := session("n", "k", "s", 5, nil, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})
	last := sc.Chunks[4]
	old := ChunkRef{ID: last.ID, Row: rowOf(t, s, last.ID)}

	newer := last
	newer.ID, newer.Text = "c-newer", "a newer fourth message"
	mustApply(t, s, Batch{Rechunk: []SessionChunks{{Session: sc.Session, From: 4, Chunks: []Chunk{newer}}}})
	if got := rowOf(t, s, newer.ID); got != old.Row {
		t.Fatalf("the newer chunk has row %d, want the old one's %d (the case under test)", got, old.Row)
	}

	recs, err := s.Chunks(ctx, []ChunkRef{old, {ID: newer.ID, Row: old.Row}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := recs[old.ID]; ok || len(recs) != 1 || recs[newer.ID].Text != newer.Text {
		t.Errorf("Chunks(old, newer) = %+v, want the newer chunk only", recs)
	}
	n, err := s.SetVectors(ctx, []ChunkVector{{ID: old.ID, Row: old.Row, Vector: randVec(rand.New(rand.NewPCG(1, 2)), testDims)}})
	if err != nil || n != 0 {
		t.Errorf("SetVectors(old) = %d, %v, want 0 written", n, err)
	}
	if p, _ := s.PendingVectors(ctx, 10); len(p) != 5 {
		t.Errorf("PendingVectors() = %d chunks, want all 5 still waiting", len(p))
	}
}

func TestVectorSearchLimits(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(19, 20))
	_, sc := session("n", "k", "s", 30, r, testDims)
	mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})
	q := randVec(r, testDims)
	for _, tc := range []struct{ limit, want int }{{0, 0}, {-1, 0}, {1, 1}, {30, 30}, {100, 30}} {
		got, err := s.VectorSearch(ctx, "n", q, Filter{}, tc.limit)
		if err != nil || len(got) != tc.want {
			t.Errorf("VectorSearch(limit %d) = %d results, %v, want %d", tc.limit, len(got), err, tc.want)
		}
	}
	if _, err := s.VectorSearch(ctx, "n", q[:3], Filter{}, 1); !errorsIs(err, ErrDims) {
		t.Errorf("VectorSearch(short query) error = %v, want ErrDims", err)
	}
}

// TestParallelScanAgrees checks the split scan against a single-part scan.
func TestParallelScanAgrees(t *testing.T) {
	const dims, n = 16, parallelScanMin + 1000
	r := rand.New(rand.NewPCG(21, 22))
	x := newVectorIndex(dims, 0)
	ops := make([]indexOp, n)
	for i := range ops {
		ops[i] = indexOp{add: true, ns: "n", rowid: int64(i + 1), entry: vecEntry{id: fmt.Sprint(i), sessionKey: fmt.Sprint(i % 3),
			tsStart: noTime, tsEnd: noTime, vec: randVec(r, dims)}}
	}
	x.apply(ops)
	q := newQuantQuery(randVec(r, dims))
	for _, f := range []Filter{{}, {SessionKey: "1"}} {
		vf := compileFilter(f)
		got := x.candidates("n", q, &vf, 25)
		h := x.spaces["n"].scan(q, &vf, 0, n, 25, dims)
		sort.Slice(h.items, func(i, j int) bool { return better(h.items[i], h.items[j]) })
		if len(got) != 25 {
			t.Fatalf("candidates() = %d results, want 25", len(got))
		}
		for i, it := range h.items {
			if want := x.spaces["n"].ids[it.pos].string(x.syms); got[i].id != want {
				t.Errorf("rank %d: %s, want %s", i+1, got[i].id, want)
			}
		}
	}
}

func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 384} {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			want += float64(a[i]) * float64(b[i])
		}
		if got := dot(a, b); math.Abs(float64(got)-want) > 1e-4*(1+math.Abs(want)) {
			t.Errorf("dot(n=%d) = %v, want %v", n, got, want)
		}
	}
}

// TestShadowScanMatchesVec0Scan checks the fast loader (vec0's shadow
// tables) against a scan of the virtual table, after deletes and replaced
// vectors, across more than one vec0 chunk.
func TestShadowScanMatchesVec0Scan(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	r := rand.New(rand.NewPCG(27, 28))
	for i := 0; i < 3; i++ {
		_, sc := session("n", "k", fmt.Sprint(i), 300, r, testDims)
		mustApply(t, s, Batch{Rechunk: []SessionChunks{sc}})
	}
	mustApply(t, s, Batch{DeleteSessions: []SessionRef{{Namespace: "n", SessionKey: "k", SessionID: "1"}}})
	if _, err := setVectorsByID(t, s, []ChunkVector{{ID: "c-n-k-0-5", Vector: randVec(r, testDims)}}); err != nil {
		t.Fatal(err)
	}
	collect := func(scan func(context.Context, queryer, func(int64, []byte) error) error) map[int64]string {
		out := map[int64]string{}
		if err := scan(ctx, s.r, func(rowid int64, blob []byte) error {
			out[rowid] = string(blob)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	fast, slow := collect(s.scanVec0Shadow), collect(s.scanVec0)
	if len(slow) != 600 || !reflect.DeepEqual(fast, slow) {
		t.Errorf("shadow scan: %d vectors, vec0 scan: %d (want 600), equal: %v", len(fast), len(slow), reflect.DeepEqual(fast, slow))
	}
}

// TestVecSpaceAddRemove adds and swap-removes across block boundaries and
// checks every remaining vector against a map of what should be there.
func TestVecSpaceAddRemove(t *testing.T) {
	const dims = 4
	r := rand.New(rand.NewPCG(29, 30))
	x := newVectorIndex(dims, 0)
	want := map[int64][]float32{}
	var ops []indexOp
	for i := 1; i <= 3*blockVecs+100; i++ {
		v := randVec(r, dims)
		want[int64(i)] = v
		ops = append(ops, indexOp{add: true, ns: "n", rowid: int64(i), entry: vecEntry{id: fmt.Sprint(i), vec: v}})
	}
	x.apply(ops)
	ops = ops[:0]
	for rowid := range want {
		if r.IntN(3) > 0 {
			delete(want, rowid)
			ops = append(ops, indexOp{ns: "n", rowid: rowid})
		}
	}
	// Replace one vector in place and re-add a removed rowid.
	for rowid := range want {
		v := randVec(r, dims)
		want[rowid] = v
		ops = append(ops, indexOp{add: true, ns: "n", rowid: rowid, entry: vecEntry{id: fmt.Sprint(rowid), vec: v}})
		break
	}
	x.apply(ops)
	sp := x.spaces["n"]
	if len(sp.rowids) != len(want) || len(sp.pos) != len(want) {
		t.Fatalf("index holds %d (pos %d), want %d", len(sp.rowids), len(sp.pos), len(want))
	}
	if got, wantBlocks := len(sp.blocks), (len(want)+blockVecs-1)/blockVecs; got != wantBlocks {
		t.Errorf("blocks = %d, want %d", got, wantBlocks)
	}
	for i, rowid := range sp.rowids {
		codes := make([]int8, dims)
		scale := quantizeInto(codes, want[rowid])
		if sp.pos[rowid] != i || sp.ids[i].string(x.syms) != fmt.Sprint(rowid) || !reflect.DeepEqual(sp.vec(i, dims), codes) || sp.scales[i] != scale {
			t.Fatalf("position %d: rowid %d id %s codes %v scale %v, want pos %d codes %v scale %v", i, rowid, sp.ids[i].string(x.syms), sp.vec(i, dims), sp.scales[i], sp.pos[rowid], codes, scale)
		}
	}
	// Remove everything: the namespace disappears.
	ops = ops[:0]
	for rowid := range want {
		ops = append(ops, indexOp{ns: "n", rowid: rowid})
	}
	x.apply(ops)
	if x.len("n") != 0 || x.spaces["n"] != nil {
		t.Errorf("after removing all: len %d, space %v", x.len("n"), x.spaces["n"] != nil)
	}
}
