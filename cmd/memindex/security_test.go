package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"memindex"
	"memindex/client"
	"memindex/consumer"
	"memindex/internal/natsconn"
	"memindex/node"
)

// testServeConfig is the worker configuration of testNodeIn on data dir.
func testServeConfig(dir string) node.Config {
	c := node.DefaultConfig()
	c.Listen, c.Data, c.PartitionCount, c.Worker = "127.0.0.1:-1", dir, 2, "test"
	c.Embedder.Dims, c.Batch, c.EmbedConcurrency, c.SearchPending = 384, 500, 2, 64
	c.HTTP, c.SnapshotInterval, c.CacheMaxBytes, c.ReadyLag = "off", 0, 0, 0
	return c
}

// runTestNode starts a worker with cfg through node.Open (log nil:
// discarded) and runs it until stop is called or the test ends.
func runTestNode(t *testing.T, cfg node.Config, log *slog.Logger) (*node.Node, func()) {
	t.Helper()
	n, err := node.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("node.Open: %v", err)
	}
	stopRun := n.Start(context.Background())
	stop := func() {
		if err := stopRun(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return n, stop
}

// jsOf is JetStream on n's connection.
func jsOf(t *testing.T, n *node.Node) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(n.Conn())
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// randomSecret returns prefix followed by random hex.
func randomSecret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s%x", prefix, b)
}

// tenantServer starts nats-server from deployments/nats-tenants.conf on a
// random port, with random passwords, and returns it with the passwords by
// user.
func tenantServer(t *testing.T) (*server.Server, map[string]string) {
	t.Helper()
	pw := map[string]string{}
	for user, v := range map[string]string{"memindex-worker": "MEMINDEX_WORKER_PASSWORD", "alice": "MEMINDEX_ALICE_PASSWORD", "bob": "MEMINDEX_BOB_PASSWORD"} {
		pw[user] = randomSecret(t, "pw-")
		t.Setenv(v, pw[user])
	}
	opts, err := server.ProcessConfigFile("../../deployments/nats-tenants.conf")
	if err != nil {
		t.Fatalf("load nats-tenants.conf: %v", err)
	}
	opts.Host, opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, t.TempDir(), true, true
	return startServer(t, opts), pw
}

// asyncErrors connects as user and returns the connection with a channel of
// the asynchronous errors the server sends it (permission violations).
func asyncErrors(t *testing.T, url, user, password string) (*nats.Conn, <-chan error) {
	t.Helper()
	errs := make(chan error, 16)
	nc, err := nats.Connect(url, nats.UserInfo(user, password), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// wantViolation waits for a permissions violation naming subject.
func wantViolation(t *testing.T, errs <-chan error, op, subject string) {
	t.Helper()
	want := fmt.Sprintf("%s to %q", op, subject)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
				return
			}
			t.Logf("other asynchronous error: %v", err)
		case <-deadline:
			t.Fatalf("no permissions violation for %s within 10s", want)
		}
	}
}

