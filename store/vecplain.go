package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Vector modes a shard reports with VectorMode.
const (
	// VectorModeSqliteVec: vectors are kept in sqlite-vec's vec0 table
	// vec_chunks (the normal mode).
	VectorModeSqliteVec = "sqlite-vec"
	// VectorModeGoScan: sqlite-vec is missing, disabled or failing for the
	// shard, so vectors are kept in the plain table vec_plain. Searches are
	// the same in-process scan in both modes (the in-memory index is loaded
	// from whichever table holds the vectors).
	VectorModeGoScan = "go-scan"
)

// Reasons for the go-scan mode.
const (
	reasonDisabled = "sqlite-vec disabled by configuration"
)

// SQL of the two vector stores.
const (
	sqlPlainInsert = `INSERT INTO vec_plain(rowid, embedding) VALUES (?, ?)`
	sqlPlainDelete = `DELETE FROM vec_plain WHERE rowid = ?`
)

// vecState is the vector mode of a shard: where its vectors live and why.
type vecState struct {
	mode   string
	reason string
}

func (v *vecState) plain() bool { return v.mode == VectorModeGoScan }

// VectorMode returns how the shard keeps its vectors: VectorModeSqliteVec,
// or VectorModeGoScan with the reason (sqlite-vec missing, disabled by
// configuration, or its vec0 table failing for this shard). Vector search
// answers in both modes.
func (s *Shard) VectorMode() (mode, reason string) {
	v := s.vec.Load()
	return v.mode, v.reason
}

// vecSQL returns the insert and delete statements of the mode's table.
func vecSQL(plain bool) (insert, del string) {
	if plain {
		return sqlPlainInsert, sqlPlainDelete
	}
	return sqlVecInsert, sqlVecDelete
}

// probeVecModule reports whether sqlite-vec is loaded on db's connections.
func probeVecModule(ctx context.Context, db *sql.DB) error {
	var v string
	if err := db.QueryRowContext(ctx, `SELECT vec_version()`).Scan(&v); err != nil {
		return fmt.Errorf("%w: %v", ErrNoVec, err)
	}
	return nil
}

// queryer is what the vector scans read through: the reader pool, or the
// writer's transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// vec0Create matches a statement that creates a vec0 virtual table. The
// migrations skip such statements when sqlite-vec is not loaded, and
// ensureVec0 runs the one that creates vec_chunks once it is.
var vec0Create = regexp.MustCompile(`(?is)CREATE\s+VIRTUAL\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+USING\s+vec0\s*\([^;]*\)\s*;?`)

// withoutVec0 returns migration SQL without its vec0 tables, for a
// connection that has no sqlite-vec.
func withoutVec0(sql string) string {
	return vec0Create.ReplaceAllString(sql, "-- vec0 table skipped: sqlite-vec not loaded\n")
}

// ensureVec0 creates vec_chunks, as the migrations define it, when the file
// has none (it was created without sqlite-vec). It needs sqlite-vec.
func ensureVec0(ctx context.Context, db *sql.DB, dims int) error {
	var n int
	if err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'vec_chunks'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		for _, sub := range vec0Create.FindAllStringSubmatch(m.sql, -1) {
			if sub[1] != "vec_chunks" {
				continue
			}
			stmt := strings.ReplaceAll(sub[0], "{{DIMS}}", strconv.Itoa(dims))
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create vec_chunks: %w", err)
			}
			return nil
		}
	}
	return errors.New("create vec_chunks: no migration defines it")
}

