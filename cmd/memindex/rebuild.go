package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockData takes the data directory's lock, so that one worker (or one
// rebuild) uses it at a time. The lock ends with the process or release.
func lockData(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner, _ := os.ReadFile(f.Name())
		f.Close()
		return nil, fmt.Errorf("data directory %s is in use by another memindex process (%s); stop it first or use another --data",
			dir, strings.TrimSpace(string(owner)))
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func runRebuild(_ context.Context, args []string, stdout io.Writer) error {
	fl := newFlagSet("rebuild", "--data DIR (--partition N ... | --all)")
	data := fl.String("data", env("MEMINDEX_DATA", "./data"), "data directory of the stopped worker (MEMINDEX_DATA)")
	all := fl.Bool("all", false, "rebuild every shard")
	var parts []int
	fl.Func("partition", "partition to rebuild (repeatable)", func(s string) error {
		p, err := strconv.Atoi(s)
		if err != nil || p < 0 {
			return fmt.Errorf("%q is not a partition number", s)
		}
		parts = append(parts, p)
		return nil
	})
	if _, err := parseArgs(fl, args); err != nil {
		return err
	}
	if !*all && len(parts) == 0 {
		fl.Usage()
		return errors.New("name --partition N or --all")
	}
	release, err := lockData(*data)
	if err != nil {
		return err
	}
	defer release()
	root := filepath.Join(*data, "shards")
	dir := filepath.Join(root, readActive(root))
	if *all {
		matches, _ := filepath.Glob(filepath.Join(dir, "p*.db"))
		for _, m := range matches {
			if p, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "p"), ".db")); err == nil {
				parts = append(parts, p)
			}
		}
	}
	for _, p := range parts {
		removed := 0
		for _, suffix := range []string{"", "-wal", "-shm"} {
			err := os.Remove(shardPath(dir, p) + suffix)
			switch {
			case err == nil:
				removed++
			case !errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("partition %d: %w", p, err)
			}
		}
		if removed == 0 {
			fmt.Fprintf(stdout, "partition %d: no shard file; it is built from the stream on the next start anyway\n", p)
			continue
		}
		fmt.Fprintf(stdout, "partition %d: shard removed; the next `memindex serve` rebuilds it from the stream\n", p)
	}
	return nil
}
