package cliconfig

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Size is a flag of a size in bytes: a number with an optional unit (KiB,
// MiB, GiB, KB, MB, GB; B or none for bytes). Register it with a usage
// that names a `size`, so FlagType describes it.
type Size int64

var _ flag.Value = (*Size)(nil)

// String returns the size in bytes.
func (b *Size) String() string {
	if b == nil || *b == 0 {
		return "0"
	}
	return strconv.FormatInt(int64(*b), 10)
}

// Set parses s (ParseSize).
func (b *Size) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	*b = Size(v)
	return nil
}

// ParseSize returns the bytes of s, a whole number with an optional unit
// (KiB, MiB, GiB, KB, MB, GB, B), spaces allowed before the unit; a
// negative, fractional or overflowing size is an error.
func ParseSize(s string) (int64, error) {
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
