package store

// A small shard also keeps its unit float32 vectors in memory, so that the
// rescoring of a search's best candidates (vecquant_rescore.go) reads none
// from SQLite: about 50 vec0 point queries a hybrid search at k = 10, 7-10 µs
// each, most of the vector leg's time on a LoCoMo-size namespace. A shard
// whose copies would take more than Config.VectorCopyBytes drops them for
// good (until it is opened again) and reads its candidates' vectors from
// SQLite, so the copies cost at most that a shard (DefaultVectorCopyBytes,
// 16 MiB: ~10,900 vectors at 384 dims; a node with --memory-limit gives each
// shard its share of an eighth of the Go heap) and nothing per chunk beyond
// that. The scores are the same either way: a copy is normalised from the
// same float32 values vec0 holds, as exactScores normalises what it reads.

// exactEntryBytes is what one copy costs: its floats and its map entry.
func exactEntryBytes(dims int) int64 { return int64(dims)*4 + 64 }

// exactBlock is how many copies one block of x.exactSlab holds. The copies
// live in blocks, and the map gives each rowid its slot: one allocation a
// block instead of one a vector, and a map the collector need not scan.
// A removal's slot is used again before a new one, so the blocks never
// hold more slots than exactMax allowed copies at once, plus the last
// block's unused ones.
const exactBlock = 64

// exactAt returns the copy in slot.
func (x *vectorIndex) exactAt(slot int32) []float32 {
	off := int(slot%exactBlock) * x.dims
	return x.exactSlab[slot/exactBlock][off : off+x.dims : off+x.dims]
}

// putExact keeps the unit vector of v for rowid, unless the shard has
// outgrown its copies. x.mu is held for writing.
func (x *vectorIndex) putExact(rowid int64, v []float32) {
	if x.exactOff {
		return
	}
	if x.exact == nil {
		x.exact = map[int64]int32{}
	}
	slot, ok := x.exact[rowid]
	if !ok {
		if x.exactBytes+exactEntryBytes(x.dims) > x.exactMax {
			x.resetExact(0)
			x.exactOff = true
			return
		}
		x.exactBytes += exactEntryBytes(x.dims)
		slot = x.exactSlot()
		x.exact[rowid] = slot
	}
	normalizeInto(x.exactAt(slot), v)
}

// exactSlot returns a free slot: one a removal gave back, else the next,
// in a new block when the last is full.
func (x *vectorIndex) exactSlot() int32 {
	if n := len(x.exactFree); n > 0 {
		slot := x.exactFree[n-1]
		x.exactFree = x.exactFree[:n-1]
		return slot
	}
	slot := x.exactNext
	if int(slot/exactBlock) == len(x.exactSlab) {
		x.exactSlab = append(x.exactSlab, make([]float32, exactBlock*x.dims))
	}
	x.exactNext++
	return slot
}

// delExact forgets rowid's copy. x.mu is held for writing.
func (x *vectorIndex) delExact(rowid int64) {
	if slot, ok := x.exact[rowid]; ok {
		delete(x.exact, rowid)
		x.exactFree = append(x.exactFree, slot)
		x.exactBytes -= exactEntryBytes(x.dims)
	}
}

// resetExact empties the copies before a load of n vectors: allowed again
// when n of them fit, off at once when they cannot (a big shard does not
// build copies at Open only to drop them). x.mu is held for writing.
func (x *vectorIndex) resetExact(n int) {
	x.exact, x.exactSlab, x.exactFree, x.exactNext, x.exactBytes = nil, nil, nil, 0, 0
	x.exactOff = int64(n)*exactEntryBytes(x.dims) > x.exactMax
}

// scoreExact records in exact the cosine with q of each rowid the shard
// holds a copy of, and returns the others.
func (x *vectorIndex) scoreExact(q *quantQuery, rowids []int64, exact map[int64]float32) (rest []int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.exact == nil {
		return rowids
	}
	for _, r := range rowids {
		if slot, ok := x.exact[r]; ok {
			exact[r] = dot(q.unit, x.exactAt(slot))
		} else {
			rest = append(rest, r)
		}
	}
	return rest
}
