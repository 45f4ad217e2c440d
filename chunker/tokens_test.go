package chunker

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want int
	}{
		{"empty", "", 0},
		{"one byte", "a", 1},
		{"four bytes", "abcd", 1},
		{"five bytes", "abcde", 2},
		{"sentence", "The quick brown fox jumps over the lazy dog.", 11},
		{"long ascii", strings.Repeat("x", 1001), 251},
		{"kanji", "日本語", 3},
		{"kana", "ひらがなカタカナ", 8},
		{"hangul", "안녕하세요", 5},
		{"cjk punctuation", "。、「」", 4},
		{"fullwidth", "！？", 2},
		{"cjk extension b", "𠀀", 1},
		{"mixed", "Tokyo 東京 trip", 2 + 3},         // 10 narrow bytes, 2 wide
		{"accented", "café crème", 3},             // 12 bytes
		{"emoji", "😀😀", 2},                        // 8 bytes
		{"zwj emoji", "👩‍💻", 3},                   // 11 bytes
		{"invalid utf-8", "\xff\xfe", 1},          // counted as bytes
		{"ascii then wide", "abcdefghij日", 3 + 1}, // crosses the 8-byte fast path
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EstimateTokens(tt.s); got != tt.want {
				t.Fatalf("EstimateTokens(%q)=%d, want %d", tt.s, got, tt.want)
			}
		})
	}
}

func TestEstimateTokensAllocs(t *testing.T) {
	s := strings.Repeat("hello 世界 😀 ", 50)
	if got := testing.AllocsPerRun(100, func() { EstimateTokens(s) }); got != 0 {
		t.Fatalf("EstimateTokens allocs=%v, want 0", got)
	}
}

// estimateRef is a plain reference of EstimateTokens.
func estimateRef(s string) int {
	narrow, wide := 0, 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if isWide(r) {
			wide++
		} else {
			narrow += n
		}
		i += n
	}
	return wide + (narrow+3)/4
}

func FuzzEstimateTokens(f *testing.F) {
	for _, s := range []string{"", "a", "hello world", "日本語のテキスト", "😀👩‍💻", "\xff", "abcdefgh日本"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		got := EstimateTokens(a)
		if want := estimateRef(a); got != want {
			t.Fatalf("EstimateTokens(%q)=%d, want %d", a, got, want)
		}
		if a != "" && (got < 1 || got > len(a)) {
			t.Fatalf("EstimateTokens(%q)=%d, want in [1, %d]", a, got, len(a))
		}
		if utf8.ValidString(a) && utf8.ValidString(b) {
			// Joining valid texts never costs more than the parts.
			if ab, sum := EstimateTokens(a+b), got+EstimateTokens(b); ab > sum {
				t.Fatalf("EstimateTokens(%q)=%d, want <= %d", a+b, ab, sum)
			}
		}
	})
}

func BenchmarkEstimateTokens(b *testing.B) {
	for _, tc := range []struct{ name, s string }{
		{"latin", strings.Repeat("We met at the cafe near the station and talked about the trip. ", 16)},
		{"cjk", strings.Repeat("駅の近くのカフェで会って、旅行について話しました。", 16)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.s)))
			for b.Loop() {
				EstimateTokens(tc.s)
			}
		})
	}
}
