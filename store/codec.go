package store

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// noTime marks an unknown time in the in-memory index (NULL in SQLite).
const noTime = math.MinInt64

var (
	minNanoTime = time.Unix(0, math.MinInt64+1)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

// nanos returns t as unix nanoseconds, clamped to the representable range
// (years 1678..2262), and noTime for the zero time.
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return noTime
	case t.Before(minNanoTime):
		return minNanoTime.UnixNano()
	case t.After(maxNanoTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// timeArg is the SQL value of t: unix nanoseconds, NULL for the zero time.
func timeArg(t time.Time) any {
	n := nanos(t)
	if n == noTime {
		return nil
	}
	return n
}

// nullNanos converts a scanned time column to the in-memory form.
func nullNanos(n sql.NullInt64) int64 {
	if !n.Valid {
		return noTime
	}
	return n.Int64
}

// timeOf converts a scanned time column back to a UTC time.
func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// encodeVector appends v as float32 little-endian (the vec0 BLOB format).
func encodeVector(dst []byte, v []float32) []byte {
	off := len(dst)
	need := off + 4*len(v)
	if cap(dst) < need {
		nd := make([]byte, off, need)
		copy(nd, dst)
		dst = nd
	}
	dst = dst[:need]
	b := dst[off:]
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return dst
}

// decodeVector appends the float32 little-endian BLOB b to dst.
func decodeVector(dst []float32, b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return dst, fmt.Errorf("vector blob of %d bytes is not float32", len(b))
	}
	for i := 0; i+4 <= len(b); i += 4 {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return dst, nil
}