// TestTenantIsolation runs a worker and two tenants on a server started from
// deployments/nats-tenants.conf with real credentials. Alice publishes and
// searches her namespace through the CLI; publishing to, searching or
// reading Bob's subjects is a permissions violation (and `memindex publish`
// reports the publish failed); an event or a search on her own subject that
// names Bob's namespace is dead-lettered or refused by the worker; Bob's
// replies never reach Alice's inbox subscription; and the worker user's
// permissions suffice for everything the worker does, the DLQ included.
func TestTenantIsolation(t *testing.T) {
	s, pw := tenantServer(t)
	url := s.ClientURL()
	ctx := context.Background()

	t.Setenv("NATS_PASSWORD", pw["memindex-worker"])
	cfg := testServeConfig(t.TempDir())
	cfg.NATS = connFromArgs(t, "--server", url, "--user", "memindex-worker").Config
	var workerLog syncBuffer
	runTestNode(t, cfg, slog.New(slog.NewTextHandler(&workerLog, nil)))

	as := func(user string) []string { return []string{"--server", url, "--user", user, "--password", pw[user]} }
	publish := func(user, ns, lines string, extra ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := runPublish(ctx, append(append(as(user), extra...), "--namespace", ns, "--json", "-"), strings.NewReader(lines), &out, &errOut); err != nil {
			t.Fatalf("publish as %s to %s: %v\n%s", user, ns, err, errOut.String())
		}
	}
	publish("alice", "alice", `{"sessionKey":"chat","sessionId":"s1","seq":1,"speaker":"Alice","text":"My locker code is marzipan-4711."}`+"\n")
	publish("bob", "bob", `{"sessionKey":"chat","sessionId":"s1","seq":1,"speaker":"Bob","text":"Bob keeps his bicycle in the cellar."}`+"\n")
	search := func(user, ns, q string) (memindex.SearchResponse, error) {
		var out bytes.Buffer
		var resp memindex.SearchResponse
		err := runSearch(ctx, append(as(user), "--namespace", ns, "--json", q), &out)
		if err == nil {
			err = json.Unmarshal(out.Bytes(), &resp)
		}
		return resp, err
	}
	waitUntil(t, 30*time.Second, "alice's own search to find her message", func() bool {
		resp, err := search("alice", "alice", "locker code")
		return err == nil && len(resp.Hits) > 0 && strings.Contains(resp.Hits[0].Text, "marzipan-4711")
	})
	waitUntil(t, 30*time.Second, "bob's own search to find his message", func() bool {
		resp, err := search("bob", "bob", "bicycle")
		return err == nil && len(resp.Hits) > 0
	})

	// What the shards hold before Alice's attempts: one message of each
	// tenant, in its own partition.
	before := shardRows(t, cfg.Data, cfg.PartitionCount, "alice was here")
	for _, ns := range []string{"alice", "bob"} {
		k := shardRow{memindex.Partition(ns, cfg.PartitionCount), "messages", ns}
		if before[k] != 1 {
			t.Fatalf("before alice's attempts: %v messages, want 1 (all rows: %v)", k, before)
		}
	}
	for k := range before {
		if k.ns != "alice" && k.ns != "bob" || k.p != memindex.Partition(k.ns, cfg.PartitionCount) {
			t.Fatalf("before alice's attempts: %d rows %v, want none (all rows: %v)", before[k], k, before)
		}
	}

	alice, aliceErrs := asyncErrors(t, url, "alice", pw["alice"])
	js, err := jetstream.New(alice)
	if err != nil {
		t.Fatal(err)
	}
	// Publishing into Bob's namespace: the server refuses it, and
	// `memindex publish` says the publish failed.
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = js.Publish(pctx, memindex.EventSubject("bob"), []byte(`{"type":"message","sessionKey":"chat","sessionId":"s1","seq":2,"text":"alice was here"}`))
	cancel()
	if err == nil {
		t.Fatal("alice published to memindex.events.bob and got an acknowledgement")
	}
	wantViolation(t, aliceErrs, "Publish", memindex.EventSubject("bob"))
	var out, errOut bytes.Buffer
	err = runPublish(ctx, append(as("alice"), "--namespace", "bob", "--timeout", "2s", "--json", "-"),
		strings.NewReader(`{"sessionKey":"chat","sessionId":"s1","seq":3,"text":"alice was here"}`+"\n"), &out, &errOut)
	if err == nil || !strings.Contains(errOut.String(), "publish to memindex.events.bob failed") {
		t.Fatalf("memindex publish as alice to bob: err=%v, stderr %q; want the publish reported failed", err, errOut.String())
	}

	// An event on Alice's own subject that names Bob's namespace: the
	// worker dead-letters it (the worker user may publish to the DLQ), and
	// an operator with the worker's credentials lists it with its reason.
	pctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	_, err = js.Publish(pctx, memindex.EventSubject("alice"), []byte(`{"type":"message","namespace":"bob","sessionKey":"chat","sessionId":"s1","seq":4,"text":"alice was here too"}`))
	cancel()
	if err != nil {
		t.Fatalf("alice's publish on her own subject: %v", err)
	}
	waitUntil(t, 30*time.Second, "the dead letter to be listed with the worker's credentials", func() bool {
		var out bytes.Buffer
		var ds []consumer.DeadLetter
		err := runDLQ(ctx, []string{"list", "--server", url, "--user", "memindex-worker", "--password", pw["memindex-worker"], "--json"}, nil, &out)
		return err == nil && json.Unmarshal(out.Bytes(), &ds) == nil && len(ds) == 1 && strings.Contains(ds[0].Reason, "field namespace")
	})

	// Searching or reading Bob's namespace: refused the same way.
	for _, subj := range []string{memindex.SearchSubject("bob"), memindex.ReadSubject("bob")} {
		if _, err := alice.Request(subj, []byte(`{"query":"bicycle","sessionKey":"chat","sessionId":"s1"}`), time.Second); err == nil {
			t.Fatalf("alice's request on %s was answered", subj)
		}
		wantViolation(t, aliceErrs, "Publish", subj)
	}

	// Alice's own subject naming Bob's namespace: the worker refuses it.
	msg, err := alice.Request(memindex.SearchSubject("alice"), []byte(`{"namespace":"bob","query":"bicycle"}`), 5*time.Second)
	if err != nil {
		t.Fatalf("search on memindex.search.alice naming bob: %v, want an error reply", err)
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != memindex.CodeBadRequest || !strings.Contains(msg.Header.Get(micro.ErrorHeader), `"bob" differs from the subject's namespace "alice"`) {
		t.Fatalf("search naming bob on alice's subject: code %q, error %q, body %s; want 400 saying the namespace differs",
			code, msg.Header.Get(micro.ErrorHeader), msg.Data)
	}
	if _, err := client.NewClient(alice).Search(ctx, memindex.SearchRequest{Namespace: "alice", Query: "bicycle cellar", K: 10}); err != nil {
		t.Fatalf("alice's search: %v", err)
	}

	// Neither of Alice's attempts reached Bob's namespace.
	resp, err := search("bob", "bob", "alice was here")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range resp.Hits {
		if strings.Contains(h.Text, "alice was here") {
			t.Fatalf("bob's namespace holds alice's event: %+v", h)
		}
	}
	// A search answers from Bob's partition and from chunks only; the
	// counts see a row of any namespace in any shard and any table, so an
	// event applied to the wrong partition, or a message without its
	// chunk, fails here. Every attempt has been refused or dead-lettered
	// by now (the dead letter was listed above).
	if after := shardRows(t, cfg.Data, cfg.PartitionCount, "alice was here"); !maps.Equal(after, before) {
		t.Fatalf("shard rows after alice's attempts: %v, want %v as before them", after, before)
	}

	// Alice may subscribe to _INBOX.>, but that is her account's inbox:
	// Bob's replies never reach it.
	spy, err := alice.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second reply is sent after the first was fanned out
		if _, err := search("bob", "bob", "bicycle"); err != nil {
			t.Fatalf("bob's search: %v", err)
		}
	}
	if err := alice.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := spy.Pending(); n != 0 {
		t.Fatalf("alice's _INBOX.> subscription received %d of bob's replies", n)
	}
	// And Alice cannot subscribe to the worker's subjects at all.
	if _, err := alice.SubscribeSync(memindex.SearchSubjectPrefix + ".>"); err != nil {
		t.Fatal(err)
	}
	wantViolation(t, aliceErrs, "Subscription", memindex.SearchSubjectPrefix+".>")

	// The worker's permissions were enough for everything it did.
	if strings.Contains(workerLog.String(), "ermissions") {
		t.Fatalf("the worker hit a permissions violation:\n%s", workerLog.String())
	}
}

