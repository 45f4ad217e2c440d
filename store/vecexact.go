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

// putExact keeps the unit vector of v for rowid, unless the shard has
// outgrown its copies. x.mu is held for writing.
func (x *vectorIndex) putExact(rowid int64, v []float32) {
	if x.exactOff {
		return
	}
	if x.exact == nil {
		x.exact = map[int64][]float32{}
	}
	u, ok := x.exact[rowid]
	if !ok {
		if x.exactBytes+exactEntryBytes(x.dims) > x.exactMax {
			x.exact, x.exactBytes, x.exactOff = nil, 0, true
			return
		}
		x.exactBytes += exactEntryBytes(x.dims)
		u = make([]float32, x.dims)
		x.exact[rowid] = u
	}
	normalizeInto(u, v)
}

// delExact forgets rowid's copy. x.mu is held for writing.
func (x *vectorIndex) delExact(rowid int64) {
	if _, ok := x.exact[rowid]; ok {
		delete(x.exact, rowid)
		x.exactBytes -= exactEntryBytes(x.dims)
	}
}

// resetExact empties the copies before a load of n vectors: allowed again
// when n of them fit, off at once when they cannot (a big shard does not
// build copies at Open only to drop them). x.mu is held for writing.
func (x *vectorIndex) resetExact(n int) {
	x.exact, x.exactBytes = nil, 0
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
		if u, ok := x.exact[r]; ok {
			exact[r] = dot(q.unit, u)
		} else {
			rest = append(rest, r)
		}
	}
	return rest
}
