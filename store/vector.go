package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/conc"
)

// parallelScanMin is the namespace size from which VectorSearch splits its
// scan across GOMAXPROCS goroutines.
const parallelScanMin = 20000

// vectorIndex is the in-memory copy of the vectors of one shard, one flat
// space per namespace, quantized to int8 (vecquant.go). vec_chunks (vec0),
// or vec_plain in go-scan mode, is the durable float32 copy it is loaded
// from at Open and that a search reads its best candidates' exact vectors
// from; Apply and SetVectors update the index after they commit.
type vectorIndex struct {
	dims   int
	mu     sync.RWMutex
	spaces map[string]*vecSpace
	syms   *symtab // the spaces' strings (symtab.go)

	stmtMu sync.Mutex
	point  *sql.Stmt // sqlVecPoint on the shard's readers, once prepared

	// exact holds the slot in exactSlab of the unit float32 vector of each
	// rowid of a small shard (vecexact.go), exactFree the slots given back
	// and exactNext the slots handed out; exactBytes is their cost;
	// exactOff is set once the shard outgrew exactMax.
	exact      map[int64]int32
	exactSlab  [][]float32
	exactFree  []int32
	exactNext  int32
	exactBytes int64
	exactMax   int64
	exactOff   bool
}

// blockVecs is the number of vectors per block of a vecSpace.
const blockVecs = 4096

// vecSpace holds one namespace's vectors, row-major, with parallel slices of
// what a search returns or filters on. Each vector is its unit vector's
// int8 codes (dims bytes) and a scale: scales[i]*codes ≈ the unit vector,
// so a scaled integer dot product approximates the cosine similarity.
//
// The codes live in blocks of blockVecs vectors (each a flat row-major
// []int8) rather than one slice: growing one slice of 1M×384 codes copies
// and page-faults hundreds of MB while the index is write-locked; a block
// grows to at most blockVecs×dims bytes and is never copied after.
type vecSpace struct {
	blocks      [][]int8
	scales      []float32
	rowids      []int64
	ids         []chunkID
	sessionKeys []sym // of the index's symtab, as the next three
	sessionIDs  []sym
	sources     []sym
	dirPaths    []sym
	tsStart     []int64 // unix ns, noTime when unknown
	tsEnd       []int64
	pos         map[int64]int // rowid → position

	// The 1-bit sketch of each vector (vecbits.go): its sign bits, in
	// blocks of blockVecs like the codes, interleaved byte by byte in
	// groups of bitsGroup vectors (the layout of bitCounts); how many are
	// set times its inverse L1 norm after the rotation; and that inverse
	// norm (the two factors of fromCount). Kept once sketched
	// is set: when the space first grows to bitsMin vectors (a namespace
	// that never does pays neither the bytes nor the time), and from then
	// on, also should it shrink again.
	sketched  bool
	bits      [][]uint8
	bitPopInv []float32
	bitInv    []float32
}

// vecEntry is one vector with the metadata the index keeps.
type vecEntry struct {
	id         string
	sessionKey string
	sessionID  string
	source     string
	dirPath    string
	tsStart    int64
	tsEnd      int64
	vec        []float32
}

// indexOp is one change to apply to the index after a commit: add (or
// replace) the vector of rowid, or remove it.
type indexOp struct {
	add   bool
	ns    string
	rowid int64
	entry vecEntry
}

// newVectorIndex returns an empty index of dims-dimensional vectors whose
// float32 copies may take copyBytes (Config.VectorCopyBytes).
func newVectorIndex(dims int, copyBytes int64) *vectorIndex {
	switch {
	case copyBytes == 0:
		copyBytes = DefaultVectorCopyBytes
	case copyBytes < 0:
		copyBytes = 0
	}
	return &vectorIndex{dims: dims, spaces: map[string]*vecSpace{}, syms: newSymtab(), exactMax: copyBytes}
}

