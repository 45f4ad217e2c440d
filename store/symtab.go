package store

import (
	"encoding/hex"
	"math"
	"slices"
)

// The in-memory indexes keep, for every chunk, its id and the strings a
// search filters on (session key and id, source, directory, speaker). As Go
// strings or unique.Handles those are pointers, five to seven a chunk in
// each index: at 1,000,000 chunks some twelve million words that every
// collection of the worker's heap must scan (BenchmarkIndexGC). Here the
// columns hold numbers instead, so their arrays carry no pointers and the
// collector skips them: the strings as symbols of the index's symtab, a
// chunk id as its 16 bytes.

// sym is a string's number in a symtab.
type sym = uint32

// noSym is a number no string has: a filter on a value no chunk holds
// compiles to it and passes nothing.
const noSym sym = math.MaxUint32

// symtab numbers the distinct strings of an index's columns. Symbol 0 is
// "" and always there; every other symbol counts the column entries that
// hold it (ref, unref) and is freed, its number reused, when none does, so
// the table holds the strings of the chunks indexed now, not of every chunk
// ever indexed. Not safe for concurrent use: the index's lock guards it
// (lookup and str under the read lock, ref and unref under the write lock).
type symtab struct {
	ids  map[string]sym
	strs []string
	uses []uint32
	free []sym
	// held is bytes(), kept as symbols come and go.
	held int64
}

// symBytes is the heap bytes estimates a symbol of s: a string header, a
// use count and a map slot, and its bytes.
func symBytes(s string) int64 { return 16 + 4 + 48 + int64(len(s)) }

func newSymtab() *symtab {
	return &symtab{ids: map[string]sym{"": 0}, strs: []string{""}, uses: []uint32{0}, held: symBytes("")}
}

// ref returns the symbol of s, counting one more use of it.
func (t *symtab) ref(s string) sym {
	if s == "" {
		return 0
	}
	id, ok := t.ids[s]
	if !ok {
		if n := len(t.free); n > 0 {
			id, t.free = t.free[n-1], t.free[:n-1]
			t.strs[id] = s
		} else {
			id = sym(len(t.strs))
			t.strs, t.uses = append(t.strs, s), append(t.uses, 0)
		}
		t.ids[s] = id
		t.held += symBytes(s)
	}
	t.uses[id]++
	return id
}

// unref drops one use of id, freeing it at the last.
func (t *symtab) unref(id sym) {
	if id == 0 || id == noSym {
		return
	}
	if t.uses[id]--; t.uses[id] == 0 {
		t.held -= symBytes(t.strs[id])
		delete(t.ids, t.strs[id])
		t.strs[id] = ""
		t.free = append(t.free, id)
	}
}

// lookup returns the symbol of s, noSym when no entry holds it.
func (t *symtab) lookup(s string) sym {
	if id, ok := t.ids[s]; ok {
		return id
	}
	return noSym
}

// str returns the string of id.
func (t *symtab) str(id sym) string { return t.strs[id] }

// bytes estimates the table's heap: a string header, a use count and a map
// slot a symbol, and the strings' bytes (symBytes). It counts the symbols
// held, not the capacity left by freed ones, so two replicas of a shard
// report the same. It is kept as symbols come and go, so a status call
// does not walk the table under the index's lock.
func (t *symtab) bytes() int64 { return t.held }

// chunkID is a chunk id without a pointer: an id of 32 lowercase hex
// digits (what chunker and the record planner make) as its 16 bytes, any
// other as a symbol (odd-1) of the index's symtab.
type chunkID struct {
	raw [16]byte
	odd uint32 // 0: raw holds the id
}

// makeChunkID returns the column entry of id, referencing it in t when it
// is not 32 lowercase hex digits.
func makeChunkID(t *symtab, id string) chunkID {
	var c chunkID
	if len(id) == 32 && isLowerHex(id) {
		hex.Decode(c.raw[:], []byte(id)) //nolint:errcheck // checked by isLowerHex
		return c
	}
	c.odd = t.ref(id) + 1
	return c
}

// string returns the id c holds.
func (c chunkID) string(t *symtab) string {
	if c.odd != 0 {
		return t.str(c.odd - 1)
	}
	return hex.EncodeToString(c.raw[:])
}

// release drops c's use of t.
func (c chunkID) release(t *symtab) {
	if c.odd != 0 {
		t.unref(c.odd - 1)
	}
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// colFilter is a Filter in the form a row's columns hold its strings: T
// sym for an index's symbol columns (symFilter, bindFilter) or string for
// values read from SQLite (stringFilter). Its times are unix ns (noTime:
// unset). A column's zero value is "" (symbol 0 is "").
type colFilter[T comparable] struct {
	f                              Filter
	sessionKey, sessionID, dirPath T
	files                          T
	sources                        []T
	after, before                  int64
}

// symFilter is a Filter bound to an index's symtab: its strings as symbols
// (noSym for a string no row holds, which no entry equals). Both in-memory
// indexes filter their symbol columns with it (under the index's lock,
// which guards the lookups).
type symFilter = colFilter[sym]

func bindFilter(f Filter, syms *symtab) symFilter {
	b := symFilter{f: f, sessionKey: syms.lookup(f.SessionKey), sessionID: syms.lookup(f.SessionID),
		dirPath: syms.lookup(f.DirPath), files: syms.lookup("files")}
	for _, src := range f.Sources {
		b.sources = append(b.sources, syms.lookup(src))
	}
	b.after, b.before = filterTimes(f)
	return b
}

// stringFilter is f for a row's strings as read from SQLite.
func stringFilter(f Filter) colFilter[string] {
	b := colFilter[string]{f: f, sessionKey: f.SessionKey, sessionID: f.SessionID, dirPath: f.DirPath, files: "files", sources: f.Sources}
	b.after, b.before = filterTimes(f)
	return b
}

// filterTimes returns f's time bounds as unix ns, noTime when unset.
func filterTimes(f Filter) (after, before int64) {
	after, before = noTime, noTime
	if !f.After.IsZero() {
		after = nanos(f.After)
	}
	if !f.Before.IsZero() {
		before = nanos(f.Before)
	}
	return after, before
}

// pass is appendFilter's SQL on one row's columns: c.session_key = ?,
// c.session_id = ?, c.ts_end >= after, c.ts_start < before (NULL times pass
// neither), c.source IN (...), and (c.source <> 'files' OR c.dir_path IN
// (”, dir)).
func (b *colFilter[T]) pass(sessionKey, sessionID, source, dirPath T, tsStart, tsEnd int64) bool {
	f := &b.f
	if f.SessionKey != "" && sessionKey != b.sessionKey || f.SessionID != "" && sessionID != b.sessionID {
		return false
	}
	if len(f.Sources) > 0 && !slices.Contains(b.sources, source) {
		return false
	}
	var none T // ""
	if f.DirPath != "" && source == b.files && dirPath != none && dirPath != b.dirPath {
		return false
	}
	return passTimes(b.after, b.before, tsStart, tsEnd)
}

// passTimes reports whether a row's times meet the bounds after and before
// (noTime: unset); a row's unknown time (noTime) fails a bound.
func passTimes(after, before, tsStart, tsEnd int64) bool {
	if after != noTime && (tsEnd == noTime || tsEnd < after) {
		return false
	}
	return before == noTime || tsStart != noTime && tsStart < before
}
