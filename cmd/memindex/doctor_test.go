package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memindex"
	"memindex/internal/doctor"
	"memindex/internal/natstest"
	"memindex/node"
	"memindex/store"
)

// doctorRun runs `memindex doctor --json` with args and returns its checks
// by name, its error and its output.
func doctorRun(t *testing.T, args ...string) (map[string]doctor.Check, string, error) {
	t.Helper()
	var out bytes.Buffer
	err := runDoctor(context.Background(), append([]string{"--json"}, args...), &out)
	var rep doctor.Report
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		t.Fatalf("doctor --json = %q (err %v): %v", out.String(), err, jerr)
	}
	m := map[string]doctor.Check{}
	for _, c := range rep.Checks {
		m[c.Name] = c
	}
	if rep.OK != (err == nil) {
		t.Errorf("doctor: ok=%t but err=%v", rep.OK, err)
	}
	return m, out.String(), err
}

func wantStatus(t *testing.T, checks map[string]doctor.Check, name, status string) doctor.Check {
	t.Helper()
	c, ok := checks[name]
	if !ok {
		t.Fatalf("doctor has no check %q: %+v", name, checks)
	}
	if c.Status != status {
		t.Fatalf("check %q = %s (%s; fix %q), want %s", name, c.Status, c.Detail, c.Fix, status)
	}
	return c
}

// TestDoctorHealthy: a worker's setup passes every check, beside the live
// worker (shards checked read-only) and after it stopped (full checks).
func TestDoctorHealthy(t *testing.T) {
	s := natstest.Server(t)
	dir := t.TempDir()
	cfg := testServeConfig(dir)
	cfg.NATS.Server = s.ClientURL()
	_, stop := runTestNode(t, cfg, nil)
	args := []string{"--server", s.ClientURL(), "--data", dir}

	for _, phase := range []string{"live worker", "stopped worker"} {
		checks, out, err := doctorRun(t, args...)
		if err != nil {
			t.Fatalf("%s: doctor: %v\n%s", phase, err, out)
		}
		for _, name := range []string{"nats", "jetstream", "stream " + memindex.StreamEvents, "stream " + memindex.StreamDLQ, "consumers memindex-p*", "shards", "embedder builtin"} {
			wantStatus(t, checks, name, doctor.OK)
		}
		// The test server has no system account user: unknown, with how to check.
		if c := wantStatus(t, checks, "sync_interval", doctor.Warn); !strings.Contains(c.Fix, "sync_interval: always") {
			t.Errorf("sync_interval fix %q, want how to check", c.Fix)
		}
		shards := checks["shards"].Detail
		if phase == "live worker" && !strings.Contains(shards, "read-only") {
			t.Errorf("%s: shards %q, want the read-only check", phase, shards)
		}
		if phase == "stopped worker" && (!strings.Contains(shards, "FTS5 integrity-check") || !strings.Contains(shards, "2 shard files")) {
			t.Errorf("%s: shards %q, want 2 files with the FTS5 check", phase, shards)
		}
		stop()
	}
}