// apply makes the changes of one committed transaction, in order.
func (x *vectorIndex) apply(ops []indexOp) {
	if len(ops) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range ops {
		op := &ops[i]
		sp := x.spaces[op.ns]
		if !op.add {
			if sp != nil {
				sp.remove(op.rowid, x.dims, x.syms)
				if len(sp.rowids) == 0 {
					delete(x.spaces, op.ns)
				}
			}
			x.delExact(op.rowid)
			continue
		}
		if sp == nil {
			sp = &vecSpace{pos: map[int64]int{}}
			x.spaces[op.ns] = sp
		}
		sp.add(op.rowid, &op.entry, x.dims, x.syms)
		x.putExact(op.rowid, op.entry.vec)
	}
}

// len returns the number of vectors of namespace ns.
func (x *vectorIndex) len(ns string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if sp := x.spaces[ns]; sp != nil {
		return len(sp.rowids)
	}
	return 0
}

// vec returns the codes of the vector at position i.
func (sp *vecSpace) vec(i, dims int) []int8 {
	off := (i % blockVecs) * dims
	return sp.blocks[i/blockVecs][off : off+dims]
}

func (sp *vecSpace) add(rowid int64, e *vecEntry, dims int, syms *symtab) {
	i, fresh := sp.place(rowid, e, dims, syms)
	sp.scales[i] = quantizeInto(sp.vec(i, dims), e.vec)
	switch {
	case sp.sketched:
		sp.sketchAt(i, dims, nil)
	case fresh && useSketch(len(sp.rowids), dims):
		sp.buildSketches(dims)
	}
}

// place is add without the codes and the sketch: the position of rowid
// (fresh: a new one, its sketch slot grown when the space is sketched) with
// e's metadata. Its codes and scale are the caller's to write.
func (sp *vecSpace) place(rowid int64, e *vecEntry, dims int, syms *symtab) (int, bool) {
	i, ok := sp.pos[rowid]
	if !ok {
		i = len(sp.rowids)
		sp.pos[rowid] = i
		sp.rowids = append(sp.rowids, rowid)
		sp.scales = append(sp.scales, 0)
		sp.ids = append(sp.ids, chunkID{})
		sp.sessionKeys = append(sp.sessionKeys, 0)
		sp.sessionIDs = append(sp.sessionIDs, 0)
		sp.sources = append(sp.sources, 0)
		sp.dirPaths = append(sp.dirPaths, 0)
		sp.tsStart = append(sp.tsStart, 0)
		sp.tsEnd = append(sp.tsEnd, 0)
		growBlocks(&sp.blocks, i, dims)
		if sp.sketched {
			sp.growSketch(dims)
		}
	} else {
		sp.release(i, syms) // replaced: the old values' uses go
	}
	sp.ids[i] = makeChunkID(syms, e.id)
	sp.sessionKeys[i] = syms.ref(e.sessionKey)
	sp.sessionIDs[i] = syms.ref(e.sessionID)
	sp.sources[i] = syms.ref(e.source)
	sp.dirPaths[i] = syms.ref(e.dirPath)
	sp.tsStart[i] = e.tsStart
	sp.tsEnd[i] = e.tsEnd
	return i, !ok
}

// vecLoadQuant is how many vectors a load quantizes at a time, on every
// core (vecLoad).
const vecLoadQuant = 4096

// vecLoad is the quantization Open's load defers: the float32 vectors of
// placed positions, quantized vecLoadQuant at a time on every core
// (flush), and the sketches, made for every space large enough once the
// load is done (finish). Adding them one at a time with add measured 8.2 s
// for the Open of a 1M shard, 1.3 s of it quantizing and 1.5 s sketching
// after the space reached bitsMin, one vector at a time.
type vecLoad struct {
	dims int
	sps  []*vecSpace
	pos  []int
	vecs []float32
}

// add queues the quantization of v (copied) into position i of sp.
func (l *vecLoad) add(sp *vecSpace, i int, v []float32) {
	l.sps, l.pos, l.vecs = append(l.sps, sp), append(l.pos, i), append(l.vecs, v[:l.dims]...)
	if len(l.pos) >= vecLoadQuant {
		l.flush()
	}
}

