package eval

import (
	"fmt"
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want map[string]Half
	}{
		{"empty", nil, map[string]Half{}},
		{"one", []string{"c"}, map[string]Half{"c": HalfA}},
		{"sorted order alternates", []string{"conv-30", "conv-26", "conv-41", "conv-26"},
			map[string]Half{"conv-26": HalfA, "conv-30": HalfB, "conv-41": HalfA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Split(tt.keys); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Split(%q)=%v, want %v", tt.keys, got, tt.want)
			}
		})
	}
}

func TestSplitIsDeterministicDisjointAndCoversAll(t *testing.T) {
	var keys []string
	for i := 0; i < 37; i++ {
		keys = append(keys, fmt.Sprintf("k%03d", (i*17)%37))
	}
	rev := append([]string(nil), keys...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	got := Split(keys)
	if again := Split(rev); !reflect.DeepEqual(got, again) {
		t.Fatalf("Split depends on the order of its input")
	}
	var a, b int
	for _, k := range keys {
		switch got[k] {
		case HalfA:
			a++
		case HalfB:
			b++
		default:
			t.Fatalf("Split left %s out", k)
		}
	}
	if len(got) != len(keys) || a != 19 || b != 18 {
		t.Fatalf("Split: %d keys, A %d, B %d; want 37, 19, 18", len(got), a, b)
	}
}