// shardRow names a count shardRows reads: the rows of namespace ns in table
// of partition p's shard, or (table "messages with mark") its messages of ns
// whose text holds the mark.
type shardRow struct {
	p         int
	table, ns string
}

// shardRows reads every shard file under data read-only, while the worker
// holds them, and counts the rows of each namespace in each table with a
// namespace column (messages, chunks, files, ...), and the messages whose
// text holds mark. Counts of zero are left out.
func shardRows(t *testing.T, data string, partitions int, mark string) map[shardRow]int64 {
	t.Helper()
	rows := map[shardRow]int64{}
	for p := range partitions {
		path := node.ShardPath(filepath.Join(data, "shards"), p)
		db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
		if err != nil {
			t.Fatal(err)
		}
		count := func(q, table string, args ...any) {
			t.Helper()
			r, err := db.Query(q, args...)
			if err != nil {
				t.Fatalf("%s: %s: %v", path, q, err)
			}
			defer r.Close()
			for r.Next() {
				var ns string
				var n int64
				if err := r.Scan(&ns, &n); err != nil {
					t.Fatalf("%s: %s: %v", path, q, err)
				}
				rows[shardRow{p, table, ns}] += n
			}
			if err := r.Err(); err != nil {
				t.Fatalf("%s: %s: %v", path, q, err)
			}
		}
		// Virtual tables are left out: FTS5 holds no namespace of its own
		// (chunks has it) and vec0 is not loaded in this driver.
		var tables []string
		r, err := db.Query(`SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND m.sql NOT LIKE 'CREATE VIRTUAL%'
			AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) c WHERE c.name = 'namespace') ORDER BY m.name`)
		if err != nil {
			t.Fatalf("%s: list tables: %v", path, err)
		}
		for r.Next() {
			var name string
			if err := r.Scan(&name); err != nil {
				t.Fatal(err)
			}
			tables = append(tables, name)
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: list tables: %v", path, err)
		}
		r.Close()
		if !slices.Contains(tables, "messages") || !slices.Contains(tables, "chunks") {
			t.Fatalf("%s: tables with a namespace column %q, want messages and chunks among them", path, tables)
		}
		for _, table := range tables {
			count(`SELECT namespace, count(*) FROM "`+table+`" GROUP BY namespace`, table)
		}
		count(`SELECT namespace, count(*) FROM messages WHERE instr(text, ?) > 0 GROUP BY namespace`, "messages with "+strconv.Quote(mark), mark)
		db.Close()
	}
	return rows
}