// flush quantizes the queued vectors. Their spaces are not grown meanwhile
// (the loader waits), so each position's codes and scale stay where they
// are written.
func (l *vecLoad) flush() {
	forParts(len(l.pos), runtime.GOMAXPROCS(0), func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			sp, i := l.sps[k], l.pos[k]
			sp.scales[i] = quantizeInto(sp.vec(i, l.dims), l.vecs[k*l.dims:(k+1)*l.dims])
		}
	})
	clear(l.sps)
	l.sps, l.pos, l.vecs = l.sps[:0], l.pos[:0], l.vecs[:0]
}

// finish quantizes what is queued and sketches every space of spaces that
// add would have sketched by now.
func (l *vecLoad) finish(spaces map[string]*vecSpace) {
	l.flush()
	for _, sp := range spaces {
		if !sp.sketched && useSketch(len(sp.rowids), l.dims) {
			sp.buildSketches(l.dims)
		}
	}
}

// release drops the symbols of position i's strings.
func (sp *vecSpace) release(i int, syms *symtab) {
	sp.ids[i].release(syms)
	syms.unref(sp.sessionKeys[i])
	syms.unref(sp.sessionIDs[i])
	syms.unref(sp.sources[i])
	syms.unref(sp.dirPaths[i])
}

// remove swap-removes rowid: the last vector moves into its place.
func (sp *vecSpace) remove(rowid int64, dims int, syms *symtab) {
	i, ok := sp.pos[rowid]
	if !ok {
		return
	}
	sp.release(i, syms)
	last := len(sp.rowids) - 1
	if i != last {
		sp.rowids[i] = sp.rowids[last]
		sp.scales[i] = sp.scales[last]
		sp.ids[i] = sp.ids[last]
		sp.sessionKeys[i] = sp.sessionKeys[last]
		sp.sessionIDs[i] = sp.sessionIDs[last]
		sp.sources[i] = sp.sources[last]
		sp.dirPaths[i] = sp.dirPaths[last]
		sp.tsStart[i] = sp.tsStart[last]
		sp.tsEnd[i] = sp.tsEnd[last]
		copy(sp.vec(i, dims), sp.vec(last, dims))
		if sp.sketched {
			sp.copySketch(i, last, rotationFor(dims).words)
			sp.bitPopInv[i], sp.bitInv[i] = sp.bitPopInv[last], sp.bitInv[last]
		}
		sp.pos[sp.rowids[i]] = i
	}
	delete(sp.pos, rowid)
	sp.rowids = sp.rowids[:last]
	sp.scales = sp.scales[:last]
	sp.ids = sp.ids[:last]
	sp.sessionKeys = sp.sessionKeys[:last]
	sp.sessionIDs = sp.sessionIDs[:last]
	sp.sources = sp.sources[:last]
	sp.dirPaths = sp.dirPaths[:last]
	sp.tsStart = sp.tsStart[:last]
	sp.tsEnd = sp.tsEnd[:last]
	shrinkBlocks(&sp.blocks, dims)
	if !sp.sketched {
		return
	}
	sp.bitPopInv = sp.bitPopInv[:last]
	sp.bitInv = sp.bitInv[:last]
	sp.shrinkSketch(dims)
}

// growBlocks appends the slot of item i, width elements, to blocks of
// blockVecs items each: a new block when i starts one (the first block
// grows, later ones start full size, so none is copied once full). The
// first block doubles when full: append would add a quarter at its sizes
// (hundreds of KiB), so a namespace's first 4,096 vectors were copied
// about four times over, a fifth of the index's allocations in a fresh
// worker (BENCHMARKS.md, twenty-first session).
func growBlocks[T any](blocks *[][]T, i, width int) {
	if i%blockVecs == 0 {
		c := width
		if i > 0 {
			c = blockVecs * width
		}
		*blocks = append(*blocks, make([]T, 0, c))
	}
	b := &(*blocks)[len(*blocks)-1]
	n := len(*b)
	if n+width > cap(*b) {
		nb := make([]T, n, min(max(2*cap(*b), n+width), blockVecs*width))
		copy(nb, *b)
		*b = nb
	}
	*b = (*b)[:n+width]
	clear((*b)[n:]) // a slot shrinkBlocks gave back holds its old values
}

