package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// chunkIDStrings and symStrings read columns back as strings (tests
// comparing two indexes, whose symbols may be numbered differently).
func chunkIDStrings(t *symtab, ids []chunkID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.string(t)
	}
	return out
}

func symStrings(t *symtab, col []sym) []string {
	out := make([]string, len(col))
	for i, s := range col {
		out[i] = t.str(s)
	}
	return out
}

func TestSymtabCountsAndReuses(t *testing.T) {
	tab := newSymtab()
	if got := tab.ref(""); got != 0 || tab.lookup("") != 0 {
		t.Fatalf(`ref("") = %d, lookup("") = %d; want 0, 0`, got, tab.lookup(""))
	}
	a := tab.ref("a")
	if tab.ref("a") != a || tab.lookup("a") != a || tab.str(a) != "a" {
		t.Fatalf("a second ref of a gave another symbol, or lookup/str disagree")
	}
	b := tab.ref("b")
	if b == a || b == 0 {
		t.Fatalf("b = %d beside a = %d", b, a)
	}
	if tab.lookup("c") != noSym {
		t.Fatalf("lookup of a string never referenced = %d, want noSym", tab.lookup("c"))
	}
	tab.unref(a)
	if tab.lookup("a") != a {
		t.Fatal("a freed after one of its two uses went")
	}
	tab.unref(a)
	if tab.lookup("a") != noSym {
		t.Fatal("a still held after its last use went")
	}
	if c := tab.ref("c"); c != a || tab.str(c) != "c" {
		t.Fatalf("c = %d (%q), want a's freed number %d", c, tab.str(c), a)
	}
	tab.unref(0) // "" is never counted
	tab.unref(noSym)
	if tab.lookup("") != 0 || tab.lookup("b") != b {
		t.Fatal(`unref of "" or noSym changed the table`)
	}
}

func TestChunkIDRoundTrip(t *testing.T) {
	tab := newSymtab()
	for _, id := range []string{
		"0123456789abcdef0123456789abcdef", // canonical: bytes only
		"0123456789ABCDEF0123456789ABCDEF", // upper case: kept as given
		"0123456789abcdef0123456789abcde",  // 31 digits
		"0123456789abcdef0123456789abcdeg", // not hex
		"c1", "",
	} {
		c := makeChunkID(tab, id)
		if got := c.string(tab); got != id {
			t.Errorf("makeChunkID(%q).string() = %q", id, got)
		}
		if canonical := len(id) == 32 && isLowerHex(id); canonical != (c.odd == 0) {
			t.Errorf("%q: odd = %d, canonical %v", id, c.odd, canonical)
		}
		c.release(tab)
	}
	if len(tab.ids) != 1 {
		t.Errorf("after every id was released the table holds %d strings, want only \"\"", len(tab.ids))
	}
}

// TestIndexColumnsHoldNoPointers guards what symtab.go is for: the
// per-chunk columns of both indexes are slices of pointer-free elements,
// so the collector never scans them.
func TestIndexColumnsHoldNoPointers(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[vecSpace](), reflect.TypeFor[kwSpace](), reflect.TypeFor[kwLoc]()} {
		for f := range typ.Fields() {
			if f.Type.Kind() != reflect.Slice && typ != reflect.TypeFor[kwLoc]() {
				continue
			}
			el := f.Type
			if el.Kind() == reflect.Slice {
				el = el.Elem()
			}
			if el.Kind() == reflect.Slice { // blocks of codes or sketches: the inner arrays
				el = el.Elem()
			}
			if hasPointers(el) {
				t.Errorf("%s.%s: elements of %s hold pointers", typ.Name(), f.Name, el)
			}
		}
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Struct:
		for f := range t.Fields() {
			if hasPointers(f.Type) {
				return true
			}
		}
	}
	return false
}

