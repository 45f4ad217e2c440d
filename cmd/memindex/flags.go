package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// envDuration returns the environment variable name parsed as a duration,
// or def when unset or not a duration.
func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

// envBool returns the boolean environment variable name, or def when
// unset; a value that is not a boolean is an error naming the variable.
func envBool(name string, def bool) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: want true or false", name, v)
	}
	return b, nil
}

// sizeFlag is a flag of a size in bytes: a number with an optional unit
// (KiB, MiB, GiB, KB, MB, GB; B or none for bytes).
type sizeFlag int64

var _ flag.Value = (*sizeFlag)(nil)

func (b *sizeFlag) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *sizeFlag) Set(s string) error {
	v, err := parseByteSize(s)
	if err != nil {
		return err
	}
	*b = sizeFlag(v)
	return nil
}

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (512MiB, 2GiB, 1500MB)", s)
	}
	return v * mult, nil
}