// TestDoctorReportsDriftedStream: a stream changed by hand is a failure
// naming each drifted field.
func TestDoctorReportsDriftedStream(t *testing.T) {
	s := natstest.Server(t)
	dir := t.TempDir()
	cfg := testServeConfig(dir)
	cfg.NATS.Server = s.ClientURL()
	n, _ := runTestNode(t, cfg, nil)
	ctx := context.Background()
	st, err := jsOf(t, n).Stream(ctx, memindex.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgSize = 1024
	sc.MaxAge = 3600e9
	if _, err := jsOf(t, n).UpdateStream(ctx, sc); err != nil {
		t.Fatalf("update stream: %v", err)
	}
	checks, _, err := doctorRun(t, "--server", s.ClientURL(), "--data", dir)
	if err == nil || !strings.Contains(err.Error(), "failed") {
		t.Fatalf("doctor err = %v, want failed checks", err)
	}
	c := wantStatus(t, checks, "stream "+memindex.StreamEvents, doctor.Fail)
	for _, w := range []string{"max_msg_size: have 1024", "max_age: have 1h0m0s, want unlimited"} {
		if !strings.Contains(c.Detail, w) {
			t.Errorf("drift detail %q does not contain %q", c.Detail, w)
		}
	}
	if c.Fix == "" {
		t.Error("drift has no fix")
	}
	wantStatus(t, checks, "stream "+memindex.StreamDLQ, doctor.OK)
}

// TestDoctorReportsMissingStreamsAndNATS: no streams is a failure saying
// to start serve; no server skips what needs it.
func TestDoctorReportsMissingStreamsAndNATS(t *testing.T) {
	s := natstest.Server(t)
	checks, _, err := doctorRun(t, "--server", s.ClientURL(), "--data", filepath.Join(t.TempDir(), "none"))
	if err == nil {
		t.Fatal("doctor without streams: no error")
	}
	if c := wantStatus(t, checks, "stream "+memindex.StreamEvents, doctor.Fail); !strings.Contains(c.Fix, "memindex serve") {
		t.Errorf("fix %q, want it to say to start serve", c.Fix)
	}
	wantStatus(t, checks, "shards", doctor.Skip)

	checks, _, err = doctorRun(t, "--server", "nats://127.0.0.1:1", "--data", t.TempDir())
	if err == nil {
		t.Fatal("doctor without a server: no error")
	}
	if c := wantStatus(t, checks, "nats", doctor.Fail); !strings.Contains(c.Fix, "--server") {
		t.Errorf("nats fix %q, want it to name --server", c.Fix)
	}
	wantStatus(t, checks, "consumers", doctor.Skip)
}

// TestDoctorReportsCorruptShard: a damaged shard file fails with the
// rebuild to run.
func TestDoctorReportsCorruptShard(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "shards"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{0, 1} {
		sh, err := store.Open(ctx, node.ShardPath(filepath.Join(dir, "shards"), p), store.Config{Dims: 8})
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bad := node.ShardPath(filepath.Join(dir, "shards"), 1)
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 6*4096 {
		t.Fatalf("shard file has %d bytes, want more pages to damage", len(b))
	}
	for i := 3 * 4096; i < len(b)-4096; i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	checks, out, err := doctorRun(t, "--server", "nats://127.0.0.1:1", "--data", dir)
	if err == nil {
		t.Fatal("doctor with a damaged shard: no error")
	}
	c := wantStatus(t, checks, "shard "+filepath.Join("shards", "p1.db"), doctor.Fail)
	if !strings.Contains(c.Fix, "memindex rebuild --data "+dir+" --partition 1") {
		t.Errorf("fix %q, want the rebuild command for partition 1", c.Fix)
	}
	if _, ok := checks["shard "+filepath.Join("shards", "p0.db")]; ok {
		t.Errorf("the sound shard p0 is reported:\n%s", out)
	}
}

// TestDoctorProvider: a provider that answers passes; one that is gone
// fails without showing its key.
func TestDoctorProvider(t *testing.T) {
	const key = "sk-doctor-secret-key"
	t.Setenv("OPENAI_API_KEY", key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "unexpected request "+r.URL.Path, http.StatusBadRequest)
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) != 1 {
			http.Error(w, "want one input", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8,0,0]}],"model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}`))
	}))
	args := []string{"--server", "nats://127.0.0.1:1", "--data", filepath.Join(t.TempDir(), "none"), "--embedder", "openai", "--base-url", srv.URL, "--model", "m", "--dims", "4"}
	checks, _, _ := doctorRun(t, args...)
	if c := wantStatus(t, checks, "embedder openai", doctor.OK); !strings.Contains(c.Detail, "4 dimensions") {
		t.Errorf("embedder detail %q, want the dimensions", c.Detail)
	}
	srv.Close()
	checks, out, err := doctorRun(t, args...)
	if err == nil {
		t.Fatal("doctor with an unreachable provider: no error")
	}
	c := wantStatus(t, checks, "embedder openai", doctor.Fail)
	if c.Fix == "" || strings.Contains(out, key) {
		t.Errorf("provider failure %+v; want a fix and no key in\n%s", c, out)
	}
}