// probeVec0 checks that vec_chunks can be read and written: it reads a row
// and inserts one in a transaction it rolls back.
func (s *Shard) probeVec0(ctx context.Context) error {
	if err := ensureVec0(ctx, s.w, s.dims); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var rowid int64
	err = tx.QueryRowContext(ctx, `SELECT rowid FROM vec_chunks LIMIT 1`).Scan(&rowid)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read: %w", err)
	}
	probe := make([]float32, s.dims)
	probe[0] = 1
	if _, err := tx.ExecContext(ctx, `INSERT INTO vec_chunks(embedding) VALUES (?)`, encodeVector(nil, probe)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// vecPlainFlag reads meta 'vec_plain': whether the vectors live in vec_plain.
func vecPlainFlag(ctx context.Context, q queryer) (bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT value FROM meta WHERE key = 'vec_plain'`)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var v int64
	if rows.Next() {
		if err := rows.Scan(&v); err != nil {
			return false, err
		}
	}
	return v == 1, rows.Err()
}

// setupVectors decides the shard's vector mode at Open and moves the
// vectors into the mode's table when the file kept them in the other one.
// sqlite-vec is used when it is loaded (vecErr nil), not disabled, and
// vec_chunks can be read and written; otherwise the mode is go-scan.
func (s *Shard) setupVectors(ctx context.Context, disabled bool, vecErr error) error {
	plainNow, err := vecPlainFlag(ctx, s.w)
	if err != nil {
		return fmt.Errorf("read vector mode: %w", err)
	}
	reason := ""
	switch {
	case disabled:
		reason = reasonDisabled
	case vecErr != nil:
		reason = "sqlite-vec unavailable: " + vecErr.Error()
	default:
		if err := s.probeVec0(ctx); err != nil {
			if transient(ctx, err) { // busy, I/O, cancelled: says nothing about vec0
				return fmt.Errorf("probe vec0: %w", err)
			}
			reason = "vec0 table unusable: " + err.Error()
		}
	}
	if reason == "" && plainNow {
		if err := s.moveToVec0(ctx); err != nil {
			if transient(ctx, err) {
				return fmt.Errorf("move vectors into vec0: %w", err)
			}
			reason = "moving vectors into vec0 failed: " + err.Error()
		}
	}
	if reason == "" {
		s.vec.Store(&vecState{mode: VectorModeSqliteVec})
		return nil
	}
	if !plainNow {
		if err := s.moveToPlain(ctx); err != nil {
			return fmt.Errorf("move vectors to vec_plain: %w", err)
		}
	}
	s.vec.Store(&vecState{mode: VectorModeGoScan, reason: reason})
	return nil
}

// moveToVec0 moves every vector of vec_plain into vec_chunks (emptied
// first: what it holds is stale) in one transaction.
func (s *Shard) moveToVec0(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM vec_chunks`,
		`INSERT INTO vec_chunks(rowid, embedding) SELECT rowid, embedding FROM vec_plain`,
		`DELETE FROM vec_plain`,
		`UPDATE meta SET value = 0 WHERE key = 'vec_plain'`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// moveToPlain copies the vectors of vec_chunks into vec_plain and records
// that they live there, in one transaction. It reads vec0's shadow tables,
// which needs no sqlite-vec, or with sqlite-vec loaded the virtual table.
// Vectors it cannot read are left behind: loadIndex then marks their chunks
// as waiting for a vector, and the backfill embeds them again. vec_chunks
// is emptied afterwards when sqlite-vec can (best effort: until then it is
// stale and ignored).
func (s *Shard) moveToPlain(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'vec_chunks'`).Scan(&n); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM vec_plain`); err != nil {
		return err
	}
	if n > 0 {
		ins, err := tx.PrepareContext(ctx, sqlPlainInsert)
		if err != nil {
			return err
		}
		defer ins.Close()
		var writeErr error // writing vec_plain failed: not a vec0 problem
		add := func(rowid int64, blob []byte) error {
			if _, err := ins.ExecContext(ctx, rowid, blob); err != nil {
				writeErr = fmt.Errorf("copy vector %d: %w", rowid, err)
				return writeErr
			}
			return nil
		}
		err = s.scanVec0Shadow(ctx, tx, add)
		if err != nil && writeErr == nil && s.vecLoaded && ctx.Err() == nil {
			if _, derr := tx.ExecContext(ctx, `DELETE FROM vec_plain`); derr != nil {
				return derr
			}
			err = s.scanVec0(ctx, tx, add)
		}
		if err != nil {
			if writeErr != nil || ctx.Err() != nil {
				return err
			}
			// Unreadable: the chunks wait for their vectors again.
			if _, derr := tx.ExecContext(ctx, `DELETE FROM vec_plain`); derr != nil {
				return derr
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = 1 WHERE key = 'vec_plain'`); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if n > 0 && s.vecLoaded {
		_, _ = s.w.ExecContext(ctx, `DELETE FROM vec_chunks`) // best effort, see above
	}
	return nil
}

// scanPlain calls add with every row of vec_plain.
func (s *Shard) scanPlain(ctx context.Context, q queryer, add func(rowid int64, blob []byte) error) error {
	return scanVectorRows(ctx, q, `SELECT rowid, embedding FROM vec_plain`, add)
}

// transient reports whether err may pass by itself (busy, locked, I/O,
// full disk, interrupted, cancelled), so it says nothing about vec0.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrIoErr, sqlite3.ErrFull,
			sqlite3.ErrNomem, sqlite3.ErrInterrupt, sqlite3.ErrReadonly, sqlite3.ErrCantOpen:
			return true
		}
	}
	return false
}

// vec0Failed is called with the error of a write (Apply, SetVectors). When
// the shard uses sqlite-vec, the error is not transient and vec_chunks
// fails a read-and-write probe, it switches the shard to go-scan (the
// vectors move to vec_plain) and reports true: the caller retries the
// write once. It reports false when the error has nothing to do with vec0.
func (s *Shard) vec0Failed(ctx context.Context, werr error) bool {
	if errors.Is(werr, ErrClosed) || errors.Is(werr, ErrInvalidBatch) || errors.Is(werr, ErrDims) || transient(ctx, werr) {
		return false
	}
	if s.vec.Load().plain() {
		return false
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.check() != nil {
		return false
	}
	if s.vec.Load().plain() {
		return true // another writer switched meanwhile
	}
	perr := s.probeVec0(ctx)
	if perr == nil || ctx.Err() != nil {
		return false
	}
	return s.fallBackLocked(ctx, "vec0 table failed: "+perr.Error()) == nil
}

// fallBackLocked switches a shard in sqlite-vec mode to go-scan: the
// vectors move to vec_plain, the writer's vector statements are prepared
// for it, and the in-memory index is reloaded from it. The caller holds
// writeMu.
func (s *Shard) fallBackLocked(ctx context.Context, reason string) error {
	ins, del, err := prepareVecStmts(ctx, s.w, true)
	if err != nil {
		return err
	}
	if err := s.moveToPlain(ctx); err != nil {
		ins.Close()
		del.Close()
		return err
	}
	s.vec.Store(&vecState{mode: VectorModeGoScan, reason: reason})
	s.ws.swapVec(ins, del)
	s.ws.bulk.close() // go-scan: vectors go to vec_plain
	s.ws.bulk = nil
	return s.loadIndex(ctx)
}

// prepareVecStmts prepares the vector insert and delete of a mode on db.
func prepareVecStmts(ctx context.Context, db *sql.DB, plain bool) (ins, del *sql.Stmt, err error) {
	insSQL, delSQL := vecSQL(plain)
	if ins, err = db.PrepareContext(ctx, insSQL); err != nil {
		return nil, nil, fmt.Errorf("%.40s: %w", insSQL, err)
	}
	if del, err = db.PrepareContext(ctx, delSQL); err != nil {
		ins.Close()
		return nil, nil, fmt.Errorf("%.40s: %w", delSQL, err)
	}
	return ins, del, nil
}

// swapVec replaces the vector statements, closing the old ones.
func (ws *writeStmts) swapVec(ins, del *sql.Stmt) {
	if ws.vecInsert != nil {
		ws.vecInsert.Close()
	}
	if ws.vecDelete != nil {
		ws.vecDelete.Close()
	}
	ws.vecInsert, ws.vecDelete = ins, del
}