// shrinkBlocks drops the last item's width elements from blocks, and the
// last block once it is empty (the first is kept).
func shrinkBlocks[T any](blocks *[][]T, width int) {
	lb := len(*blocks) - 1
	b := &(*blocks)[lb]
	*b = (*b)[:len(*b)-width]
	if len(*b) == 0 && lb > 0 {
		*b = nil
		*blocks = (*blocks)[:lb]
	}
}

// forParts splits [0,n) into parts ranges of about equal size and calls
// fn(p, lo, hi) for range p of each, on goroutines of their own when there
// is more than one.
func forParts(n, parts int, fn func(p, lo, hi int)) {
	if parts <= 1 {
		fn(0, 0, n)
		return
	}
	step := (n + parts - 1) / parts
	var wg conc.WaitGroup
	for p, lo := 0, 0; lo < n; p, lo = p+1, lo+step {
		wg.Go(func() { fn(p, lo, min(lo+step, n)) })
	}
	wg.Wait()
}

// forShares runs fn over [0, n) cut into about shares contiguous ranges of
// at least minShare, on workers goroutines (the caller's one of them) that
// each take the next range left. A worker that gets less of a core (some
// other goroutine runs on it) then takes fewer ranges, where with
// forParts the search would wait for its fixed part: on 2 cores the
// sketch pass of a 1M search took 7.5 ms at p10 and 18.4 ms at p99 that
// way. fn's s is the range's index, in order.
func forShares(n, workers, shares, minShare int, fn func(s, lo, hi int)) {
	step := max((n+shares-1)/max(shares, 1), minShare, 1)
	count := (n + step - 1) / step
	if workers <= 1 || count <= 1 {
		for s := range count {
			fn(s, s*step, min(s*step+step, n))
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for {
			s := int(next.Add(1) - 1)
			if s >= count {
				return
			}
			fn(s, s*step, min(s*step+step, n))
		}
	}
	var wg conc.WaitGroup
	for range min(workers, count) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// normalizeInto writes v scaled to unit length into dst (zeros when v is 0).
func normalizeInto(dst, v []float32) {
	ss := sumSquares(v)
	if ss == 0 {
		clear(dst)
		return
	}
	scaleInto(dst, v, 1/math.Sqrt(ss))
}

// sumSquares is the sum of v[i]² in float64, added in a fixed order: eight
// running sums (v[i] into sum i%8), then ((s0+s4)+(s1+s5))+((s2+s6)+(s3+s7)),
// then the elements past the last eight in order. The SIMD version
// (dot_simd.go) adds lane for lane in that order, so a vector has the same
// norm to the bit with it or without (TestSIMDQuantizeMatchesGeneric).
var sumSquares = sumSquaresGeneric

func sumSquaresGeneric(v []float32) float64 {
	var a [8]float64
	i := 0
	for ; i+8 <= len(v); i += 8 {
		for j := range 8 {
			f := float64(v[i+j])
			a[j] += float64(f * f) // the conversion keeps the product rounded: no fused multiply-add
		}
	}
	return addSquares(((a[0]+a[4])+(a[1]+a[5]))+((a[2]+a[6])+(a[3]+a[7])), v[i:])
}

// addSquares adds the squares of v to s in order: the tail past the last
// eight elements, in both versions of sumSquares.
func addSquares(s float64, v []float32) float64 {
	for _, x := range v {
		f := float64(x)
		s += float64(f * f)
	}
	return s
}

// scaleInto writes float32(float64(v[i])*inv) into dst[i].
var scaleInto = scaleIntoGeneric

func scaleIntoGeneric(dst, v []float32, inv float64) {
	dst = dst[:len(v)]
	for i, f := range v {
		dst[i] = float32(float64(f) * inv)
	}
}

// vecFilter is a Filter compiled for the scan: whether it filters at all,
// and (after bind) its symbols in the index's symtab.
type vecFilter struct {
	any bool
	symFilter
}

func compileFilter(f Filter) vecFilter {
	vf := vecFilter{symFilter: symFilter{f: f}}
	vf.after, vf.before = filterTimes(f)
	vf.any = f.SessionKey != "" || f.SessionID != "" || vf.after != noTime || vf.before != noTime || len(f.Sources) > 0 || f.DirPath != ""
	return vf
}

// bind looks the filter's strings up in syms (under the index's lock).
func (vf *vecFilter) bind(syms *symtab) { vf.symFilter = bindFilter(vf.f, syms) }

// pass mirrors the SQL filter for position i (after bind).
func (vf *vecFilter) pass(sp *vecSpace, i int) bool {
	return vf.symFilter.pass(sp.sessionKeys[i], sp.sessionIDs[i], sp.sources[i], sp.dirPaths[i], sp.tsStart[i], sp.tsEnd[i])
}

// VectorSearch returns the top limit chunks of namespace ns by cosine
// similarity to vec, best first. It scans the in-memory int8 index (split
// across GOMAXPROCS goroutines from 20,000 vectors) for candidates, then
// rescores the best of them with their float32 vectors read from vec0 (or
// vec_plain), as many as can still enter the top limit given the
// quantization error (vecquant_rescore.go): the ranking is that of an exact
// float32 scan, and Score is the exact cosine similarity clamped to [0,1]
// (1 - cosine distance); vectors need not be unit length (both sides are
// normalised). The index is updated right after each commit, so for that
// moment a search may still see the previous batch's vectors: callers
// hydrate hits with Chunks, which skips ids no longer stored.
func (s *Shard) VectorSearch(ctx context.Context, ns string, vec []float32, f Filter, limit int) ([]Candidate, error) {
	return s.VectorSearchTop(ctx, ns, vec, f, limit, limit)
}

// VectorSearchTop is VectorSearch for a caller that needs only the first
// exact candidates exactly: those are the exact top exact, in exact order
// with exact scores, and the rest up to limit follow by the int8
// approximation of their cosine (within errMargin of it, a few
// thousandths of a cosine at 384 dims), read from memory instead of from
// SQLite. A search's fusion takes its vector candidates past the hits it
// returns by rank, where such an error moves a candidate past a near tie
// at most; each vector read from SQLite cost 55–77 µs at 1,000,000 chunks
// on this project's box, the readers' maps cold (BENCHMARKS.md, eleventh
// session). exact is clamped to [1, limit].
func (s *Shard) VectorSearchTop(ctx context.Context, ns string, vec []float32, f Filter, limit, exact int) ([]Candidate, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	if len(vec) != s.dims {
		return nil, fmt.Errorf("vector search: query of %d, shard %d: %w", len(vec), s.dims, ErrDims)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	out, _, err := s.vectorSearch(ctx, ns, newQuantQuery(vec), compileFilter(f), limit, min(max(exact, 1), limit))
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return out, nil
}

// candidates returns the best pool vectors of namespace ns that pass vf by
// approximate score, best first (ties: lower rowid), with what rescoring
// needs.
func (x *vectorIndex) candidates(ns string, q *quantQuery, vf *vecFilter, pool int) []vecCand {
	if pool <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	sp := x.spaces[ns]
	if sp == nil || len(sp.rowids) == 0 {
		return nil
	}
	if vf.any {
		vf.bind(x.syms)
	}
	n := len(sp.rowids)
	parts := runtime.GOMAXPROCS(0)
	if n < parallelScanMin || parts < 2 {
		parts = 1
	}
	var heaps []topK
	switch {
	case !vf.any && sp.sketched && useSketch(n, x.dims):
		heaps = []topK{sp.scanSketch(q, rotationFor(x.dims), n, pool, bitsPool(n, pool), parts, x.dims)}
	default:
		heaps = make([]topK, parts)
		forParts(n, parts, func(p, lo, hi int) { heaps[p] = sp.scan(q, vf, lo, hi, pool, x.dims) })
	}
	all := heaps[0].items
	for _, h := range heaps[1:] {
		all = append(all, h.items...)
	}
	sort.Slice(all, func(i, j int) bool { return better(all[i], all[j]) })
	if len(all) > pool {
		all = all[:pool]
	}
	out := make([]vecCand, len(all))
	for i, it := range all {
		out[i] = vecCand{rowid: it.rowid, id: sp.ids[it.pos].string(x.syms), approx: it.score, margin: errMargin(sp.scales[it.pos], q.scale)}
	}
	return out
}

// scanRun is how many vectors scan scores in one dotI8Many call.
const scanRun = 256

// scan scores positions [lo,hi) by approximate cosine and keeps the best
// limit. Without a filter it scores runs of scanRun vectors in one
// dotI8Many call; with one, only the vectors that pass it.
func (sp *vecSpace) scan(q *quantQuery, vf *vecFilter, lo, hi, limit, dims int) topK {
	h := topK{limit: limit, items: make([]scored, 0, max(0, min(limit, hi-lo)))}
	if vf.any {
		for i := lo; i < hi; i++ {
			if !vf.pass(sp, i) {
				continue
			}
			score := q.approx(sp.vec(i, dims), sp.scales[i])
			if len(h.items) == limit && score < h.items[0].score {
				continue // cannot enter the top limit
			}
			h.push(scored{score: score, pos: int32(i), rowid: sp.rowids[i]})
		}
		return h
	}
	var dots [scanRun]int32
	for i := lo; i < hi; {
		b := i / blockVecs
		blk := sp.blocks[b]
		end := min(hi, (b+1)*blockVecs, i+scanRun)
		off := (i - b*blockVecs) * dims
		run := dots[:end-i]
		dotI8Many(q.abs, q.codes, blk[off:], dims, run)
		for j, d := range run {
			p := i + j
			score := float32(d) * sp.scales[p] * q.scale
			if len(h.items) == limit && score < h.items[0].score {
				continue // cannot enter the top limit
			}
			h.push(scored{score: score, pos: int32(p), rowid: sp.rowids[p]})
		}
		i = end
	}
	return h
}

func clamp01(f float64) float64 {
	if f < 0 || f != f {
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

// dot is the inner product of a and b (len(b) >= len(a)): dotGeneric, or a
// SIMD version where the build and the CPU have one (dot_simd.go).
var dot = dotGeneric

// dotKind names the dot product in use, for logs and benchmarks.
var dotKind = "generic"

// dotGeneric is the inner product of a and b (len(b) >= len(a)), eight
// scalar accumulators.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		aa, bb := a[:8:8], b[:8:8]
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
		s4 += aa[4] * bb[4]
		s5 += aa[5] * bb[5]
		s6 += aa[6] * bb[6]
		s7 += aa[7] * bb[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// scored is one scan result.
type scored struct {
	score float32
	pos   int32
	rowid int64
}

// better orders results: higher score first, then lower rowid (stable ties).
func better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.rowid < b.rowid
}

// topK keeps the best limit results in a min-heap (worst at the root).
type topK struct {
	limit int
	items []scored
}

func (h *topK) push(it scored) {
	if len(h.items) < h.limit {
		h.items = append(h.items, it)
		// sift up
		i := len(h.items) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !better(h.items[p], h.items[i]) {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	if !better(it, h.items[0]) {
		return
	}
	h.items[0] = it
	// sift down
	n := len(h.items)
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		w := l
		if r := l + 1; r < n && better(h.items[l], h.items[r]) {
			w = r
		}
		if !better(h.items[i], h.items[w]) {
			break
		}
		h.items[i], h.items[w] = h.items[w], h.items[i]
		i = w
	}
}
