package store

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sqlite3.h"

// mi_conn_handle is the SQL function memindex_conn_handle(): the handle of
// the connection it runs on, as an integer.
static void mi_conn_handle(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
	(void)argc;
	(void)argv;
	sqlite3_result_int64(ctx, (sqlite3_int64)(intptr_t)sqlite3_context_db_handle(ctx));
}

static int mi_rowexec_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
	(void)pzErrMsg;
	(void)pApi;
	return sqlite3_create_function_v2(db, "memindex_conn_handle", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, mi_conn_handle, 0, 0, 0);
}

static int mi_rowexec_auto(void) {
	return sqlite3_auto_extension((void (*)(void))mi_rowexec_init);
}

static int mi_prepare(sqlite3_int64 db, const char *sql, sqlite3_stmt **st) {
	return sqlite3_prepare_v3((sqlite3 *)(intptr_t)db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, 0);
}

enum { MI_NULL, MI_INT, MI_TEXT, MI_BLOB };

// mi_exec binds n values to st, steps it once and resets it, in one call:
// value i is kinds[i], an integer vals[i] or the lens[i] bytes of buf at
// offset vals[i] (bound SQLITE_STATIC: the statement is reset, and its
// bindings cleared, before this returns). It returns SQLite's result code,
// the connection's last insert rowid in *rowid, and on an error its
// extended code in *ext and its message in err (errcap bytes).
static int mi_exec(sqlite3_stmt *st, int n, const unsigned char *kinds, const sqlite3_int64 *vals,
		const int *lens, const char *buf, sqlite3_int64 *rowid, int *ext, char *err, int errcap) {
	sqlite3 *db = sqlite3_db_handle(st);
	int rc = SQLITE_OK;
	for (int i = 0; i < n && rc == SQLITE_OK; i++) {
		switch (kinds[i]) {
		case MI_NULL: rc = sqlite3_bind_null(st, i + 1); break;
		case MI_INT: rc = sqlite3_bind_int64(st, i + 1, vals[i]); break;
		case MI_TEXT: rc = sqlite3_bind_text(st, i + 1, buf + vals[i], lens[i], SQLITE_STATIC); break;
		case MI_BLOB: rc = sqlite3_bind_blob(st, i + 1, buf + vals[i], lens[i], SQLITE_STATIC); break;
		default: rc = SQLITE_MISUSE;
		}
	}
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
			rc = SQLITE_OK;
			*rowid = sqlite3_last_insert_rowid(db);
		}
	}
	if (rc != SQLITE_OK) {
		*ext = sqlite3_extended_errcode(db);
		const char *m = sqlite3_errmsg(db);
		size_t k = m ? strlen(m) : 0;
		if (k >= (size_t)errcap) k = errcap - 1;
		if (k > 0) memcpy(err, m, k);
		err[k] = 0;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc;
}
*/
import "C"

