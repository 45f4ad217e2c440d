package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded schema step, named NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations ordered by version.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := map[int]string{}
	for _, p := range names {
		base := strings.TrimPrefix(p, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %q: name must be NNNN_name.sql", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := migrationFS.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies every embedded migration not yet recorded in
// schema_migrations, each in its own transaction together with its record.
// {{DIMS}} in a migration is replaced by dims. Without sqlite-vec (vec
// false) a statement creating a vec0 table is skipped; Open creates
// vec_chunks once the shard is opened with sqlite-vec (ensureVec0).
// Migrations apply in version order, whatever order they were added in: a
// file that lacks an earlier version than one it has gets it too.
func migrate(ctx context.Context, db *sql.DB, dims int, vec bool) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return err
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	applied := map[int]bool{}
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return err
	}
	maxKnown := 0
	if len(ms) > 0 {
		maxKnown = ms[len(ms)-1].version
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
		if v > maxKnown {
			rows.Close()
			return fmt.Errorf("version %d: %w", v, ErrSchemaTooNew)
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if !vec {
			m.sql = withoutVec0(m.sql)
		}
		if err := applyMigration(ctx, db, m, dims); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration, dims int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, strings.ReplaceAll(m.sql, "{{DIMS}}", strconv.Itoa(dims))); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixNano()); err != nil {
		return err
	}
	return tx.Commit()
}
