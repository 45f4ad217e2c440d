package eval

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"lowercase distinct", "When did Caroline go? when, CAROLINE!", []string{"when", "did", "caroline", "go"}},
		{"apostrophe splits", "Ann's dog", []string{"ann", "s", "dog"}},
		{"digits", "in 2023 or 7", []string{"in", "2023", "or", "7"}},
		{"Han as bigrams", "卡罗琳去了北京", []string{"卡罗", "罗琳", "琳去", "去了", "了北", "北京"}},
		{"mixed", "AI技术好", []string{"ai", "技术", "术好"}},
		{"one Han character", "猫", []string{"猫"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Words(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Words(%q)=%q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got, want := MatchQuery([]string{"a", `b"c`}), `"a" OR "b""c"`; got != want {
		t.Fatalf("MatchQuery()=%s, want %s", got, want)
	}
}

func TestBaseline(t *testing.T) {
	ctx := context.Background()
	msgs := []Message{
		{SessionKey: "c1", SessionID: "s1", Seq: 1, ID: "D1:1", Speaker: "Ann", Text: "I adopted a puppy named Biscuit last week."},
		{SessionKey: "c1", SessionID: "s1", Seq: 2, ID: "D1:2", Speaker: "Bob", Text: "Lovely! I went hiking in the mountains."},
		{SessionKey: "c1", SessionID: "s1", Seq: 3, ID: "D1:3", Speaker: "Ann", Text: "Running is my hobby on weekends."},
		{SessionKey: "c2", SessionID: "s1", Seq: 1, ID: "D1:1", Speaker: "Cat", Text: "Biscuit the puppy is mine, in another conversation."},
		{SessionKey: "zh", SessionID: "s1", Seq: 1, ID: "D1:1", Speaker: "李雷", Text: "我上个月搬到了杭州，工作很忙。"},
		{SessionKey: "zh", SessionID: "s1", Seq: 2, ID: "D1:2", Speaker: "韩梅梅", Text: "我最近在学做饭，尤其是红烧肉。"},
		{SessionKey: "zh", SessionID: "s1", Seq: 3, ID: "D1:3", Speaker: "李雷", Text: "周末我们去爬山吧。"},
	}
	b, err := OpenBaseline(ctx, filepath.Join(t.TempDir(), "baseline.db"), msgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	tests := []struct {
		name       string
		sessionKey string
		question   string
		wantFirst  string
		wantN      int
	}{
		{"the puppy, within its conversation", "c1", "Which puppy did Ann adopt?", "D1:1", -1},
		{"porter stems the question", "c1", "Who likes to run?", "D1:3", 1},
		{"speaker is indexed", "c1", "What did Bob say?", "D1:2", 1},
		{"no word matches", "c1", "Zebra xylophone?", "", 0},
		{"Chinese question", "zh", "李雷搬到了哪个城市？", "D1:1", -1},
		{"Chinese question, another message", "zh", "韩梅梅在学做什么菜？", "D1:2", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := b.Search(ctx, tt.sessionKey, tt.question, 50)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantN >= 0 && len(hits) != tt.wantN {
				t.Fatalf("Search(%q) gave %d hits, want %d", tt.question, len(hits), tt.wantN)
			}
			for _, h := range hits {
				if h.SessionKey != tt.sessionKey || len(h.MessageIDs) != 1 {
					t.Fatalf("hit %+v: want one message of %s", h, tt.sessionKey)
				}
			}
			if tt.wantFirst != "" && (len(hits) == 0 || hits[0].MessageIDs[0] != tt.wantFirst) {
				t.Fatalf("Search(%q) first hit %v, want %s", tt.question, hits, tt.wantFirst)
			}
			if tt.wantFirst != "" {
				if got := Score(Units(hits, nil), []string{tt.wantFirst}); got.RR != 1 || got.Recall[5] != 1 {
					t.Fatalf("Score(baseline hits)= rr %v rec@5 %v, want 1 1", got.RR, got.Recall[5])
				}
			}
		})
	}
}
