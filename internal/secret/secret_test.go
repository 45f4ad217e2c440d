package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMINDEX_T_A", "")
	t.Setenv("MEMINDEX_T_A_FILE", "")
	t.Setenv("MEMINDEX_T_B", "")
	t.Setenv("MEMINDEX_T_B_FILE", file)
	if got, err := Get("MEMINDEX_T_A", "MEMINDEX_T_B"); err != nil || got != "from-file" {
		t.Fatalf("Get = %q, %v; want the second name's file, trimmed", got, err)
	}
	t.Setenv("MEMINDEX_T_A", " direct ")
	if got, err := Get("MEMINDEX_T_A", "MEMINDEX_T_B"); err != nil || got != "direct" {
		t.Fatalf("Get = %q, %v; want the first name's value, trimmed", got, err)
	}
	t.Setenv("MEMINDEX_T_A", "")
	t.Setenv("MEMINDEX_T_A_FILE", filepath.Join(t.TempDir(), "missing"))
	if _, err := Get("MEMINDEX_T_A"); err == nil || !strings.Contains(err.Error(), "MEMINDEX_T_A_FILE") {
		t.Fatalf("Get with a missing file = %v, want an error naming MEMINDEX_T_A_FILE", err)
	}
	t.Setenv("MEMINDEX_T_A_FILE", "")
	if got, err := Get("MEMINDEX_T_A"); err != nil || got != "" {
		t.Fatalf("Get of nothing set = %q, %v; want empty", got, err)
	}
}

func TestRedact(t *testing.T) {
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte("sk-from-file-99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMINDEX_T_KEY", "")
	t.Setenv("MEMINDEX_T_KEY_FILE", file)
	t.Setenv("MEMINDEX_T_PW", "hunter22")
	t.Setenv("MEMINDEX_T_SHORT", "ab")
	t.Setenv("MEMINDEX_T_UNSET", "")
	in := "auth hunter22 failed with key sk-from-file-99; ab stays"
	got := Redact(in, "[redacted]", "MEMINDEX_T_KEY", "MEMINDEX_T_PW", "MEMINDEX_T_SHORT", "MEMINDEX_T_UNSET")
	if want := "auth [redacted] failed with key [redacted]; ab stays"; got != want {
		t.Fatalf("Redact() = %q, want %q", got, want)
	}
}
