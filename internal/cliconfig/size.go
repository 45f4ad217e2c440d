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

// AutoSize is a Size flag that also takes "auto" (any case): a size the
// program works out when it reads the flag (Bytes).
type AutoSize struct {
	Auto bool
	Size Size
}

var _ flag.Value = (*AutoSize)(nil)

// String returns "auto" or the size in bytes.
func (a *AutoSize) String() string {
	switch {
	case a == nil:
		return "0"
	case a.Auto:
		return "auto"
	}
	return a.Size.String()
}

// Set takes "auto" or a size (ParseSize).
func (a *AutoSize) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		*a = AutoSize{Auto: true}
		return nil
	}
	var v Size
	if err := v.Set(s); err != nil {
		return fmt.Errorf("%w (or auto)", err)
	}
	*a = AutoSize{Size: v}
	return nil
}

// Bytes returns the size, or what auto returns when it is auto.
func (a AutoSize) Bytes(auto func() int64) int64 {
	if a.Auto {
		return auto()
	}
	return int64(a.Size)
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
