package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
)

// CheckFileConfig says how CheckFile may touch the file.
type CheckFileConfig struct {
	// ReadOnly opens the file read-only and skips FTS5's integrity-check,
	// which SQLite treats as a write. Use it while a worker holds the file:
	// the check is then one more WAL reader.
	ReadOnly bool
}

// CheckFile checks the shard file at path without opening it as a Shard
// (no migration, no re-index, nothing loaded): SQLite's PRAGMA
// integrity_check and, unless cfg.ReadOnly, FTS5's integrity-check of the
// keyword index. Without ReadOnly the caller must hold the file alone (the
// data directory's lock). A damaged file returns an error wrapping
// ErrInconsistent that quotes SQLite's first findings.
func CheckFile(ctx context.Context, path string, cfg CheckFileConfig) error {
	if err := checkFile(ctx, path, cfg); err != nil {
		return fmt.Errorf("check file %s: %w", path, err)
	}
	return nil
}

func checkFile(ctx context.Context, path string, cfg CheckFileConfig) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	registerDriver()
	params := fmt.Sprintf("_busy_timeout=%d", busyTimeoutMS)
	if cfg.ReadOnly {
		params = "mode=ro&" + params
	}
	db, err := sql.Open(driverName, dsn(path, params))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity_check: %v: %w", err, ErrInconsistent)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return fmt.Errorf("integrity_check: %v: %w", err, ErrInconsistent)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return fmt.Errorf("integrity_check: %v: %w", err, ErrInconsistent)
	}
	if len(problems) > 0 {
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		return fmt.Errorf("integrity_check: %s: %w", strings.Join(problems, "; "), ErrInconsistent)
	}
	if cfg.ReadOnly {
		return nil
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		return fmt.Errorf("fts5 integrity-check: %v: %w", err, ErrInconsistent)
	}
	return nil
}
