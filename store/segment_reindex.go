package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// reindexBatch is how many chunks one re-index transaction rewrites: a few
// hundred milliseconds of Chinese segmentation at most.
const reindexBatch = 500

// reindexKeywords brings the FTS index of the shard file behind db (the
// writer) to tokenizerVersion, and returns how many chunks it (re)indexed.
// It runs at Open, before anything else reads or writes the shard. Nothing
// happens when meta 'tokenizer' already records the version; otherwise
// every chunk that is not in the index yet (fts_ver NULL: after migration
// 0004, 0006, 0007 or 0011) or holds CJK words of another version is rewritten: its FTS row
// deleted with its stored values, fts_seg/fts_words/fts_ver recomputed, its
// FTS row inserted. Chunks without CJK text (fts_ver 0) are not touched.
// Each batch of reindexBatch chunks is one transaction, so a crash loses
// at most one batch and the next Open resumes (done chunks carry the new
// fts_ver); the version is recorded in meta when every chunk is done.
// progress, when not nil, is called after each batch with the chunks done
// and the number there were to do.
func reindexKeywords(ctx context.Context, db *sql.DB, progress func(done, total int64)) (int64, error) {
	var v int64
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'tokenizer'`).Scan(&v)
	switch {
	case err == nil && v == tokenizerVersion:
		return 0, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return 0, fmt.Errorf("read tokenizer version: %w", err)
	}
	var total int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM chunks WHERE `+staleFTS, tokenizerVersion).Scan(&total); err != nil {
		return 0, fmt.Errorf("count chunks to index: %w", err)
	}
	var done, after int64
	for {
		n, last, err := reindexBatchTx(ctx, db, after)
		if err != nil {
			return done, fmt.Errorf("index chunks after rowid %d: %w", after, err)
		}
		done += n
		if progress != nil && n > 0 {
			progress(done, total)
		}
		if n < reindexBatch {
			break
		}
		after = last
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('tokenizer', ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, tokenizerVersion); err != nil {
		return done, fmt.Errorf("record tokenizer version: %w", err)
	}
	return done, nil
}

// staleFTS selects the chunks whose FTS row is missing or of another
// tokenizer version (the argument: tokenizerVersion).
const staleFTS = `(fts_ver IS NULL OR (fts_ver <> 0 AND fts_ver <> ?))`

// reindexBatchTx rewrites the FTS rows of up to reindexBatch stale chunks
// after rowid after in one transaction, and returns how many it rewrote and
// the last rowid.
func reindexBatchTx(ctx context.Context, db *sql.DB, after int64) (n, last int64, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	type row struct {
		rowid      int64
		text, body string
		words      sql.NullString
		context    string
		ns         string
		sk         string
		ver        sql.NullInt64
	}
	rows, err := tx.QueryContext(ctx, `SELECT rowid, text, fts_body, fts_words, context, ns, sk, fts_ver FROM chunks
		WHERE rowid > ? AND `+staleFTS+` ORDER BY rowid LIMIT ?`, after, tokenizerVersion, reindexBatch)
	if err != nil {
		return 0, 0, err
	}
	var batch []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.rowid, &r.text, &r.body, &r.words, &r.context, &r.ns, &r.sk, &r.ver); err != nil {
			rows.Close()
			return 0, 0, err
		}
		batch = append(batch, r)
	}
	if err := rows.Close(); err != nil {
		return 0, 0, err
	}
	if len(batch) == 0 {
		return 0, after, nil
	}
	del, err := tx.PrepareContext(ctx, sqlFTSDelete)
	if err != nil {
		return 0, 0, err
	}
	defer del.Close()
	ins, err := tx.PrepareContext(ctx, sqlFTSInsert)
	if err != nil {
		return 0, 0, err
	}
	defer ins.Close()
	upd, err := tx.PrepareContext(ctx, `UPDATE chunks SET fts_seg = ?, fts_words = ?, fts_ver = ?, ctx_seg = ? WHERE rowid = ?`)
	if err != nil {
		return 0, 0, err
	}
	defer upd.Close()
	for _, r := range batch {
		if r.ver.Valid { // in the index: delete it with the values it was indexed with
			if _, err := del.ExecContext(ctx, r.rowid, r.body, r.ns, r.words, r.sk); err != nil {
				return 0, 0, fmt.Errorf("fts delete %d: %w", r.rowid, err)
			}
		}
		fi := newFTSIndexed(r.text)
		cseg, _, ccjk := contextIndexForm(r.context)
		if ccjk {
			fi.ver = tokenizerVersion
		}
		if _, err := upd.ExecContext(ctx, fi.seg, fi.words, fi.ver, cseg, r.rowid); err != nil {
			return 0, 0, err
		}
		if _, err := ins.ExecContext(ctx, r.rowid, fi.body, r.ns, fi.words, r.sk); err != nil {
			return 0, 0, fmt.Errorf("fts insert %d: %w", r.rowid, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, err
	}
	return int64(len(batch)), batch[len(batch)-1].rowid, nil
}
