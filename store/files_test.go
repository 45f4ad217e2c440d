package store

import (
	"context"
	"testing"
)

func TestApplyFilesAndScopes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testDims)
	vec := func(i int) []float32 {
		v := make([]float32, testDims)
		v[i%testDims] = 1
		return v
	}
	file := func(path, dir, hash string, texts ...string) FileUpsert {
		f := FileUpsert{Namespace: "ns", Path: path, DirPath: dir, Hash: hash, Content: "# x"}
		for i, tx := range texts {
			f.Chunks = append(f.Chunks, Chunk{ID: path + hash + string(rune('a'+i)), SeqStart: int64(i*10 + 1), SeqEnd: int64(i*10 + 5), Text: tx, Vector: vec(i)})
		}
		return f
	}
	b := Batch{Seq: 1,
		Rechunk: []SessionChunks{{Session: SessionRef{Namespace: "ns", SessionKey: "chat", SessionID: "s1"}, From: 1,
			Chunks: []Chunk{{ID: "msg", Source: "sessions", SeqStart: 1, SeqEnd: 1, Text: "kiwi talk in a chat", Vector: vec(0)}}}},
		Files: []FileUpsert{
			file("global.md", "", "h1", "kiwi notes everywhere", "banana section"),
			file("proj/a.md", "/work/a", "h1", "kiwi plans of project a"),
			file("proj/b.md", "/work/b", "h1", "kiwi plans of project b"),
		}}
	if _, err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := s.FileHash(ctx, "ns", "proj/a.md"); err != nil || !ok || h != "h1" {
		t.Fatalf("FileHash()=%q, %v, %v; want h1", h, ok, err)
	}
	ids := func(cs []Candidate) map[string]bool {
		m := map[string]bool{}
		for _, c := range cs {
			m[c.ID] = true
		}
		return m
	}
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"everything", Filter{}, []string{"msg", "global.mdh1a", "proj/a.mdh1a", "proj/b.mdh1a"}},
		{"project a sees its files, global ones and sessions", Filter{DirPath: "/work/a"}, []string{"msg", "global.mdh1a", "proj/a.mdh1a"}},
		{"files only", Filter{Sources: []string{"files"}}, []string{"global.mdh1a", "proj/a.mdh1a", "proj/b.mdh1a"}},
		{"sessions only", Filter{Sources: []string{"sessions"}}, []string{"msg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kw, err := s.KeywordSearch(ctx, "ns", "kiwi", tt.f, 10)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := s.VectorSearch(ctx, "ns", vec(0), tt.f, 10)
			if err != nil {
				t.Fatal(err)
			}
			gotKW, gotVec := ids(kw), ids(vs)
			for _, id := range tt.want {
				if !gotKW[id] || !gotVec[id] {
					t.Errorf("%s missing: keyword %v, vector %v", id, gotKW, gotVec)
				}
			}
			if len(gotKW) != len(tt.want) {
				t.Errorf("KeywordSearch(%+v) = %v, want %v", tt.f, gotKW, tt.want)
			}
			for id := range gotVec {
				if !gotKW[id] && id != "global.mdh1b" { // the banana section has a vector, no kiwi
					t.Errorf("VectorSearch(%+v) returned %s, outside %v", tt.f, id, tt.want)
				}
			}
		})
	}
	recs, err := s.ChunksByID(ctx, []string{"proj/a.mdh1a"})
	if r := recs["proj/a.mdh1a"]; err != nil || r.Path != "proj/a.md" || r.DirPath != "/work/a" || r.Source != "files" || r.SeqStart != 1 || r.SeqEnd != 5 {
		t.Fatalf("Chunks() = %+v, %v; want the file's path, scope and lines", r, err)
	}

	// A changed file replaces its chunks; a deleted one leaves nothing.
	b2 := Batch{Seq: 2, Files: []FileUpsert{file("global.md", "", "h2", "mango only now")}, DeleteFiles: []FileRef{{Namespace: "ns", Path: "proj/b.md"}}}
	if _, err := s.Apply(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.KeywordSearch(ctx, "ns", "kiwi", Filter{Sources: []string{"files"}}, 10); len(got) != 1 || got[0].ID != "proj/a.mdh1a" {
		t.Fatalf("after replace+delete, kiwi in files = %v, want only proj/a.md", got)
	}
	if _, ok, _ := s.FileHash(ctx, "ns", "proj/b.md"); ok {
		t.Fatal("deleted file still has a hash")
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if c := counts(t, s, "ns"); c.chunks != 3 || c.fts != 3 || c.vec != 3 {
		t.Fatalf("rows after replace+delete = %+v, want 3 chunks, FTS rows and vectors", c)
	}
}
