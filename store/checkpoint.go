package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mattn/go-sqlite3"
)

// A shard's WAL is checkpointed (its frames copied into the database file)
// by a goroutine with a connection of its own, not by the writer. SQLite's
// default is the writer's own automatic checkpoint, run inside the commit
// that takes the WAL past 1,000 pages: with synchronous=NORMAL it syncs the
// WAL and the file (two fsyncs) and copies every frame while the writer
// waits, and a hot namespace's batch of 1,000 messages took 43 µs a
// message to commit with it against 26 without (BenchmarkApplyHotNamespace).
//
// The writer kicks the checkpointer after each commit; a PASSIVE
// checkpoint takes no write lock, so the next batch is built and committed
// while it runs. Once it has copied every frame, the writer's next
// transaction starts the WAL again from its beginning, so the WAL holds
// about one batch. Should the checkpointer fall behind (a long read holds
// the WAL, a batch larger than the WAL's usual size), the writer's own
// automatic checkpoint is kept at walValveBytes as the bound.

// walValveBytes is the WAL size past which the writer checkpoints in its
// commit itself: its wal_autocheckpoint is this many bytes of the file's
// pages (against about 20 MiB a batch of 4,000 messages writes).
var walValveBytes = 32 << 20

// checkpointer runs PASSIVE checkpoints of one shard when kicked.
type checkpointer struct {
	db     *sql.DB
	kickc  chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	// kicks counts kick calls; served is the count of kicks seen before
	// the last checkpoint began (all of them had committed by then).
	kicks, served atomic.Uint64
	runs          atomic.Int64
	// lastErr is the last checkpoint's error ("" when it succeeded).
	lastErr atomic.Value
}

// startCheckpointer opens a connection to the shard file at path with
// params and starts the goroutine that checkpoints through it.
func startCheckpointer(path, params string) (*checkpointer, error) {
	db, err := sql.Open(driverName, dsn(path, params))
	if err != nil {
		return nil, fmt.Errorf("checkpointer: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, kickc: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	c.lastErr.Store("")
	go c.run(ctx)
	return c, nil
}

// kick asks for a checkpoint of what has been committed so far; it never
// blocks (kicks made while one is pending are served together). Nil-safe.
func (c *checkpointer) kick() {
	if c == nil {
		return
	}
	c.kicks.Add(1)
	select {
	case c.kickc <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kickc:
		}
		seen := c.kicks.Load()
		var busy, frames, copied int64
		err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
		if ctx.Err() != nil {
			return
		}
		c.runs.Add(1)
		var se sqlite3.Error
		if errors.As(err, &se) && se.Code == sqlite3.ErrBusy {
			err = nil // another checkpoint (the writer's bound) is running: not a failure
		}
		if err != nil {
			c.lastErr.Store(err.Error())
		} else {
			c.lastErr.Store("")
		}
		c.served.Store(seen)
	}
}

// stop ends the goroutine (a checkpoint in progress is interrupted) and
// closes its connection. Nil-safe.
func (c *checkpointer) stop() error {
	if c == nil {
		return nil
	}
	c.cancel()
	<-c.done
	return c.db.Close()
}

// Checkpoints returns how many WAL checkpoints the shard's checkpointer ran
// since Open and the last one's error ("" when it succeeded; 0 and "" for
// a read-only shard). They say how this process has kept the file, not
// what it holds, so they are not in Stats.
func (s *Shard) Checkpoints() (runs int64, lastErr string) { return s.ckpt.stats() }

// stats returns the checkpoints run and the last one's error.
func (c *checkpointer) stats() (runs int64, lastErr string) {
	if c == nil {
		return 0, ""
	}
	return c.runs.Load(), c.lastErr.Load().(string)
}
