package store

/*
#include <stdlib.h>
#include <string.h>
#include "sqlite3.h"

// mi_tok is one instance of FTS5's own "porter unicode61
// remove_diacritics 2" tokenizer (the tokenizer of chunks_fts) with the
// buffer its tokens are written to: each token as three 4-byte
// little-endian integers (its length, its start and end byte offsets in
// the text) then its bytes.
typedef struct mi_tok {
	fts5_tokenizer_v2 *x;
	Fts5Tokenizer *t;
	unsigned char *buf;
	int n, cap, oom;
} mi_tok;

static sqlite3 *mi_db;
static fts5_api *mi_fts;
static void *mi_porter_ud;
static fts5_tokenizer_v2 *mi_porter;

// mi_init opens a private in-memory connection of the SQLite linked in,
// only to reach its FTS5 API and the porter tokenizer. It is kept open for
// the life of the process (the tokenizer's module lives in it).
static int mi_init(void) {
	sqlite3_stmt *st = 0;
	int rc;
	if (mi_porter) return SQLITE_OK;
	rc = sqlite3_open_v2(":memory:", &mi_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY | SQLITE_OPEN_FULLMUTEX, 0);
	if (rc != SQLITE_OK) return rc;
	rc = sqlite3_prepare_v2(mi_db, "SELECT fts5(?1)", -1, &st, 0);
	if (rc != SQLITE_OK) return rc;
	sqlite3_bind_pointer(st, 1, (void *)&mi_fts, "fts5_api_ptr", 0);
	sqlite3_step(st);
	rc = sqlite3_finalize(st);
	if (rc != SQLITE_OK) return rc;
	if (mi_fts == 0 || mi_fts->iVersion < 3) return SQLITE_ERROR;
	return mi_fts->xFindTokenizer_v2(mi_fts, "porter", &mi_porter_ud, &mi_porter);
}

static mi_tok *mi_tok_new(int *rc) {
	static const char *args[] = {"unicode61", "remove_diacritics", "2"};
	mi_tok *t = calloc(1, sizeof(mi_tok));
	if (t == 0) { *rc = SQLITE_NOMEM; return 0; }
	t->x = mi_porter;
	*rc = mi_porter->xCreate(mi_porter_ud, args, 3, &t->t);
	if (*rc != SQLITE_OK) { free(t); return 0; }
	return t;
}

static void mi_tok_free(mi_tok *t) {
	if (t == 0) return;
	t->x->xDelete(t->t);
	free(t->buf);
	free(t);
}

// FTS5_MAX_TOKEN_SIZE: FTS5 cuts longer tokens to this size when it
// indexes or queries them (fts5Int.h).
#define MI_MAX_TOKEN 32768

static int mi_cb(void *ctx, int tflags, const char *tok, int n, int s, int e) {
	mi_tok *t = (mi_tok *)ctx;
	if (tflags & FTS5_TOKEN_COLOCATED) return SQLITE_OK; // never from porter/unicode61; FTS5 would not count it
	if (n > MI_MAX_TOKEN) n = MI_MAX_TOKEN;
	if (t->n + 12 + n > t->cap) {
		int c = t->cap ? t->cap * 2 : 4096;
		while (c < t->n + 12 + n) c *= 2;
		unsigned char *b = realloc(t->buf, c);
		if (b == 0) { t->oom = 1; return SQLITE_NOMEM; }
		t->buf = b; t->cap = c;
	}
	unsigned int v[3] = {(unsigned int)n, (unsigned int)s, (unsigned int)e};
	for (int k = 0; k < 3; k++) {
		unsigned char *o = t->buf + t->n + 4 * k;
		o[0] = v[k] & 0xff; o[1] = (v[k] >> 8) & 0xff; o[2] = (v[k] >> 16) & 0xff; o[3] = (v[k] >> 24) & 0xff;
	}
	memcpy(t->buf + t->n + 12, tok, n);
	t->n += 12 + n;
	return SQLITE_OK;
}

static int mi_tokenize(mi_tok *t, const char *text, int n, int flags) {
	t->n = 0; t->oom = 0;
	if (n == 0) return SQLITE_OK;
	return t->x->xTokenize(t->t, t, flags, text, n, 0, 0, mi_cb);
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// ftsTokenizer turns text into the tokens chunks_fts indexes it as, with
// FTS5's own tokenizer ("porter unicode61 remove_diacritics 2", the one the
// migrations give chunks_fts) reached through the FTS5 API of the SQLite
// linked into the binary, so the keyword index (kwindex.go) and FTS5 can
// never disagree on what a token is. An ftsTokenizer is not safe for
// concurrent use; take one from tokenizers.
type ftsTokenizer struct {
	t *C.mi_tok
}

var (
	tokInitOnce sync.Once
	tokInitErr  error
	// tokenizers pools tokenizer instances (FTS5's unicode61 keeps a
	// scratch buffer per instance).
	tokenizers = sync.Pool{New: func() any {
		t, err := newFTSTokenizer()
		if err != nil {
			return err
		}
		return t
	}}
)

func newFTSTokenizer() (*ftsTokenizer, error) {
	tokInitOnce.Do(func() {
		if rc := C.mi_init(); rc != C.SQLITE_OK {
			tokInitErr = fmt.Errorf("fts5 tokenizer: sqlite error %d", int(rc))
		}
	})
	if tokInitErr != nil {
		return nil, tokInitErr
	}
	var rc C.int
	t := C.mi_tok_new(&rc)
	if t == nil {
		return nil, fmt.Errorf("fts5 tokenizer: create: sqlite error %d", int(rc))
	}
	ft := &ftsTokenizer{t: t}
	// The pool may drop an instance at any GC: free its C side then.
	runtime.AddCleanup(ft, func(p *C.mi_tok) { C.mi_tok_free(p) }, t)
	return ft, nil
}

// getTokenizer takes a tokenizer from the pool; putTokenizer returns it.
func getTokenizer() (*ftsTokenizer, error) {
	switch v := tokenizers.Get().(type) {
	case *ftsTokenizer:
		return v, nil
	case error:
		return nil, v
	default:
		return nil, fmt.Errorf("fts5 tokenizer: pool holds %T", v)
	}
}

func putTokenizer(t *ftsTokenizer) { tokenizers.Put(t) }

// Tokenize flags: as a document (what FTS5 does on insert) or as a query
// string.
const (
	tokenizeDocument = C.FTS5_TOKENIZE_DOCUMENT
	tokenizeQuery    = C.FTS5_TOKENIZE_QUERY
)

// tokens calls fn with each token of text in order. The byte slice is only
// valid during the call. It returns the number of tokens.
func (t *ftsTokenizer) tokens(text string, flags C.int, fn func(tok []byte)) (int, error) {
	return t.tokenSpans(text, flags, func(tok []byte, _, _ int) { fn(tok) })
}

// tokenSpans is tokens with each token's start and end byte offsets in
// text.
func (t *ftsTokenizer) tokenSpans(text string, flags C.int, fn func(tok []byte, start, end int)) (int, error) {
	if len(text) == 0 {
		return 0, nil
	}
	if len(text) > 1<<30 {
		return 0, fmt.Errorf("fts5 tokenizer: text of %d bytes", len(text))
	}
	p := unsafe.StringData(text)
	rc := C.mi_tokenize(t.t, (*C.char)(unsafe.Pointer(p)), C.int(len(text)), flags)
	if rc != C.SQLITE_OK {
		return 0, fmt.Errorf("fts5 tokenizer: sqlite error %d", int(rc))
	}
	if t.t.n == 0 {
		return 0, nil
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(t.t.buf)), int(t.t.n))
	n := 0
	for len(buf) >= 12 {
		l := int(binary.LittleEndian.Uint32(buf))
		start, end := int(binary.LittleEndian.Uint32(buf[4:])), int(binary.LittleEndian.Uint32(buf[8:]))
		fn(buf[12:12+l], start, end)
		buf = buf[12+l:]
		n++
	}
	return n, nil
}
