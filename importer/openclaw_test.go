package importer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"memindex"
	"memindex/importer"
)

// sampleDir holds the sample OpenClaw transcript and its sessions.json.
const sampleDir = "testdata/openclaw/agents/main/sessions"

const (
	sampleKey = "agent:main:whatsapp:direct:+4915112345678"
	sampleID  = "4f1c2a9e-7b3d-4e8a-9c61-2d5b8e0f3a17"
)

// parseAll parses the named inputs and returns the messages and summary.
func parseAll(t *testing.T, cfg importer.Config, names ...string) ([]importer.Message, importer.Summary) {
	t.Helper()
	ins, err := importer.Inputs(names, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	return parseInputs(t, cfg, ins)
}

func parseInputs(t *testing.T, cfg importer.Config, ins []importer.Input) ([]importer.Message, importer.Summary) {
	t.Helper()
	if cfg.Namespace == "" {
		cfg.Namespace = "demo"
	}
	var msgs []importer.Message
	sum, err := importer.Parse(context.Background(), ins, cfg, func(m importer.Message) error {
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return msgs, sum
}

// parseText parses one stdin input holding text.
func parseText(t *testing.T, cfg importer.Config, text string) ([]importer.Message, importer.Summary) {
	t.Helper()
	ins, err := importer.Inputs([]string{"-"}, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return parseInputs(t, cfg, ins)
}

// TestOpenClawSample maps every record kind of the sample transcript: the
// header and sessions.json give the session, user and assistant messages
// their text parts joined, tool calls, tool results, thinking-only and
// non-message entries are skipped and counted by reason.
func TestOpenClawSample(t *testing.T) {
	msgs, sum := parseAll(t, importer.Config{}, sampleDir)
	file := filepath.Join(sampleDir, sampleID+".jsonl")
	type row struct {
		seq                   int64
		line                  int
		id, role, ts, textHas string
	}
	want := []row{
		{1, 5, "d4e5f607", "user", "2026-11-28T09:12:00.118Z", "moving to Lisbon in May"},
		{2, 6, "e5f60718", "assistant", "2026-11-28T09:12:06.532Z", "Congratulations on the move!"},
		{3, 7, "f6071829", "user", "2026-11-28T09:14:41.003Z", "Does the upright piano fit"},
		{4, 10, "293a4b5c", "assistant", "2026-11-28T09:14:52.441Z", "so it fits with room for the bookshelf"},
		{5, 14, "5c6d7e8f", "user", "2026-11-28T18:30:15.902Z", "the movers come on May 12"},
		{6, 15, "6d7e8f90", "assistant", "2026-11-28T18:30:19.377Z", "Noted: movers on May 12.\nMiso flies on May 14"},
	}
	if len(msgs) != len(want) {
		t.Fatalf("Parse gave %d messages, want %d: %+v", len(msgs), len(want), msgs)
	}
	for i, w := range want {
		m := msgs[i]
		ev := m.Event
		if ev.Seq != w.seq || m.Line != w.line || ev.ID != w.id || ev.Role != w.role || ev.Timestamp != w.ts ||
			!strings.Contains(ev.Text, w.textHas) || ev.SessionKey != sampleKey || ev.SessionID != sampleID ||
			ev.Namespace != "demo" || ev.Type != memindex.TypeMessage || m.File != file {
			t.Errorf("message %d = %+v (file %s line %d), want %+v", i, ev, m.File, m.Line, w)
		}
		if strings.Contains(ev.Text, "thinking") || strings.Contains(ev.Text, "iVBOR") {
			t.Errorf("message %d holds thinking or image data: %q", i, ev.Text)
		}
	}
	wantSkipped := map[string]int64{
		"model_change": 1, "thinking_level_change": 1, "custom": 1, "custom_message": 1, "compaction": 1,
		"session_info": 1, "message:tool-calls": 1, "message:toolResult": 1, "blank": 1,
	}
	if !reflect.DeepEqual(sum.Skipped, wantSkipped) {
		t.Errorf("Skipped = %v, want %v", sum.Skipped, wantSkipped)
	}
	if sum.Files != 1 || sum.Sessions != 1 || sum.Messages != 6 || sum.BadLines != 0 || sum.BadFiles != 0 {
		t.Errorf("summary %+v, want 1 file, 1 session, 6 messages, nothing bad", sum)
	}
}

// TestOpenClawToolResults imports tool results as role tool when asked.
func TestOpenClawToolResults(t *testing.T) {
	msgs, sum := parseAll(t, importer.Config{ToolResults: true}, sampleDir)
	if len(msgs) != 7 || sum.Skipped["message:toolResult"] != 0 {
		t.Fatalf("with ToolResults: %d messages, skipped %v; want 7 and no toolResult skipped", len(msgs), sum.Skipped)
	}
	tool := msgs[3].Event
	if tool.Role != "tool" || tool.Speaker != "web_search" || tool.Seq != 4 || !strings.Contains(tool.Text, "148-152 cm") {
		t.Fatalf("tool result = %+v, want role tool, speaker web_search, seq 4", tool)
	}
}

// TestOpenClawSessionKey: without a sessions.json naming the session, the
// key is Config.SessionKey (default "openclaw"); read from stdin too.
func TestOpenClawSessionKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sampleDir, sampleID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := parseText(t, importer.Config{}, string(data))
	if len(msgs) != 6 || msgs[0].Event.SessionKey != importer.DefaultSessionKey || msgs[0].Event.SessionID != sampleID || msgs[0].File != "-" {
		t.Fatalf("from stdin: %d messages, first %+v; want 6 with key %q", len(msgs), msgs[0], importer.DefaultSessionKey)
	}
	msgs, _ = parseText(t, importer.Config{SessionKey: "telegram:42"}, string(data))
	if msgs[0].Event.SessionKey != "telegram:42" {
		t.Fatalf("SessionKey set: key %q, want telegram:42", msgs[0].Event.SessionKey)
	}
}

// TestOpenClawBadLines: each bad line is reported with its number and
// reason, and the lines after it are imported.
func TestOpenClawBadLines(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":3,"id":"s-1","timestamp":"2026-11-28T09:00:00Z","cwd":"/w"}`,
		`{"type":"message","id":"a","timestamp":"2026-11-28T09:00:01Z","message":{"role":"user","content":"first"}}`,
		`{"type":"message","id":"b",`,
		`{"id":"c"}`,
		`{"type":"message","id":"d"}`,
		`{"type":"message","id":"e","timestamp":"2026-11-28T09:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("x", memindex.MaxTextBytes+1) + `"}]}}`,
		`[1,2]`,
		`{"type":"message","id":"f","timestamp":"2026-11-28T09:00:03Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"}]}}`,
		`{"type":"message","id":"g","message":{"role":"bashExecution","command":"ls","output":"a"}}`,
		`{"type":"message","id":"h","message":{"role":"user","content":"last","timestamp":1795857120117}}`,
	}, "\n")
	msgs, sum := parseText(t, importer.Config{Format: importer.FormatOpenClaw}, in)
	if len(msgs) != 2 || msgs[0].Event.Text != "first" || msgs[1].Event.Text != "last" || msgs[1].Event.Seq != 2 {
		t.Fatalf("messages %+v, want first (seq 1) and last (seq 2)", msgs)
	}
	if msgs[1].Event.Timestamp != "2026-11-28T09:12:00.117Z" {
		t.Errorf("timestamp from the message's ms = %q, want 2026-11-28T09:12:00.117Z", msgs[1].Event.Timestamp)
	}
	want := map[int]string{3: "not JSON", 4: "entry has no type", 5: "no message object", 6: "field text: is 65537 bytes", 7: "not a JSON object but an array"}
	if sum.BadLines != int64(len(want)) || len(sum.Problems) != len(want) {
		t.Fatalf("problems %v, want lines %v", sum.Problems, want)
	}
	for _, p := range sum.Problems {
		if !strings.Contains(p.Reason, want[p.Line]) || p.File != "-" {
			t.Errorf("problem %s; want line %d: %q", p, p.Line, want[p.Line])
		}
	}
	if sum.Skipped["message:no-text"] != 1 || sum.Skipped["message:bashExecution"] != 1 {
		t.Errorf("skipped %v, want one message:no-text and one message:bashExecution", sum.Skipped)
	}
}

// TestOpenClawBadFiles: a file without a header (with --format openclaw),
// an empty file and a second file of the same session are each reported
// whole; the good file is imported.
func TestOpenClawBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"type":"session","id":"s-1"}` + "\n" + `{"type":"message","id":"a","message":{"role":"user","content":"hello"}}` + "\n"
	write("a.jsonl", good)
	write("b.jsonl.reset.2026-11-01T00-00-00.000Z", good)
	write("c.jsonl", `{"type":"message","id":"a","message":{"role":"user","content":"no header"}}`+"\n")
	write("d.jsonl", "\n\n")
	write("e.jsonl.bak", good)
	write("notes.txt", "not a transcript")
	_, sum := parseAll(t, importer.Config{Format: importer.FormatOpenClaw}, dir)
	if sum.Files != 4 || sum.Messages != 1 || sum.BadFiles != 3 {
		t.Fatalf("summary %+v, want 4 files read, 1 message, 3 bad files", sum)
	}
	want := []string{"already imported from " + filepath.Join(dir, "a.jsonl"), "not an OpenClaw session header", "empty"}
	for i, p := range sum.Problems {
		if p.Line != 0 || !strings.Contains(p.Reason, want[i]) {
			t.Errorf("problem %d = %s, want a file problem with %q", i, p, want[i])
		}
	}
}

// TestAutoDetect: a directory of both formats, each file read in its own.
func TestAutoDetect(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "z-other.jsonl"), []byte("{\"cron\":1}\n{\"cron\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, from string }{
		{"oc.jsonl", filepath.Join(sampleDir, sampleID+".jsonl")},
		{"plain.jsonl", ""},
	} {
		data := []byte(`{"sessionKey":"k","sessionId":"i","text":"plain line"}` + "\n")
		if f.from != "" {
			var err error
			if data, err = os.ReadFile(f.from); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	msgs, sum := parseAll(t, importer.Config{}, dir)
	if len(msgs) != 7 || sum.Sessions != 2 || msgs[6].Event.Text != "plain line" || msgs[6].Event.Seq != 1 {
		t.Fatalf("auto-detect: %d messages in %d sessions, last %+v; want 6 OpenClaw + 1 plain", len(msgs), sum.Sessions, msgs[len(msgs)-1])
	}
	if sum.BadFiles != 1 || sum.BadLines != 0 || !strings.Contains(sum.Problems[0].Reason, "neither an OpenClaw transcript") || !strings.HasSuffix(sum.Problems[0].File, "z-other.jsonl") {
		t.Fatalf("a JSONL file of neither kind: %+v, want it reported once as a bad file", sum)
	}
	// Named as jsonl, its every line is read and reported.
	_, sum = parseAll(t, importer.Config{Format: importer.FormatJSONL}, filepath.Join(dir, "z-other.jsonl"))
	if sum.BadLines != 2 || sum.BadFiles != 0 {
		t.Fatalf("--format jsonl: %+v, want 2 bad lines", sum)
	}
}

func TestInputsErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"none":        nil,
		"missing":     {filepath.Join(t.TempDir(), "nope.jsonl")},
		"empty dir":   {t.TempDir()},
		"stdin twice": {"-", "-"},
	} {
		if _, err := importer.Inputs(args, strings.NewReader("")); !errors.Is(err, importer.ErrInput) {
			t.Errorf("Inputs(%s) error = %v, want ErrInput", name, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	m, _ := importer.ParseMapping("text=.x")
	for name, cfg := range map[string]importer.Config{
		"no namespace":     {},
		"bad namespace":    {Namespace: "a b"},
		"unknown format":   {Namespace: "n", Format: "csv"},
		"map and openclaw": {Namespace: "n", Format: importer.FormatOpenClaw, Mapping: m},
		"bad session key":  {Namespace: "n", SessionKey: "a\x01"},
	} {
		if err := cfg.Validate(); !errors.Is(err, importer.ErrConfig) {
			t.Errorf("%s: Validate() = %v, want ErrConfig", name, err)
		}
	}
}