// TestServeAuthEmbedded: `serve --auth` generates nkey credentials under
// DATA/auth (files 0600, directory 0700), refuses connections without them,
// accepts the admin seed with --nkey, and reuses the same seeds on restart.
func TestServeAuthEmbedded(t *testing.T) {
	dir := t.TempDir()
	cfg := testServeConfig(dir)
	cfg.Auth = true
	var logs syncBuffer
	n, stop := runTestNode(t, cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx := context.Background()

	authPath := filepath.Join(dir, node.AuthDir)
	if st, err := os.Stat(authPath); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("stat %s: %v, %v; want a directory with mode 0700", authPath, st, err)
	}
	seeds := map[string][]byte{}
	for _, name := range []string{node.WorkerSeedFile, node.AdminSeedFile} {
		p := filepath.Join(authPath, name)
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("stat %s: %v, %v; want a file with mode 0600", p, st, err)
		}
		if seeds[name], err = os.ReadFile(p); err != nil || !bytes.HasPrefix(seeds[name], []byte("SU")) {
			t.Fatalf("%s holds %d bytes (%v), want an nkey user seed", p, len(seeds[name]), err)
		}
	}
	admin := filepath.Join(authPath, node.AdminSeedFile)
	if !strings.Contains(logs.String(), admin) {
		t.Fatalf("the log does not say where the admin seed is (%s):\n%s", admin, logs.String())
	}
	for name, seed := range seeds {
		if strings.Contains(logs.String(), strings.TrimSpace(string(seed))) {
			t.Fatalf("the log contains the %s seed", name)
		}
	}

	// Without credentials, or with a seed the server does not know: refused.
	if nc, err := connFromArgs(t, "--server", n.URL(), "--timeout", "3s").Connect("anonymous"); err == nil {
		nc.Close()
		t.Fatal("an unauthenticated connection was accepted")
	} else if !errors.Is(err, nats.ErrAuthorization) || !strings.Contains(err.Error(), "refused the credentials") {
		t.Fatalf("unauthenticated connect: %v, want an authorization error saying the credentials were refused", err)
	}
	stranger, err := node.LoadOrCreateAuth(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := connFromArgs(t, "--server", n.URL(), "--nkey", stranger.AdminSeed, "--timeout", "3s").Connect("stranger"); err == nil {
		nc.Close()
		t.Fatal("a connection with an unknown nkey was accepted")
	}

	// The admin seed works for the commands.
	withAdmin := []string{"--server", n.URL(), "--nkey", admin}
	var out, errOut bytes.Buffer
	if err := runPublish(ctx, append(withAdmin, "--namespace", "demo", "-"), strings.NewReader(`{"sessionKey":"c","sessionId":"s","seq":1,"text":"The harbour ferry leaves at nine."}`+"\n"), &out, &errOut); err != nil {
		t.Fatalf("publish --nkey admin.nk: %v\n%s", err, errOut.String())
	}
	searchFinds := func(args []string) bool {
		var b bytes.Buffer
		var resp memindex.SearchResponse
		if runSearch(ctx, append(args, "--namespace", "demo", "--json", "ferry"), &b) != nil || json.Unmarshal(b.Bytes(), &resp) != nil {
			return false
		}
		return len(resp.Hits) == 1
	}
	waitUntil(t, 30*time.Second, "search --nkey admin.nk to find the published message", func() bool { return searchFinds(withAdmin) })

	// Restart on the same data directory: the same seeds, and the admin
	// seed still works.
	stop()
	n2, stop2 := runTestNode(t, cfg, nil)
	for _, name := range []string{node.WorkerSeedFile, node.AdminSeedFile} {
		b, err := os.ReadFile(filepath.Join(authPath, name))
		if err != nil || !bytes.Equal(b, seeds[name]) {
			t.Fatalf("%s changed on restart (%v); want it reused", name, err)
		}
	}
	withAdmin = []string{"--server", n2.URL(), "--nkey", admin}
	waitUntil(t, 30*time.Second, "search after restart with the same admin seed", func() bool { return searchFinds(withAdmin) })
	stop2()

	// A seed others may read stops the start with what to do.
	if err := os.Chmod(admin, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Open(ctx, cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("start with a world-readable seed: %v, want an error saying chmod 600", err)
	}
	// --auth with an external server is a mistake, said so.
	ext := testServeConfig(t.TempDir())
	ext.Auth, ext.NATS.Server = true, n2.URL()
	if _, err := node.Open(ctx, ext, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--auth configures the embedded") {
		t.Fatalf("--auth with --server: %v, want an error explaining --auth is for the embedded server", err)
	}
}

// TestConnFlagsValidation: conflicting or incomplete credentials are errors
// that name the flags, and usage never shows a password or token.
func TestConnFlagsValidation(t *testing.T) {
	t.Setenv("NATS_PASSWORD", "")
	t.Setenv("NATS_TOKEN", "")
	for name, tt := range map[string]struct {
		args []string
		want string
	}{
		"two methods":       {[]string{"--creds", "x.creds", "--token", "t"}, "--creds, --token are all set"},
		"password, no user": {[]string{"--password", "p"}, "set --user or NATS_USER"},
		"cert without key":  {[]string{"--tlscert", "c.pem"}, "--tlskey"},
		"missing nkey file": {[]string{"--nkey", "/nonexistent/seed.nk"}, "--nkey /nonexistent/seed.nk"},
		"missing context":   {[]string{"--context", "nope-" + randomSecret(t, "")}, "nats context save"},
		"missing CA file":   {[]string{"--server", "nats://127.0.0.1:1", "--tlsca", "/nonexistent/ca.pem"}, "check the --creds, --nkey and --tls* file paths"},
	} {
		_, err := connFromArgs(t, tt.args...).Connect("test")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: connect(%v) = %v, want an error containing %q", name, tt.args, err, tt.want)
		}
	}
	if got := natsconn.RedactURL("nats://u:p4ss@h1:4222,tls://tok3n@h2:4443/x,nats://h3:4222"); got != "nats://redacted@h1:4222,tls://redacted@h2:4443/x,nats://h3:4222" {
		t.Fatalf("natsconn.RedactURL = %q", got)
	}
}