import (
	"context"
	"database/sql"
	"fmt"
	"time"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// The writer's statements of every message (its row, its chunk's row, the
// chunk's FTS5 row and its vector's vec0 rowid row) run through rowExec,
// not database/sql. Through database/sql and go-sqlite3 each one converted
// its arguments into a fresh slice, took the statement's locks and bound
// each argument with a cgo call of its own (20 for a chunk row), about
// 6 µs a message on the writer's path (CPU profile of `memindex bench
// --suite hot`). A
// rowExec statement is prepared by SQLite on the writer's own connection
// and run inside the writer's transaction, its arguments bound, stepped
// and reset in one cgo call. The connection's handle comes from the SQL
// function memindex_conn_handle(), registered in every connection; bind
// asks for it at each transaction, so statements never outlive their
// connection unnoticed (one that database/sql closed stays a zombie, not
// freed, while statements of it remain, and they are finalized then).

// rxStmt names a rowExec statement.
type rxStmt int

const (
	rxUpsertMessage rxStmt = iota
	rxInsertChunk
	rxFTSInsert
	// rxVec0Rowid writes a vector's vec_chunks_rowids row (vec0bulk.go);
	// it is optional: not prepared when the shard has no vec_chunks.
	rxVec0Rowid
	rxCount
)

var rxSQL = [rxCount]string{sqlUpsertMessage, sqlInsertChunk, sqlFTSInsert, sqlVec0InsRowid}

// rxOptional reports whether a statement that does not prepare leaves the
// others usable (the callers then check has).
func rxOptional(s rxStmt) bool { return s == rxVec0Rowid }

// registerRowExec registers memindex_conn_handle() in every connection
// opened from now on.
func registerRowExec() error {
	if rc := C.mi_rowexec_auto(); rc != C.SQLITE_OK {
		return fmt.Errorf("register memindex_conn_handle: sqlite error %d", int(rc))
	}
	return nil
}

// rowExec holds the statements prepared on one connection. Only the writer
// uses it, under the shard's write lock.
type rowExec struct {
	db     int64 // the connection's handle; 0 before the first bind
	stmts  [rxCount]*C.sqlite3_stmt
	params [rxCount]int
}

// bind makes rx's statements those of the connection tx runs on,
// preparing them again when it is not the one they were prepared on.
func (rx *rowExec) bind(ctx context.Context, tx *sql.Tx) error {
	var h int64
	if err := tx.QueryRowContext(ctx, `SELECT memindex_conn_handle()`).Scan(&h); err != nil {
		return fmt.Errorf("connection handle: %w", err)
	}
	if h == rx.db {
		return nil
	}
	rx.finalize()
	for i, q := range rxSQL {
		cq := C.CString(q)
		rc := C.mi_prepare(C.sqlite3_int64(h), cq, &rx.stmts[i])
		C.free(unsafe.Pointer(cq))
		if rc != C.SQLITE_OK && rxOptional(rxStmt(i)) {
			rx.stmts[i] = nil
			continue
		}
		if rc != C.SQLITE_OK {
			rx.finalize()
			return fmt.Errorf("prepare %.40s: sqlite error %d", q, int(rc))
		}
		rx.params[i] = int(C.sqlite3_bind_parameter_count(rx.stmts[i]))
	}
	rx.db = h
	return nil
}

// has reports whether statement s is prepared.
func (rx *rowExec) has(s rxStmt) bool { return rx != nil && rx.stmts[s] != nil }

// finalize releases the statements (nil-safe, and safe after their
// connection was closed: it is a zombie until then).
func (rx *rowExec) finalize() {
	if rx == nil {
		return
	}
	for i := range rx.stmts {
		if rx.stmts[i] != nil {
			C.sqlite3_finalize(rx.stmts[i])
			rx.stmts[i] = nil
		}
	}
	rx.db = 0
}

// exec runs statement s with a's values and returns the connection's last
// insert rowid. The error of a failed step unwraps to a sqlite3.Error with
// its codes, as go-sqlite3's would.
func (rx *rowExec) exec(s rxStmt, a *rowArgs) (int64, error) {
	if a.err != nil {
		return 0, a.err
	}
	if rx.stmts[s] == nil {
		return 0, fmt.Errorf("%.40s: statement not prepared", rxSQL[s])
	}
	if len(a.kinds) != rx.params[s] || len(a.kinds) == 0 {
		return 0, fmt.Errorf("%.40s: %d values for %d parameters", rxSQL[s], len(a.kinds), rx.params[s])
	}
	out := &a.out // in a, not on the stack: what cgo is given escapes
	rc := C.mi_exec(rx.stmts[s], C.int(len(a.kinds)), (*C.uchar)(unsafe.Pointer(&a.kinds[0])),
		(*C.sqlite3_int64)(unsafe.Pointer(&a.vals[0])), (*C.int)(unsafe.Pointer(&a.lens[0])),
		(*C.char)(unsafe.Pointer(&a.buf[0])), (*C.sqlite3_int64)(unsafe.Pointer(&out.rowid)), (*C.int)(unsafe.Pointer(&out.ext)),
		(*C.char)(unsafe.Pointer(&out.msg[0])), C.int(len(out.msg)))
	if rc != C.SQLITE_OK {
		return 0, &rowExecError{msg: C.GoString((*C.char)(unsafe.Pointer(&out.msg[0]))),
			se: sqlite3.Error{Code: sqlite3.ErrNo(rc & 0xff), ExtendedCode: sqlite3.ErrNoExtended(out.ext)}}
	}
	return out.rowid, nil
}

// rowExecError is a failed rowExec step: SQLite's message, unwrapping to
// its codes.
type rowExecError struct {
	msg string
	se  sqlite3.Error
}

func (e *rowExecError) Error() string {
	if e.msg == "" {
		return e.se.Error()
	}
	return e.msg
}

func (e *rowExecError) Unwrap() error { return e.se }

// Kinds of a rowArgs value (mi_exec's MI_*).
const (
	rxNull = iota
	rxInt
	rxText
	rxBlob
)

// rowArgs are the values of one rowExec statement, reused from row to row.
// cgo is given pointers into its slices and into out, none of which holds
// a Go pointer, so they pass as they are (cgo's pointer rules).
type rowArgs struct {
	kinds []uint8
	vals  []int64 // an integer, or a text's or blob's offset in buf
	lens  []int32
	buf   []byte // texts and blobs; buf[0] is never one, so &buf[0] is valid
	err   error  // a value of a type it cannot bind
	out   rowOut
}

// rowOut is what mi_exec writes back.
type rowOut struct {
	rowid int64
	ext   int32
	msg   [256]byte
}

// reset empties a for the next statement.
func (a *rowArgs) reset() {
	a.kinds, a.vals, a.lens = a.kinds[:0], a.vals[:0], a.lens[:0]
	a.buf = append(a.buf[:0], 0)
	a.err = nil
}

func (a *rowArgs) add(kind uint8, v int64, n int) {
	a.kinds = append(a.kinds, kind)
	a.vals = append(a.vals, v)
	a.lens = append(a.lens, int32(n))
}

func (a *rowArgs) null()       { a.add(rxNull, 0, 0) }
func (a *rowArgs) int(v int64) { a.add(rxInt, v, 0) }
func (a *rowArgs) bool(v bool) { a.add(rxInt, int64(b2i(v)), 0) }
func (a *rowArgs) text(s string) {
	a.add(rxText, int64(len(a.buf)), len(s))
	a.buf = append(a.buf, s...)
}

// hexToken binds hexToken(prefix, s), built in a's buffer.
func (a *rowArgs) hexToken(prefix byte, s string) {
	off := len(a.buf)
	a.buf = appendHexToken(a.buf, prefix, s)
	a.add(rxText, int64(off), len(a.buf)-off)
}

// texts binds each of ss in turn.
func (a *rowArgs) texts(ss ...string) {
	for _, s := range ss {
		a.text(s)
	}
}

// time binds t as timeArg does: its nanoseconds, NULL for no time.
func (a *rowArgs) time(t time.Time) {
	if n := nanos(t); n != noTime {
		a.int(n)
		return
	}
	a.null()
}

// blob binds b, NULL when b is nil (as go-sqlite3 binds a nil []byte).
func (a *rowArgs) blob(b []byte) {
	if b == nil {
		a.null()
		return
	}
	a.add(rxBlob, int64(len(a.buf)), len(b))
	a.buf = append(a.buf, b...)
}

// value binds v as database/sql would bind it: nil, string, []byte,
// int64, int or bool.
func (a *rowArgs) value(v any) {
	switch v := v.(type) {
	case nil:
		a.null()
	case string:
		a.text(v)
	case []byte:
		a.blob(v)
	case int64:
		a.int(v)
	case int:
		a.int(int64(v))
	case bool:
		a.bool(v)
	default:
		a.null()
		if a.err == nil {
			a.err = fmt.Errorf("rowExec: cannot bind a %T", v)
		}
	}
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