// TestIndexesReleaseSymbols adds, replaces and removes rows of both indexes
// and checks after each step that their tables hold exactly the strings of
// the rows left (nothing once every row is gone).
func TestIndexesReleaseSymbols(t *testing.T) {
	const dims, n = 8, 600
	r := rand.New(rand.NewPCG(41, 42))
	vx, kx := newVectorIndex(dims, -1), newKWIndex()
	vlive, klive := map[int64]vecEntry{}, map[int64]kwDoc{}
	doc := func(i int, gen int) (indexOp, kwDoc) {
		id := fmt.Sprintf("%032x", i)
		if i%3 == 0 {
			id = fmt.Sprintf("odd-%d-%d", i, gen)
		}
		sk, src := fmt.Sprintf("k%d-%d", i%7, gen), []string{"sessions", "files", "records"}[i%3]
		e := vecEntry{id: id, sessionKey: sk, sessionID: fmt.Sprintf("s%d", i%5), source: src, dirPath: fmt.Sprintf("d%d", i%2),
			tsStart: noTime, tsEnd: noTime, vec: randVec(r, dims)}
		return indexOp{add: true, ns: fmt.Sprintf("n%d", i%2), rowid: int64(i + 1), entry: e},
			kwDoc{rowid: int64(i + 1), id: id, ns: fmt.Sprintf("n%d", i%2), sessionKey: sk, sessionID: e.sessionID, source: src,
				dirPath: e.dirPath, tsStart: noTime, tsEnd: noTime, head: fmt.Sprintf("Speaker%d: hi", i%4), body: "word other words"}
	}
	check := func(step string) {
		t.Helper()
		want := func(vals ...string) map[string]bool {
			m := map[string]bool{}
			for _, v := range vals {
				if v != "" {
					m[v] = true
				}
			}
			return m
		}
		vwant, kwant := want(), want()
		for _, e := range vlive {
			for v := range want(e.sessionKey, e.sessionID, e.source, e.dirPath) {
				vwant[v] = true
			}
			if !isLowerHex(e.id) || len(e.id) != 32 {
				vwant[e.id] = true
			}
		}
		for _, d := range klive {
			for v := range want(d.sessionKey, d.sessionID, d.source, d.dirPath, speakerHead(d.source, d.head)) {
				kwant[v] = true
			}
			if !isLowerHex(d.id) || len(d.id) != 32 {
				kwant[d.id] = true
			}
		}
		for name, c := range map[string]struct {
			tab  *symtab
			want map[string]bool
		}{"vector": {vx.syms, vwant}, "keyword": {kx.syms, kwant}} {
			got := map[string]bool{}
			for v := range c.tab.ids {
				if v != "" {
					got[v] = true
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: %s index holds %d strings, its rows %d", step, name, len(got), len(c.want))
			}
		}
	}
	var vops []indexOp
	var kops []kwOp
	for i := range n {
		v, d := doc(i, 0)
		vops, kops = append(vops, v), append(kops, kwOp{add: true, doc: d})
		vlive[v.rowid], klive[d.rowid] = v.entry, d
	}
	vx.apply(vops)
	if err := kx.apply(kops); err != nil {
		t.Fatal(err)
	}
	check("added")
	// Replace every other vector in place (new session keys and ids);
	// remove every other keyword row.
	vops, kops = vops[:0], kops[:0]
	for i := 0; i < n; i += 2 {
		v, _ := doc(i, 1)
		vops, kops = append(vops, v), append(kops, kwOp{doc: klive[v.rowid]})
		vlive[v.rowid] = v.entry
		delete(klive, v.rowid)
	}
	vx.apply(vops)
	if err := kx.apply(kops); err != nil {
		t.Fatal(err)
	}
	check("replaced and removed")
	vops, kops = vops[:0], kops[:0]
	for rowid := range vlive {
		vops = append(vops, indexOp{ns: fmt.Sprintf("n%d", (rowid-1)%2), rowid: rowid})
	}
	for _, d := range klive {
		kops = append(kops, kwOp{doc: d})
	}
	clear(vlive)
	clear(klive)
	vx.apply(vops)
	if err := kx.apply(kops); err != nil {
		t.Fatal(err)
	}
	check("all removed")
	if len(vx.syms.ids) != 1 || len(kx.syms.ids) != 1 {
		t.Errorf("with no rows left the tables hold %d and %d strings, want only \"\"", len(vx.syms.ids), len(kx.syms.ids))
	}
}