// TestSecretsNeverShown configures sentinel secrets (a NATS password, a
// token, a provider API key that the provider even echoes in an error) and
// runs a real `memindex serve` child process (exporting traces to an OTLP
// collector), the CLI and failing connections: no sentinel appears in logs,
// status, search output, traces, errors or usage.
func TestSecretsNeverShown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a child process")
	}
	bin := binary(t)
	password := randomSecret(t, "SENTINEL-PASSWORD-")
	token := randomSecret(t, "SENTINEL-TOKEN-")
	apiKey := randomSecret(t, "sk-SENTINEL-KEY-")
	urlPassword := randomSecret(t, "SENTINEL-URLPW-")
	sentinels := []string{password, token, apiKey, urlPassword}

	s := startServer(t, &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{{Username: "worker", Password: password}}})

	// An OpenAI-compatible provider that insists on the key and refuses
	// the first two requests with 401, quoting the key it got as OpenAI
	// does; the worker logs those failures, and the backfill retries.
	var calls, authorized atomic.Int64
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if calls.Add(1) <= 2 || got != apiKey {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, got)
			return
		}
		authorized.Add(1)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []item `json:"data"`
		}
		for i, text := range req.Input {
			v := make([]float32, 8)
			v[len(text)%8] = 1
			out.Data = append(out.Data, item{Index: i, Embedding: v})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer provider.Close()

	// An OTLP/HTTP collector that keeps every trace export it receives.
	var traces syncBuffer
	var exports atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		exports.Add(1)
		_, _ = traces.Write(b)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL+"/v1/traces")

	// The worker takes its password in the URL (NATS_URL style), the CLI
	// below from NATS_PASSWORD.
	env := append(os.Environ(), "NATS_USER=", "NATS_PASSWORD=", "OPENAI_API_KEY="+apiKey, "NATS_TOKEN=")
	workerURL := "nats://worker:" + password + "@" + strings.TrimPrefix(s.ClientURL(), "nats://")
	var logs syncBuffer
	cmd := exec.Command(bin, "serve", "--server", workerURL, "--data", t.TempDir(), "--partition-count", "2", "--worker", "sentinel",
		"--embedder", "openai", "--base-url", provider.URL, "--model", "tiny", "--dims", "8", "--embed-retries", "5",
		"--log-level", "debug", "--log-format", "json")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	t.Setenv("NATS_USER", "worker")
	t.Setenv("NATS_PASSWORD", password)
	ctx := context.Background()
	srv := []string{"--server", s.ClientURL()}
	var shown []string // everything a person could see
	var out, errOut bytes.Buffer
	if err := runPublish(ctx, append(srv, "--namespace", "demo", "--json", "-"), strings.NewReader(
		`{"sessionKey":"c","sessionId":"s","seq":1,"text":"The lighthouse keeper feeds the gulls."}`+"\n"+
			`{"sessionKey":"c","sessionId":"s","seq":2,"text":"Gulls steal chips at the pier."}`+"\n"), &out, &errOut); err != nil {
		t.Fatalf("publish: %v\n%s\nworker log:\n%s", err, errOut.String(), logs.String())
	}
	shown = append(shown, out.String(), errOut.String())
	var status bytes.Buffer
	waitUntil(t, 60*time.Second, "the worker to index both messages with vectors", func() bool {
		status.Reset()
		var sts []memindex.StatusResponse
		if runStatus(ctx, append(srv, "--json", "--wait", "300ms"), &status) != nil || json.Unmarshal(status.Bytes(), &sts) != nil || len(sts) != 1 {
			return false
		}
		tot := sts[0].Total()
		return tot.Messages == 2 && tot.VectorsWaiting == 0
	})
	shown = append(shown, status.String())
	var human bytes.Buffer
	if err := runStatus(ctx, srv, &human); err != nil {
		t.Fatal(err)
	}
	var found bytes.Buffer
	if err := runSearch(ctx, append(srv, "--namespace", "demo", "--explain", "gulls"), &found); err != nil {
		t.Fatal(err)
	}
	shown = append(shown, human.String(), found.String())
	if authorized.Load() == 0 || calls.Load() <= 2 {
		t.Fatalf("provider saw %d calls, %d with the key; want the worker to have used the key after two failures", calls.Load(), authorized.Load())
	}

	// Failing connections with each kind of secret.
	for name, args := range map[string][]string{
		"wrong password flag": {"--server", s.ClientURL(), "--user", "worker", "--password", urlPassword},
		"token":               {"--server", s.ClientURL(), "--user", "", "--token", token},
		"password in URL":     {"--server", "nats://worker:" + urlPassword + "@" + strings.TrimPrefix(s.ClientURL(), "nats://"), "--user", ""},
		"dead server in URL":  {"--server", "nats://worker:" + password + "@127.0.0.1:1", "--user", ""},
	} {
		t.Setenv("NATS_PASSWORD", "")
		err := runStatus(ctx, append(args, "--timeout", "2s"), &bytes.Buffer{})
		if err == nil {
			t.Fatalf("%s: status succeeded, want a failed connection", name)
		}
		shown = append(shown, err.Error())
	}
	// The same through the binary, with the secrets in the environment,
	// and the usage of commands while they are set.
	for _, run := range []struct {
		args []string
		env  []string
	}{
		{[]string{"status", "--server", s.ClientURL(), "--user", "worker", "--timeout", "2s"}, []string{"NATS_PASSWORD=" + urlPassword}},
		{[]string{"status", "--server", s.ClientURL(), "--user", "", "--timeout", "2s"}, []string{"NATS_PASSWORD=", "NATS_TOKEN=" + token}},
		{[]string{"serve", "-h"}, []string{"NATS_PASSWORD=" + password, "NATS_TOKEN=" + token}},
		{[]string{"status", "-h"}, []string{"NATS_PASSWORD=" + password, "NATS_TOKEN=" + token}},
		{[]string{"search", "-h"}, []string{"NATS_PASSWORD=" + password, "NATS_TOKEN=" + token}},
		{[]string{"publish", "-h"}, []string{"NATS_PASSWORD=" + password, "NATS_TOKEN=" + token}},
	} {
		c := exec.Command(bin, run.args...)
		c.Env = append(append(os.Environ(), "OPENAI_API_KEY="+apiKey), run.env...)
		b, err := c.CombinedOutput()
		help := run.args[len(run.args)-1] == "-h"
		if help && !strings.Contains(string(b), "-password") || !help && err == nil {
			t.Fatalf("memindex %v: %v\n%s\nwant usage for -h, a failed connection otherwise", run.args, err, b)
		}
		shown = append(shown, string(b))
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker exit after SIGTERM: %v\n%s", err, logs.String())
	}
	stopped = true
	shown = append(shown, logs.String(), traces.String())
	if exports.Load() == 0 {
		t.Errorf("the OTLP collector received no traces; the test did not look at any")
	}
	t.Logf("checked %d outputs, incl. %d trace exports (%d bytes) and %d bytes of worker log", len(shown), exports.Load(), len(traces.String()), len(logs.String()))
	if !strings.Contains(logs.String(), "Incorrect API key provided: [redacted]") {
		t.Errorf("the worker log does not show the provider's failed answers (redacted); the test did not exercise them:\n%s", logs.String())
	}
	for i, text := range shown {
		for _, sec := range sentinels {
			if strings.Contains(text, sec) {
				t.Errorf("output %d contains a secret (%s...):\n%s", i, sec[:12], text)
			}
		}
	}
}
